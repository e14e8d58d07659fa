#include "tokens/mask_cache.h"

#include <mutex>

#include "lexer/lexer.h"
#include "stencil/vocabulary.h"

namespace stencil {

std::shared_ptr<MaskEntry> MaskCache::compute(const Lexer& lexer, const Vocabulary& vocab, uint32_t state) {
  auto e = std::make_shared<MaskEntry>();
  e->inner.assign((static_cast<size_t>(vocab.vocab_size()) + 31) / 32, 0);
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
    if (node.token_id >= 0) e->inner[node.token_id >> 5] |= 1u << (node.token_id & 31);
    ++i;
  }
  e->boundaries.shrink_to_fit();
  return e;
}

std::shared_ptr<const MaskEntry> MaskCache::get(const Lexer& lexer, const Vocabulary& vocab, uint32_t state) const {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = entries_.find(state);
    if (it != entries_.end()) return it->second;
  }
  std::shared_ptr<const MaskEntry> e = compute(lexer, vocab, state);
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
