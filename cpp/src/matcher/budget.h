// Budget-aware masks (Matcher::fill_mask_within): with k tokens left, a token t stays allowed
// only when the cost after t (RowCosts: the fewest tokens that finish the output) is at
// most k - 1. See budget.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "cost/inner_costs.h"
#include "cost/row_costs.h"
#include "matcher/lexer_epoch.h"
#include "matcher/mask_walker.h"
#include "matcher/parse_state.h"
#include "matcher/trie_costs.h"

namespace stencil {

class TokenBudget : private MaskWalker::CostSink {
 public:
  explicit TokenBudget(const CompiledGrammar& g) : g_(g), vocab_(g.vocab()), trie_(g) {}
  ~TokenBudget() = default;
  TokenBudget(const TokenBudget&) = delete;
  TokenBudget& operator=(const TokenBudget&) = delete;

  // The fewest tokens that finish the output from ps (in `epoch`); -1 when none is known.
  int64_t min_completion_tokens(ParseState& ps, const LexerEpoch& epoch);
  // Before the mask walk of ps under a budget of `remaining` tokens: the sink to hand the walk
  // (it then reports the costs after the tokens it allows past a lexeme's end), or null when the
  // costs are known already (the state repeats) or restrict must walk the trie itself.
  // `replays`: the walk will replay its last mask (MaskWalker::replays).
  MaskWalker::CostSink* begin(ParseState& ps, const LexerEpoch& epoch, bool replays, int64_t remaining);
  // Removes from the mask `words` (need words, the unbudgeted mask of ps) the tokens after which
  // the output cannot end valid within `remaining` tokens, this one included.
  void restrict(ParseState& ps, const LexerEpoch& epoch, uint32_t* words, size_t need, int64_t remaining);

 private:
  struct Key {
    uint32_t state = 0, rows = 0;
    uint64_t serial = 0;
    bool fresh = false;
    bool operator==(const Key& o) const {
      return state == o.state && rows == o.rows && serial == o.serial && fresh == o.fresh;
    }
  };
  Key key_of(ParseState& ps) const;
  uint32_t consumed(ParseState& ps) const;
  void token_reached(int32_t token, ParseState& ps) override;
  [[gnu::noinline]] void cost_reached(uint64_t serial, uint32_t state, bool fresh, ParseState& ps);
  [[gnu::noinline, gnu::cold]] void grow_reached();
  uint32_t last_noted() const override { return reached_.empty() ? 0 : reached_.back().second; }
  void token_noted(int32_t token, uint32_t cost) override { reached_.emplace_back(token, cost); }
  size_t noted() const override { return reached_.size(); }
  void forget_after(size_t n) override { reached_.resize(n); }
  void keep_noted(size_t n, const std::vector<uint8_t>& keep) override {
    size_t to = n;
    for (size_t i = n; i < reached_.size(); ++i)
      if (keep[i - n]) reached_[to++] = reached_[i];
    reached_.resize(to);
  }
  uint32_t reached_max() const;  // the largest cost in reached_
  bool restrict_steps(uint32_t* words, size_t need, uint32_t left);
  uint32_t cheapest_known(size_t need);
  RowCosts& cost(const LexerEpoch& epoch);
  // search: how the whole-trie walk costs a token inside a lexeme (kBytes: by single-byte
  // distances, where the exact search ran out of work).
  void walk_costs(ParseState& ps, const LexerEpoch& epoch, RowCosts::Search search = RowCosts::Search::kExact);
  void cost_specials(ParseState& ps);
  // Runs f with what is left of this call's derivative work (kCallWork); false when it ran out:
  // the exact search then gives up on this state (restrict bounds the costs coarsely instead),
  // and ps (when given) is back as it was.
  template <class F>
  bool within_work(ParseState* ps, F&& f);
  // A fresh allowance of derivative work for what this call does next (within_work).
  void allow_work(uint64_t units) {
    work_left_ = units;
    gave_up_ = false;
  }
  void restrict_searched(ParseState& ps, const LexerEpoch& epoch, uint32_t* words, size_t need, int64_t remaining,
                         uint32_t left);
  static uint32_t left_of(int64_t remaining);  // the most tokens a cost may take after this one

  // A cost token_reached found, with its key (parser serials start at 1).
  struct Last {
    uint64_t serial = 0;
    uint32_t state = 0;
    bool fresh = false;
    uint32_t cost = 0;
  };
  const CompiledGrammar& g_;
  const Vocabulary& vocab_;
  // The cost tables of one lexer epoch (not shared: a fork may run on another thread).
  std::shared_ptr<RowCosts> cost_;
  const LexerEpoch* cost_epoch_ = nullptr;
  // The costs after the tokens of the last state whose budget was asked (key_), with the largest
  // one, kept while the state repeats. The tokens past a lexeme's end and the specials have
  // theirs in reached_ (from the mask walk); the inner tokens (staying inside the lexeme) are
  // bounded by the cost room (InnerCosts) only as tightly as the budget needs. Where the walk
  // cannot report (lexemes with token limits: whole_walk_), or the inner costs cannot serve, the
  // costs come from a walk of the whole trie (trie_).
  enum class Stage : uint8_t {
    kNone,        // not known
    kInner,       // reached_, and the inner tokens by inner_
    kWalked,      // trie_: per token, from a walk of the whole trie
    kUnbudgeted,  // every search ran out of work: the mask stays unbudgeted
  };
  Stage stage_ = Stage::kNone;
  bool whole_walk_ = false;  // the mask walk cannot report costs (lexemes with token limits)
  Key key_;
  uint32_t consumed_ = 0;
  uint32_t max_ = 0;  // the largest cost after an allowed token (or a bound of it)
  uint32_t reached_max_ = 0;  // kInner: the largest cost in reached_
  // This fill's budget (left_of), and the largest cost in reached_ that is a bound only (the
  // exact cost is searched for only where the bound is over the budget).
  uint32_t left_ = 0, loose_ = 0;
  // The last cost token_reached found, with its key: runs of tokens end alike.
  Last last_{};
  InnerCosts inner_;
  TrieCosts::Costs reached_;   // (token, cost) from the walk and the specials
  TrieCosts::Costs specials_;  // (token, cost) of the specials the grammar takes here
  std::vector<uint32_t> unbudgeted_;  // scratch: the mask before the budget
  std::vector<uint32_t> unknown_;     // cheapest_known's scratch: the tokens not costed yet
  uint64_t work_left_ = 0;   // this call's derivative work still allowed (within_work)
  bool gave_up_ = false;     // this call's work ran out
  TrieCosts trie_;  // the whole-trie walk's costs (kWalked)
};

}  // namespace stencil
