// GrammarBuilder::build: check the rules, prune what can never be used, copy
// the used expressions into the grammar's own store, and add the start rule.
#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>

#include "grammar/ir.h"
#include "regex/byte_classes.h"
#include "regex/derivative.h"
#include "stencil/errors.h"
#include "stencil/grammar.h"
#include "support/heap_size.h"

namespace stencil {

// Copies e and what it uses into dst. Children always have smaller ids than
// their parents, so copying the reachable ids in increasing order needs no
// recursion (expressions can nest very deeply).
// The least set of nonterminals closed under "a rule's left side holds when every symbol of its
// right side holds" (terminals hold by terminal_ok): productive and nullable rules. A work list
// over each rule's count of symbols not yet known to hold keeps it linear in the grammar's size
// (sweeping the rules until nothing changes was quadratic on a long chain of unit rules).
template <class TerminalOk>
static std::vector<uint8_t> rules_closure(size_t num_nt, const std::vector<Rule>& rules, TerminalOk terminal_ok) {
  std::vector<uint8_t> holds(num_nt, 0);
  std::vector<uint32_t> missing(rules.size(), 0);
  std::vector<uint32_t> uses_begin(num_nt + 1, 0), uses;  // rules in which each nonterminal occurs
  for (const Rule& r : rules)
    for (Symbol s : r.rhs)
      if (!is_terminal(s)) ++uses_begin[s + 1];
  for (size_t i = 0; i < num_nt; ++i) uses_begin[i + 1] += uses_begin[i];
  uses.resize(uses_begin[num_nt]);
  std::vector<uint32_t> fill(uses_begin.begin(), uses_begin.end() - 1);
  std::vector<uint32_t> ready;
  for (uint32_t ri = 0; ri < rules.size(); ++ri) {
    bool possible = true;
    for (Symbol s : rules[ri].rhs) {
      if (is_terminal(s)) {
        possible = possible && terminal_ok(s);
      } else {
        uses[fill[s]++] = ri;
        ++missing[ri];
      }
    }
    if (!possible)
      missing[ri] = ~0u;  // never: a terminal fails
    else if (missing[ri] == 0)
      ready.push_back(ri);
  }
  while (!ready.empty()) {
    const uint32_t lhs = rules[ready.back()].lhs;
    ready.pop_back();
    if (holds[lhs]) continue;
    holds[lhs] = 1;
    for (uint32_t k = uses_begin[lhs]; k < uses_begin[lhs + 1]; ++k) {
      uint32_t ri = uses[k];
      if (missing[ri] != ~0u && missing[ri] > 0 && --missing[ri] == 0) ready.push_back(ri);
    }
  }
  return holds;
}

namespace {

// Copies expressions of the builder's store into the grammar's, each once (a table by id, not a
// map and a seen-set per lexeme: a build copies every lexeme, and these were most of its
// allocations).
class ExprCopy {
 public:
  ExprCopy(const ExprStore& src, ExprStore& dst) : src_(src), dst_(dst), memo_(src.size(), kNone) {}
  ExprId operator()(ExprId e) {
    if (trivial(e)) return e;
    if (memo_[e] != kNone) return memo_[e];
    stack_.assign(1, e);
    reach_.clear();
    memo_[e] = kPending;
    while (!stack_.empty()) {
      const ExprId cur = stack_.back();
      stack_.pop_back();
      reach_.push_back(cur);
      const ExprNode& n = src_.node(cur);
      if (n.kind == ExprKind::Concat) {
        visit(n.a);
        visit(n.b);
      } else if (n.kind == ExprKind::Not || n.kind == ExprKind::Repeat) {
        visit(n.a);
      } else if (n.kind == ExprKind::Or || n.kind == ExprKind::And) {
        for (uint32_t i = 0; i < n.args_len; ++i) visit(src_.args(n)[i]);
      }
    }
    // (hash-consing made every child before its parent: ascending ids copy children first)
    std::sort(reach_.begin(), reach_.end());
    for (ExprId cur : reach_) memo_[cur] = copy_node(src_.node(cur));
    return memo_[e];
  }

 private:
  static constexpr ExprId kNone = 0xFFFFFFFFu, kPending = 0xFFFFFFFEu;
  static bool trivial(ExprId e) { return e == ExprStore::kAnyByteStar || e <= ExprStore::kEmpty; }
  void visit(ExprId k) {
    if (trivial(k) || memo_[k] != kNone) return;
    memo_[k] = kPending;
    stack_.push_back(k);
  }
  ExprId get(ExprId k) const { return trivial(k) ? k : memo_[k]; }
  ExprId copy_node(const ExprNode& n) {
    switch (n.kind) {
      case ExprKind::Nothing:
        return ExprStore::kNothing;
      case ExprKind::Empty:
        return ExprStore::kEmpty;
      case ExprKind::Bytes:
        return dst_.bytes(src_.byteset(n.a));
      case ExprKind::Concat:
        return dst_.concat(get(n.a), get(n.b));
      case ExprKind::Or:
      case ExprKind::And:
        kids_.clear();
        for (uint32_t i = 0; i < n.args_len; ++i) kids_.push_back(get(src_.args(n)[i]));
        return n.kind == ExprKind::Or ? dst_.alt(kids_) : dst_.conj(kids_);
      case ExprKind::Not:
        return dst_.negate(get(n.a));
      case ExprKind::Repeat:
        return dst_.repeat(get(n.a), n.min, n.max);
      case ExprKind::Number:
        return dst_.number(src_.number_state(n.a));
    }
    return ExprStore::kNothing;
  }

  const ExprStore& src_;
  ExprStore& dst_;
  std::vector<ExprId> memo_;  // per source id: its copy (kNone: not yet, kPending: on the way)
  std::vector<ExprId> stack_, reach_, kids_;
};

using RulesOf = std::vector<std::vector<uint32_t>>;  // per nonterminal: its rules

// Rules used but never defined are an error wherever they are reachable from `start`.
void check_defined(Symbol start, const RulesOf& rules_of, const std::vector<Rule>& rules,
                   const std::vector<std::string>& names) {
  std::vector<uint8_t> seen(names.size(), 0);
  std::deque<uint32_t> queue{start};
  seen[start] = 1;
  while (!queue.empty()) {
    uint32_t nt = queue.front();
    queue.pop_front();
    if (rules_of[nt].empty()) throw GrammarError("rule '" + names[nt] + "' is used but has no definition");
    for (uint32_t r : rules_of[nt])
      for (Symbol s : rules[r].rhs)
        if (!is_terminal(s) && !seen[s]) {
          seen[s] = 1;
          queue.push_back(s);
        }
  }
}

// The parser runs next_key / next_item checks instead of predicting their rule: it must be empty.
void check_prediction_rules(const std::vector<CompletionCheck>& checks, const RulesOf& rules_of,
                            const std::vector<Rule>& rules, const std::vector<std::string>& names) {
  for (const CompletionCheck& c : checks)
    if (runs_at_prediction(c.kind))
      for (uint32_t r : rules_of[c.rule])
        if (!rules[r].rhs.empty())
          throw GrammarError(
              "add_check: a next_key or next_item check goes on a rule with only empty "
              "alternatives, and '" +
              names[c.rule] + "' has another");
}

// Per lexeme: whether its language is non-empty. Only lexemes using And/Not need a search.
std::vector<uint8_t> productive_lexemes(ExprStore& store, const std::vector<LexemeSpec>& lexemes) {
  std::vector<uint8_t> lex_ok(lexemes.size());
  std::unique_ptr<Deriver> deriver;
  for (size_t i = 0; i < lexemes.size(); ++i) {
    const LexemeSpec& l = lexemes[i];
    if (l.special || !store.node(l.expr).boolean) {
      lex_ok[i] = l.special || l.expr != ExprStore::kNothing;
      continue;
    }
    if (!deriver) {
      // Derivatives add expressions to the builder's store; they are never
      // copied into the grammar unless a lexeme uses them.
      deriver = std::make_unique<Deriver>(store, 10'000'000);
      deriver->set_class_representatives(ByteClasses::from_sets(store.all_bytesets()).representative);
    }
    lex_ok[i] = !deriver->is_empty(l.expr);
  }
  return lex_ok;
}

// The grammar as built: the rules reachable from the start through productive alternatives
// only, renumbered (the start rule `__start -> start` first), with the lexemes they use (and
// the productive ignored ones) copied into the grammar's own expression store.
class ReachableCopy {
 public:
  ReachableCopy(ExprStore& store, const std::vector<LexemeSpec>& lexemes, const std::vector<Rule>& rules,
                const std::vector<std::string>& names, const RulesOf& rules_of, std::vector<uint8_t> lex_ok,
                std::vector<uint8_t> productive, size_t max_exprs)
      : store_(store),
        lexemes_(lexemes),
        rules_(rules),
        names_(names),
        rules_of_(rules_of),
        lex_ok_(std::move(lex_ok)),
        productive_(std::move(productive)),
        nt_map_(names.size(), -1),
        lex_map_(lexemes.size(), -1),
        g_(std::make_shared<Grammar>(ExprStore(max_exprs))),
        copy_(store, g_->exprs) {}

  std::shared_ptr<Grammar> run(Symbol start, const std::vector<CompletionCheck>& checks,
                               const std::vector<LexemeCover>& covers) {
    const std::vector<uint32_t> order = number_rules(start);
    g_->rules.push_back({0, {1}});
    for (uint32_t nt : order)
      for (uint32_t ri : rules_of_[nt])
        if (productive(rules_[ri])) copy_rule(nt, rules_[ri]);
    for (size_t i = 0; i < lexemes_.size(); ++i)
      if (lexemes_[i].ignore && lex_ok_[i]) map_lexeme(static_cast<uint32_t>(i));
    for (const CompletionCheck& c : checks) {
      if (nt_map_[c.rule] < 0) continue;
      CompletionCheck m = c;
      m.rule = static_cast<uint32_t>(nt_map_[c.rule]);
      g_->checks.push_back(std::move(m));
    }
    for (const LexemeCover& c : covers) copy_cover(c);
    g_->start = 0;
    g_->finalize();
    return g_;
  }

 private:
  bool productive(const Rule& r) const {
    for (Symbol s : r.rhs)
      if (is_terminal(s) ? !lex_ok_[symbol_index(s)] : !productive_[s]) return false;
    return true;
  }
  // Numbers the nonterminals reachable from `start` (breadth first); returns them in that order.
  std::vector<uint32_t> number_rules(Symbol start) {
    g_->nonterminal_names.push_back("__start");
    std::deque<uint32_t> queue{start};
    nt_map_[start] = 1;
    g_->nonterminal_names.push_back(names_[start]);
    std::vector<uint32_t> order;
    while (!queue.empty()) {
      uint32_t nt = queue.front();
      queue.pop_front();
      order.push_back(nt);
      for (uint32_t ri : rules_of_[nt]) {
        const Rule& r = rules_[ri];
        if (!productive(r)) continue;
        for (Symbol s : r.rhs)
          if (!is_terminal(s) && nt_map_[s] < 0) {
            nt_map_[s] = static_cast<int64_t>(g_->nonterminal_names.size());
            g_->nonterminal_names.push_back(names_[s]);
            queue.push_back(s);
          }
      }
    }
    return order;
  }
  void copy_rule(uint32_t nt, const Rule& r) {
    Rule out{static_cast<uint32_t>(nt_map_[nt]), {}};
    for (Symbol s : r.rhs)
      out.rhs.push_back(is_terminal(s) ? (kTerminalBit | map_lexeme(symbol_index(s)))
                                       : static_cast<Symbol>(nt_map_[s]));
    g_->rules.push_back(std::move(out));
  }
  uint32_t map_lexeme(uint32_t lex) {
    if (lex_map_[lex] < 0) {
      lex_map_[lex] = static_cast<int64_t>(g_->lexemes.size());
      LexemeSpec spec = lexemes_[lex];
      spec.expr = copy_(spec.expr);
      spec.nonempty = lex_ok_[lex] != 0;
      g_->lexemes.push_back(std::move(spec));
    }
    return static_cast<uint32_t>(lex_map_[lex]);
  }

  // A lexeme with an empty language adds no word: left out. One not reachable (never in a lexer
  // state) makes the cover useless: dropped.
  void copy_cover(const LexemeCover& c) {
    LexemeCover out;
    for (uint32_t lex : c.lexemes) {
      if (!lex_ok_[lex]) continue;
      if (lex_map_[lex] < 0) return;
      out.lexemes.push_back(static_cast<uint32_t>(lex_map_[lex]));
    }
    if (out.lexemes.empty()) return;
    std::sort(out.lexemes.begin(), out.lexemes.end());
    out.expr = copy_(c.expr);
    g_->covers.push_back(std::move(out));
  }

  ExprStore& store_;
  const std::vector<LexemeSpec>& lexemes_;
  const std::vector<Rule>& rules_;
  const std::vector<std::string>& names_;
  const RulesOf& rules_of_;
  std::vector<uint8_t> lex_ok_, productive_;
  std::vector<int64_t> nt_map_, lex_map_;
  std::shared_ptr<Grammar> g_;
  ExprCopy copy_;
};

}  // namespace

std::shared_ptr<Grammar> GrammarBuilder::build(Symbol start) const {
  if (is_terminal(start)) throw GrammarError("build: the start symbol must be a rule, not a lexeme");
  check_symbol(start, "build");
  const size_t num_nt = names_.size();
  RulesOf rules_of(num_nt);
  for (uint32_t r = 0; r < rules_.size(); ++r) rules_of[rules_[r].lhs].push_back(r);
  check_defined(start, rules_of, rules_, names_);
  check_prediction_rules(checks_, rules_of, rules_, names_);
  // Productive symbols: lexemes with a non-empty language, rules with an
  // alternative made of productive symbols only.
  std::vector<uint8_t> lex_ok = productive_lexemes(*store_, lexemes_);
  std::vector<uint8_t> productive =
      rules_closure(num_nt, rules_, [&](Symbol s) { return lex_ok[symbol_index(s)] != 0; });
  if (!productive[start])
    throw GrammarError("the grammar's language is empty: rule '" + names_[start] + "' can never complete");
  ReachableCopy copy(*store_, lexemes_, rules_, names_, rules_of, std::move(lex_ok), std::move(productive),
                     limits_.max_exprs);
  return copy.run(start, checks_, covers_);
}

void Grammar::finalize() {
  const size_t num_nt = nonterminal_names.size();
  dotted.clear();
  rule_begin.clear();
  for (uint32_t r = 0; r < rules.size(); ++r) {
    rule_begin.push_back(static_cast<uint32_t>(dotted.size()));
    for (Symbol s : rules[r].rhs) dotted.push_back(s);
    dotted.push_back(kEndOfRule | r);
  }
  nt_rules_begin.assign(num_nt + 1, 0);
  for (const Rule& r : rules) nt_rules_begin[r.lhs + 1]++;
  for (size_t i = 0; i < num_nt; ++i) nt_rules_begin[i + 1] += nt_rules_begin[i];
  nt_rules.assign(rules.size(), 0);
  std::vector<uint32_t> fill(nt_rules_begin.begin(), nt_rules_begin.end() - 1);
  for (uint32_t r = 0; r < rules.size(); ++r) nt_rules[fill[rules[r].lhs]++] = r;
  nt_check.assign(num_nt, -1);
  for (size_t i = 0; i < checks.size(); ++i) nt_check[checks[i].rule] = static_cast<int32_t>(i);
  nullable = rules_closure(num_nt, rules, [](Symbol) { return false; });
  guard_check.clear();
  for (const CompletionCheck& c : checks)
    if (runs_at_prediction(c.kind)) guard_check.assign(dotted.size(), -1);
  guard_first.assign(guard_check.empty() ? 0 : dotted.size(), 0);
  for (uint32_t b : rule_begin)
    if (!guard_first.empty()) guard_first[b] = 1;
  if (!guard_check.empty())
    for (size_t p = 0; p < dotted.size(); ++p) {
      const Symbol s = dotted[p];
      if (!is_terminal(s) && !is_end(s) && nt_check[s] >= 0 && runs_at_prediction(checks[nt_check[s]].kind))
        guard_check[p] = nt_check[s];
    }
  key_checks.clear();
  key_verdicts.assign(checks.size(), -1);
  for (uint32_t i = 0; i < checks.size(); ++i) {
    const CompletionCheck& c = checks[i];
    if (c.kind != CheckKind::NextKey || !c.has_key) continue;
    key_checks.emplace_back(c.key, i);
    if (c.max < 0) key_verdicts[i] = 1;
  }
  std::sort(key_checks.begin(), key_checks.end());
  names_group.resize(checks.size());
  key_in_names.assign(checks.size(), 0);
  std::map<std::vector<std::string>, uint32_t> first_of;
  for (uint32_t i = 0; i < checks.size(); ++i) {
    const CompletionCheck& c = checks[i];
    names_group[i] = c.kind == CheckKind::NextKey ? first_of.emplace(c.names, i).first->second : i;
    if (c.has_key) key_in_names[i] = static_cast<uint8_t>(std::count(c.names.begin(), c.names.end(), c.key));
  }
  mark_unique_keys();
}

// The first symbol of a rule after its next_key / next_item guards (empty rules run at prediction).
static Symbol first_after_guards(const Grammar& g, const Rule& r) {
  for (Symbol s : r.rhs) {
    const int32_t c = is_terminal(s) ? -1 : g.nt_check[s];
    if (c < 0 || !runs_at_prediction(g.checks[c].kind)) return s;
  }
  return Grammar::kEndOfRule;
}

// LexemeSpec::unique_key: the lexemes a unique_key rule's key begins with, directly or through
// a not_in rule (the key of a class of other keys, less the named properties).
void Grammar::mark_unique_keys() {
  for (LexemeSpec& l : lexemes) l.unique_key = LexemeSpec::kNoKey;
  for (const CompletionCheck& c : checks) {
    if (c.kind != CheckKind::UniqueKey) continue;
    for (uint32_t k = nt_rules_begin[c.rule]; k < nt_rules_begin[c.rule + 1]; ++k) {
      const Rule& r = rules[nt_rules[k]];
      const uint8_t when = r.rhs.size() == 1 ? LexemeSpec::kKeyEnd : LexemeSpec::kMemberEnd;
      const Symbol key = first_after_guards(*this, r);
      if (is_terminal(key)) {
        lexemes[symbol_index(key)].unique_key = std::max(lexemes[symbol_index(key)].unique_key, when);
        continue;
      }
      if (is_end(key) || nt_check[key] < 0 || checks[nt_check[key]].kind != CheckKind::NotIn) continue;
      for (uint32_t j = nt_rules_begin[key]; j < nt_rules_begin[key + 1]; ++j) {
        const Rule& kr = rules[nt_rules[j]];
        if (kr.rhs.size() == 1 && is_terminal(kr.rhs[0]))
          lexemes[symbol_index(kr.rhs[0])].unique_key = std::max(lexemes[symbol_index(kr.rhs[0])].unique_key, when);
      }
    }
  }
}

std::string Grammar::lexeme_name(uint32_t lex) const {
  const LexemeSpec& l = lexemes[lex];
  return l.name.empty() ? "lexeme#" + std::to_string(lex) : l.name;
}

std::string Grammar::to_string() const {
  std::string out;
  for (const Rule& r : rules) {
    out += nonterminal_names[r.lhs] + " ->";
    if (r.rhs.empty()) out += " ε";
    for (Symbol s : r.rhs) out += " " + (is_terminal(s) ? lexeme_name(symbol_index(s)) : nonterminal_names[s]);
    out += "\n";
  }
  for (uint32_t i = 0; i < lexemes.size(); ++i) {
    const LexemeSpec& l = lexemes[i];
    out += lexeme_name(i) + (l.ignore ? " (ignored)" : "") + (l.lazy ? " (lazy)" : "") + " = ";
    if (l.special) {
      out += "special tokens";
      for (int32_t t : l.token_ids) out += " " + std::to_string(t);
    } else {
      out += exprs.to_string(l.expr);
    }
    out += "\n";
  }
  static const char* kKinds[] = {"",       "unique_item",  "unique_key", "object_keys",
                                 "not_in", "more_members", "next_key",   "next_item"};
  for (const CompletionCheck& c : checks) {
    out += "check " + nonterminal_names[c.rule] + ": " + kKinds[static_cast<int>(c.kind)];
    if (c.has_key) out += " key \"" + c.key + "\"";
    for (const auto& n : c.names) out += " \"" + n + "\"";
    if (c.kind != CheckKind::NotIn && c.kind != CheckKind::UniqueItem)
      out += " [" + std::to_string(c.min) + ", " + std::to_string(c.max) + "]";
    out += "\n";
  }
  return out;
}

size_t Grammar::memory_bytes() const {
  size_t n = exprs.memory_bytes() + heap::of(lexemes) + heap::of(nonterminal_names) + heap::of(rules) +
             heap::of(dotted) + heap::of(rule_begin) + heap::of(nt_rules_begin) + heap::of(nt_rules) +
             heap::of(nullable) + heap::of(checks) + heap::of(nt_check) + heap::of(guard_check) +
             heap::of(guard_first) + heap::of(key_checks) + heap::of(key_verdicts) + heap::of(names_group) +
             heap::of(key_in_names) + heap::of(covers);
  for (const LexemeCover& c : covers) n += heap::of(c.lexemes);
  for (const LexemeSpec& l : lexemes) n += heap::of(l.token_ids) + heap::of(l.name);
  for (const std::string& name : nonterminal_names) n += heap::of(name);
  for (const Rule& r : rules) n += heap::of(r.rhs);
  for (const auto& kc : key_checks) n += heap::of(kc.first);
  for (const CompletionCheck& c : checks) {
    n += heap::of(c.names) + heap::of(c.key);
    for (const std::string& name : c.names) n += heap::of(name);
  }
  return n;
}

}  // namespace stencil
