// The grammar IR, defined once here: rules over symbols, where terminals are
// lexemes given by byte-level regular expressions (or special tokens). Python
// front-ends build it through GrammarBuilder; nothing else defines it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lexer/lexer.h"
#include "regex/expr.h"
#include "regex/utf8.h"

namespace stencil {

using Symbol = uint32_t;
constexpr Symbol kTerminalBit = 0x80000000u;
inline bool is_terminal(Symbol s) { return s & kTerminalBit; }
inline uint32_t symbol_index(Symbol s) { return s & ~kTerminalBit; }

struct Rule {
  uint32_t lhs;
  std::vector<Symbol> rhs;
};

// A predicate run when an item of a rule completes, vetoing the completion:
// what no context-free grammar expresses (JSON Schema's uniqueItems, duplicate
// keys, required keys in any order). The parser passes it the bytes spanned.
enum class CheckKind : uint8_t {
  UniqueItem = 1,  // the completed array item equals no earlier item of its list
  UniqueKey = 2,    // the completed member's key equals no earlier member's key
  ObjectKeys = 3,   // the completed object has all `names` and min..max members
  NotIn = 4,        // the completed JSON string (decoded) is none of `names`
  MoreMembers = 5,  // the completed separator may be followed by one more member: the members
                    // before it leave room within max for it and for the missing `names`
  NextKey = 6,      // on an empty rule before a member's key, run when it is predicted: `key` (or,
                    // without one, a key outside `names`) is new among the members before it and
                    // leaves room within max for the missing `names`
  NextItem = 7,     // on an empty rule before an array item whose value is known (`key`, JSON
                    // text), run when it is predicted: no earlier item equals it
};

// Checks that read the earlier items of an array (as canonical JSON values), not members' keys.
inline bool reads_items(CheckKind k) {
  return k == CheckKind::UniqueItem || k == CheckKind::NextItem;
}
// Checks on an empty rule, run when it is predicted.
inline bool runs_at_prediction(CheckKind k) { return k == CheckKind::NextKey || k == CheckKind::NextItem; }

struct CompletionCheck {
  uint32_t rule;
  CheckKind kind;
  std::vector<std::string> names;
  int64_t min = 0, max = -1;
  bool has_key = false;  // NextKey: the member's key is known before it is written
  std::string key;
};

// An immutable grammar: lexemes, rules and the tables the parser walks.
class Grammar {
 public:
  static constexpr uint32_t kFormatVersion = 3;  // 2: number range expressions, 3: member-list checks

  ExprStore exprs;
  std::vector<LexemeSpec> lexemes;
  std::vector<std::string> nonterminal_names;
  std::vector<Rule> rules;  // rule 0 is the augmented start rule `__start -> start`
  uint32_t start = 0;       // the augmented start nonterminal

  // Parser tables, derived from the rules by finalize().
  std::vector<Symbol> dotted;          // per rule: rhs symbols, then kEndOfRule | rule id
  std::vector<uint32_t> rule_begin;    // position of each rule's first symbol in `dotted`
  std::vector<uint32_t> nt_rules_begin, nt_rules;  // rules of each nonterminal (CSR)
  std::vector<uint8_t> nullable;       // per nonterminal
  std::vector<CompletionCheck> checks;
  std::vector<int32_t> nt_check;       // per nonterminal: index into checks, or -1

  static constexpr Symbol kEndOfRule = 0x40000000u;
  static bool is_end(Symbol s) { return (s & kEndOfRule) && !(s & kTerminalBit); }

  Grammar() = default;
  explicit Grammar(ExprStore store) : exprs(std::move(store)) {}
  void finalize();
  std::string serialize() const;
  static std::shared_ptr<Grammar> deserialize(const std::string& data);
  uint64_t hash() const;
  std::string to_string() const;
  std::string lexeme_name(uint32_t lex) const;
};

struct BuilderLimits {
  size_t max_exprs = 4'000'000;
  uint32_t max_repeat = 100'000;   // bounded repetition of a grammar symbol
  uint32_t max_rules = 2'000'000;
};

class GrammarBuilder {
 public:
  explicit GrammarBuilder(BuilderLimits limits = {});

  // Regular expressions (ids into the builder's expression store).
  ExprId re_nothing() const { return ExprStore::kNothing; }
  ExprId re_empty() const { return ExprStore::kEmpty; }
  ExprId re_any_byte_string() const { return ExprStore::kAnyByteStar; }
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
  std::string re_to_string(ExprId e) const;
  bool re_nullable(ExprId e) const;

  // Symbols.
  // max_tokens > 0: the lexeme spans at most that many tokens, then must end (see LexemeSpec).
  Symbol lexeme(ExprId expr, const std::string& name, bool lazy, uint32_t max_tokens = 0);
  Symbol literal(const std::string& text, const std::string& name);
  Symbol special_token(const std::vector<int32_t>& token_ids, const std::string& name);
  // initial = false: not before the first lexeme of the output (llguidance's and XGrammar's
  // default, allow_initial_skip).
  void ignore(ExprId expr, const std::string& name, bool initial = true);
  Symbol rule(const std::string& name);
  void add_alternative(Symbol nonterminal, const std::vector<Symbol>& rhs);
  Symbol seq(const std::vector<Symbol>& items);
  Symbol choice(const std::vector<Symbol>& items);
  Symbol optional(Symbol item);
  Symbol repeat(Symbol item, int64_t min, int64_t max);
  Symbol empty();
  // `key`: the member's key, for a next_key check (null: a key outside `names`).
  void add_check(Symbol rule, const std::string& kind, const std::vector<std::string>& names, int64_t min,
                 int64_t max, const std::string* key = nullptr);

  std::shared_ptr<Grammar> build(Symbol start) const;

 private:
  void check_expr(ExprId e, const char* what) const;
  void check_symbol(Symbol s, const char* what) const;
  Symbol fresh_rule(const std::string& hint);

  BuilderLimits limits_;
  mutable ExprStore store_;  // build() derives (emptiness checks) in it
  std::vector<LexemeSpec> lexemes_;
  std::vector<std::string> names_;
  std::vector<Rule> rules_;
  std::vector<CompletionCheck> checks_;
  std::unordered_map<std::string, uint32_t> lexeme_ids_;
  std::unordered_map<std::string, uint32_t> rule_ids_;
  uint32_t anon_counter_ = 0;
};

}  // namespace stencil
