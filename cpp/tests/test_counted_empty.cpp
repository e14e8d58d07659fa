// Deriver::is_empty on a pattern beside a count of characters, `P & C{lo,hi}` (counted_empty.cpp:
// the fewest items of C in a word of P, off P's derivatives): on random patterns over "ab " (with
// unanchored counts among them) beside counts of items of one byte, of two, or of items one of
// which is a prefix of another, the answer for the intersection and for its derivatives agrees
// with every string short enough to hold a word of it. And the unanchored run beside a maxLength
// that took half a second: every state of its walk decided without a search.
#include <algorithm>
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

// is_empty of e's derivative by each prefix against every string of `strings` that fits in 8
// bytes with it (then `end`, a closing byte where e has one); counts the answers of each kind.
void check_prefixes(stencil::Deriver& d, stencil::Deriver& plain, ExprStore& st, ExprId e,
                    const std::vector<std::string>& prefixes, const std::vector<std::string>& strings,
                    const std::string& end, int round, size_t& empty, size_t& nonempty) {
  for (const std::string& prefix : prefixes) {
    const ExprId x = derive_by(plain, e, prefix);
    if (x == ExprStore::kNothing) continue;
    const bool said = d.is_empty(x);
    bool found = false;
    for (const std::string& s : strings)
      if (s.size() + prefix.size() <= 8 && st.nullable(derive_by(plain, x, s + end))) {
        found = true;
        break;
      }
    const std::string at = "round " + std::to_string(round) + " after '" + prefix + "': " + st.to_string(x);
    CHECK_MSG(said != found, at + (said ? " said empty, holds a string" : " said not empty, holds none"));
    (said ? empty : nonempty) += 1;
  }
}

// A JSON string's characters reduced to bytes: printable ASCII but the quote.
stencil::ByteSet string_text() {
  stencil::ByteSet text;
  for (int c = 0x20; c < 0x7f; ++c)
    if (c != '"') text.add(static_cast<uint8_t>(c));
  return text;
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
    check_prefixes(d, plain, st, e, {"", "a", "ab", "b a"}, strings, "", round, empty, nonempty);
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
  stencil::ByteSet upper;
  for (int c = 'A'; c <= 'Z'; ++c) upper.add(static_cast<uint8_t>(c));
  const stencil::ByteSet text = string_text();
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

// Minimums past the fewest items (an exact length beside an unanchored pattern, `[ab]+` in a
// string of exactly 8 characters): the counts of items P's words take, not only the fewest, decide
// them. Random patterns beside counts of one-byte items with minimums up to 8 (of items of up to
// two bytes, up to 4; of three, 2), and their derivatives (some inside an item), against every
// string of at most 8 bytes.
TEST_CASE(a_pattern_beside_a_count_past_its_fewest_items_is_decided_by_the_counts_it_takes) {
  stencil_test::Rng r{0xC0117ED2ull};
  const std::vector<std::string> strings = strings_up_to(8);
  size_t empty = 0, nonempty = 0;
  for (int round = 0; round < 600; ++round) {
    ExprStore st;
    stencil::Deriver d(st), plain(st);
    d.set_class_representatives({'a', 'b', ' ', 0});
    d.set_inside_from(1);  // (the counts inside an item read off the explorations, small as they are here)
    const ExprId a = st.byte('a'), b = st.byte('b'), sp = st.byte(' ');
    // (items of two bytes too, in fewer: a prefix then ends inside one)
    const ExprId items[] = {st.alt({a, b, sp}),
                            st.alt({a, b}),
                            st.alt({a, st.concat(b, sp), sp}),
                            st.alt({st.concat(a, a), b}),
                            st.alt({a, st.concat(a, b), sp}),
                            st.alt({a, st.concat({b, b, a})})};
    const size_t item = r.below(6);
    const uint32_t lo = item < 2 ? 3 + r.below(6) : item < 5 ? 2 + r.below(3) : 1 + r.below(2);
    const uint32_t hi = std::min<uint32_t>(item < 2 ? 8 : item < 5 ? 4 : 2, lo + r.below(2));
    const ExprId pattern = random_pattern(st, r, 1 + static_cast<int>(r.below(2)));
    const ExprId e = st.concat(st.conj({pattern, st.repeat(items[item], lo, hi)}), st.byte('"'));
    if (e == ExprStore::kNothing) continue;
    d.is_empty(e);  // (its exploration answers the derivatives inside an item too)
    check_prefixes(d, plain, st, e, {"", "a", "ab", "b a", "bb"}, strings, "\"", round, empty, nonempty);
  }
  CHECK(empty > 100);
  CHECK(nonempty > 100);
}

// The case that led here: `.*[0-9a-f]+.*` beside exactly 12 characters (and 100), walked character by
// character (each a new count, most with a minimum past the fewest items): each state decided
// off the pattern's counts, in little work all together.
TEST_CASE(an_unanchored_pattern_beside_an_exact_length_is_decided_at_every_count) {
  ExprStore st;
  stencil::Deriver d(st);
  d.set_class_representatives({'a', 'x', '"', 0});
  stencil::ByteSet hex;
  for (const char* c = "0123456789abcdef"; *c; ++c) hex.add(static_cast<uint8_t>(*c));
  const stencil::ByteSet text = string_text();
  const ExprId star = st.repeat(st.bytes(text), 0, stencil::kUnbounded);
  const ExprId pattern = st.concat({star, st.repeat(st.bytes(hex), 1, stencil::kUnbounded), star});
  ExprId x = st.concat(st.conj({pattern, st.repeat(st.bytes(text), 12, 12)}), st.byte('"'));
  const uint64_t fuel = d.fuel_left();
  for (uint32_t k = 0; k < 12; ++k) {
    // (after k non-hex characters: room for a hex one while k < 12, and it must come last at 11)
    CHECK_MSG(!d.is_empty(x), "after " + std::to_string(k) + " x's");
    CHECK_MSG(d.is_empty(d.derive(d.derive(x, 'x'), '"')), "a quote too early after " + std::to_string(k));
    x = d.derive(x, 'x');
  }
  CHECK_MSG(d.is_empty(x), "twelve x's and no hex digit");
  // (and past the first 64 counts, which the sets carry from word to word)
  ExprId y = st.concat(st.conj({pattern, st.repeat(st.bytes(text), 100, 100)}), st.byte('"'));
  for (uint32_t k = 0; k < 100; ++k) {
    CHECK_MSG(!d.is_empty(y), "after " + std::to_string(k) + " x's of 100");
    y = d.derive(y, 'x');
  }
  CHECK_MSG(d.is_empty(y), "a hundred x's and no hex digit");
  CHECK_MSG(fuel - d.fuel_left() < 1000, "work " + std::to_string(fuel - d.fuel_left()));
}

// Deriver::item_slack, the bound the masks take plain tokens by (Lexer::slack_text_head): where
// random patterns over "ab " have one, every string u of items that p reads (of one byte each,
// any of the three) extends to a word of p of every length from |u| + slack up; where a string
// kills p, there is none.
TEST_CASE(item_slack_is_the_room_every_string_of_items_leaves_for_every_longer_word) {
  stencil_test::Rng r{0x51ACCull};
  const std::vector<std::string> strings = strings_up_to(4);
  const std::string alphabet = "ab ";
  size_t with = 0, without = 0;
  for (int round = 0; round < 300; ++round) {
    ExprStore st;
    stencil::Deriver d(st), plain(st);
    d.set_class_representatives({'a', 'b', ' ', 0});
    const ExprId item = st.alt({st.byte('a'), st.byte('b'), st.byte(' ')});
    const ExprId p = random_pattern(st, r, 1 + static_cast<int>(r.below(2)));
    const uint32_t slack = d.item_slack(p, item);
    bool killed = false;
    for (const std::string& u : strings) {
      const ExprId x = derive_by(plain, p, u);
      if (x == ExprStore::kNothing || plain.is_empty(x)) {
        killed = true;
        continue;
      }
      if (slack == stencil::Deriver::kNoSlack) continue;
      // the derivatives after each further length, and whether one of them ends a word
      std::vector<ExprId> level{x};
      for (uint32_t n = 0; n <= 8; ++n) {
        bool ends = false;
        for (ExprId y : level) ends = ends || st.nullable(y);
        if (n >= slack)
          CHECK_MSG(ends, "round " + std::to_string(round) + ": '" + u + "' then " + std::to_string(n) +
                              " more, slack " + std::to_string(slack) + ": " + st.to_string(p));
        std::vector<ExprId> next;
        for (ExprId y : level)
          for (char c : alphabet) {
            const ExprId z = plain.derive(y, static_cast<uint8_t>(c));
            if (z != ExprStore::kNothing && std::find(next.begin(), next.end(), z) == next.end()) next.push_back(z);
          }
        level.swap(next);
      }
    }
    if (killed) CHECK_MSG(slack == stencil::Deriver::kNoSlack, "a slack beside a killing string: " + st.to_string(p));
    (slack == stencil::Deriver::kNoSlack ? without : with) += 1;
  }
  CHECK(with > 30);
  CHECK(without > 30);
}

// An e-mail's shape beside a maxLength: `[a-z]+@[a-z]+` or a bracketed literal of many states
// (its IPv6 literal: item_counts explored every pair of it, 6 ms, to say the fewest is three
// characters). Found forward, the fewest reads only the pairs nearer than the answer: each state
// of a local part decided exactly (empty once the `@` and a letter no longer fit) within 825 units
// of work in all (7,662 exploring every pair).
TEST_CASE(a_pattern_beside_a_length_is_decided_off_the_pairs_nearer_than_its_fewest) {
  ExprStore st;
  stencil::Deriver d(st);
  d.set_class_representatives({'a', '@', '[', ']', '0', ' ', '"', 0});
  stencil::ByteSet lower, digits;
  for (int c = 'a'; c <= 'z'; ++c) lower.add(static_cast<uint8_t>(c));
  for (int c = '0'; c <= '9'; ++c) digits.add(static_cast<uint8_t>(c));
  const ExprId word = st.repeat(st.bytes(lower), 1, stencil::kUnbounded);
  const ExprId literal = st.concat({st.byte('['), st.repeat(st.bytes(digits), 1, 400), st.byte(']')});
  const ExprId address = st.concat({word, st.byte('@'), st.alt({word, literal})});
  const uint32_t max_length = 64;
  ExprId x = st.concat(st.conj({address, st.repeat(st.bytes(string_text()), 0, max_length)}), st.byte('"'));
  const uint64_t fuel = d.fuel_left();
  for (uint32_t k = 1; k <= max_length; ++k) {
    x = d.derive(x, 'a');
    // k letters read: `@` and one letter more end a word of k + 2 characters
    CHECK_MSG(d.is_empty(x) == (k + 2 > max_length), "after " + std::to_string(k) + " letters");
  }
  CHECK_MSG(fuel - d.fuel_left() < 2000, "work " + std::to_string(fuel - d.fuel_left()));
}
