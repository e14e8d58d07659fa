// regex/finite.h: FiniteLanguages::may_reach_finite proves off an expression's structure that
// no derivative of it (other than ε and ∅) has a finite language, so that the lexer need not
// search them (Lexer::may_become_finite). Brute force: on random expressions over "ab " with
// complements, intersections and counts, every expression it calls out of reach has no such
// derivative among all of them (an exhaustive search over the bytes a, b, space and one other);
// it proves a good share, and the key lexeme of an object's other keys beside a counted pattern.
#include <string>
#include <unordered_set>
#include <vector>

#include "check.h"
#include "regex/derivative.h"
#include "regex/expr.h"
#include "regex/finite.h"
#include "test_rng.h"

using stencil::ExprId;
using stencil::ExprStore;

namespace {

ExprId random_language(ExprStore& st, stencil_test::Rng& r, int depth) {
  const ExprId a = st.byte('a'), b = st.byte('b'), sp = st.byte(' ');
  if (depth == 0) {
    const ExprId leaves[] = {a,
                             b,
                             sp,
                             st.alt({a, b}),
                             st.concat(a, b),
                             st.repeat(st.alt({a, b}), 0, stencil::kUnbounded),
                             ExprStore::kEmpty};
    return leaves[r.below(7)];
  }
  const ExprId x = random_language(st, r, depth - 1);
  switch (r.below(7)) {
    case 0:
      return st.concat(x, random_language(st, r, depth - 1));
    case 1:
      return st.alt({x, random_language(st, r, depth - 1)});
    case 2:
      return st.conj({x, random_language(st, r, depth - 1)});
    case 3:
      return st.negate(x);
    case 4:
      return st.repeat(x, r.below(2), stencil::kUnbounded);
    case 5: {
      const uint32_t lo = r.below(2);
      return st.repeat(x, lo, lo + 1 + r.below(4));
    }
    default:  // quoted, as a key lexeme is
      return st.concat(sp, st.concat(x, sp));
  }
}

// Whether some derivative of e (e included) other than ε and ∅ has a finite language: all of
// them, by every byte that tells them apart. False with *complete when the search ran out.
bool reaches_finite(ExprStore& st, stencil::Deriver& d, stencil::FiniteLanguages& f, ExprId e, bool* complete) {
  std::vector<ExprId> todo{e};
  std::unordered_set<ExprId> seen{e};
  *complete = true;
  while (!todo.empty()) {
    const ExprId x = todo.back();
    todo.pop_back();
    if (x != ExprStore::kEmpty && f.finite(st, x)) return true;
    for (char c : std::string("ab c")) {
      const ExprId y = d.derive(x, static_cast<uint8_t>(c));
      if (y == ExprStore::kNothing || !seen.insert(y).second) continue;
      if (seen.size() > 20'000) {
        *complete = false;
        return false;
      }
      todo.push_back(y);
    }
  }
  return false;
}

}  // namespace

TEST_CASE(finite_languages_out_of_reach_only_where_no_derivative_is_finite) {
  stencil_test::Rng r{0xF1A17E5Dull};
  size_t proved = 0, searched = 0, finite_reached = 0;
  for (int round = 0; round < 3000; ++round) {
    ExprStore st;
    stencil::Deriver d(st);
    stencil::FiniteLanguages f;
    const ExprId e = random_language(st, r, 1 + static_cast<int>(r.below(4)));
    if (e == ExprStore::kNothing) continue;
    bool complete = false;
    const bool reaches = reaches_finite(st, d, f, e, &complete);
    if (!complete) continue;
    ++searched;
    finite_reached += reaches;
    const bool may = f.may_reach_finite(st, e);
    CHECK(may || !reaches);
    if (!may) ++proved;
    if (!may && reaches) {
      CHECK_EQ(st.to_string(e), std::string("(a derivative is finite)"));
      break;
    }
  }
  CHECK(searched > 2500);
  // the proof is not vacuous: most languages that reach no finite derivative are proved so
  CHECK(proved > (searched - finite_reached) / 2);
  CHECK(finite_reached > 200);
}

TEST_CASE(finite_languages_prove_a_key_of_any_string_beside_a_counted_pattern) {
  ExprStore st;
  stencil::FiniteLanguages f;
  const ExprId quote = st.byte('"');
  stencil::ByteSet text;
  for (int c = 0x20; c < 0x80; ++c)
    if (c != '"' && c != '\\') text.add(static_cast<uint8_t>(c));
  const ExprId any_string =
      st.repeat(st.alt({st.bytes(text), st.concat(st.byte('\\'), st.byte('"'))}), 0, stencil::kUnbounded);
  const ExprId pattern = st.repeat(st.alt({st.byte('a'), st.byte('_')}), 1, 255);
  const ExprId other_keys = st.concat(quote, st.concat(st.conj({any_string, st.negate(pattern)}), quote));
  CHECK(!f.may_reach_finite(st, other_keys));
  // the pattern's own keys are finite; a key of named ones beside any string may be exhausted
  CHECK(f.may_reach_finite(st, st.concat(quote, st.concat(pattern, quote))));
  CHECK(f.may_reach_finite(st, st.alt({other_keys, st.concat(quote, st.concat(st.literal("name"), quote))})));
  // nor is a complement of a complement read as one
  CHECK(f.may_reach_finite(st, st.negate(st.conj({any_string, st.negate(pattern)}))));
}
