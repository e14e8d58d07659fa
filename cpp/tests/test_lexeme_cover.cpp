// LexemeCover (grammar/ir.h) and Lexer::cover_state: keys split into classes by three unanchored
// patterns (every subset of them, each class excluding the patterns it does not match) make a
// lexer state of eight derivatives whose exploration of plain text builds their product; the
// classes' cover (the string of any key) follows the path as one small expression. The cover is
// kept through the build (a lexeme with no word left out, an unreachable one drops it) and
// serialization, and comes only with a start state that holds all of its lexemes.
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "grammar/ir.h"
#include "lexer/lexer.h"
#include "stencil/errors.h"
#include "stencil/grammar.h"
#include "test_strings.h"
#include "tokens/plain_slice.h"

using stencil::ExprId;
using stencil::GrammarBuilder;
using stencil::Lexer;
using stencil::Symbol;

namespace {

struct KeyClasses {
  GrammarBuilder b;
  std::vector<Symbol> classes;
  ExprId any_key = 0;
  Symbol start = 0;

  // extra: a lexeme to put in the cover beside the classes (or 0)
  explicit KeyClasses(bool with_cover, Symbol (*extra)(GrammarBuilder&) = nullptr) {
    const ExprId body = b.re_repeat(b.re_byte_ranges({{' ', '!'}, {'#', '['}, {']', 0xFF}}), 0, -1);  // (any UTF-8)
    const ExprId quote = b.re_literal("\"");
    const char* patterns[] = {"abcd", "bcde", "cdef"};
    for (int subset = 0; subset < 8; ++subset) {
      std::vector<ExprId> parts{body};
      for (int i = 0; i < 3; ++i) {
        const ExprId p = b.re_concat({body, b.re_literal(patterns[i]), body});
        parts.push_back(subset & (1 << i) ? p : b.re_not(p));
      }
      classes.push_back(
          b.lexeme(b.re_concat({quote, b.re_and(parts), quote}), "class" + std::to_string(subset), false));
    }
    any_key = b.re_concat({quote, body, quote});
    start = b.rule("start");
    for (Symbol c : classes) b.add_alternative(start, {c});
    std::vector<Symbol> cover = classes;
    if (extra) cover.push_back(extra(b));
    if (with_cover) b.cover(cover, any_key);
  }
};

uint32_t after(const Lexer& lexer, uint32_t s, const std::string& text) {
  for (char c : text)
    if (s != Lexer::kDead) s = lexer.next(s, static_cast<uint8_t>(c));
  return s;
}

std::vector<uint32_t> all_classes() { return {0, 1, 2, 3, 4, 5, 6, 7}; }

}  // namespace

TEST_CASE(a_cover_of_key_classes_proves_that_keys_take_any_plain_text) {
  KeyClasses k(true);
  auto grammar = k.b.build(k.start);
  REQUIRE_EQ(grammar->covers.size(), size_t(1));
  Lexer lexer(grammar->exprs, grammar->lexemes, stencil::LexerLimits{}, grammar->covers);
  for (const std::string& prefix : {std::string("\""), std::string("\"xab"), std::string("\"abcdefg")}) {
    const uint32_t s = after(lexer, lexer.start_state(all_classes()), prefix);
    REQUIRE(s != Lexer::kDead);
    const uint32_t cover = lexer.cover_state(s);
    REQUIRE(cover != Lexer::kDead && cover != s);
    CHECK_MSG(stencil::admits_plain_text(lexer, cover, 64), "after " + prefix);
    // What the cover proves, by brute force: no plain string kills the state or makes it end.
    bool all_stay = true;
    for (const std::string& text : stencil_test::strings_up_to(5, "abcdex ")) {
      const uint32_t t = after(lexer, s, text);
      all_stay = all_stay && t != Lexer::kDead && !lexer.state(t).end_now;
    }
    CHECK_MSG(all_stay, "after " + prefix);
  }
  // The product itself: its exploration builds far more states than the cover's (a new lexer).
  Lexer fresh(grammar->exprs, grammar->lexemes, stencil::LexerLimits{}, grammar->covers);
  const uint32_t s = after(fresh, fresh.start_state(all_classes()), "\"x");
  uint32_t before = fresh.num_states();
  CHECK(stencil::admits_plain_text(fresh, fresh.cover_state(s), 4096));
  const uint32_t by_cover = fresh.num_states() - before;
  before = fresh.num_states();
  CHECK(stencil::admits_plain_text(fresh, s, 4096));
  const uint32_t by_product = fresh.num_states() - before;
  CHECK_MSG(by_product > 4 * by_cover, std::to_string(by_product) + " against " + std::to_string(by_cover));
}

TEST_CASE(a_cover_comes_only_with_all_of_its_lexemes) {
  KeyClasses k(true);
  auto grammar = k.b.build(k.start);
  Lexer lexer(grammar->exprs, grammar->lexemes, stencil::LexerLimits{}, grammar->covers);
  // Without the class of keys that match all three patterns, `"abcdef` has no word left.
  const uint32_t s = after(lexer, lexer.start_state({0, 1, 2, 3, 4, 5, 6}), "\"ab");
  REQUIRE(s != Lexer::kDead);
  CHECK_EQ(lexer.cover_state(s), Lexer::kDead);
  CHECK_EQ(after(lexer, s, "cdef"), Lexer::kDead);
  // Nor without a cover declared, nor in a lexer not given the grammar's covers.
  KeyClasses bare(false);
  auto plain = bare.b.build(bare.start);
  CHECK(plain->covers.empty());
  Lexer no_covers(grammar->exprs, grammar->lexemes, stencil::LexerLimits{});
  CHECK_EQ(no_covers.cover_state(after(no_covers, no_covers.start_state(all_classes()), "\"ab")), Lexer::kDead);
}

TEST_CASE(covers_survive_the_build_and_serialization) {
  // A lexeme with no word is left out of the cover; the cover holds the others.
  KeyClasses empty_extra(true, [](GrammarBuilder& b) { return b.lexeme(b.re_nothing(), "none", false); });
  auto g = empty_extra.b.build(empty_extra.start);
  REQUIRE_EQ(g->covers.size(), size_t(1));
  CHECK_EQ(g->covers[0].lexemes.size(), size_t(8));
  auto back = stencil::Grammar::deserialize(g->serialize());
  REQUIRE_EQ(back->covers.size(), size_t(1));
  CHECK(back->covers[0].lexemes == g->covers[0].lexemes);
  CHECK_EQ(back->exprs.to_string(back->covers[0].expr), g->exprs.to_string(g->covers[0].expr));
  CHECK(back->hash() == g->hash());
  // One never used by the grammar (no state starts with it) makes the cover useless: dropped.
  KeyClasses unused(true, [](GrammarBuilder& b) { return b.lexeme(b.re_literal("\"z\""), "unused", false); });
  CHECK(unused.b.build(unused.start)->covers.empty());
}

TEST_CASE(cover_refuses_what_cannot_cover) {
  GrammarBuilder b;
  const Symbol word = b.lexeme(b.re_literal("x"), "x", false);
  const Symbol rule = b.rule("r");
  const ExprId any = b.re_any_string();
  CHECK_THROWS_AS(b.cover({rule}, any), stencil::GrammarError);
  CHECK_THROWS_AS(b.cover({word | 0x1000}, any), stencil::GrammarError);
  CHECK_THROWS_AS(b.cover({}, any), stencil::GrammarError);
  CHECK_THROWS_AS(b.cover({word}, 1u << 30), stencil::GrammarError);
  CHECK_THROWS_AS(b.cover({b.lexeme(b.re_literal("y"), "y", true)}, any), stencil::GrammarError);
  CHECK_THROWS_AS(b.cover({b.special_token({7}, "<s>")}, any), stencil::GrammarError);
}
