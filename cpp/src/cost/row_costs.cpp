#include "cost/row_costs.h"

#include <algorithm>
#include <functional>

#include "lexer/lexer.h"

namespace stencil {

using cost::add;

uint32_t RowCosts::find(const Costs& c, uint32_t id) {
  auto it = std::lower_bound(c.begin(), c.end(), std::make_pair(id, 0u));
  return it != c.end() && it->first == id ? it->second : kInf;
}

const RowCosts::Costs& RowCosts::lexer_costs(uint32_t state) {
  return states_.get(state, [&] { return &t_->lexer_costs(state); });
}

const std::vector<RowCosts::Pair>& RowCosts::pairs(uint32_t state) {
  return pairs_.get(state, [&] { return &t_->ceiling.pairs(state); });
}

// The cost of an item once the symbols from its dot on (costing `rest`) are read: its rule
// completes, and then whatever waits on its nonterminal at its origin goes on.
uint32_t RowCosts::finish_item(const EarleyParser& p, const EarleyItem& it, uint32_t rest) {
  const uint32_t rule = t_->grammar.rule_at[it.pos];
  if (rule == 0) return rest;  // the start rule: the parse is complete
  const uint32_t lhs = g_.rules[rule].lhs;
  const uint64_t id = idents_.at(p, it.origin);  // (a row's up costs hold while its content does)
  UpSlot& u = ups_[(static_cast<uint32_t>(id) * 0x9e3779b1u ^ lhs * 0x85ebca6bu) >> 22];
  if (u.id != id || u.nt != lhs) u = {id, lhs, find(row_costs(p, it.origin).up, lhs)};
  return add(rest, u.cost);
}

RowCosts::Row& RowCosts::row_costs(const EarleyParser& p, uint32_t row) {
  const uint64_t id = idents_.at(p, row);
  // One slot per row index: the parser's rows are a stack, and a slot holds the costs of the row
  // with its id (walks push and pop many short-lived rows: the slots' vectors are reused).
  fit_rows(p);
  if (rows_[row].id == id) return rows_[row].costs;
  // Rows below first, lowest first: each needs only rows under it, so no deep recursion
  // (a long list written as right recursion chains its items through every earlier row).
  std::vector<uint32_t> missing;
  for (uint32_t r = row; r-- > 0 && rows_[r].id != idents_.at(p, r);) missing.push_back(r);
  for (size_t i = missing.size(); i-- > 0;) row_costs(p, missing[i]);
  // up[A]: items of this row waiting on A, each either finishing through a lower row (a base
  // cost) or through another nonterminal completing at this same row (an edge): Dijkstra.
  const EarleyRow& r = p.row(row);
  // Scratch kept across rows (a walk costs many short-lived rows): distances per nonterminal
  // with the ones touched, the edges, the heap.
  if (dist_.size() < g_.nonterminal_names.size()) {
    dist_.assign(g_.nonterminal_names.size(), kInf);
    first_edge_.assign(g_.nonterminal_names.size(), kNoEdge);
  }
  for (uint32_t nt : touched_) dist_[nt] = kInf;  // (a run cut short by a limit left them set)
  for (const Edge& e : edges_) first_edge_[e.lhs] = kNoEdge;
  touched_.clear();
  edges_.clear();  // per lhs a list through Edge::next from first_edge_ (no sort of thousands)
  heap_.clear();   // (cost, nonterminal), a min-heap
  // A nonterminal goes on the heap only where a local item's lhs it is (it has edges): the others'
  // distances are final as they are lowered, and the items' base costs are all known before the
  // heap is made (one make_heap, not a push per item: thousands per row in large grammars).
  bool searching = false;
  auto relax = [&](uint32_t nt, uint32_t c) {
    if (c >= kInf || dist_[nt] <= c) return;
    if (dist_[nt] == kInf) touched_.push_back(nt);
    dist_[nt] = c;
    if (!searching || first_edge_[nt] == kNoEdge) return;
    heap_.push_back({c, nt});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  };
  for (uint32_t j = r.begin; j < r.end; ++j) {
    ticker_.tick();  // (per item: a row of thousands looks at the clock within it)
    const EarleyItem it = p.item(j);
    const Symbol sym = g_.dotted[it.pos];
    if (is_terminal(sym) || Grammar::is_end(sym)) continue;
    const uint32_t rule = t_->grammar.rule_at[it.pos];
    const uint32_t rest = t_->grammar.rest[it.pos + 1];
    if (rule != 0 && it.origin == row) {
      const uint32_t lhs = g_.rules[rule].lhs;
      edges_.push_back({lhs, sym, rest, first_edge_[lhs]});
      first_edge_[lhs] = static_cast<uint32_t>(edges_.size() - 1);
    } else {
      relax(sym, finish_item(p, it, rest));
    }
  }
  for (uint32_t nt : touched_)
    if (first_edge_[nt] != kNoEdge) heap_.push_back({dist_[nt], nt});
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
  searching = true;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const auto [c, nt] = heap_.back();
    heap_.pop_back();
    ticker_.tick();
    if (dist_[nt] != c) continue;
    for (uint32_t e = first_edge_[nt]; e != kNoEdge; e = edges_[e].next)
      relax(edges_[e].waited, add(c, edges_[e].rest));
  }
  RowSlot& slot = rows_[row];
  slot.id = id;
  Row& rc = slot.costs;
  rc.up.clear();
  rc.scan.clear();
  for (uint32_t nt : touched_) {
    rc.up.push_back({nt, dist_[nt]});
    dist_[nt] = kInf;
  }
  std::sort(rc.up.begin(), rc.up.end());
  return rc;
}

// Above row 0 the items predicted at the row (origin == row) are left out: each costs at least
// the item that predicted it (a rule's rest is at least its nonterminal's fewest tokens, and the
// symbols a prediction stepped over are nullable, costing 0), and that chain ends at an item from
// below. So the least is the same without them, and the row's own up costs (row_costs' search)
// are not needed: a walk asks this of a row it pushed at every token that ends a lexeme.
uint32_t RowCosts::fresh_cost(const EarleyParser& p, uint32_t row) {
  const uint64_t id = idents_.at(p, row);
  fit_rows(p);
  if (rows_[row].fresh_id == id) return rows_[row].fresh;
  const EarleyRow& r = p.row(row);
  uint32_t best = kInf;
  for (uint32_t j = r.begin; j < r.end; ++j) {
    const EarleyItem it = p.item(j);
    if (row > 0 && it.origin == row) continue;
    best = std::min(best, finish_item(p, it, t_->grammar.rest[it.pos]));
  }
  rows_[row].fresh_id = id;  // (finish_item asks lower rows only: no resize since)
  rows_[row].fresh = best;
  return best;
}

uint32_t RowCosts::scan_cost(const EarleyParser& p, uint32_t row, uint32_t lexeme) {
  Row& rc = row_costs(p, row);
  for (const auto& [l, c] : rc.scan)
    if (l == lexeme) return c;
  const EarleyRow& r = p.row(row);
  const Symbol want = lexeme | kTerminalBit;
  uint32_t best = kInf;
  for (uint32_t j = r.begin; j < r.end; ++j) {
    const EarleyItem it = p.item(j);
    if (g_.dotted[it.pos] == want) best = std::min(best, finish_item(p, it, t_->grammar.rest[it.pos + 1]));
  }
  rc.scan.push_back({lexeme, best});
  return best;
}

// A token that stays inside the lexeme leads each (lexeme, expression) pair of `state` to one
// reachable from it, whose cost is at most that pair's ceiling plus what follows its lexeme; the
// cost after the token is the least over the pairs still alive, so at most the largest such sum.
// That sum is loose where the pair of the largest ceiling dies, or gives way, on the bytes that
// make it large (a key pattern `.*[0-9a-f]{32}.*` beside the keys that do not match it: a byte
// that resets the pattern's count keeps the other key alive), or where an expression's bound
// is (its ceiling is the largest over a union's alternatives, `.*` among them once the pattern
// matched): the states one token reaches, each with the least of its pairs, are then searched.
uint32_t RowCosts::inner_ceiling(const EarleyParser& p, uint32_t state, uint32_t limit, bool search) {
  const uint32_t most = pairs_ceiling(p, pairs(state), limit, search);
  if (most <= limit || !search) return most;
  uint32_t joint = 0;
  const std::vector<uint32_t>& reach = t_->ceiling.reach(state);
  for (size_t i = 0; i < reach.size() && joint < most; ++i) joint = std::max(joint, bytes_bound(p, reach[i]));
  return reach.empty() ? most : std::min(most, joint);
}

uint32_t RowCosts::inner_ceiling_within(const EarleyParser& p, uint32_t state, uint32_t reach) {
  return pairs_ceiling(p, t_->ceiling.pairs_within(state, reach), kInf, false);
}

// The largest ceiling plus what follows the lexeme over `all`, each ceiling searched for
// (`search`) where the sum is over `limit`.
uint32_t RowCosts::pairs_ceiling(const EarleyParser& p, const std::vector<Pair>& all, uint32_t limit, bool search) {
  const uint32_t row = static_cast<uint32_t>(p.num_rows() - 1);
  uint32_t most = 0;
  for (const Pair& pair : all) {
    if (pair.within != LexemeCeiling::kNoPair && !p.vetoed(row, all[pair.within].lexeme)) continue;
    // A lexeme vetoed at the row (a key written already) takes no token: the mask leaves out
    // those that lead to it alone.
    if (pair.lexeme == LexemeCeiling::kNoLexeme) {  // (no ceiling is known for several lexemes)
      const std::vector<uint32_t> live = t_->lexer().live_lexemes(pair.alone);
      if (std::all_of(live.begin(), live.end(), [&](uint32_t l) { return p.vetoed(row, l); })) continue;
      most = kInf;
      break;
    }
    if (p.vetoed(row, pair.lexeme)) continue;
    const uint32_t after = after_lexeme(p, row, pair.lexeme);
    uint32_t up = after >= kInf ? kInf : pair.ceiling;
    if (search && add(up, after) > limit && after < kInf)
      up = std::min(up, t_->ceiling.state_ceiling(pair.alone));  // the search, where it may fit
    most = std::max(most, add(up, after));
    if (most >= kInf) break;
  }
  return most;
}

uint32_t RowCosts::after_lexeme(const EarleyParser& p, uint32_t row, uint32_t lexeme) {
  return g_.lexemes[lexeme].ignore ? fresh_cost(p, row) : scan_cost(p, row, lexeme);
}

uint32_t RowCosts::bytes_bound(const EarleyParser& p, uint32_t state, bool search, uint32_t below) {
  const uint32_t row = static_cast<uint32_t>(p.num_rows() - 1);
  uint32_t best = kInf;
  for (const Pair& pair : pairs(state)) {
    if (pair.lexeme == LexemeCeiling::kNoLexeme || p.vetoed(row, pair.lexeme)) continue;
    const uint32_t d = pair.shortest < kInf || !search ? pair.shortest : t_->search.state_bytes(pair.alone);
    if (d >= best || d >= below) continue;
    const uint32_t after = after_lexeme(p, row, pair.lexeme);
    best = std::min(best, add(d, after));
  }
  return best;
}

uint32_t RowCosts::known_bound(const EarleyParser& p, uint32_t state, bool paths) {
  const uint32_t row = static_cast<uint32_t>(p.num_rows() - 1);
  uint32_t best = bytes_bound(p, state);
  for (const Pair& pair : pairs(state)) {
    if (pair.lexeme == LexemeCeiling::kNoLexeme || p.vetoed(row, pair.lexeme)) continue;
    const uint32_t d = paths ? t_->search.path_bound(pair.alone, pair.lexeme, ticker_)
                             : t_->search.known_to_end(pair.alone, pair.lexeme, ticker_);
    if (d >= best) continue;
    best = std::min(best, add(d, after_lexeme(p, row, pair.lexeme)));
  }
  return best;
}

uint32_t RowCosts::at(const EarleyParser& p, uint32_t state, bool fresh, Search search) {
  const uint64_t row = idents_.top(p);
  Slot& s = slot(row, state, fresh);
  const bool bytes = search != Search::kExact;
  // (kPaths recomputes a bound kBytes memoized: the paths are memoized apart, in the search)
  if (!s.holds(row, state, fresh) || (!s.exact && (!bytes || search == Search::kPaths))) {
    if (bytes && !fresh)
      s = {row, state, fresh, false, known_bound(p, state, search == Search::kPaths)};
    else
      s = {row, state, fresh, true, exact(p, state, fresh)};
  }
  return s.cost;
}

uint32_t RowCosts::within(const EarleyParser& p, uint32_t state, bool fresh, uint32_t limit, bool* exact_cost) {
  const uint64_t row = idents_.top(p);
  Slot& s = slot(row, state, fresh);
  const uint32_t bound = fresh ? kInf : bytes_bound(p, state);
  if (bound <= limit)
    s = {row, state, fresh, false, bound};
  else
    s = {row, state, fresh, true, exact(p, state, fresh)};
  *exact_cost = s.exact;
  return s.cost;
}

void RowCosts::forget_states() {
  for (Slot& s : slots_) s = Slot{};
}

uint32_t RowCosts::exact(const EarleyParser& p, uint32_t state, bool fresh) {
  const uint32_t row = static_cast<uint32_t>(p.num_rows() - 1);
  if (fresh) return fresh_cost(p, row);
  uint32_t best = kInf;
  for (const auto& [l, c] : lexer_costs(state)) {
    if (c >= best) continue;
    const uint32_t after = after_lexeme(p, row, l);
    best = std::min(best, add(c, after));
  }
  return best;
}

}  // namespace stencil
