// The cost room's shared vocabulary: the cost type (tokens, kInf where no way to finish is
// known), per-lexeme cost lists, and Memo, the one memo table of the room (the tables are shared
// by every matcher of a lexer epoch, across threads).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/heap_size.h"

namespace stencil::cost {

constexpr uint32_t kInf = 1u << 30;  // no way to finish known
inline uint32_t add(uint32_t a, uint32_t b) { return a + b >= kInf ? kInf : a + b; }
using Costs = std::vector<std::pair<uint32_t, uint32_t>>;  // (id, cost), sorted by id

// What a memo's value holds on the heap beyond its own bytes (for the memory limit's counts).
inline size_t owned_bytes(uint32_t) { return 0; }
inline size_t owned_bytes(uint64_t) { return 0; }
template <class T>
size_t owned_bytes(const std::vector<T>& v) {
  return heap::of(v);
}
template <class T>
size_t owned_bytes(const std::shared_ptr<const T>& p) {
  return p ? p->bytes() : 0;
}

// A map from keys to values found once: readers share a lock, an entry never moves (references
// stay valid while the memo lives), the first value put for a key stays (two threads may find
// one at once; both found the same), and each new entry's heap is added to `bytes`, the owner's
// count.
template <class K, class V>
class Memo {
 public:
  explicit Memo(std::atomic<size_t>& bytes) : bytes_(bytes) {}
  Memo(const Memo&) = delete;
  Memo& operator=(const Memo&) = delete;

  const V* find(const K& k) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = map_.find(k);
    return it == map_.end() ? nullptr : &it->second;
  }
  bool contains(const K& k) const { return find(k) != nullptr; }
  // k's value: v unless k had one.
  const V& put(const K& k, V v) {
    const size_t owned = owned_bytes(v);
    std::unique_lock<std::shared_mutex> lock(mu_);
    auto [it, added] = map_.emplace(k, std::move(v));
    if (added) bytes_.fetch_add(entry_bytes() + owned, std::memory_order_relaxed);
    return it->second;
  }
  // k's value, made by make() where there is none yet (outside the lock: a search may take long).
  template <class Make>
  const V& get(const K& k, Make&& make) {
    if (const V* v = find(k)) return *v;
    return put(k, make());
  }

 private:
  // A node (next pointer, the pair, the cached hash) and its bucket's pointer.
  static size_t entry_bytes() {
    return heap::block(sizeof(void*) + sizeof(std::pair<const K, V>) + sizeof(size_t)) + sizeof(void*);
  }
  std::atomic<size_t>& bytes_;
  mutable std::shared_mutex mu_;
  std::unordered_map<K, V> map_;
};

}  // namespace stencil::cost
