// Where a lexer state's inner tokens lead: the lexer state after each token whose bytes all stay
// inside the current lexeme (the tokens a mask cache entry holds as its inner bits). A
// budget-aware mask needs the cost after every allowed token; for inner tokens that cost depends
// on the parser only through the rows the lexeme started at, so one cost per distinct successor
// state serves all of them, read from this table instead of a walk of the whole trie. Built once
// per lexer state and epoch by a walk with the lexer alone, shared by the grammar's matchers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace stencil {

class Lexer;
class MaskCache;
class TokenTrie;

// The tokens that stay inside the lexeme of lexer state `state`, read by the lexer alone: visit(
// first, end, s) for each run ordered_tokens()[first, end) of them that ends in state s (a
// sub-trie of characters that lead a looping state back to itself is one run). With `ending`,
// also the tokens whose last byte ends the lexeme at once (their state tagged
// Lexer::kEndNowTag); longer tokens through such a byte cross into the next lexeme and are left
// out either way. A visit that returns true ends the walk. Without `skip_loops`, every token is
// visited alone (no loop question asked: a walk that may stop early saves them). `nodes`, where
// given, counts the trie nodes walked.
void walk_inside(const Lexer& lexer, const MaskCache& cache, const TokenTrie& trie, uint32_t state, bool ending,
                 const std::function<bool(uint32_t, uint32_t, uint32_t)>& visit, bool skip_loops = true,
                 size_t* nodes = nullptr);

struct InnerSteps {
  // The state most inner tokens lead to (Lexer::kDead: there are none); every inner token not in
  // `tokens` leads there.
  uint32_t common;
  std::vector<uint32_t> states;                      // the other successor states
  std::vector<std::pair<int32_t, uint32_t>> tokens;  // token -> index into states
  // Whether every inner bit of the mask cache's entry is a token found here (where not, a budget
  // walks the whole trie as before).
  bool covered = true;

  size_t bytes() const { return states.capacity() * 4 + tokens.capacity() * 8 + sizeof(InnerSteps); }
  // The steps of `state`, checked against the entry's inner mask (`inner`, `need` words); the
  // duplicates' ids follow their first id.
  static InnerSteps of(const Lexer& lexer, const MaskCache& cache, const TokenTrie& trie, uint32_t state,
                       const uint32_t* inner, size_t need);
};

}  // namespace stencil
