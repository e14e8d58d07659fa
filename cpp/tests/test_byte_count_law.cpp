// ExprStore::conj's laws for counts of characters. A count of single bytes beside counts of
// characters (a pattern `^[a-z0-9-]{3,64}$` beside minLength and maxLength) becomes one count of a
// byte class: on random counts over "abcx" (x starting two-byte characters in some, a plain byte
// in others), beside counts of characters of one or two bytes, the intersection built with the
// law holds exactly the strings up to 8 bytes that every conjunct holds on its own (no law
// reaches a lone count), and the law fires on a good share of them (a count of one byte class, no
// intersection left). A full count C* beside a pattern whose bytes are all C's one-byte words (a
// minLength met beside a pattern) is dropped: alike on random patterns, where it must not drop a
// count whose two-byte characters the pattern's bytes would start.
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

// Whether conj(parts) holds exactly the strings every part holds.
bool same_strings(ExprStore& st, stencil::Deriver& d, const std::vector<ExprId>& parts, ExprId e,
                  const std::vector<std::string>& strings, int round) {
  for (const std::string& s : strings) {
    bool each = true;
    for (ExprId p : parts) each = each && matches(st, d, p, s);
    if (!CHECK_MSG(matches(st, d, e, s) == each,
                   "round " + std::to_string(round) + ", '" + s + "' in " + st.to_string(e)))
      return false;
  }
  return true;
}

}  // namespace

TEST_CASE(a_full_count_of_characters_beside_a_pattern_of_its_bytes_is_dropped) {
  stencil_test::Rng r{0xF011C0A7ull};
  const std::vector<std::string> strings = strings_up_to(8, kAlphabet);
  int dropped = 0, kept = 0;
  for (int round = 0; round < 400; ++round) {
    ExprStore st;
    stencil::Deriver d(st);
    ExprId count = random_char_count(st, r);
    count = st.repeat(st.node(count).kind == ExprKind::Repeat ? st.node(count).a : count, 0, stencil::kUnbounded);
    const ExprId pattern = random_pattern(st, r, 0);
    const std::vector<ExprId> parts{count, pattern};
    const ExprId e = st.conj(parts);
    if (e == pattern) ++dropped;
    if (st.node(e).kind == ExprKind::And) ++kept;
    if (!same_strings(st, d, parts, e, strings, round)) throw stencil_test::Abort{};
  }
  REQUIRE(dropped > 60);
  REQUIRE(kept > 60);
}

TEST_CASE(a_count_of_bytes_beside_counts_of_characters_is_one_count_of_a_byte_class) {
  stencil_test::Rng r{0xB17E5C0Dull};
  const std::vector<std::string> strings = strings_up_to(8, kAlphabet);
  int merged = 0, kept = 0;
  for (int round = 0; round < 400; ++round) {
    ExprStore st;
    stencil::Deriver d(st);
    std::vector<ExprId> parts;
    const uint32_t lo = r.below(4);
    parts.push_back(st.repeat(st.bytes(random_set(r)), lo, random_max(r, lo)));
    if (r.below(4) == 0) parts.push_back(st.repeat(st.bytes(random_set(r)), r.below(3), stencil::kUnbounded));
    for (uint32_t i = 1 + r.below(2); i > 0; --i) parts.push_back(random_char_count(st, r));
    if (r.below(5) == 0) parts.push_back(st.concat(st.byte('a'), ExprStore::kAnyByteStar));  // no count
    const ExprId e = st.conj(parts);
    (st.node(e).kind == ExprKind::And ? kept : merged) += 1;
    if (!same_strings(st, d, parts, e, strings, round)) throw stencil_test::Abort{};
  }
  REQUIRE(merged > 100);
  REQUIRE(kept > 40);
}
