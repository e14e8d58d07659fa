// Inner masks shared by every grammar compiled for one vocabulary, keyed by
// the lexer state's signature (canonical expressions): a JSON string body,
// say, is walked once per tokenizer instead of once per grammar. Boundaries
// are kept as trie nodes only; each grammar resolves their lexer states by
// replaying the node's prefix bytes through its own lexer.
#pragma once
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace stencil {

struct SharedMaskEntry {
  std::vector<uint32_t> inner;           // bitmask words over the vocabulary
  std::vector<uint32_t> boundary_nodes;  // trie nodes whose sub-tries the parser must judge
  std::vector<uint32_t> boundary_parents;  // and their parents
  size_t bytes() const { return inner.capacity() * 4 + boundary_nodes.capacity() * 8 + 64; }
};

class SharedMaskCache {
 public:
  explicit SharedMaskCache(size_t budget_bytes) : budget_(budget_bytes) {}
  std::shared_ptr<const SharedMaskEntry> find(const std::string& key) const;
  void insert(std::string key, std::shared_ptr<const SharedMaskEntry> entry);
  size_t size() const;
  size_t bytes() const;

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const SharedMaskEntry>> entries_;
  size_t bytes_ = 0;
  size_t budget_;
};

}  // namespace stencil
