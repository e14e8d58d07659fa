// The fewest tokens that can still finish the output from a matcher state (the bound behind
// budget-aware masks; README.md says why it is sound): the parser's side, per matcher. Per
// parser row, the cost of finishing once a nonterminal completes there (a shortest path through
// the items waiting on it, down the chain of origins), memoized per row (by its content:
// RowIdents); the lexer's side comes from the epoch's CostTables.
#pragma once
#include <cstdint>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cost/cost_tables.h"
#include "cost/row_idents.h"
#include "parser/earley.h"
#include "support/deadline.h"

namespace stencil {

class RowCosts {
 public:
  static constexpr uint32_t kInf = cost::kInf;
  RowCosts(const Grammar& g, std::shared_ptr<CostTables> tables) : g_(g), t_(std::move(tables)) {}
  // How at() may answer inside a lexeme: exactly (a token search), or (kBytes, where the exact
  // searches ran out of work) by the distance in single bytes, an upper bound (known_bound), or
  // (kPaths, for one state) by that path cut into tokens (known_bound with paths).
  enum class Search : uint8_t { kExact, kBytes, kPaths };
  // The cost from lexer state `state` (fresh: no byte of its lexeme read yet) over the parser's
  // top row, memoized per (row, state, fresh): a mask asks a few states many times, and the
  // masks inside one lexeme the same rows again.
  uint32_t at(const EarleyParser& p, uint32_t state, bool fresh, Search search = Search::kExact);
  // at(), or where that fits `limit`, the distance in single bytes (no token search: a lexeme's
  // first states would each search the vocabulary, as at a string's opening quote). *exact says
  // which. Ask within_known first: within() searches, and memoizes what it finds.
  uint32_t within(const EarleyParser& p, uint32_t state, bool fresh, uint32_t limit, bool* exact);
  // within()'s answer where its memo holds it (no search, no work): false where within() must
  // search (a caller opens a work scope for that only).
  bool within_known(const EarleyParser& p, uint32_t state, bool fresh, uint32_t limit, uint32_t* cost, bool* exact) {
    const uint64_t row = idents_.top(p);
    const Slot& s = slots_[slot_at(row, state, fresh)];
    if (!s.holds(row, state, fresh) || (!s.exact && s.cost > limit)) return false;
    *cost = s.cost;
    *exact = s.exact;
    return true;
  }
  // Forgets the costs at()'s memo holds.
  void forget_states();
  // A bound on at() after any token that stays inside the lexeme of `state` (over the parser's
  // top row): the largest lexeme ceiling plus what follows the lexeme, over its live lexemes.
  // A lexeme's ceiling is read off its expression (Lexer::pair_bytes) and searched for
  // (LexemeCeiling::state_ceiling) only where that bound puts the sum over `limit`; where it
  // still does, the largest bytes_bound over the states one token reaches
  // (LexemeCeiling::reach) where that is less.
  // Without `search`, the expressions' bounds alone.
  uint32_t inner_ceiling(const EarleyParser& p, uint32_t state, uint32_t limit, bool search = true);
  // The same bound, read off the expressions alone, for the tokens of at most `reach` bytes
  // (LexemeCeiling::pairs_within).
  uint32_t inner_ceiling_within(const EarleyParser& p, uint32_t state, uint32_t reach);
  // A bound on at(p, state, false) from the lexemes' distances in single-byte tokens (no token
  // search): the least over the live lexemes not vetoed at the row. The distances are read off
  // the expressions, else (with `search`) found by a search over the lexer's states; only those
  // below `below` count (kInf where none is).
  uint32_t bytes_bound(const EarleyParser& p, uint32_t state, bool search = true, uint32_t below = kInf);
  // bytes_bound, or less where a token search's memo (or a lexeme's end, or a rest that is one
  // string) knows a lexeme's tokens to its end: no search. What a mask asks where the exact costs
  // ran out of work: a shortest path memoized earlier (the state's own cost, asked before the
  // mask) passes through states memoized alike, so its first token stays within the budget
  // whatever the single-byte distances say. With `paths`, a lexeme the memos do not know is
  // bounded by its path in single bytes cut into tokens (LexemeSearch::path_bound): a search in
  // bytes per lexeme, for one state rather than every state a mask reaches.
  uint32_t known_bound(const EarleyParser& p, uint32_t state, bool paths = false);
  CostTables& tables() { return *t_; }

 private:
  using Costs = cost::Costs;
  using Pair = LexemeCeiling::Pair;
  struct Row {
    Costs up;                 // nonterminal -> cost to finish once it completes at this row
    Costs scan;               // lexeme -> cost once it is scanned from this row (memo)
  };
  static uint32_t find(const Costs& c, uint32_t id);
  uint32_t exact(const EarleyParser& p, uint32_t state, bool fresh);  // at() without the memo
  struct Slot {  // an answer of at()'s memo with its key
    uint64_t row = 0;  // the top row's id (RowIdents: ids start at 1)
    uint32_t state = 0;
    bool fresh = false;
    bool exact = false;  // else cost bounds it (bytes_bound)
    uint32_t cost = 0;
    bool holds(uint64_t r, uint32_t st, bool f) const { return row == r && state == st && fresh == f; }
  };
  static size_t slot_at(uint64_t row, uint32_t state, bool fresh) {
    return (state * 0x9e3779b1u ^ static_cast<uint32_t>(row) * 31u ^ fresh) & (kSlots - 1);
  }
  Slot& slot(uint64_t row, uint32_t state, bool fresh) { return slots_[slot_at(row, state, fresh)]; }
  const Costs& lexer_costs(uint32_t state);
  const std::vector<Pair>& pairs(uint32_t state);
  uint32_t pairs_ceiling(const EarleyParser& p, const std::vector<Pair>& all, uint32_t limit, bool search);
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
    uint64_t id = 0;  // of the row whose costs these are (RowIdents: ids start at 1)
    Row costs;
    // The row's fresh cost (fresh_cost: from it with no byte of the next lexeme read), for the
    // row of id fresh_id: asked without its up costs, so kept apart from them.
    uint64_t fresh_id = 0;
    uint32_t fresh = kInf;
  };
  std::vector<RowSlot> rows_;  // per parser row index
  // Room in rows_ for every row of p, made before a memo's slot is read: the calls nested in a
  // row's costs ask only lower rows, so its slot stays where it is.
  void fit_rows(const EarleyParser& p) {
    if (rows_.size() < p.num_rows()) rows_.resize(p.num_rows() * 2);
  }
  // finish_item's reads of a lower row's up costs, by (row id, nonterminal): a row holds
  // thousands of items that wait on a few nonterminals at a few origins (binary searches were a
  // third of a budget mask's time in large recursive grammars).
  struct UpSlot {
    uint64_t id = 0;
    uint32_t nt = 0, cost = 0;
  };
  static constexpr size_t kUpSlots = 1024;
  UpSlot ups_[kUpSlots];
  static constexpr size_t kSlots = 256;
  Slot slots_[kSlots];  // at()'s memo, one slot per hash of its key
  RowIdents idents_;
  std::vector<uint32_t> dist_, touched_;  // row_costs' scratch
  struct Edge {
    uint32_t lhs, waited, rest, next;  // an item lhs -> ... . waited rest, of this row's origin
  };
  static constexpr uint32_t kNoEdge = ~0u;
  std::vector<Edge> edges_;
  std::vector<uint32_t> first_edge_;  // by lhs: its last edge (kNoEdge: none)
  std::vector<std::pair<uint32_t, uint32_t>> heap_;
  deadline::Ticker ticker_;  // items and nonterminals costed
};

}  // namespace stencil
