// An open-addressing map from 64-bit keys to 32-bit values, for hot caches that a node-based
// std::unordered_map would serve with one allocation per insert. Keys must not be ~0.
//
// The table is split into shards by hash, each grown on its own: a cache that reaches millions
// of entries rehashes a sixty-fourth of them at a time, so no single insert (one token's mask)
// pays for copying the whole table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "support/hash.h"

namespace stencil {

class FlatMap64 {
 public:
  static constexpr uint64_t kEmptyKey = ~uint64_t(0);

  // The value for `key`, or nullptr.
  const uint32_t* find(uint64_t key) const {
    const uint64_t h = hash(key);
    const Shard& s = shards_[h >> (64 - kShardBits)];
    if (s.keys.empty()) return nullptr;
    const size_t mask = s.keys.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      if (s.keys[i] == key) return &s.values[i];
      if (s.keys[i] == kEmptyKey) return nullptr;
    }
  }
  // Inserts or overwrites.
  void put(uint64_t key, uint32_t value) {
    const uint64_t h = hash(key);
    Shard& s = shards_[h >> (64 - kShardBits)];
    if ((s.size + 1) * 2 > s.keys.size()) grow(s);
    size_ += insert(s, h, key, value);
  }
  size_t size() const { return size_; }
  void clear() {
    for (Shard& s : shards_) s = Shard{};
    size_ = 0;
  }
  size_t memory_bytes() const {
    size_t n = 0;
    for (const Shard& s : shards_) n += s.keys.capacity() * 8 + s.values.capacity() * 4;
    return n;
  }

 private:
  static constexpr int kShardBits = 6;
  struct Shard {
    std::vector<uint64_t> keys;
    std::vector<uint32_t> values;
    size_t size = 0;
  };
  static uint64_t hash(uint64_t key) { return fmix64(key); }
  // 1 when the key is new.
  static size_t insert(Shard& s, uint64_t h, uint64_t key, uint32_t value) {
    const size_t mask = s.keys.size() - 1;
    size_t i = h & mask;
    while (s.keys[i] != kEmptyKey && s.keys[i] != key) i = (i + 1) & mask;
    const size_t added = s.keys[i] == kEmptyKey;
    s.size += added;
    s.keys[i] = key;
    s.values[i] = value;
    return added;
  }
  static void grow(Shard& s) {
    std::vector<uint64_t> old_keys = std::move(s.keys);
    std::vector<uint32_t> old_values = std::move(s.values);
    s.keys.assign(old_keys.empty() ? 16 : old_keys.size() * 2, kEmptyKey);
    s.values.assign(s.keys.size(), 0);
    s.size = 0;
    for (size_t i = 0; i < old_keys.size(); ++i)
      if (old_keys[i] != kEmptyKey) insert(s, hash(old_keys[i]), old_keys[i], old_values[i]);
  }

  Shard shards_[1 << kShardBits];
  size_t size_ = 0;
};

}  // namespace stencil
