// The one walk of a token sub-trie that drives a recognizer: the mask walk (MaskWalker::walk) and
// the budget's whole-trie walk (TrieCosts::walk) are this loop with their own visitor. It is
// llguidance's TokTrie::add_bias over a Recognizer, made static: a template over both, so each
// caller's visitor is inlined and the hot loop makes no virtual or indirect call.
//
// The recognizer (ParseState) stands at frame `root`, before the token's first byte; a node at
// depth d reads its byte over frame root + d - 1 (its parent's):
//   void descend(size_t num_frames)  back to root + d frames, the parent's rows on the parser;
//   bool push_byte(uint8_t b, bool share_end)  reads b (false: refused, state unchanged); the
//     walk passes share_end, so a lexeme's end is scanned once for all children of a node.
// The visitor:
//   bool took(size_t i, const TrieNode& node)  before node i: true when the visitor took the
//     sub-trie at i itself (a loop skip); the walk goes on after it;
//   void token(const TrieNode& node)  node's byte was read and a token ends there.
#pragma once
#include <cstddef>
#include <vector>

#include "tokens/trie.h"

namespace stencil {

template <class Recognizer, class Visit>
__attribute__((always_inline)) inline void walk_subtrie(Recognizer& r, const std::vector<TrieNode>& nodes, size_t first,
                                                        size_t root, Visit&& visit) {
  const size_t end = first + nodes[first].subtree_size;
  for (size_t i = first; i < end;) {
    const TrieNode& node = nodes[i];
    if (visit.took(i, node)) {
      i += node.subtree_size;
      continue;
    }
    r.descend(root + node.depth);
    if (r.push_byte(node.byte, true)) {
      if (node.token_id >= 0) visit.token(node);
      ++i;
    } else {
      i += node.subtree_size;
    }
  }
}

}  // namespace stencil
