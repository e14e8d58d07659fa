#include "cost/grammar_costs.h"

#include <algorithm>

#include "lexer/lexer.h"
#include "support/heap_size.h"
#include "support/work_limit.h"

namespace stencil {

namespace {
constexpr size_t kLexemeSearchStates = 1u << 15;  // per lexeme of the grammar, once
// Trie nodes a search may walk (each state it expands walks the trie, unless an earlier search
// did: where every token leads to a state of its own, as with a pattern beside a length, a walk
// takes milliseconds); past them the path in single bytes (path_to_end) bounds the cost.
constexpr size_t kLexemeSearchWork = 1u << 21;
// Derivative work (support/work_limit.h) per lexeme search, once per lexer epoch: a 40,000-value
// enum of plain numbers needs 2.4 s (over 2^24 units); the most of 250 MaskBench schemas was
// 0.83M units. A lexer whose states each cost milliseconds (three counted patterns intersected:
// 1.5 us a unit) spent minutes here: the seconds bound it.
constexpr uint64_t kLexemeSearchDerivatives = 1u << 26;
constexpr double kLexemeSearchSeconds = 8;
}  // namespace

GrammarCosts::GrammarCosts(const Grammar& g, LexemeSearch& search, std::atomic<size_t>& bytes) {
  using cost::add;
  using cost::kInf;
  deadline::Ticker ticker;
  lexeme_min.assign(g.lexemes.size(), kInf);
  for (uint32_t l = 0; l < g.lexemes.size(); ++l) {
    if (g.lexemes[l].special) {
      lexeme_min[l] = g.lexemes[l].token_ids.empty() ? kInf : 1;
      continue;
    }
    try {  // (unknown past its work limit: no bound then goes through the lexeme)
      work::Limit limit(kLexemeSearchDerivatives, kLexemeSearchSeconds);
      lexeme_min[l] =
          search.tokens_to_end(search.lexer().start_state({l}), l, kLexemeSearchStates, kLexemeSearchWork, ticker);
    } catch (const WorkSpent&) {
      lexeme_min[l] = kInf;
    }
  }
  // Nonterminals: the least fixpoint of min over rules of the sum of their symbols.
  const size_t n_nt = g.nonterminal_names.size();
  std::vector<uint32_t> nt_min(n_nt, kInf);
  auto sym_cost = [&](Symbol s) { return is_terminal(s) ? lexeme_min[symbol_index(s)] : nt_min[s]; };
  for (bool changed = true; changed;) {
    changed = false;
    ticker.tick(static_cast<uint32_t>(std::min<size_t>(g.rules.size(), 1u << 20)));  // a chain takes a pass per link
    for (const Rule& r : g.rules) {
      uint32_t c = 0;
      for (Symbol s : r.rhs) c = add(c, sym_cost(s));
      if (c < nt_min[r.lhs]) {
        nt_min[r.lhs] = c;
        changed = true;
      }
    }
  }
  rest.assign(g.dotted.size(), 0);
  rule_at.assign(g.dotted.size(), 0);
  for (uint32_t r = 0; r < g.rules.size(); ++r) {
    const uint32_t b = g.rule_begin[r];
    const size_t n = g.rules[r].rhs.size();
    rule_at[b + n] = r;
    for (size_t i = n; i-- > 0;) {
      rest[b + i] = add(sym_cost(g.dotted[b + i]), rest[b + i + 1]);
      rule_at[b + i] = r;
    }
  }
  bytes.fetch_add(heap::of(lexeme_min) + heap::of(rest) + heap::of(rule_at), std::memory_order_relaxed);
}

}  // namespace stencil
