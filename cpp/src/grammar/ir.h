// The grammar IR, defined once here: rules over symbols, where terminals are lexemes given by
// byte-level regular expressions (or special tokens). Front-ends build it through
// GrammarBuilder (stencil/grammar.h); the lexer, the parser and serialization read it. No lexer
// here: the lexer is built from it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "regex/expr.h"
#include "stencil/check_kind.h"
#include "stencil/ids.h"

namespace stencil {

struct LexemeSpec {
  ExprId expr = ExprStore::kNothing;
  bool ignore = false;  // matched between other lexemes, never seen by the parser
  bool lazy = false;    // ends as soon as it matches, instead of as late as possible
  bool special = false; // a special token, matched by id and never by bytes
  uint32_t max_tokens = 0;  // > 0: spans at most this many tokens, then must end (llguidance)
  bool not_initial = false; // ignored, but not before the first lexeme of the output
  bool not_final = false;   // ignored, but not after the last lexeme of the output
  std::vector<int32_t> token_ids;  // for special lexemes
  std::string name;
  // Derived by Grammar::finalize, not serialized: the lexeme starts an object key whose
  // unique_key check runs as the key ends (kKeyEnd) or after its member's value (kMemberEnd).
  // The matcher then refuses a key prefix whose every completion repeats an earlier key.
  enum : uint8_t { kNoKey = 0, kKeyEnd = 1, kMemberEnd = 2 };
  uint8_t unique_key = kNoKey;
  // Set by GrammarBuilder::build, not serialized: its language is known non-empty (the builder
  // keeps no other), so a lexer state need not search it again (the key classes of unanchored
  // patterns: a search each, at the first key of their object, cost milliseconds).
  bool nonempty = false;
};

// Lexemes whose languages together hold every word of `expr`: the key classes of one object,
// which split its keys by the patternProperties they match, cover the string of any key. A
// front-end's promise (GrammarBuilder::cover), not checked: a lexer state started with all of
// them holds expr's words, and a question about all of the state's words (does every plain text
// keep it alive?) may be asked of expr's derivative, which stays small where the classes'
// product does not (Lexer::cover_state).
struct LexemeCover {
  std::vector<uint32_t> lexemes;  // sorted, each once
  ExprId expr = ExprStore::kNothing;
};

constexpr Symbol kTerminalBit = 0x80000000u;
inline bool is_terminal(Symbol s) { return s & kTerminalBit; }
inline uint32_t symbol_index(Symbol s) { return s & ~kTerminalBit; }

struct Rule {
  uint32_t lhs;
  std::vector<Symbol> rhs;
};

// Completion checks (stencil/check_kind.h): the parser passes a check the bytes spanned.
// Checks that read the earlier items of an array (as canonical JSON values), not members' keys.
inline bool reads_items(CheckKind k) { return k == CheckKind::UniqueItem || k == CheckKind::NextItem; }
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
  // 2: number range expressions, 3: member-list checks, 4: lexeme covers
  static constexpr uint32_t kFormatVersion = 4;

  ExprStore exprs;
  std::vector<LexemeSpec> lexemes;
  std::vector<std::string> nonterminal_names;
  std::vector<Rule> rules;  // rule 0 is the augmented start rule `__start -> start`
  std::vector<LexemeCover> covers;
  uint32_t start = 0;       // the augmented start nonterminal

  // Parser tables, derived from the rules by finalize().
  std::vector<Symbol> dotted;          // per rule: rhs symbols, then kEndOfRule | rule id
  std::vector<uint32_t> rule_begin;    // position of each rule's first symbol in `dotted`
  std::vector<uint32_t> nt_rules_begin, nt_rules;  // rules of each nonterminal (CSR)
  std::vector<uint8_t> nullable;       // per nonterminal
  std::vector<CompletionCheck> checks;
  std::vector<int32_t> nt_check;       // per nonterminal: index into checks, or -1
  // Per dotted position: the check of the next_key / next_item rule there, or -1; empty when
  // the grammar has none. The parser steps over such a rule as it adds the item.
  std::vector<int32_t> guard_check;
  std::vector<uint8_t> guard_first;  // per dotted position: 1 where a rule begins
  // The next_key checks of a known key, by key: the keys of an object's text mark their checks'
  // verdicts at once (K searches of the table), not each check searching the keys (one search per
  // check the row predicts, for every token a mask walk ends a member with).
  std::vector<std::pair<std::string, uint32_t>> key_checks;  // (key, check index), sorted
  std::vector<int8_t> key_verdicts;  // per check: 1 where an absent key decides (no member bound), else -1
  // Per check: the first check with the same required names (how many of them are missing is
  // the same for every next_key check of one object), and how often its own key is among them.
  std::vector<uint32_t> names_group;
  std::vector<uint8_t> key_in_names;

  static constexpr Symbol kEndOfRule = 0x40000000u;
  static bool is_end(Symbol s) { return (s & kEndOfRule) && !(s & kTerminalBit); }

  Grammar() = default;
  explicit Grammar(ExprStore store) : exprs(std::move(store)) {}
  void finalize();
  void mark_unique_keys();  // LexemeSpec::unique_key, from the checks (part of finalize)
  std::string serialize() const;
  static std::shared_ptr<Grammar> deserialize(const std::string& data);
  uint64_t hash() const;
  size_t memory_bytes() const;  // what it holds on the heap (support/heap_size.h)
  std::string to_string() const;
  std::string lexeme_name(uint32_t lex) const;
};

}  // namespace stencil
