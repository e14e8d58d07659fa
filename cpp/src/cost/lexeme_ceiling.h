// Lexeme ceilings: bounds on the cost of every state a token can reach inside the current
// lexeme, so that a budget-aware mask can let all the tokens that stay inside a lexeme through
// at once where the largest such cost fits the budget, and cost them one by one only where it
// does not. Read off the lexeme's expression first (Lexer::pair_bytes, lexer/byte_bounds.cpp),
// searched over the lexer's states where that bound is too loose.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "cost/lexeme_search.h"
#include "cost/memo.h"

namespace stencil {

class LexemeCeiling {
 public:
  static constexpr uint32_t kInf = cost::kInf;
  static constexpr uint32_t kNoLexeme = ~0u;
  // Per (lexeme, expression) pair of a lexer state (in Lexer::probe_state's order): the state
  // holding it alone, its lexeme (kNoLexeme where several stay alive), and Lexer::pair_bytes'
  // bounds in single-byte tokens (kInf unless every byte is a token of its own), and `within`:
  // another pair of one lexeme whose words hold this pair's (Lexer::pair_within), kNoPair where
  // none is known. A walk that keeps the pair alive keeps that one alive too, so where it is not
  // vetoed its bound serves for both (no search for this pair's own: a free key `body & ~P`
  // beside any string). Equal languages point to the first of them only.
  static constexpr uint32_t kNoPair = ~0u;
  struct Pair {
    uint32_t alone, lexeme, shortest, ceiling, within = kNoPair;
  };
  LexemeCeiling(LexemeSearch& search, std::atomic<size_t>& bytes);
  // The derivative work (support/work_limit.h) an exploration (state_ceiling) or a reach may
  // spend making the states it walks: where each state costs microseconds of derivatives (a
  // pattern beside an e-mail format's domain, each label's count a state) the caps on states came
  // only after 1-3 ms. On MaskBench's tuning half the explorations that succeed spent at most 38k
  // units (all but one under 18k) and the reaches 8k; those that failed, up to 23k and 46k. Past
  // it one fails as past its cap on states: the budget then bounds the tokens' successors
  // instead, the same mask.
  static constexpr uint64_t kExploreUnits = 1u << 15;
  static constexpr uint64_t kReachUnits = 1u << 14;
  // The most tokens that any state reachable from `alone` (a state of one lexeme) needs to end
  // its lexeme (kInf: unknown): a bound on the cost of a token that stays inside the lexeme,
  // whatever state it leads to. In single-byte tokens over the states explored (up to a few
  // dozen, within kExploreUnits); for a counted string body (`C{lo,k} rest`) the distance from `alone` plus the
  // ceiling of the relaxed body `C* rest`. Memoized.
  uint32_t state_ceiling(uint32_t alone);
  // The lexer states that the byte strings of at most the longest token's length lead `state` to
  // inside its lexeme (by byte class: a superset of the tokens' successors), `state` included;
  // empty past 128 states or kReachUnits (and for the states such a search found) or where a
  // number lives.
  // Memoized; the returned reference stays valid.
  const std::vector<uint32_t>& reach(uint32_t state);
  // The pairs of `state`, memoized; the returned reference stays valid.
  const std::vector<Pair>& pairs(uint32_t state);
  // The pairs of `state` with ceilings read off the expressions for the states that at most
  // `reach` bytes reach (a token shorter than the vocabulary's longest: a counted string far from
  // its bound fits its pattern's ceiling, where the longest tokens may need the bound's room).
  // Memoized.
  const std::vector<Pair>& pairs_within(uint32_t state, uint32_t reach);

 private:
  uint32_t explore_ceilings(uint32_t start, uint32_t l);
  uint32_t too_many(const std::vector<uint32_t>& explored);  // kInf, the states kept in no_search_
  bool beyond_search(uint32_t alone) const;
  static constexpr uint32_t kShapeCounts = 16;  // counts this long or longer are lifted in a shape
  uint32_t shape_of(uint32_t state) const;      // the key of failed_
  static std::vector<uint32_t> most_after(const std::vector<std::vector<uint32_t>>& out,
                                          const std::vector<uint32_t>& value);
  const std::vector<uint32_t>& reach_of(uint32_t state, std::vector<uint32_t> found);

  LexemeSearch& search_;
  const Lexer& lexer_;
  cost::Memo<uint32_t, uint32_t> ceilings_;   // state of one lexeme -> state_ceiling
  cost::Memo<uint32_t, uint32_t> no_search_;  // states a ceiling search passed, failing (too_many)
  cost::Memo<uint32_t, std::vector<uint32_t>> reach_;
  cost::Memo<uint64_t, uint32_t> failed_;  // (shape_of << 1 | reach): an exploration or a reach failed
  cost::Memo<uint32_t, std::vector<Pair>> pairs_;
  cost::Memo<uint64_t, std::vector<Pair>> short_pairs_;  // (state, reach)
  void cover(uint32_t state, std::vector<Pair>& pairs) const;  // sets Pair::within
  const std::vector<Pair>& pairs_of(uint32_t state, uint32_t reach, cost::Memo<uint64_t, std::vector<Pair>>* memo);
};

}  // namespace stencil
