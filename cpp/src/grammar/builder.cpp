#include <algorithm>

#include "grammar/ir.h"
#include "json/canon.h"
#include "json/number_points.h"
#include "regex/utf8.h"
#include "stencil/errors.h"
#include "stencil/grammar.h"

namespace stencil {

GrammarBuilder::GrammarBuilder(BuilderLimits limits)
    : limits_(limits), store_(std::make_unique<ExprStore>(limits.max_exprs)) {}

GrammarBuilder::~GrammarBuilder() = default;

ExprId GrammarBuilder::re_nothing() const { return ExprStore::kNothing; }
ExprId GrammarBuilder::re_empty() const { return ExprStore::kEmpty; }
ExprId GrammarBuilder::re_any_byte_string() const { return ExprStore::kAnyByteStar; }

void GrammarBuilder::check_expr(ExprId e, const char* what) const {
  if (e >= store_->size())
    throw GrammarError(std::string(what) + ": unknown regular expression id " + std::to_string(e));
}

void GrammarBuilder::check_symbol(Symbol s, const char* what) const {
  bool ok = is_terminal(s) ? symbol_index(s) < lexemes_.size() : s < names_.size();
  if (!ok) throw GrammarError(std::string(what) + ": unknown grammar symbol " + std::to_string(s));
}

ExprId GrammarBuilder::re_any_string() {
  return store_->repeat(utf8_class(*store_, {{0, 0x10FFFF}}, false), 0, kUnbounded);
}

ExprId GrammarBuilder::re_bytes(const std::string& bytes) { return store_->literal(bytes); }

ExprId GrammarBuilder::re_byte_ranges(const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
  ByteSet s;
  for (auto [lo, hi] : ranges) {
    if (lo > 255 || hi > 255 || lo > hi)
      throw GrammarError("byte range [" + std::to_string(lo) + ", " + std::to_string(hi) + "] is not within 0..255");
    s.add_range(static_cast<int>(lo), static_cast<int>(hi));
  }
  return store_->bytes(s);
}

ExprId GrammarBuilder::re_char_ranges(const CodepointRanges& ranges, bool negate) {
  for (auto [lo, hi] : ranges)
    if (lo > 0x10FFFF || hi > 0x10FFFF)
      throw GrammarError("code point range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                         "] is beyond U+10FFFF");
  return utf8_class(*store_, ranges, negate);
}

ExprId GrammarBuilder::re_concat(const std::vector<ExprId>& items) {
  for (ExprId e : items) check_expr(e, "re_concat");
  return store_->concat(items);
}

ExprId GrammarBuilder::re_or(const std::vector<ExprId>& items) {
  for (ExprId e : items) check_expr(e, "re_or");
  return store_->alt(items);
}

ExprId GrammarBuilder::re_and(const std::vector<ExprId>& items) {
  for (ExprId e : items) check_expr(e, "re_and");
  return store_->conj(items);
}

ExprId GrammarBuilder::re_not(ExprId item) {
  check_expr(item, "re_not");
  return store_->negate(item);
}

ExprId GrammarBuilder::re_repeat(ExprId item, int64_t min, int64_t max) {
  check_expr(item, "re_repeat");
  if (min < 0 || (max >= 0 && max < min) || min > 0xFFFFFFFEll || max > 0xFFFFFFFEll)
    throw GrammarError("invalid repetition bounds {" + std::to_string(min) + "," + std::to_string(max) + "}");
  return store_->repeat(item, static_cast<uint32_t>(min), max < 0 ? kUnbounded : static_cast<uint32_t>(max));
}

ExprId GrammarBuilder::re_number_range(const std::string& lo, bool lo_exclusive, const std::string& hi,
                                       bool hi_exclusive, bool integer) {
  NumberState s;
  if (!lo.empty()) s.spec.lo = parse_number_bound(lo, lo_exclusive, "lower bound");
  if (!hi.empty()) s.spec.hi = parse_number_bound(hi, hi_exclusive, "upper bound");
  s.spec.integer = integer;
  check_number_spec(s.spec);
  return store_->number(s);
}

ExprId GrammarBuilder::re_multiple_of(const std::string& multiple) {
  NumberState s;
  s.spec = parse_multiple(multiple, "multiple");
  return store_->number(s);
}

ExprId GrammarBuilder::re_number_set(const std::vector<std::string>& values, bool minus_zero) {
  NumberState s;
  points_start(s, make_number_points(values, minus_zero));
  return store_->number(s);
}

std::string GrammarBuilder::re_to_string(ExprId e) const {
  check_expr(e, "re_to_string");
  return store_->to_string(e);
}

bool GrammarBuilder::re_nullable(ExprId e) const {
  check_expr(e, "re_nullable");
  return store_->nullable(e);
}

Symbol GrammarBuilder::lexeme(ExprId expr, const std::string& name, bool lazy, uint32_t max_tokens) {
  check_expr(expr, "lexeme");
  bool nullable = store_->nullable(expr);
  // A lexeme never matches the empty string (the lexer would loop on it):
  // L becomes (L minus ε), used optionally.
  ExprId body = nullable ? store_->conj({expr, store_->negate(ExprStore::kEmpty)}) : expr;
  std::string key =
      std::to_string(body) + (lazy ? "/lazy" : "/greedy") + (max_tokens ? "/tokens" + std::to_string(max_tokens) : "");
  uint32_t id;
  auto it = lexeme_ids_.find(key);
  if (it != lexeme_ids_.end()) {
    id = it->second;
  } else {
    id = static_cast<uint32_t>(lexemes_.size());
    LexemeSpec spec;
    spec.expr = body;
    spec.lazy = lazy;
    spec.max_tokens = max_tokens;
    spec.name = name;
    lexemes_.push_back(std::move(spec));
    lexeme_ids_.emplace(key, id);
  }
  Symbol term = kTerminalBit | id;
  if (!nullable) return term;
  return optional(term);
}

Symbol GrammarBuilder::literal(const std::string& text, const std::string& name) {
  return lexeme(store_->literal(text), name.empty() ? "\"" + text + "\"" : name, false);
}

Symbol GrammarBuilder::special_token(const std::vector<int32_t>& token_ids, const std::string& name) {
  if (token_ids.empty()) throw GrammarError("special token " + name + ": no token ids given");
  std::vector<int32_t> ids = token_ids;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.front() < 0)
    throw GrammarError("special token " + name + ": negative token id " + std::to_string(ids.front()));
  std::string key = "special";
  for (int32_t i : ids) key += ":" + std::to_string(i);
  auto it = lexeme_ids_.find(key);
  if (it != lexeme_ids_.end()) return kTerminalBit | it->second;
  uint32_t id = static_cast<uint32_t>(lexemes_.size());
  LexemeSpec spec;
  spec.special = true;
  spec.token_ids = ids;
  spec.name = name.empty() ? "<[" + std::to_string(ids.front()) + "]>" : name;
  lexemes_.push_back(std::move(spec));
  lexeme_ids_.emplace(key, id);
  return kTerminalBit | id;
}

void GrammarBuilder::ignore(ExprId expr, const std::string& name, bool initial, bool final) {
  check_expr(expr, "ignore");
  LexemeSpec spec;
  spec.expr = store_->nullable(expr) ? store_->conj({expr, store_->negate(ExprStore::kEmpty)}) : expr;
  spec.ignore = true;
  spec.not_initial = !initial;
  spec.not_final = !final;
  spec.name = name.empty() ? "%ignore" : name;
  lexemes_.push_back(std::move(spec));
}

Symbol GrammarBuilder::rule(const std::string& name) {
  if (name.empty()) return fresh_rule("rule");
  auto it = rule_ids_.find(name);
  if (it != rule_ids_.end()) return it->second;
  if (names_.size() >= limits_.max_rules) throw BudgetError("grammar has too many rules");
  uint32_t id = static_cast<uint32_t>(names_.size());
  names_.push_back(name);
  rule_ids_.emplace(name, id);
  return id;
}

Symbol GrammarBuilder::fresh_rule(const std::string& hint) {
  std::string name;
  do {
    name = hint + "#" + std::to_string(anon_counter_++);
  } while (rule_ids_.count(name));
  return rule(name);
}

void GrammarBuilder::add_alternative(Symbol nonterminal, const std::vector<Symbol>& rhs) {
  if (is_terminal(nonterminal)) throw GrammarError("add_alternative: the left-hand side must be a rule, not a lexeme");
  check_symbol(nonterminal, "add_alternative");
  for (Symbol s : rhs) check_symbol(s, "add_alternative");
  if (rules_.size() >= limits_.max_rules) throw BudgetError("grammar has too many rule alternatives");
  rules_.push_back({nonterminal, rhs});
}

Symbol GrammarBuilder::seq(const std::vector<Symbol>& items) {
  if (items.size() == 1) return items[0];
  Symbol n = fresh_rule("seq");
  add_alternative(n, items);
  return n;
}

Symbol GrammarBuilder::choice(const std::vector<Symbol>& items) {
  Symbol n = fresh_rule("choice");
  for (Symbol s : items) add_alternative(n, {s});
  return n;
}

Symbol GrammarBuilder::optional(Symbol item) {
  check_symbol(item, "optional");
  Symbol n = fresh_rule("opt");
  add_alternative(n, {});
  add_alternative(n, {item});
  return n;
}

Symbol GrammarBuilder::empty() {
  Symbol n = fresh_rule("empty");
  add_alternative(n, {});
  return n;
}

Symbol GrammarBuilder::repeat(Symbol item, int64_t min, int64_t max) {
  check_symbol(item, "repeat");
  if (min < 0 || (max >= 0 && max < min))
    throw GrammarError("invalid repetition bounds {" + std::to_string(min) + "," + std::to_string(max) + "}");
  if (min > limits_.max_repeat || max > static_cast<int64_t>(limits_.max_repeat))
    throw BudgetError("repetition count " + std::to_string(std::max(min, max)) + " exceeds the limit of " +
                      std::to_string(limits_.max_repeat) + " for grammar symbols (use a regex repetition)");
  // tail = item{0, max-min} (or item* when unbounded), built right to left.
  Symbol tail;
  if (max < 0) {
    tail = fresh_rule("star");  // tail -> ε | tail item (left recursion suits Earley)
    add_alternative(tail, {});
    add_alternative(tail, {tail, item});
  } else {
    tail = empty();
    for (int64_t i = 0; i < max - min; ++i) {
      Symbol t = fresh_rule("rep");
      add_alternative(t, {});
      add_alternative(t, {item, tail});
      tail = t;
    }
  }
  if (min == 0) return tail;
  std::vector<Symbol> rhs(static_cast<size_t>(min), item);
  rhs.push_back(tail);
  return seq(rhs);
}

void GrammarBuilder::add_check(Symbol rule, CheckKind kind, const std::vector<std::string>& names, int64_t min,
                               int64_t max, const std::string* key) {
  if (is_terminal(rule)) throw GrammarError("add_check: checks apply to rules, not lexemes");
  check_symbol(rule, "add_check");
  if (!is_check_kind(static_cast<uint8_t>(kind)))
    throw GrammarError("add_check: unknown check kind " + std::to_string(static_cast<int>(kind)));
  CompletionCheck c{rule, kind, names, min, max, false, {}};
  if (c.kind == CheckKind::MoreMembers && max < 0) throw GrammarError("add_check: more_members needs a max");
  if (key && !runs_at_prediction(c.kind)) throw GrammarError("add_check: only next_key and next_item take a key");
  if (c.kind == CheckKind::NextItem) {
    std::string canon;
    if (!key || !canonical_value(*key, canon)) throw GrammarError("add_check: next_item needs a key, a JSON value");
  }
  if (key) {
    c.has_key = true;
    c.key = *key;
  }
  std::sort(c.names.begin(), c.names.end());  // binary searches; the order of names means nothing
  c.names.erase(std::unique(c.names.begin(), c.names.end()), c.names.end());
  if (min < 0 || (max >= 0 && max < min))
    throw GrammarError("add_check: invalid member count bounds [" + std::to_string(min) + ", " + std::to_string(max) +
                       "]");
  if (rule < has_check_.size() && has_check_[rule])
    throw GrammarError("add_check: rule '" + names_[rule] + "' already has a check");
  if (rule >= has_check_.size()) has_check_.resize(names_.size());
  has_check_[rule] = true;
  checks_.push_back(std::move(c));
}

void GrammarBuilder::cover(const std::vector<Symbol>& lexemes, ExprId expr) {
  check_expr(expr, "cover");
  LexemeCover c{{}, expr};
  for (Symbol s : lexemes) {
    if (!is_terminal(s)) throw GrammarError("cover: a cover is made of lexemes, not rules");
    check_symbol(s, "cover");
    if (lexemes_[symbol_index(s)].special || lexemes_[symbol_index(s)].lazy)
      throw GrammarError("cover: special and lazy lexemes cannot cover a language");
    c.lexemes.push_back(symbol_index(s));
  }
  std::sort(c.lexemes.begin(), c.lexemes.end());
  c.lexemes.erase(std::unique(c.lexemes.begin(), c.lexemes.end()), c.lexemes.end());
  if (c.lexemes.empty()) throw GrammarError("cover: no lexemes");
  covers_.push_back(std::move(c));
}

}  // namespace stencil
