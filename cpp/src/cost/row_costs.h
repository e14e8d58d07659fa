// The fewest tokens that can still finish the output from a matcher state (the bound behind
// budget-aware masks; README.md says why it is sound): the parser's side, per matcher. Per
// parser row, the cost of finishing once a nonterminal completes there (a shortest path through
// the items waiting on it, down the chain of origins), memoized per row; the lexer's side comes
// from the epoch's CostTables.
#pragma once
#include <cstdint>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cost/cost_tables.h"
#include "parser/earley.h"
#include "support/deadline.h"

namespace stencil {

class RowCosts {
 public:
  static constexpr uint32_t kInf = cost::kInf;
  RowCosts(const Grammar& g, std::shared_ptr<CostTables> tables) : g_(g), t_(std::move(tables)) {}
  // The cost from lexer state `state` (fresh: no byte of its lexeme read yet) over the parser's
  // top row.
  uint32_t at(const EarleyParser& p, uint32_t state, bool fresh);
  // A bound on at() after any token that stays inside the lexeme of `state` (over the parser's
  // top row): the largest lexeme ceiling plus what follows the lexeme, over its live lexemes.
  // A lexeme's ceiling is read off its expression (Lexer::pair_bytes) and searched for
  // (LexemeCeiling::state_ceiling) only where that bound puts the sum over `limit`; where it
  // still does, the largest bytes_bound over the states one token reaches
  // (LexemeCeiling::reach) where that is less.
  uint32_t inner_ceiling(const EarleyParser& p, uint32_t state, uint32_t limit);
  // A bound on at(p, state, false) from the lexemes' distances in single-byte tokens (no token
  // search): the least over the live lexemes not vetoed at the row. The distances are read off
  // the expressions, else (with `search`) found by a search over the lexer's states.
  uint32_t bytes_bound(const EarleyParser& p, uint32_t state, bool search = true);
  CostTables& tables() { return *t_; }

 private:
  using Costs = cost::Costs;
  using Pair = LexemeCeiling::Pair;
  struct Row {
    Costs up;                 // nonterminal -> cost to finish once it completes at this row
    uint32_t fresh = kInf;    // from this row with no byte of the next lexeme read
    bool has_fresh = false;
    Costs scan;               // lexeme -> cost once it is scanned from this row (memo)
  };
  static uint32_t find(const Costs& c, uint32_t id);
  const Costs& lexer_costs(uint32_t state);
  const std::vector<Pair>& pairs(uint32_t state);
  Row& row_costs(const EarleyParser& p, uint32_t row);
  uint32_t finish_item(const EarleyParser& p, const EarleyItem& it, uint32_t rest);
  uint32_t fresh_cost(const EarleyParser& p, uint32_t row);
  uint32_t scan_cost(const EarleyParser& p, uint32_t row, uint32_t lexeme);
  // After a lexeme ends at the top row: an ignored one (white space) ends back where it
  // started (the row's fresh cost), any other is scanned.
  uint32_t after_lexeme(const EarleyParser& p, uint32_t row, uint32_t lexeme);

  const Grammar& g_;
  std::shared_ptr<CostTables> t_;
  // A lock-free front for the tables' memos of lexer states (their entries never move): a map,
  // and before it the states asked lately (a mask asks a few states many times).
  template <class T>
  struct Front {
    std::unordered_map<uint32_t, const T*> all;
    uint32_t recent_state[64] = {};  // (0 is Lexer::kDead: never asked)
    const T* recent[64] = {};
    template <class Find>
    const T& get(uint32_t state, Find find) {
      const size_t i = (state * 2654435761u) >> 26;
      if (recent_state[i] == state && recent[i]) return *recent[i];
      auto it = all.find(state);
      const T* found = it != all.end() ? it->second : all.emplace(state, find()).first->second;
      recent_state[i] = state;
      recent[i] = found;
      return *found;
    }
  };
  Front<Costs> states_;             // t_->lexer_costs
  Front<std::vector<Pair>> pairs_;  // t_->ceiling.pairs
  struct RowSlot {
    uint64_t serial = 0;  // of the row whose costs these are (parser serials start at 1)
    Row costs;
  };
  std::vector<RowSlot> rows_;  // per parser row index
  std::vector<uint32_t> dist_, touched_;  // row_costs' scratch
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> edges_;
  std::vector<std::pair<uint32_t, uint32_t>> heap_;
  deadline::Ticker ticker_;  // items and nonterminals costed
};

}  // namespace stencil
