#include "tokens/shared_mask_cache.h"

#include <mutex>

namespace stencil {

std::shared_ptr<const SharedMaskEntry> SharedMaskCache::find(const std::string& key) const {
  const Shard& sh = shard_of(key);
  std::shared_lock<std::shared_mutex> lock(sh.mu);
  auto it = sh.entries.find(key);
  return it == sh.entries.end() ? nullptr : it->second;
}

void SharedMaskCache::insert(std::string key, std::shared_ptr<const SharedMaskEntry> entry) {
  const size_t cost = entry->bytes() + key.size();
  if (bytes_.load(std::memory_order_relaxed) + cost > budget_) return;
  Shard& sh = shard_of(key);
  std::unique_lock<std::shared_mutex> lock(sh.mu);
  if (sh.entries.count(key)) return;
  bytes_.fetch_add(cost, std::memory_order_relaxed);
  sh.entries.emplace(std::move(key), std::move(entry));
}

size_t SharedMaskCache::size() const {
  size_t n = 0;
  for (const Shard& sh : shards_) {
    std::shared_lock<std::shared_mutex> lock(sh.mu);
    n += sh.entries.size();
  }
  return n;
}

}  // namespace stencil
