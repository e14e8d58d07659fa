// What the token-budget bound needs of a grammar and a lexer epoch, shared by all the epoch's
// matchers (built on a budget's first use, across threads): the lexeme searches, the lexeme
// ceilings, the grammar's costs, and per lexer state the fewest tokens that end each of its live
// lexemes and where its inner tokens lead. The parser's side is RowCosts, per matcher.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "cost/grammar_costs.h"
#include "cost/inner_steps.h"
#include "cost/lexeme_ceiling.h"
#include "cost/lexeme_search.h"
#include "cost/memo.h"

namespace stencil {

class CostTables {
 public:
  static constexpr uint32_t kInf = cost::kInf;
  CostTables(const Grammar& g, const Lexer& lexer, const MaskCache& cache, const Vocabulary& vocab);
  // Per live lexeme of lexer state `state`, the fewest tokens that end it; the reference stays valid.
  const cost::Costs& lexer_costs(uint32_t state);
  // Where the inner tokens of lexer state `state` lead (built on first use, checked against its
  // mask cache entry's inner bits).
  std::shared_ptr<const InnerSteps> inner_steps(uint32_t state);
  // The inner tokens of `state` (its mask cache entry's inner bits) of at least `bytes` bytes,
  // each with the state it leads to: those a ceiling for shorter tokens leaves out. Memoized,
  // as inner_steps (each at most that table's size); the reference stays valid.
  using LongTokens = std::vector<std::pair<int32_t, uint32_t>>;
  const LongTokens& long_inner(uint32_t state, uint32_t bytes);
  // What the tables hold on the heap (the lexer states their searches made count in the lexer).
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  const Lexer& lexer() const { return search.lexer(); }

 private:
  std::atomic<size_t> bytes_{0};  // (first: the parts below count into it)

 public:
  LexemeSearch search;
  LexemeCeiling ceiling;
  const GrammarCosts grammar;

 private:
  cost::Memo<uint32_t, cost::Costs> state_costs_;
  cost::Memo<uint32_t, std::shared_ptr<const InnerSteps>> inner_steps_;
  cost::Memo<uint64_t, LongTokens> long_inner_;  // (state, bytes)
};

}  // namespace stencil
