// Building a grammar: regular expressions, lexemes, rules and completion checks, through
// GrammarBuilder. Python front-ends call it through the bindings; build() returns the immutable
// grammar IR (grammar/ir.h in the core), which CompiledGrammar pairs with a tokenizer.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "stencil/check_kind.h"
#include "stencil/ids.h"
#include "stencil/limits.h"

namespace stencil {

class ExprStore;
class Grammar;
struct LexemeSpec;
struct Rule;
struct CompletionCheck;
struct LexemeCover;

class GrammarBuilder {
 public:
  explicit GrammarBuilder(BuilderLimits limits = {});
  ~GrammarBuilder();
  GrammarBuilder(const GrammarBuilder&) = delete;
  GrammarBuilder& operator=(const GrammarBuilder&) = delete;

  // Regular expressions (ids into the builder's expression store).
  ExprId re_nothing() const;
  ExprId re_empty() const;
  ExprId re_any_byte_string() const;  // any byte string
  ExprId re_any_string();  // any sequence of valid UTF-8 code points
  ExprId re_bytes(const std::string& bytes);
  ExprId re_literal(const std::string& utf8) { return re_bytes(utf8); }
  ExprId re_byte_ranges(const std::vector<std::pair<uint32_t, uint32_t>>& ranges);
  ExprId re_char_ranges(const CodepointRanges& ranges, bool negate);
  ExprId re_concat(const std::vector<ExprId>& items);
  ExprId re_or(const std::vector<ExprId>& items);
  ExprId re_and(const std::vector<ExprId>& items);
  ExprId re_not(ExprId item);
  ExprId re_repeat(ExprId item, int64_t min, int64_t max);
  // JSON numbers whose exact value lies within the bounds (decimal text such as "1e308" or
  // "-0.1"; empty: unbounded), integral ones only when `integer` (then bounds are inclusive
  // integers). Exponent forms are compared exactly; no double rounding.
  ExprId re_number_range(const std::string& lo, bool lo_exclusive, const std::string& hi, bool hi_exclusive,
                         bool integer);
  // JSON numbers written without exponent whose exact value is an integer multiple of `multiple`
  // (a positive decimal, at most 19 significant digits: "0.25", "1.5e-8", "3"); a lazily built
  // residue automaton, so a large modulus costs only the states a text reaches.
  ExprId re_multiple_of(const std::string& multiple);
  // JSON numbers whose exact value is one of `values` (decimal text), in every spelling (2e2 and
  // 200.0 for 200): one expression whatever the count. `minus_zero`: 0 may be written -0.
  ExprId re_number_set(const std::vector<std::string>& values, bool minus_zero);
  std::string re_to_string(ExprId e) const;
  bool re_nullable(ExprId e) const;

  // Symbols.
  // max_tokens > 0: the lexeme spans at most that many tokens, then must end (see LexemeSpec).
  Symbol lexeme(ExprId expr, const std::string& name, bool lazy, uint32_t max_tokens = 0);
  Symbol literal(const std::string& text, const std::string& name);
  Symbol special_token(const std::vector<int32_t>& token_ids, const std::string& name);
  // initial = false: not before the first lexeme of the output (llguidance's and XGrammar's
  // default, allow_initial_skip); final = false: not after the last one (a standalone JSON value).
  void ignore(ExprId expr, const std::string& name, bool initial = true, bool final = true);
  Symbol rule(const std::string& name);
  void add_alternative(Symbol nonterminal, const std::vector<Symbol>& rhs);
  Symbol seq(const std::vector<Symbol>& items);
  Symbol choice(const std::vector<Symbol>& items);
  Symbol optional(Symbol item);
  Symbol repeat(Symbol item, int64_t min, int64_t max);
  Symbol empty();
  // `key`: the member's key, for a next_key check (null: a key outside `names`).
  void add_check(Symbol rule, CheckKind kind, const std::vector<std::string>& names, int64_t min, int64_t max,
                 const std::string* key = nullptr);

  // A promise that the languages of `lexemes` together hold every word of `expr` (the key
  // classes of one object cover the string of any key): where a lexer state starts with all of
  // them, its questions about all its words are asked of expr instead (Lexer::cover_state).
  // Not checked: a false promise gives wrong masks.
  void cover(const std::vector<Symbol>& lexemes, ExprId expr);

  std::shared_ptr<Grammar> build(Symbol start) const;

 private:
  void check_expr(ExprId e, const char* what) const;
  void check_symbol(Symbol s, const char* what) const;
  Symbol fresh_rule(const std::string& hint);

  BuilderLimits limits_;
  std::unique_ptr<ExprStore> store_;  // build() derives (emptiness checks) in it
  std::vector<LexemeSpec> lexemes_;
  std::vector<std::string> names_;
  std::vector<Rule> rules_;
  std::vector<CompletionCheck> checks_;
  std::vector<LexemeCover> covers_;
  std::vector<bool> has_check_;  // by rule (a scan of checks_ per check was quadratic in them)
  std::unordered_map<std::string, uint32_t> lexeme_ids_;
  std::unordered_map<std::string, uint32_t> rule_ids_;
  uint32_t anon_counter_ = 0;
};

}  // namespace stencil
