// The costs after the inner tokens of one lexer state (those whose bytes all stay inside its
// lexeme: the mask cache entry's inner bits) over the parser's top row, bounded only as tightly
// as a budget needs. Each stage bounds them more tightly than the one before, at more cost, and
// is reached only while the bound is over the budget:
//   1. the lexemes' ceilings (RowCosts::inner_ceiling): one bound for every inner token;
//   1b. where the expressions' ceilings are over (before the searches for tighter ones), a
//      ceiling for the tokens shorter than 64, 32, 16, 12 or 8 bytes (RowCosts::
//      inner_ceiling_within: a counted string short of its bound's last characters; else the
//      steps of the state with its counts past twice that lifted, relaxed_within), and the
//      longer inner tokens' successors (CostTables::long_inner), each bounded by its distance in
//      single bytes, else exact;
//   1c. where a lexeme of the state loops (an unanchored pattern, CostTables::sticky): the cost
//      of the loop's part, plus the bytes that finish a character cut short: one bound for every
//      inner token, whatever count of a run inside the pattern the state is at;
//   2. the states one token leads to, where the cost searches walked them already
//      (LexemeSearch::known_successors: those of the inner tokens and of the tokens that end the
//      lexeme at once), each bounded by its distance in single bytes, else costed exactly: where
//      all fit, no table of the tokens is built;
//   3. the inner tokens' successor states (InnerSteps), each bounded by its distance in single
//      bytes;
//   4. each successor's exact cost (RowCosts::at).
// The stages reached are kept while the state repeats (inside a string the budget shrinks token
// by token and asks again).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cost/row_costs.h"

namespace stencil {

class InnerCosts {
 public:
  // Forgets the state's costs (another state, rows or epoch).
  void reset();
  // The largest cost after an inner token of `state` over p's top row, bounded until it is at
  // most `left` or exact; cost::kInf where the steps do not cover the inner tokens (covered()).
  uint32_t bound(RowCosts& rows, const EarleyParser& p, uint32_t state, uint32_t left);
  // Whether the successor table covers the mask's inner tokens (else only a walk of the whole
  // trie costs them).
  bool covered() const { return stage_ != Stage::kUncovered; }
  // After bound(): clears in `words` the inner tokens whose cost is over `left` (`had`: the mask
  // before the budget, `need` words each). Where the most common successor is over, every word
  // is cleared and the tokens with other successors put back: the caller puts back the rest.
  void restrict(uint32_t* words, const uint32_t* had, size_t need, uint32_t left) const;
  // Lowers *least to the least cost after an inner token of `others` (`need` words: the tokens
  // whose cost the caller does not know; those listed here are cleared, the rest lead to the
  // most common successor). False where some token's cost is not known (bound() stopped short of
  // the exact costs, or no successor explains it).
  bool cheapest(uint32_t* others, size_t need, uint32_t* least) const;

 private:
  enum class Stage : uint8_t { kNone, kCeiling, kLong, kSticky, kSuccessors, kStepsBounded, kStepsExact, kUncovered };
  // Stage 1b, for `left`; false where no shorter reach's ceiling fits it.
  bool long_bound(RowCosts& rows, const EarleyParser& p, uint32_t state, uint32_t left);
  // Stage 1b's bound for the tokens shorter than `bytes` from the state with its counts past
  // 2 * bytes lifted (lifted_for; kDead: none), and a longer token's.
  static uint32_t lifted_for(RowCosts& rows, uint32_t state, uint32_t bytes);
  static uint32_t relaxed_within(RowCosts& rows, const EarleyParser& p, uint32_t lifted, uint32_t bytes);
  static uint32_t lifted_cost(RowCosts& rows, const EarleyParser& p, uint32_t state, uint32_t bytes, int32_t token,
                              uint32_t s, uint32_t left);
  static uint32_t cost_after(RowCosts& rows, const EarleyParser& p, uint32_t s, uint32_t left);
  // Stage 2: the largest cost after the known successors of `state`, exact past `left` (returned
  // as soon as one is over); kInf where none are known.
  static uint32_t successors_bound(RowCosts& rows, const EarleyParser& p, uint32_t state, uint32_t left);
  void load_steps(RowCosts& rows, const EarleyParser& p, uint32_t state);
  void cost_steps(RowCosts& rows, const EarleyParser& p);

  Stage stage_ = Stage::kNone;
  uint32_t most_ = 0;           // the largest cost after an inner token, as bounded so far
  uint32_t ceiling_limit_ = 0;  // the budget the ceiling was found for (it searched what was over)
  std::shared_ptr<const InnerSteps> steps_;
  uint32_t common_cost_ = 0;          // after the inner tokens that lead to steps_->common
  std::vector<uint32_t> step_costs_;  // after those that lead to steps_->states[i]
  const CostTables::LongTokens* long_ = nullptr;  // stage 1b: the longer inner tokens, known for long_left_
  std::vector<uint32_t> long_costs_;              // after each (exact where over long_left_)
  uint32_t long_left_ = 0;
};

}  // namespace stencil
