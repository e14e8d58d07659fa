// The cost after every token of a state, from one walk of the whole token trie: what
// TokenBudget falls back to where the mask walk cannot report the costs (lexemes with token
// limits) or the inner tokens' bounds cannot serve, and its coarse pass past a work limit.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "cost/row_costs.h"
#include "matcher/lexer_epoch.h"
#include "matcher/parse_state.h"
#include "support/deadline.h"
#include "tokens/trie.h"
#include "tokens/walk_loops.h"

namespace stencil {

class TrieCosts {
 public:
  explicit TrieCosts(const CompiledGrammar& g) : g_(g), vocab_(g.vocab()) {}
  using Costs = std::vector<std::pair<int32_t, uint32_t>>;  // (token, cost after it)
  // The cost after each token the grammar allows at ps's top frame (kInf elsewhere), with the
  // specials' costs (special_costs: asked once per state by the caller, for this walk and the
  // mask's own); ps is back as it was. `search`: how a token that stays inside its lexeme is
  // costed (kBytes: by single-byte distances, the coarse pass).
  void walk(ParseState& ps, const LexerEpoch& epoch, RowCosts& cost, RowCosts::Search search, const Costs& specials);
  // The largest cost after a token the last walk allowed.
  uint32_t max() const { return max_; }
  // Removes from `words` (need words) the tokens whose cost after is over `left`; where none
  // would stay, the cheapest stay. remaining < 1: end of sequence alone.
  void restrict(uint32_t* words, size_t need, int64_t remaining, uint32_t left);
  // (token, cost once read) for each special token the grammar names and takes at ps's top
  // frame, end of sequence aside, appended to `out`; ps is back as it was.
  void special_costs(ParseState& ps, RowCosts& cost, Costs& out);

 private:
  bool take_loop(ParseState& ps, RowCosts& cost, WalkLoops& loops, size_t i, const TrieNode& node, size_t root);
  void cost_range(size_t i, size_t end, uint32_t c);
  void note(int32_t token, uint32_t c) {  // the cost after `token`
    after_[token] = c;
    max_ = std::max(max_, c);
  }

  const CompiledGrammar& g_;
  const Vocabulary& vocab_;
  RowCosts::Search search_ = RowCosts::Search::kExact;
  std::vector<uint32_t> after_;  // per token, the cost after it (cost::kInf: not allowed)
  uint32_t max_ = 0;
  std::vector<uint32_t> unbudgeted_;   // restrict's scratch: the mask before the budget
  std::vector<uint32_t> loop_states_;  // take_loop's scratch: the lexer states down a sub-trie
  std::vector<int32_t> specials_;      // the special tokens the grammar names (on first use)
  bool specials_known_ = false;
  deadline::Ticker ticker_;  // trie nodes walked, for the time limits
};

}  // namespace stencil
