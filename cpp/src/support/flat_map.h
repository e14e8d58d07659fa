// An open-addressing map from 64-bit keys to 32-bit values, for hot caches that a node-based
// std::unordered_map would serve with one allocation per insert. Keys must not be ~0.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace stencil {

class FlatMap64 {
 public:
  static constexpr uint64_t kEmptyKey = ~uint64_t(0);

  // The value for `key`, or nullptr.
  const uint32_t* find(uint64_t key) const {
    if (keys_.empty()) return nullptr;
    const size_t mask = keys_.size() - 1;
    for (size_t h = slot(key) & mask;; h = (h + 1) & mask) {
      if (keys_[h] == key) return &values_[h];
      if (keys_[h] == kEmptyKey) return nullptr;
    }
  }
  // Inserts or overwrites.
  void put(uint64_t key, uint32_t value) {
    if ((size_ + 1) * 2 > keys_.size()) grow();
    const size_t mask = keys_.size() - 1;
    size_t h = slot(key) & mask;
    while (keys_[h] != kEmptyKey && keys_[h] != key) h = (h + 1) & mask;
    if (keys_[h] == kEmptyKey) ++size_;
    keys_[h] = key;
    values_[h] = value;
  }
  size_t size() const { return size_; }
  size_t memory_bytes() const { return keys_.capacity() * 8 + values_.capacity() * 4; }

 private:
  static size_t slot(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return static_cast<size_t>(key);
  }
  void grow() {
    std::vector<uint64_t> old_keys = std::move(keys_);
    std::vector<uint32_t> old_values = std::move(values_);
    keys_.assign(old_keys.empty() ? 256 : old_keys.size() * 2, kEmptyKey);
    values_.assign(keys_.size(), 0);
    size_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i)
      if (old_keys[i] != kEmptyKey) put(old_keys[i], old_values[i]);
  }

  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;
  size_t size_ = 0;
};

}  // namespace stencil
