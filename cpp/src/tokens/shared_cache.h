// What every grammar compiled for one vocabulary shares, keyed by a lexer state's signature
// (canonical expressions, Lexer::signature): inner masks (a JSON string body is walked once per
// tokenizer instead of once per grammar; boundaries kept as trie nodes, which each grammar
// resolves by replaying the node's prefix bytes through its own lexer), and the token paths the
// budget's searches found to a lexeme's end (cost/lexeme_search.h; each grammar replays the
// tokens through its own lexer before it trusts them).
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
  // Bitmask words over the vocabulary, as computed; index() empties it where `odd` holds them.
  std::vector<uint32_t> inner;
  std::vector<uint32_t> boundary_nodes;  // trie nodes whose sub-tries the parser must judge
  std::vector<uint32_t> boundary_parents;  // and their parents
  // The words instead where few of them differ from the more common of 0 and ~0 (`base`): those
  // words, (index, word) by index, and their count. A mask then starts as a fill and a few stores
  // instead of a copy of the whole entry, mostly cold (a string body over a 262k vocabulary: 32 KB,
  // 7,200 of its 8,192 words all ones), and the entry keeps a few KB instead of 32 (a fixed cache
  // then holds as many entries for a large vocabulary as for a small one, and a new entry's words
  // reuse the freed block of the last one instead of faulting fresh pages in).
  uint32_t base = 0;
  bool sparse = false;
  uint32_t words_count = 0;
  std::vector<std::pair<uint32_t, uint32_t>> odd;
  // Sets base, sparse and odd once inner is final; drops inner where sparse.
  void index();
  // words[0, need) = the words [0, need)
  void write(uint32_t* words, size_t need) const;
  // A copy of all the words (for the budget's per-state tables, not the mask's hot path).
  std::vector<uint32_t> dense() const;
  size_t bytes() const { return inner.capacity() * 4 + boundary_nodes.capacity() * 8 + odd.capacity() * 8 + 64; }
  mutable std::atomic<uint64_t> used{0};  // last found or stored, on the memory limit's clock
};

// Whether whole walks from two lexer states agree (MaskCache::sandwiched), keyed by both states'
// signatures: a count of words in a string is as long in every grammar that has the pattern.
struct SharedVerdict {
  bool yes = false;
  size_t bytes() const { return 48; }
  mutable std::atomic<uint64_t> used{0};
};

struct MergedClass;  // tokens/merged_runs.h

// The tokens of a path from a lexer state to its lexeme's end, in order (their count: the cost).
struct SharedPathEntry {
  std::vector<int32_t> tokens;
  size_t bytes() const { return tokens.capacity() * 4 + 48; }
  mutable std::atomic<uint64_t> used{0};
};

// Sharded: the cache lives as long as the vocabulary and grows over thousands of grammars; one
// map's rehash at 2^k entries stalls whichever mask step crosses it, a shard's is 64 times
// smaller, and threads filling masks contend on 64 locks, not one.
// It holds at most its capacity or a quarter of the process memory limit, whichever is smaller, and
// the process memory limit trims its least recently used entries (masks and paths alike) when the
// process is over its limit (an entry a grammar's mask cache still holds lives on there).
class SharedCache final : public EvictableCache {
 public:
  explicit SharedCache(size_t capacity_bytes);
  ~SharedCache() override;
  std::shared_ptr<const SharedMaskEntry> find_mask(const std::string& key) const { return masks_.find(key); }
  void insert_mask(std::string key, std::shared_ptr<const SharedMaskEntry> entry) {
    insert(masks_, std::move(key), std::move(entry));
  }
  std::shared_ptr<const SharedPathEntry> find_path(const std::string& key) const {
    return counted(paths_, key, path_hits_);
  }
  void insert_path(std::string key, std::shared_ptr<const SharedPathEntry> entry) {
    insert(paths_, std::move(key), std::move(entry));
  }
  // Merged runs' class tries (tokens/merged_runs.h), keyed by their boundary nodes.
  std::shared_ptr<const MergedClass> find_class(const std::string& key) const {
    return counted(classes_, key, class_hits_);
  }
  void insert_class(std::string key, std::shared_ptr<const MergedClass> entry) {
    insert(classes_, std::move(key), std::move(entry));
  }
  std::shared_ptr<const SharedVerdict> find_verdict(const std::string& key) const {
    return counted(verdicts_, key, verdict_hits_);
  }
  void insert_verdict(std::string key, std::shared_ptr<const SharedVerdict> v) {
    insert(verdicts_, std::move(key), std::move(v));
  }
  size_t mask_entries() const { return masks_.size(); }
  size_t path_entries() const { return paths_.size(); }
  size_t class_entries() const { return classes_.size(); }
  size_t verdict_entries() const { return verdicts_.size(); }
  uint64_t verdict_hits() const { return verdict_hits_.load(std::memory_order_relaxed); }
  uint64_t class_hits() const { return class_hits_.load(std::memory_order_relaxed); }  // tries found
  uint64_t path_hits() const { return path_hits_.load(std::memory_order_relaxed); }  // paths found
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  // Drops the least recently used entries, `want` bytes or a little more; returns the bytes dropped.
  size_t trim(size_t want);

  size_t releasable_bytes() const override { return bytes(); }
  uint64_t last_used() const override { return 0; }
  size_t release(size_t want, std::vector<std::shared_ptr<const void>>&) override { return trim(want); }

 private:
  static constexpr size_t kShards = 64;
  template <class Entry>
  struct Table {
    struct Shard {
      mutable std::shared_mutex mu;
      std::unordered_map<std::string, std::shared_ptr<const Entry>> entries;
    };
    mutable std::array<Shard, kShards> shards;
    Shard& shard_of(const std::string& key) const {
      return shards[(std::hash<std::string>{}(key) * 0x9e3779b97f4a7c15ull) >> 58];
    }
    std::shared_ptr<const Entry> find(const std::string& key) const;
    size_t size() const;
    void stamps(std::vector<std::pair<uint64_t, size_t>>& out) const;
    size_t drop_until(uint64_t cutoff);
  };
  template <class Entry>
  static size_t cost(const std::string& key, const Entry& e) {
    return e.bytes() + key.size();
  }
  template <class Entry>
  void insert(Table<Entry>& table, std::string key, std::shared_ptr<const Entry> entry);
  // table.find, counting the entries found in `hits`
  template <class Entry>
  static std::shared_ptr<const Entry> counted(const Table<Entry>& table, const std::string& key,
                                              std::atomic<uint64_t>& hits) {
    auto found = table.find(key);
    if (found) hits.fetch_add(1, std::memory_order_relaxed);
    return found;
  }

  Table<SharedMaskEntry> masks_;
  Table<SharedPathEntry> paths_;
  Table<MergedClass> classes_;
  Table<SharedVerdict> verdicts_;
  std::atomic<size_t> bytes_{0};
  mutable std::atomic<uint64_t> path_hits_{0};
  mutable std::atomic<uint64_t> class_hits_{0};
  mutable std::atomic<uint64_t> verdict_hits_{0};
  size_t capacity_;
};

}  // namespace stencil
