// Budget-aware masks (Matcher::fill_mask_within): with k tokens left, a token t stays allowed
// only when the cost after t (CompletionCost: the fewest tokens that finish the output) is at
// most k - 1. See budget.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "matcher/completion.h"
#include "matcher/lexer_epoch.h"
#include "matcher/parse_state.h"
#include "support/deadline.h"

namespace stencil {

class TokenBudget {
 public:
  explicit TokenBudget(const CompiledGrammar& g) : g_(g), vocab_(g.vocab()) {}
  TokenBudget(const TokenBudget&) = delete;
  TokenBudget& operator=(const TokenBudget&) = delete;

  // The fewest tokens that finish the output from ps (in `epoch`); -1 when none is known.
  int64_t min_completion_tokens(ParseState& ps, const LexerEpoch& epoch);
  // Removes from the mask `words` (need words, the unbudgeted mask of ps) the tokens after which
  // the output cannot end valid within `remaining` tokens, this one included.
  void restrict(ParseState& ps, const LexerEpoch& epoch, uint32_t* words, size_t need, int64_t remaining);

 private:
  CompletionCost& cost(const LexerEpoch& epoch);
  void walk_costs(ParseState& ps, const LexerEpoch& epoch);
  void walk_trie_costs(ParseState& ps, const LexerEpoch& epoch, CompletionCost& cost);
  void special_costs(ParseState& ps, CompletionCost& cost);
  uint32_t cost_of(ParseState& ps, CompletionCost& cost, uint32_t state, bool fresh);
  void note(int32_t token, uint32_t c) {
    after_[token] = c;
    max_ = std::max(max_, c);
  }

  const CompiledGrammar& g_;
  const Vocabulary& vocab_;
  // The cost tables of one lexer epoch (not shared: a fork may run on another thread).
  std::shared_ptr<CompletionCost> cost_;
  const LexerEpoch* cost_epoch_ = nullptr;
  // The cost after each token of the last state whose budget was asked, with the largest one,
  // kept while the state repeats.
  bool valid_ = false, fresh_ = false;
  uint32_t state_ = 0, rows_ = 0, consumed_ = 0;
  uint64_t serial_ = 0;
  uint32_t max_ = 0;                 // the largest cost after an allowed token
  std::vector<uint32_t> after_;      // per token: the cost after it (CompletionCost::kInf: unknown)
  std::vector<uint32_t> unbudgeted_;  // scratch: the mask before the budget
  // cost_of's memo for one walk: most tokens stay inside the current lexeme and share a few
  // lexer states.
  struct Slot {
    uint64_t serial = 0;  // parser serials start at 1
    uint32_t state = 0;
    bool fresh = false;
    uint32_t cost = 0;
  };
  static constexpr size_t kSlots = 256;
  Slot slots_[kSlots];
  deadline::Ticker ticker_;  // trie nodes walked, for the time limits
};

}  // namespace stencil
