// lexer/plain_reading.cpp's text heads (Lexer::bounded_text_head): of two counts of the same
// characters side by side (a maxLength beside a format's own bound of 253), the one within the
// other heads the text, whichever comes first among the conjuncts, and the looser one needs no
// look; counts that neither holds stay as they were (no head where one must be judged).
#include <string>
#include <vector>

#include "check.h"
#include "lexer/lexer.h"
#include "stencil/grammar.h"

using stencil::ExprId;
using stencil::GrammarBuilder;
using stencil::Lexer;

namespace {

// The state after `text` in the lexeme (counts of plain characters, side by side) `"`, the
// counts made in the order given; `free` adds a conjunct that holds every string.
struct Heads {
  uint32_t k = 0;
  bool ok = false;
};

Heads head_after(const std::vector<std::pair<int, int>>& counts, const std::string& text, bool free) {
  GrammarBuilder b;
  // (a character of one or two bytes, as a JSON string's are: counts of one byte class merge
  // into one count as the store makes them, those of wider characters stay side by side)
  const ExprId ch = b.re_or({b.re_byte_ranges({{' ', '!'}, {'#', '['}, {']', '~'}}),
                             b.re_concat({b.re_byte_ranges({{0xC2, 0xDF}}), b.re_byte_ranges({{0x80, 0xBF}})})});
  std::vector<ExprId> conj;
  for (auto [lo, hi] : counts) conj.push_back(b.re_repeat(ch, lo, hi));
  if (free) conj.push_back(b.re_any_string());
  const stencil::Symbol x = b.lexeme(b.re_concat({b.re_and(conj), b.re_literal("\"")}), "x", false);
  const stencil::Symbol start = b.rule("start");
  b.add_alternative(start, {x});
  auto grammar = b.build(start);
  Lexer lexer(grammar->exprs, grammar->lexemes, stencil::LexerLimits{});
  uint32_t s = lexer.start_state({0});
  for (char c : text) s = lexer.next(s, static_cast<uint8_t>(c));
  Heads h;
  uint32_t relaxed = 0, rest = 0;
  h.ok = s != Lexer::kDead && lexer.bounded_text_head(s, &h.k, &relaxed, &rest);
  return h;
}

}  // namespace

TEST_CASE(the_tighter_of_two_counts_heads_the_text) {
  for (const char* text : {"", "ab"}) {
    const uint32_t used = static_cast<uint32_t>(std::string(text).size());
    for (bool free : {false, true}) {
      const std::string at = std::string(" after '") + text + "'" + (free ? " beside any string" : "");
      const Heads tight_first = head_after({{0, 8}, {0, 20}}, text, free);
      const Heads loose_first = head_after({{0, 20}, {0, 8}}, text, free);
      CHECK_MSG(tight_first.ok && tight_first.k == 8 - used, "tight first" + at);
      CHECK_MSG(loose_first.ok && loose_first.k == 8 - used, "loose first" + at);
    }
  }
  // Neither within the other (a minimum beside the tighter maximum): the second is judged as any
  // other conjunct, and a count is no class that holds every plain string: no head.
  const Heads crossed = head_after({{0, 8}, {3, 20}}, "ab", false);
  CHECK_MSG(!crossed.ok, "C{0,8} beside C{3,20}");
}
