// The boundaries of a lexer state's mask entry whose byte completes the lexeme alike (a string's
// closing quote after `a`, `abc`, `"hello`: one lexer state, trie and byte) at any depth: what
// a token below one of them allows depends, where no check reads the bytes before the boundary,
// on its bytes from the boundary's byte on alone. Per such class, one trie of those bytes (root:
// the byte itself), each node holding the tokens that end there: a mask pushes the byte once and
// walks that trie once, instead of walking each boundary's sub-trie (a 262k vocabulary's string
// state has 150 such boundaries, a 49k one's 60; their tails after the quote are a few dozen).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "tokens/trie.h"

namespace stencil {

class Lexer;
class Vocabulary;
class SharedCache;
struct Boundary;

// One class's trie, depth-first as TokenTrie's (its root at 0, at the depth of the class's
// shallowest boundary): what it holds follows from the class's boundary nodes alone (their order
// too: by depth, then node), so every entry whose class has those nodes shares it, within a
// grammar and across the vocabulary's grammars (SharedCache: a free string's closing quote is one
// class in nearly every schema's string and key states).
struct MergedClass {
  std::vector<TrieNode> nodes;
  // token_id of a node indexes id_begin (-1: no token ends there), whose tokens are
  // ids[id_begin[i], id_begin[i + 1]), each below the class's boundary from[j] (its index in the class).
  std::vector<uint32_t> id_begin;
  std::vector<int32_t> ids;
  std::vector<uint32_t> from;
  // By boundary of the class: whether its bytes above the boundary hold no quote or backslash.
  std::vector<uint8_t> plain_prefix;
  size_t bytes() const {
    return nodes.capacity() * sizeof(TrieNode) + id_begin.capacity() * 4 + ids.capacity() * 4 + from.capacity() * 4 +
           plain_prefix.capacity() + 64;
  }
  mutable std::atomic<uint64_t> used{0};  // (SharedCache's clock)
};

struct MergedRuns {
  struct Run {
    uint32_t first, end;  // its boundaries [first, end), in MaskCache::order_for_runs's order
    std::shared_ptr<const MergedClass> trie;
  };
  std::vector<Run> runs;  // by first
  size_t bytes() const {
    size_t n = runs.capacity() * sizeof(Run);
    for (const Run& r : runs) n += r.trie->bytes();  // (shared ones too: what an entry keeps alive counts)
    return n;
  }
};

// Into *out, the classes of `boundaries` (ordered for runs: a class's boundaries together, by
// depth) of two boundaries or more whose byte completes the lexeme (its state after ends the
// lexeme now), their tries found in `shared` where another entry built them (null: built here,
// kept to itself). With only_shared, false as soon as a class's trie is not found there.
bool merge_runs(const Lexer& lexer, const Vocabulary& vocab, const std::vector<Boundary>& boundaries,
                SharedCache* shared, bool only_shared, MergedRuns* out);

}  // namespace stencil
