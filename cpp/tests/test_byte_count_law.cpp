// ExprStore::conj's laws for counts of characters. A count of single bytes beside counts of
// characters (a pattern `^[a-z0-9-]{3,64}$` beside minLength and maxLength) becomes one count of a
// byte class: on random counts over "abcx" (x starting two-byte characters in some, a plain byte
// in others), beside counts of characters of one or two bytes, the intersection built with the
// law holds exactly the strings up to 8 bytes that every conjunct holds on its own (no law
// reaches a lone count), and the law fires on a good share of them (a count of one byte class, no
// intersection left). A full count C* beside a pattern whose bytes are all C's one-byte words (a
// minLength met beside a pattern) is dropped: alike on random patterns, where it must not drop a
// count whose two-byte characters the pattern's bytes would start.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "check.h"
#include "regex/derivative.h"
#include "regex/expr.h"
#include "test_rng.h"
#include "test_strings.h"

using stencil::ExprId;
using stencil::ExprKind;
using stencil::ExprStore;
using stencil_test::matches;
using stencil_test::strings_up_to;

namespace {

const char kAlphabet[] = "abcx";

stencil::ByteSet random_set(stencil_test::Rng& r) {
  stencil::ByteSet s;
  for (const char* c = kAlphabet; *c; ++c)
    if (r.below(3) != 0) s.add(static_cast<uint8_t>(*c));
  return s;
}

uint32_t random_max(stencil_test::Rng& r, uint32_t lo) {
  return r.below(4) == 0 ? stencil::kUnbounded : lo + r.below(5);
}

// A count of characters: some bytes alone, and (often) two-byte characters starting with one of
// the alphabet's bytes, which the law must refuse where the byte count takes that byte.
ExprId random_char_count(ExprStore& st, stencil_test::Rng& r) {
  std::vector<ExprId> chars;
  const stencil::ByteSet whole = random_set(r);
  if (!whole.empty()) chars.push_back(st.bytes(whole));
  for (uint32_t i = r.below(3); i > 0; --i)
    chars.push_back(st.concat(st.byte(static_cast<uint8_t>(kAlphabet[r.below(4)])),
                              st.byte(static_cast<uint8_t>(kAlphabet[r.below(4)]))));
  if (chars.empty()) chars.push_back(st.byte('a'));
  const uint32_t lo = r.below(4);
  return st.repeat(st.alt(chars), lo, random_max(r, lo));
}

// A pattern of random byte sets over the alphabet: concatenations, alternatives and counts.
ExprId random_pattern(ExprStore& st, stencil_test::Rng& r, int depth) {
  switch (depth > 2 ? 0 : r.below(4)) {
    case 0:
      return st.bytes(random_set(r));
    case 1:
      return st.concat(random_pattern(st, r, depth + 1), random_pattern(st, r, depth + 1));
    case 2:
      return st.alt({random_pattern(st, r, depth + 1), random_pattern(st, r, depth + 1)});
    default: {
      const uint32_t lo = r.below(3);
      return st.repeat(random_pattern(st, r, depth + 1), lo, random_max(r, lo));
    }
  }
}

// 400 rounds over "abcx", each with a store of its own: `parts` draws the conjuncts, and the
// intersection conj builds of them must hold exactly the strings up to 8 bytes that each holds;
// `seen` is shown each intersection.
void check_rounds(uint64_t seed, const std::function<std::vector<ExprId>(ExprStore&, stencil_test::Rng&)>& parts,
                  const std::function<void(ExprStore&, const std::vector<ExprId>&, ExprId)>& seen) {
  stencil_test::Rng r{seed};
  const std::vector<std::string> strings = strings_up_to(8, kAlphabet);
  for (int round = 0; round < 400; ++round) {
    ExprStore st;
    stencil::Deriver d(st);
    const std::vector<ExprId> ps = parts(st, r);
    const ExprId e = st.conj(ps);
    seen(st, ps, e);
    for (const std::string& s : strings) {
      bool each = true;
      for (ExprId p : ps) each = each && matches(st, d, p, s);
      if (!CHECK_MSG(matches(st, d, e, s) == each,
                     "round " + std::to_string(round) + ", '" + s + "' in " + st.to_string(e)))
        throw stencil_test::Abort{};
    }
  }
}

}  // namespace

TEST_CASE(a_full_count_of_characters_beside_a_pattern_of_its_bytes_is_dropped) {
  int dropped = 0, kept = 0;
  check_rounds(
      0xF011C0A7ull,
      [](ExprStore& st, stencil_test::Rng& r) {
        const ExprId count = random_char_count(st, r);
        const ExprId item = st.node(count).kind == ExprKind::Repeat ? st.node(count).a : count;
        return std::vector<ExprId>{st.repeat(item, 0, stencil::kUnbounded), random_pattern(st, r, 0)};
      },
      [&](ExprStore& st, const std::vector<ExprId>& parts, ExprId e) {
        dropped += e == parts[1];
        kept += st.node(e).kind == ExprKind::And;
      });
  REQUIRE(dropped > 60);
  REQUIRE(kept > 60);
}

TEST_CASE(a_count_of_bytes_beside_counts_of_characters_is_one_count_of_a_byte_class) {
  int merged = 0, kept = 0;
  check_rounds(
      0xB17E5C0Dull,
      [](ExprStore& st, stencil_test::Rng& r) {
        std::vector<ExprId> parts;
        const uint32_t lo = r.below(4);
        parts.push_back(st.repeat(st.bytes(random_set(r)), lo, random_max(r, lo)));
        if (r.below(4) == 0) parts.push_back(st.repeat(st.bytes(random_set(r)), r.below(3), stencil::kUnbounded));
        for (uint32_t i = 1 + r.below(2); i > 0; --i) parts.push_back(random_char_count(st, r));
        if (r.below(5) == 0) parts.push_back(st.concat(st.byte('a'), ExprStore::kAnyByteStar));  // no count
        return parts;
      },
      [&](ExprStore& st, const std::vector<ExprId>&, ExprId e) {
        (st.node(e).kind == ExprKind::And ? kept : merged) += 1;
      });
  REQUIRE(merged > 100);
  REQUIRE(kept > 40);
}
