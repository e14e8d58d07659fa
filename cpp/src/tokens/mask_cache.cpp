#include "tokens/mask_cache.h"

#include <mutex>

#include "lexer/lexer.h"
#include "stencil/vocabulary.h"

namespace stencil {

std::shared_ptr<MaskEntry> MaskCache::compute(const Lexer& lexer, const Vocabulary& vocab, uint32_t state) {
  auto e = std::make_shared<MaskEntry>();
  auto shared = std::make_shared<SharedMaskEntry>();
  std::vector<uint32_t>& inner = shared->inner;
  inner.assign((static_cast<size_t>(vocab.vocab_size()) + 31) / 32, 0);
  const auto& nodes = vocab.trie().nodes();
  std::vector<uint32_t> st(static_cast<size_t>(vocab.trie().max_depth()) + 2, 0);
  st[0] = state;
  const size_t n = nodes.size();
  for (size_t i = 1; i < n;) {
    const TrieNode& node = nodes[i];
    uint32_t p = st[node.depth - 1];
    uint32_t t = lexer.next(p, node.byte);
    if (t == Lexer::kDead) {
      if (!lexer.state(p).accepting.empty()) e->boundaries.push_back({static_cast<uint32_t>(i), p});
      i += node.subtree_size;
      continue;
    }
    if (lexer.state(t).end_now) {
      e->boundaries.push_back({static_cast<uint32_t>(i), p});
      i += node.subtree_size;
      continue;
    }
    st[node.depth] = t;
    if (node.token_id >= 0) inner[node.token_id >> 5] |= 1u << (node.token_id & 31);
    ++i;
  }
  e->boundaries.shrink_to_fit();
  shared->boundary_nodes.reserve(e->boundaries.size());
  for (const Boundary& b : e->boundaries) shared->boundary_nodes.push_back(b.node);
  e->shared = std::move(shared);
  return e;
}

std::shared_ptr<MaskEntry> MaskCache::resolve(const Lexer& lexer, const Vocabulary& vocab, uint32_t state,
                                              std::shared_ptr<const SharedMaskEntry> shared) {
  auto e = std::make_shared<MaskEntry>();
  const auto& nodes = vocab.trie().nodes();
  e->boundaries.reserve(shared->boundary_nodes.size());
  for (uint32_t node : shared->boundary_nodes) {
    // The state before the node's byte: replay the bytes above it, which the
    // inner walk proved stay inside the lexeme.
    size_t n = node;
    while (nodes[n].token_id < 0) ++n;
    std::string_view prefix = vocab.token_bytes(nodes[n].token_id);
    uint32_t p = state;
    for (size_t k = 0; k + 1 < nodes[node].depth; ++k) p = lexer.next(p, static_cast<uint8_t>(prefix[k]));
    e->boundaries.push_back({node, p});
  }
  e->shared = std::move(shared);
  return e;
}

std::shared_ptr<const MaskEntry> MaskCache::get(const Lexer& lexer, const Vocabulary& vocab, uint32_t state) const {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = entries_.find(state);
    if (it != entries_.end()) return it->second;
  }
  std::shared_ptr<const MaskEntry> e;
  const std::string key = lexer.signature(state);
  auto shared = key.empty() ? nullptr : vocab.shared_masks().find(key);
  if (shared) {
    e = resolve(lexer, vocab, state, std::move(shared));
  } else {
    auto fresh = compute(lexer, vocab, state);
    if (!key.empty()) vocab.shared_masks().insert(key, fresh->shared);
    e = std::move(fresh);
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = entries_.find(state);
  if (it != entries_.end()) return it->second;
  if (bytes_ + e->bytes() <= budget_) {
    bytes_ += e->bytes();
    entries_.emplace(state, e);
  }
  return e;
}

size_t MaskCache::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return entries_.size();
}

size_t MaskCache::bytes() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return bytes_;
}

}  // namespace stencil
