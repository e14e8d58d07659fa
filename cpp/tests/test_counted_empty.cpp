// Deriver::is_empty on a pattern beside a count of characters, `P & C{lo,hi}` (counted_empty.cpp:
// the fewest items of C in a word of P, off P's derivatives): on random patterns over "ab " (with
// unanchored counts among them) beside counts of items of one byte, of two, or of items one of
// which is a prefix of another, the answer for the intersection and for its derivatives agrees
// with every string short enough to hold a word of it. And the unanchored run beside a maxLength
// that took half a second: every state of its walk decided without a search.
#include <string>
#include <vector>

#include "check.h"
#include "regex/derivative.h"
#include "regex/expr.h"
#include "test_rng.h"
#include "test_strings.h"

using stencil::ExprId;
using stencil::ExprStore;
using stencil_test::strings_up_to;

namespace {

ExprId random_pattern(ExprStore& st, stencil_test::Rng& r, int depth) {
  const ExprId a = st.byte('a'), b = st.byte('b'), sp = st.byte(' ');
  const ExprId any = st.alt({a, b, sp}), star = st.repeat(any, 0, stencil::kUnbounded);
  if (depth == 0) {
    const ExprId leaves[] = {a, b, sp, st.alt({a, b}), any};
    return leaves[r.below(5)];
  }
  const ExprId x = random_pattern(st, r, depth - 1);
  switch (r.below(5)) {
    case 0:
      return st.concat(x, random_pattern(st, r, depth - 1));
    case 1:
      return st.alt({x, random_pattern(st, r, depth - 1)});
    case 2:
      return st.concat({star, st.repeat(st.alt({a, b}), 1 + r.below(4), 4 + r.below(3)), star});  // unanchored
    default: {
      const uint32_t lo = r.below(3);
      return st.repeat(x, lo, r.below(4) == 0 ? stencil::kUnbounded : lo + r.below(4));
    }
  }
}

ExprId derive_by(stencil::Deriver& d, ExprId e, const std::string& s) {
  for (char c : s)
    if (e != ExprStore::kNothing) e = d.derive(e, static_cast<uint8_t>(c));
  return e;
}

}  // namespace

TEST_CASE(a_pattern_beside_a_count_is_empty_exactly_when_no_short_string_is_in_it) {
  stencil_test::Rng r{0xC0117EDEull};
  const std::vector<std::string> strings = strings_up_to(8);  // (words here have at most 8 bytes)
  size_t empty = 0, nonempty = 0;
  for (int round = 0; round < 250; ++round) {
    ExprStore st;
    stencil::Deriver d(st), plain(st);
    d.set_class_representatives({'a', 'b', ' ', 0});
    const ExprId a = st.byte('a'), b = st.byte('b'), sp = st.byte(' ');
    const ExprId items[] = {st.alt({a, b, sp}), st.alt({a, st.concat(b, sp), sp}), st.alt({a, st.concat(a, b)}),
                            st.alt({st.concat(a, a), b, sp})};
    const uint32_t lo = r.below(3);
    const ExprId count = st.repeat(items[r.below(4)], lo, lo + r.below(3));
    const ExprId e = st.conj({random_pattern(st, r, 1 + static_cast<int>(r.below(2))), count});
    if (e == ExprStore::kNothing) continue;
    for (const std::string& prefix : {std::string(), std::string("a"), std::string("ab"), std::string("b a")}) {
      const ExprId x = derive_by(plain, e, prefix);
      if (x == ExprStore::kNothing) continue;
      const bool said = d.is_empty(x);
      bool found = false;
      for (const std::string& s : strings)
        if (s.size() + prefix.size() <= 8 && st.nullable(derive_by(plain, x, s)) && (found = true)) break;
      const std::string at = "round " + std::to_string(round) + " after '" + prefix + "': " + st.to_string(x);
      CHECK_MSG(said != found, at + (said ? " said empty, holds a string" : " said not empty, holds none"));
      (said ? empty : nonempty) += 1;
    }
  }
  CHECK(empty > 100);
  CHECK(nonempty > 100);
}

// `.*[A-Z]{200}.*` beside a length of 223 (JSON string characters reduced to bytes), after k
// capitals: another keeps it alive, a space leaves room for a run only while k + 1 + 200 <= 223.
// Each decided within little work, where a search over (run, count) pairs proved each dead one
// through some 20,000 states.
TEST_CASE(an_unanchored_run_beside_a_length_is_decided_without_a_search) {
  ExprStore st;
  stencil::Deriver d(st);
  d.set_class_representatives({'A', ' ', '"', 0});
  stencil::ByteSet upper, text;
  for (int c = 'A'; c <= 'Z'; ++c) upper.add(static_cast<uint8_t>(c));
  for (int c = 0x20; c < 0x7f; ++c)
    if (c != '"') text.add(static_cast<uint8_t>(c));
  const ExprId star = st.repeat(st.bytes(text), 0, stencil::kUnbounded);
  const ExprId pattern = st.concat({star, st.repeat(st.bytes(upper), 200, 200), star});
  ExprId x = st.concat(st.conj({pattern, st.repeat(st.bytes(text), 0, 223)}), st.byte('"'));
  const uint64_t fuel = d.fuel_left();
  for (uint32_t k = 0; k < 40; ++k) {
    CHECK_MSG(d.is_empty(d.derive(x, ' ')) == (k + 1 + 200 > 223), "a space after " + std::to_string(k));
    x = d.derive(x, 'A');
    CHECK(!d.is_empty(x));
  }
  CHECK_MSG(fuel - d.fuel_left() < 20000, "work " + std::to_string(fuel - d.fuel_left()));
}
