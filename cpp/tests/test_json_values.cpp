// json/: the number-range recognizer and canonical values against oracles written here.
// number_range: random bounds (decimals, exponents, exclusive, integer) and random JSON numbers;
// a number is accepted exactly when its exact decimal value is in range (compared as digit
// strings by the oracle below), a prefix of an accepted number is never refused, and
// number_min_accept_bytes is the shortest completion an exhaustive search finds.
// canon: random JSON values written in different spellings (white space, number forms, member
// order, escapes) have one canonical form, and values that differ have different ones.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "check.h"
#include "json/canon.h"
#include "json/number_points.h"
#include "json/number_range.h"
#include "stencil/errors.h"
#include "test_rng.h"

using stencil::NumberState;

using stencil_test::Rng;

namespace {

// An exact decimal: zero, or (-1)^neg × 0.d × 10^q with d free of leading and trailing zeros.
struct Exact {
  bool neg = false, zero = true;
  std::string d;
  int64_t q = 0;
};

// The value of a JSON number (false where `t` is not one).
bool exact_of(const std::string& t, Exact& out) {
  size_t i = 0;
  out = Exact{};
  out.neg = i < t.size() && t[i] == '-';
  i += out.neg;
  std::string digits;
  int64_t point = 0;
  auto digit = [&](size_t k) { return k < t.size() && t[k] >= '0' && t[k] <= '9'; };
  if (!digit(i)) return false;
  if (t[i] == '0' && digit(i + 1)) return false;
  for (; digit(i); ++i, ++point) digits += t[i];
  if (i < t.size() && t[i] == '.') {
    if (!digit(++i)) return false;
    for (; digit(i); ++i) digits += t[i];
  }
  int64_t e = 0;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    const bool eneg = ++i < t.size() && t[i] == '-';
    if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
    if (!digit(i)) return false;
    for (; digit(i); ++i) e = e * 10 + (t[i] - '0');
    e = eneg ? -e : e;
  }
  if (i != t.size()) return false;
  const size_t lead = digits.find_first_not_of('0');
  if (lead == std::string::npos) return true;  // zero (its sign does not count)
  out.zero = false;
  out.q = point - static_cast<int64_t>(lead) + e;
  out.d = digits.substr(lead);
  out.d.erase(out.d.find_last_not_of('0') + 1);
  return true;
}

int compare(const Exact& a, const Exact& b) {
  const int sa = a.zero ? 0 : a.neg ? -1 : 1, sb = b.zero ? 0 : b.neg ? -1 : 1;
  if (sa != sb) return sa < sb ? -1 : 1;
  if (sa == 0) return 0;
  int mag = a.q != b.q ? (a.q < b.q ? -1 : 1) : (a.d < b.d ? -1 : a.d > b.d ? 1 : 0);
  return sa * mag;
}

struct Range {
  std::string lo, hi;  // empty: unbounded
  bool lo_x = false, hi_x = false, integer = false;
  bool contains(const std::string& text) const {
    Exact v, b;
    if (!exact_of(text, v)) return false;
    if (integer && !v.zero && v.q < static_cast<int64_t>(v.d.size())) return false;
    if (!lo.empty() && exact_of(lo, b) && (lo_x ? compare(v, b) <= 0 : compare(v, b) < 0)) return false;
    if (!hi.empty() && exact_of(hi, b) && (hi_x ? compare(v, b) >= 0 : compare(v, b) > 0)) return false;
    return true;
  }
};

const char* const kBounds[] = {"0", "1", "-1", "2.5", "-0.25", "10", "1e2", "-3E1", "0.001", "99", "7"};

std::string random_number(Rng& r) {
  std::string t = r.below(3) == 0 ? "-" : "";
  if (r.below(4) == 0) {
    t += "0";
  } else {
    t += static_cast<char>('1' + r.below(9));
    for (uint32_t i = r.below(3); i > 0; --i) t += static_cast<char>('0' + r.below(10));
  }
  if (r.below(2)) {
    t += ".";
    for (uint32_t i = 1 + r.below(3); i > 0; --i) t += static_cast<char>('0' + r.below(10));
  }
  if (r.below(3) == 0) {
    t += r.below(2) ? "e" : "E";
    if (r.below(2)) t += r.below(2) ? "-" : "+";
    for (uint32_t i = 1 + r.below(2); i > 0; --i) t += static_cast<char>('0' + r.below(10));
  }
  return t;
}

bool walk(const NumberState& s, const std::string& bytes, NumberState& out) {
  out = s;
  for (char c : bytes) {
    NumberState next;
    if (!stencil::number_step(out, static_cast<uint8_t>(c), next)) return false;
    out = next;
  }
  return true;
}

// The shortest completion of `prefix` (at most `most` bytes) that `range` (a Range, a Set)
// contains; -1: none.
template <class Values>
int shortest_completion(const Values& range, const std::string& prefix, int most) {
  static const std::string kAlphabet = "0123456789.-+e";
  std::vector<std::string> level{""};
  for (int n = 0; n <= most; ++n) {
    for (const std::string& c : level)
      if (range.contains(prefix + c)) return n;
    std::vector<std::string> next;
    for (const std::string& c : level)
      for (char a : kAlphabet) next.push_back(c + a);
    level.swap(next);
  }
  return -1;
}

struct Counts {
  size_t accepted = 0, completions = 0, states = 0;
};

// Checks the recognizer from `start` on the text t against `values` (a Range, a Set): t is
// accepted exactly when it is one of them, and a random prefix of it that the recognizer reads
// is live exactly when some completion is, with the fewest completing bytes an exhaustive search
// finds; the prefix's state key reads back as the same state.
template <class Values>
void check_number(const NumberState& start, const Values& values, const std::string& t, Rng& r, Counts& n) {
  NumberState end;
  const bool in = values.contains(t);
  if (!walk(start, t, end)) {
    CHECK_MSG(!in, t + " refused, but one of the values");
    return;
  }
  n.accepted += in;
  CHECK_MSG(stencil::number_nullable(end) == in, t + (in ? " one of the values, not accepted" : " accepted wrongly"));
  const std::string prefix = t.substr(0, r.below(static_cast<uint32_t>(t.size()) + 1));
  NumberState at, back;
  if (!walk(start, prefix, at)) return;
  ++n.states;
  CHECK_MSG(stencil::number_decode(stencil::number_encode(at), back) &&
                stencil::number_encode(back) == stencil::number_encode(at),
            prefix + ": its key does not read back");
  bool exact = false;
  const int fewest = stencil::number_min_accept_bytes(at, 4096, &exact);
  const int truth = shortest_completion(values, prefix, 3);
  if (truth >= 0) {
    ++n.completions;
    CHECK_MSG(fewest == truth, prefix + ": " + std::to_string(fewest) + " bytes, not " + std::to_string(truth));
  } else {
    CHECK_MSG(fewest < 0 || fewest > 3, prefix + ": " + std::to_string(fewest) + " bytes, none found");
  }
  CHECK(stencil::number_live(at) == (fewest >= 0));
}
}  // namespace

TEST_CASE(number_ranges_accept_exactly_the_numbers_in_range) {
  Rng r{0x5eed};
  size_t specs = 0;
  Counts n;
  for (int round = 0; round < 300; ++round) {
    Range range;
    if (r.below(4)) range.lo = kBounds[r.below(11)];
    if (r.below(4)) range.hi = kBounds[r.below(11)];
    range.lo_x = r.below(2);
    range.hi_x = r.below(2);
    range.integer = r.below(3) == 0;
    NumberState start;
    try {
      if (!range.lo.empty()) start.spec.lo = stencil::parse_number_bound(range.lo, range.lo_x, "minimum");
      if (!range.hi.empty()) start.spec.hi = stencil::parse_number_bound(range.hi, range.hi_x, "maximum");
      start.spec.integer = range.integer;
      stencil::check_number_spec(start.spec);
    } catch (const stencil::GrammarError&) {
      continue;  // (an integer range needs integral, inclusive bounds)
    }
    ++specs;
    for (int k = 0; k < 60; ++k) check_number(start, range, random_number(r), r, n);
  }
  CHECK(specs > 150);
  CHECK(n.accepted > 1000);
  CHECK(n.completions > 1000);
}

namespace {

// A finite set of values, as the oracle reads it (exact_of, compare).
struct Set {
  std::vector<std::string> values;
  bool minus_zero = true;
  bool contains(const std::string& text) const {
    Exact v, m;
    if (!exact_of(text, v)) return false;
    if (v.zero && text[0] == '-' && !minus_zero) return false;
    for (const std::string& x : values)
      if (exact_of(x, m) && compare(v, m) == 0) return true;
    return false;
  }
};

const char* const kValues[] = {"0",  "1", "-1",  "2.5", "-0.25", "10", "100", "1e2",  "-3E1", "0.001",
                               "99", "7", "120", "12",  "1.2",   "-0", "205", "2000", "-205", "0.5"};

// `value` spelled with its point moved `shift` places and an exponent that moves it back, with
// zeros added at random (25e-1, 0.250E1, 2.5, 250.0e-2).
std::string spelling_of(Rng& r, const std::string& value, int shift) {
  Exact v;
  exact_of(value, v);
  std::string out = v.neg ? "-" : "";
  if (v.zero) return out + (r.below(2) ? "0" : "0.00") + (shift ? "e" + std::to_string(shift) : "");
  const int64_t q = v.q - shift, n = static_cast<int64_t>(v.d.size());
  if (q <= 0)
    out += "0." + std::string(static_cast<size_t>(-q), '0') + v.d;
  else if (q >= n)
    out += v.d + std::string(static_cast<size_t>(q - n), '0') + (r.below(3) == 0 ? ".0" : "");
  else
    out += v.d.substr(0, static_cast<size_t>(q)) + "." + v.d.substr(static_cast<size_t>(q));
  if (out.find('.') != std::string::npos && r.below(3) == 0) out += "0";
  if (shift != 0 || r.below(4) == 0)
    out += std::string(r.below(2) ? "e" : "E") + (r.below(3) == 0 ? "+" : "") + std::to_string(shift);
  return out;
}

}  // namespace

TEST_CASE(number_sets_accept_exactly_their_values_in_every_spelling) {
  Rng r{0x5e75};
  Counts n;
  for (int round = 0; round < 200; ++round) {
    Set set;
    for (uint32_t i = 1 + r.below(6); i > 0; --i) set.values.push_back(kValues[r.below(20)]);
    set.minus_zero = r.below(2);
    NumberState start;
    stencil::points_start(start, stencil::make_number_points(set.values, set.minus_zero));
    for (int k = 0; k < 80; ++k) {
      const std::string t = r.below(2) ? random_number(r)
                                       : spelling_of(r, set.values[r.below(static_cast<uint32_t>(set.values.size()))],
                                                     static_cast<int>(r.below(7)) - 3);
      check_number(start, set, t, r, n);
    }
  }
  CHECK(n.accepted > 5000);
  CHECK(n.completions > 5000);
  CHECK(n.states > 6000);
}

namespace {

// A random JSON value as a tree, written in one of many spellings.
struct Value {
  char kind;  // n(ull) t(rue) f(alse) #(number) s(tring) a(rray) o(bject)
  int number = 0;  // index into kNumbers
  std::string text;
  std::vector<std::pair<std::string, Value>> items;  // (key, value); arrays: keys empty
  bool operator==(const Value& o) const {
    return kind == o.kind && number == o.number && text == o.text && items == o.items;
  }
};

// Spellings of equal numbers per row (rows differ in value).
const std::vector<std::vector<std::string>> kNumbers = {{"0", "-0", "0.0", "0e5", "0E-3"},
                                                        {"1", "1.0", "10e-1", "0.1E1", "1e0"},
                                                        {"-2.5", "-25e-1", "-0.25E+1"},
                                                        {"100", "1e2", "1.00E2", "1000e-1"},
                                                        {"0.5", "5e-1", "0.50"}};

Value random_value(Rng& r, int depth) {
  Value v;
  const uint32_t k = depth <= 0 ? r.below(5) : r.below(7);
  v.kind = "ntf#sao"[k];
  if (v.kind == '#') v.number = static_cast<int>(r.below(static_cast<uint32_t>(kNumbers.size())));
  if (v.kind == 's')
    for (uint32_t i = r.below(3); i > 0; --i) v.text += "ab\"\\\xc3\xa9"[r.below(5)];
  if (v.kind == 'a')
    for (uint32_t i = r.below(3); i > 0; --i) v.items.push_back({"", random_value(r, depth - 1)});
  if (v.kind == 'o') {
    std::vector<std::string> keys{"a", "b", "k\"", "\xc3\xa9"};
    for (uint32_t i = r.below(3); i > 0; --i) {
      const std::string key = keys[r.below(static_cast<uint32_t>(keys.size()))];
      keys.erase(std::find(keys.begin(), keys.end(), key));
      v.items.push_back({key, random_value(r, depth - 1)});
    }
    std::sort(v.items.begin(), v.items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  return v;
}

std::string spell_string(Rng& r, const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += r.below(2) ? std::string("\\") + static_cast<char>(c) : (c == '"' ? "\\u0022" : "\\u005C");
    } else if (c == 'a' && r.below(2)) {
      out += "\\u0061";
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string spell(Rng& r, const Value& v) {
  const std::string ws = r.below(2) ? " " : "";
  switch (v.kind) {
    case 'n':
      return "null";
    case 't':
      return "true";
    case 'f':
      return "false";
    case '#':
      return kNumbers[v.number][r.below(static_cast<uint32_t>(kNumbers[v.number].size()))];
    case 's':
      return spell_string(r, v.text);
    default:
      break;
  }
  std::vector<size_t> order(v.items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (v.kind == 'o')  // members in any order
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[r.below(static_cast<uint32_t>(i))]);
  std::string out = v.kind == 'a' ? "[" : "{";
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& [key, item] = v.items[order[i]];
    out += (i ? "," : "") + ws;
    if (v.kind == 'o') out += spell_string(r, key) + ws + ":" + ws;
    out += spell(r, item) + ws;
  }
  return out + (v.kind == 'a' ? "]" : "}");
}

}  // namespace

TEST_CASE(canonical_values_are_equal_exactly_for_equal_values) {
  Rng r{0xca70};
  std::vector<Value> values;
  std::vector<std::string> canon;
  for (int i = 0; i < 400; ++i) {
    const Value v = random_value(r, 3);
    const std::string a = spell(r, v), b = spell(r, v);
    std::string ca, cb;
    const bool read = stencil::canonical_value(a, ca) && stencil::canonical_value(b, cb);
    CHECK_MSG(read, "not read: " + a + " / " + b);
    if (!read) continue;
    CHECK_MSG(ca == cb, a + " and " + b + " differ");
    values.push_back(v);
    canon.push_back(ca);
  }
  size_t pairs = 0;
  for (size_t i = 0; i < values.size(); ++i)
    for (size_t j = i + 1; j < values.size(); ++j) {
      ++pairs;
      CHECK((canon[i] == canon[j]) == (values[i] == values[j]));
    }
  CHECK(pairs > 50000);
  // Lists of values, and what is not JSON.
  std::vector<std::string> out;
  CHECK(stencil::canonical_values(" 1.0 , \"\\u0061\", [1e0] ,", out) && out.size() == 3);
  std::string one, two;
  CHECK(stencil::canonical_value("1", one) && stencil::canonical_value("[1]", two) && out[0] == one);
  for (const char* bad : {"01", "1.", "[1,]", "{\"a\" 1}", "\"\\x\"", "tru", "-", "1e", "{\"a\":1,\"a\":2"})
    CHECK_MSG(!stencil::canonical_value(bad, one), std::string("read: ") + bad);
}
