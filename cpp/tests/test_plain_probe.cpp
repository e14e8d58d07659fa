// tokens/plain_slice.h: plain_probe_leaves answers "not every plain string stays inside" only where
// the exhaustive exploration (admits_plain_text) says so too, and answers it, in a few lexer steps,
// for a count of words that runs out (`(\S+\s+){0,3}\S+`: every word a new state, which the
// exploration built for every byte class before it found the end of the count).
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "lexer/lexer.h"
#include "stencil/grammar.h"
#include "test_strings.h"
#include "tokens/plain_slice.h"

using stencil::ExprId;
using stencil::GrammarBuilder;
using stencil::Lexer;

namespace {

struct Case {
  std::string name;
  ExprId (*expr)(GrammarBuilder&);
  const char* leaves;  // what the probe must say after "", "ab " and "ab": 1 leaves, 0 stays, - (dead)
};

ExprId non_space(GrammarBuilder& b) { return b.re_byte_ranges({{'!', '~'}}); }
ExprId space(GrammarBuilder& b) { return b.re_byte_ranges({{' ', ' '}}); }
ExprId words(GrammarBuilder& b, int most) {
  const ExprId word = b.re_repeat(non_space(b), 1, -1);
  return b.re_concat({b.re_repeat(b.re_concat({word, b.re_repeat(space(b), 1, -1)}), 0, most), word});
}

}  // namespace

TEST_CASE(plain_probes_leave_only_where_plain_text_does) {
  const std::vector<Case> cases{
      {"any text", [](GrammarBuilder& b) { return b.re_repeat(b.re_byte_ranges({{' ', '~'}}), 0, -1); }, "000"},
      {"three words", [](GrammarBuilder& b) { return words(b, 3); }, "111"},
      {"a hundred words", [](GrammarBuilder& b) { return words(b, 100); }, "100"},
      {"letters", [](GrammarBuilder& b) { return b.re_repeat(b.re_byte_ranges({{'a', 'z'}}), 0, -1); }, "1-1"},
      {"forty characters", [](GrammarBuilder& b) { return b.re_repeat(b.re_byte_ranges({{' ', '~'}}), 0, 40); }, "111"},
  };
  for (const Case& c : cases) {
    GrammarBuilder b;
    const stencil::Symbol x = b.lexeme(b.re_concat({c.expr(b), b.re_literal("\"")}), "x", false);
    const stencil::Symbol start = b.rule("start");
    b.add_alternative(start, {x});
    auto grammar = b.build(start);
    Lexer lexer(grammar->exprs, grammar->lexemes, stencil::LexerLimits{});
    // From the start and from inside (after a word and a space, where one is read).
    const char* texts[] = {"", "ab ", "ab"};
    for (int i = 0; i < 3; ++i) {
      const char* text = texts[i];
      uint32_t s = lexer.start_state({0});
      for (const char* p = text; *p && s != Lexer::kDead; ++p) s = lexer.next(s, static_cast<uint8_t>(*p));
      CHECK_MSG((s == Lexer::kDead) == (c.leaves[i] == '-'), c.name + " after '" + text + "'");
      if (s == Lexer::kDead) continue;
      const bool leaves = stencil::plain_probe_leaves(lexer, s, 48);
      // (within 48 bytes: the exploration's plain strings are of any length, so only its yes binds)
      if (stencil::admits_plain_text(lexer, s, 4096)) CHECK_MSG(!leaves, c.name + " after '" + text + "'");
      CHECK_MSG(leaves == (c.leaves[i] == '1'), c.name + " after '" + text + "'");
    }
  }
}

// Keys that match a pattern of 1 to 200 letters beside keys that match none (the complement):
// every byte of a key is a new state of both counts, so the exploration of plain text from the
// state never closes; the shrunk state (the complement's count lifted, the pattern's cut to one
// letter) is a subset of its words whose exploration does close, and says every plain string
// stays inside, which the lexer confirms on every string over a few bytes. With the pattern's
// keys alone, plain text does leave (a capital), and the shrunk state says no such thing.
TEST_CASE(a_shrunk_state_proves_that_keys_beside_a_complement_take_any_plain_text) {
  GrammarBuilder b;
  const ExprId letters = b.re_repeat(b.re_byte_ranges({{'a', 'z'}}), 1, 200);
  const ExprId body = b.re_repeat(b.re_byte_ranges({{' ', '!'}, {'#', '['}, {']', 0xFF}}), 0, -1);  // (any UTF-8)
  const ExprId quote = b.re_literal("\"");
  const stencil::Symbol pattern_key = b.lexeme(b.re_concat({quote, letters, quote}), "key", false);
  const stencil::Symbol other_key =
      b.lexeme(b.re_concat({quote, b.re_and({body, b.re_not(letters)}), quote}), "other", false);
  const stencil::Symbol start = b.rule("start");
  b.add_alternative(start, {pattern_key});
  b.add_alternative(start, {other_key});
  auto grammar = b.build(start);
  Lexer lexer(grammar->exprs, grammar->lexemes, stencil::LexerLimits{});
  for (const std::vector<uint32_t>& lexemes : {std::vector<uint32_t>{0, 1}, std::vector<uint32_t>{0}}) {
    const bool both = lexemes.size() == 2;
    uint32_t s = lexer.next(lexer.start_state(lexemes), '"');
    for (const char* p = "abc"; *p; ++p) {
      s = lexer.next(s, static_cast<uint8_t>(*p));
      const uint32_t shrunk = lexer.shrunk_state(s, 16);
      REQUIRE(shrunk != Lexer::kDead && shrunk != s);
      CHECK_EQ(stencil::admits_plain_text(lexer, shrunk, 64), both);
    }
    bool all_stay = true;
    for (const std::string& text : stencil_test::strings_up_to(6, "aZ ")) {
      uint32_t t = s;
      for (char c : text)
        if (t != Lexer::kDead && !lexer.state(t).end_now) t = lexer.next(t, static_cast<uint8_t>(c));
      all_stay = all_stay && t != Lexer::kDead && !lexer.state(t).end_now;
    }
    CHECK_EQ(all_stay, both);
  }
}

// A string whose pattern is an alternation with an unanchored word (`^draft|review|final$`:
// starts with one, holds one, or ends with one) before the closing quote: no plain text kills it
// (append "review" or "final"), and the parts `.*review.*"` and `.*final"` show it by looping,
// where the whole state's exploration meets the product of the words' searches. With only
// anchored words (`^draft$|^final$`), plain text kills it and no part loops.
TEST_CASE(a_part_of_an_alternation_before_the_quote_loops_on_plain_text) {
  for (const bool unanchored : {true, false}) {
    GrammarBuilder b;
    const ExprId any = b.re_repeat(b.re_byte_ranges({{' ', '!'}, {'#', '['}, {']', 0xFF}}), 0, -1);  // (any UTF-8)
    std::vector<ExprId> alts{b.re_literal("draft"), b.re_literal("final")};
    if (unanchored)
      alts = {b.re_concat({b.re_literal("draft"), any}), b.re_concat({any, b.re_literal("review"), any}),
              b.re_concat({any, b.re_literal("final")})};
    const ExprId quote = b.re_literal("\"");
    const stencil::Symbol x = b.lexeme(b.re_concat({quote, b.re_or(alts), quote}), "x", false);
    const stencil::Symbol start = b.rule("start");
    b.add_alternative(start, {x});
    auto grammar = b.build(start);
    Lexer lexer(grammar->exprs, grammar->lexemes, stencil::LexerLimits{});
    const uint32_t s = lexer.next(lexer.start_state({0}), '"');
    CHECK_EQ(lexer.loops_on_plain(s, 64), unanchored);
    bool all_stay = true;
    for (const std::string& text : stencil_test::strings_up_to(4, "rx ")) {
      uint32_t t = s;
      for (char c : text)
        if (t != Lexer::kDead) t = lexer.next(t, static_cast<uint8_t>(c));
      all_stay = all_stay && t != Lexer::kDead && !lexer.state(t).end_now;
    }
    CHECK_EQ(all_stay, unanchored);
  }
}
