// The boundaries of a lexer state's mask entry whose byte completes the lexeme alike (a string's
// closing quote after `a`, `abc`, `"hello`: one lexer state, trie and byte) at any depth: what
// a token below one of them allows depends, where no check reads the bytes before the boundary,
// on its bytes from the boundary's byte on alone. Per such class, one trie of those bytes (root:
// the byte itself), each node holding the tokens that end there: a mask pushes the byte once and
// walks that trie once, instead of walking each boundary's sub-trie (a 262k vocabulary's string
// state has 150 such boundaries, a 49k one's 60; their tails after the quote are a few dozen).
#pragma once
#include <cstdint>
#include <vector>

#include "tokens/trie.h"

namespace stencil {

class Lexer;
class Vocabulary;
struct Boundary;

struct MergedRuns {
  struct Run {
    uint32_t first, end;  // its boundaries [first, end), in MaskCache::order_for_runs's order
    uint32_t root;        // its trie's root in nodes (its depth: the first boundary's, the least)
  };
  std::vector<Run> runs;  // by first
  // The tries, depth-first as TokenTrie's; token_id indexes id_begin (-1: no token ends there),
  // whose tokens are ids[id_begin[i], id_begin[i + 1]), each below boundary first + from[j].
  std::vector<TrieNode> nodes;
  std::vector<uint32_t> id_begin;
  std::vector<int32_t> ids;
  std::vector<uint32_t> from;
  // By boundary (of a class): whether its bytes above the boundary hold no quote or backslash.
  std::vector<uint8_t> plain_prefix;
  size_t bytes() const {
    return runs.capacity() * sizeof(Run) + nodes.capacity() * sizeof(TrieNode) + id_begin.capacity() * 4 +
           ids.capacity() * 4 + from.capacity() * 4 + plain_prefix.capacity();
  }
};

// The classes of `boundaries` (ordered for runs: a class's boundaries together, by depth) of two
// boundaries or more whose byte completes the lexeme (its state after ends the lexeme now).
MergedRuns merge_runs(const Lexer& lexer, const Vocabulary& vocab, const std::vector<Boundary>& boundaries);

}  // namespace stencil
