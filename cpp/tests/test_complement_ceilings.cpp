// Lexer::pair_bytes' ceilings of intersections with complements, read off the expression (where
// no search of the states would end: a free key beside pattern keys), on one hand-made grammar:
// every alternative's states count, and a complement's last bytes only where the text may end on
// the byte that escapes it. (test_costs.cpp holds them against exhaustive search on random ones.)
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "cost/cost_tables.h"
#include "lexer/lexer.h"
#include "matcher/lexer_epoch.h"
#include "stencil/compiled_grammar.h"
#include "stencil/grammar.h"
#include "stencil/vocabulary.h"

using stencil::ExprId;
using stencil::GrammarBuilder;
using stencil::Lexer;
using stencil::Symbol;

// Read off the expression, an intersection with a complement bounds every alternative's states: one
// that never reaches C* (`c a{12}`, C [ab], past a `c` outside C) keeps the pair's ceiling at its
// own 13 bytes, however short the others' are; and a complement's last bytes count only where
// the text ends on the byte that escapes it, with the ends of every word of it.
TEST_CASE(costs_complement_ceilings_need_every_alternative) {
  GrammarBuilder b;
  const ExprId star = b.re_repeat(b.re_byte_ranges({{'a', 'b'}}), 0, -1);
  const ExprId alts = b.re_or({b.re_concat({b.re_literal("a"), star}),
                               b.re_concat({b.re_literal("c"), b.re_repeat(b.re_literal("a"), 12, 12)})});
  const ExprId free = b.re_and({star, b.re_not(b.re_literal("ab"))});  // (beside it: c's bound is 1 + 3)
  // A complement that every byte may end, `b a{0,5}` at the end (the a's may be none), or whose
  // last byte the text would not end on (a word of P is still to come, `a`): 6 a's after a `b`.
  const ExprId runs = b.re_repeat(b.re_literal("a"), 0, 5), ends_b = b.re_concat({star, b.re_literal("b")});
  const ExprId z1 = b.re_and({star, b.re_not(b.re_concat({ends_b, runs}))});
  const ExprId z2 = b.re_and(
      {b.re_concat({star, b.re_literal("a")}), b.re_not(b.re_concat({ends_b, b.re_repeat(b.re_literal("a"), 1, 5)}))});
  const Symbol x =
      b.lexeme(b.re_concat({b.re_and({alts, b.re_not(b.re_literal("ab"))}), b.re_literal("b")}), "x", false);
  const Symbol y = b.lexeme(b.re_concat({free, b.re_literal("b")}), "y", false), start = b.rule("start");
  const Symbol z = b.lexeme(b.re_concat({z1, b.re_literal("c")}), "z", false);
  const Symbol w = b.lexeme(b.re_concat({z2, b.re_literal("c")}), "w", false);
  b.add_alternative(start, {x});
  b.add_alternative(start, {y, y});
  b.add_alternative(start, {z, w});
  std::vector<std::string> tokens{"<eos>", "a", "b", "c"};
  auto vocab = std::make_shared<stencil::Vocabulary>(tokens, std::vector<int32_t>{0}, std::vector<int32_t>{0},
                                                     static_cast<int32_t>(tokens.size()));
  auto grammar = std::make_shared<stencil::CompiledGrammar>(b.build(start), std::move(vocab));
  const Lexer& lx = grammar->epoch()->cost_tables(grammar->grammar(), grammar->vocab())->lexer();
  for (uint32_t l = 0; l < grammar->grammar().lexemes.size(); ++l) {
    const std::string& name = grammar->grammar().lexemes[l].name;
    for (const auto& p : lx.pair_bytes(lx.start_state({l}), 4)) {
      if (name == "x") CHECK_MSG(p.ceiling >= 13, "x's ceiling " + std::to_string(p.ceiling));
      if (name == "y") CHECK_MSG(p.ceiling < 8, "y's ceiling " + std::to_string(p.ceiling));
      if (name == "z" || name == "w") CHECK_MSG(p.ceiling >= 7, name + "'s ceiling " + std::to_string(p.ceiling));
    }
  }
}
