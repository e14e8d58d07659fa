// Sub-tries below a boundary that the lexer alone decides. After a lexeme ends inside a token (`
// 1` at a number's start, `"` at a string's), most of the rest of the token's sub-trie stays
// inside the next lexeme, where the parser has nothing to decide: the lexer state takes every
// byte there, unless a check reads the lexeme's bytes (a key's) or the row vetoes some of its
// lexemes. The parser's walk pushed a frame per node all the same (a number's start walks some
// 2,000 nodes: most of a 20 us mask). Which sub-tries the lexer takes whole depends on the state
// before the sub-trie and nothing else, so they are kept per (state, node) for the matcher's
// later masks; the walk takes their tokens at once and pushes only the rest, as before (a
// lexeme's end is still scanned once for all the children of a node).
#include "matcher/mask_walker.h"

namespace stencil {

namespace {
constexpr uint32_t kInnerWalkFrom = 16;  // smaller sub-tries are walked as they are
}  // namespace

const MaskWalker::InnerWalk* MaskWalker::known_walk(const TokenTrie& trie, size_t first, size_t root) {
  const auto& nodes = trie.nodes();
  const TrieNode& top = nodes[first];
  // (a budget wants each token's cost from its parse; token limits end lexemes by count)
  if (!g_->limits().loop_skip || sink_ || top.subtree_size < kInnerWalkFrom || ps_->lexer().has_token_limits())
    return nullptr;
  const Frame& parent = ps_->frames()[root + top.depth - 1];
  const EarleyRow& row = ps_->parser().row(parent.rows - 1);
  if (row.veto_end != row.veto_begin) return nullptr;  // (EarleyParser::vetoed_only: the parser judges)
  const uint32_t state = parent.state;
  const uint32_t tag = &trie == &vocab_->trie() ? 0 : kRestTrieBit;
  const uint64_t key = uint64_t(state) << 32 | (static_cast<uint32_t>(first) | tag);
  if (auto it = inner_walks_.find(key); it != inner_walks_.end()) return it->second.usable ? &it->second : nullptr;
  // The lexer's verdict on every node (a dead byte's sub-trie is not visited): a node is whole
  // when it and every node below are taken.
  const Lexer& lexer = ps_->lexer();
  const size_t size = top.subtree_size;
  std::vector<uint8_t> whole(size, 0);
  std::vector<uint32_t> st(static_cast<size_t>(trie.max_depth()) + 2, Lexer::kDead), path;
  st[top.depth - 1] = state;
  InnerWalk w;
  auto close = [&](size_t below_depth) {  // the nodes on the path at below_depth or deeper are done
    while (!path.empty() && nodes[path.back()].depth >= below_depth) {
      const uint32_t x = path.back();
      path.pop_back();
      if (!whole[x - first] && !path.empty()) whole[path.back() - first] = 0;
    }
  };
  for (size_t i = first, end = first + size; i < end;) {
    const TrieNode& node = nodes[i];
    ticker_.tick();
    close(node.depth);
    const uint32_t t = lexer.next_tagged(st[node.depth - 1], node.byte);
    if (t == Lexer::kDead || (t & Lexer::kEndNowTag)) {  // the parser ends the lexeme, or refuses
      if (!path.empty()) whole[path.back() - first] = 0;
      i += node.subtree_size;
      continue;
    }
    const LexState& s = lexer.state(t);
    if (s.key_finite || s.key_closed) {  // (ParseState::exhausted reads the key's bytes)
      w.usable = false;
      break;
    }
    whole[i - first] = 1;
    st[node.depth] = t;
    path.push_back(static_cast<uint32_t>(i));
    ++i;
  }
  close(0);
  // The whole sub-tries, the first met on each path (a whole node's own sub-trie is taken with it).
  for (size_t i = first, end = first + size; w.usable && i < end;) {
    if (whole[i - first]) {
      w.skips.push_back(static_cast<uint32_t>(i));
      i += nodes[i].subtree_size;
    } else {
      ++i;
    }
  }
  if (inner_walk_nodes_ > kInnerWalkNodes) {
    inner_walks_.clear();
    inner_walk_nodes_ = 0;
  }
  inner_walk_nodes_ += w.skips.size() + 1;
  auto it = inner_walks_.emplace(key, std::move(w)).first;
  return it->second.usable ? &it->second : nullptr;
}

}  // namespace stencil
