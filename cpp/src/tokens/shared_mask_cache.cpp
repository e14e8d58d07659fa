#include "tokens/shared_mask_cache.h"

#include <mutex>

namespace stencil {

std::shared_ptr<const SharedMaskEntry> SharedMaskCache::find(const std::string& key) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

void SharedMaskCache::insert(std::string key, std::shared_ptr<const SharedMaskEntry> entry) {
  size_t cost = entry->bytes() + key.size();
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (bytes_ + cost > budget_ || entries_.count(key)) return;
  bytes_ += cost;
  entries_.emplace(std::move(key), std::move(entry));
}

size_t SharedMaskCache::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return entries_.size();
}

size_t SharedMaskCache::bytes() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return bytes_;
}

}  // namespace stencil
