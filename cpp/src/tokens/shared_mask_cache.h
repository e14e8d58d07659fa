// Inner masks shared by every grammar compiled for one vocabulary, keyed by
// the lexer state's signature (canonical expressions): a JSON string body,
// say, is walked once per tokenizer instead of once per grammar. Boundaries
// are kept as trie nodes only; each grammar resolves their lexer states by
// replaying the node's prefix bytes through its own lexer.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "support/memory_limit.h"

namespace stencil {

struct SharedMaskEntry {
  std::vector<uint32_t> inner;           // bitmask words over the vocabulary
  std::vector<uint32_t> boundary_nodes;  // trie nodes whose sub-tries the parser must judge
  std::vector<uint32_t> boundary_parents;  // and their parents
  size_t bytes() const { return inner.capacity() * 4 + boundary_nodes.capacity() * 8 + 64; }
  mutable std::atomic<uint64_t> used{0};  // last found or stored, on the memory limit's clock
};

// Sharded: the cache lives as long as the vocabulary and grows over thousands of grammars; one
// map's rehash at 2^k entries stalls whichever mask step crosses it, a shard's is 64 times
// smaller, and threads filling masks contend on 64 locks, not one.
// It holds at most its capacity or a quarter of the process memory limit, whichever is smaller, and
// the process memory limit trims its least recently used entries when the process is over its limit
// (an entry a grammar's mask cache still holds lives on there).
class SharedMaskCache final : public EvictableCache {
 public:
  explicit SharedMaskCache(size_t capacity_bytes);
  ~SharedMaskCache() override;
  std::shared_ptr<const SharedMaskEntry> find(const std::string& key) const;
  void insert(std::string key, std::shared_ptr<const SharedMaskEntry> entry);
  size_t size() const;
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  // Drops the least recently used entries, `want` bytes or a little more; returns the bytes dropped.
  size_t trim(size_t want);

  size_t releasable_bytes() const override { return bytes(); }
  uint64_t last_used() const override { return 0; }
  size_t release(size_t want, std::vector<std::shared_ptr<const void>>&) override { return trim(want); }

 private:
  static constexpr size_t kShards = 64;
  struct Shard {
    mutable std::shared_mutex mu;
    std::unordered_map<std::string, std::shared_ptr<const SharedMaskEntry>> entries;
  };
  static size_t cost(const std::string& key, const SharedMaskEntry& e) { return e.bytes() + key.size(); }
  Shard& shard_of(const std::string& key) const {
    return shards_[(std::hash<std::string>{}(key) * 0x9e3779b97f4a7c15ull) >> 58];
  }
  mutable std::array<Shard, kShards> shards_;
  std::atomic<size_t> bytes_{0};
  size_t capacity_;
};

}  // namespace stencil
