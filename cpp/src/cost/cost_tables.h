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
  // A bound for every inner token of `state` at once, where one of its lexemes loops (an
  // unanchored pattern: `.*P.*`): a state `part` (Lexer::held_parts) whose path to its lexeme's end
  // (held_path) serves from every state a token leads to, after at most `slack` single-byte tokens
  // that finish a character (every inner token of `state` must be one of the loop's strings: its
  // mask entry's inner bits within the loop head's). The cost after an inner token is then at most
  // slack + part's cost (lexer_costs bounds it by held_cost), one search for every count of the
  // pattern's runs. kNoSticky where there is none.
  static constexpr uint64_t kNoSticky = ~uint64_t{0};
  uint64_t sticky(uint32_t state);  // part << 32 | slack
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
  cost::Memo<uint32_t, uint64_t> sticky_;
  cost::Memo<uint32_t, std::vector<int32_t>> held_paths_;  // part state -> its path (held_path)
  cost::Memo<uint32_t, uint32_t> held_costs_;               // state of one lexeme -> held_cost
  // The path of a part's search to its lexeme's end (LexemeSearch::memo_tokens), every token of it
  // but the last whole words of the loop (`head`'s); {-1} where the memo holds no such path.
  const std::vector<int32_t>& held_path(uint32_t part, uint32_t head, uint32_t lexeme);
  // The fewest tokens a held part's path takes from `alone` (a state of one lexeme) to its end:
  // the shortest suffix of the path that reads from `alone` to the end, or, in a character begun,
  // one single-byte token more than from a state after it nearer a part; kInf where no part
  // serves. Each answer is one more than some token's successor's: consistent, as the searches'
  // (README.md). `depth`, `cut`: the characters begun followed (an answer cut short there is not
  // memoized).
  uint32_t held_cost(uint32_t alone, uint32_t lexeme, int depth = 0, bool* cut = nullptr);
};

}  // namespace stencil
