#include "json/number_range.h"

#include <algorithm>
#include <deque>
#include <unordered_set>
#include <vector>

#include "json/number_codec.h"
#include "json/number_multiple.h"
#include "json/number_points.h"
#include "stencil/errors.h"

namespace stencil {

namespace {

// Bounds past 10^±kMaxBoundExp are refused: every finite exponent limit then stays far below
// kNumSat, which is what lets a long exponent saturate without losing exactness.
constexpr int64_t kMaxBoundExp = 1'000'000'000'000;
constexpr int64_t kMaxFinite = 4'000'000'000'000'000;

std::string trim_zeros(const std::string& t) { return t.substr(0, significant_length(t)); }

// 0.a vs 0.b for digit strings without trailing zeros: plain string order.
int cmp_digits(const std::string& a, const std::string& b) {
  const int c = a.compare(b);
  return (c > 0) - (c < 0);
}

int cmp_dec(const Dec& a, const Dec& b) {
  if (a.q != b.q) return a.q < b.q ? -1 : 1;
  return cmp_digits(a.d, b.d);
}

// 0.t + 10^-|t| scaled by 10^e: the least value no extension of the digits t reaches.
Dec successor(const std::string& t, int64_t e) {
  std::string s = t;
  int64_t i = static_cast<int64_t>(s.size()) - 1;
  while (i >= 0 && s[i] == '9') s[i--] = '0';
  if (i < 0) return Dec{"1", e + 1};
  ++s[i];
  return Dec{trim_zeros(s), e};
}

bool positive(const NumberBound& b) { return b.present && !b.zero && !b.neg; }
bool negative(const NumberBound& b) { return b.present && !b.zero && b.neg; }

// The magnitudes v > 0 whose signed value (v or -v) is in range.
struct MagRange {
  bool empty = false;
  bool has_lo = false, lo_x = false, has_hi = false, hi_x = false;
  Dec lo, hi;
};

MagRange mag_range(const NumberSpec& sp, bool neg) {
  MagRange r;
  if (!neg) {
    if (positive(sp.lo)) r.has_lo = true, r.lo = sp.lo.mag, r.lo_x = sp.lo.exclusive;
    if (sp.hi.present) {
      if (positive(sp.hi))
        r.has_hi = true, r.hi = sp.hi.mag, r.hi_x = sp.hi.exclusive;
      else
        r.empty = true;
    }
  } else {
    if (sp.lo.present) {
      if (negative(sp.lo))
        r.has_hi = true, r.hi = sp.lo.mag, r.hi_x = sp.lo.exclusive;
      else
        r.empty = true;
    }
    if (negative(sp.hi)) r.has_lo = true, r.lo = sp.hi.mag, r.lo_x = sp.hi.exclusive;
  }
  if (!r.empty && r.has_lo && r.has_hi) {
    const int c = cmp_dec(r.lo, r.hi);
    r.empty = c > 0 || (c == 0 && (r.lo_x || r.hi_x));
  }
  // Every non-zero integer has magnitude at least 1: a lower bound of at most 1 says nothing.
  if (sp.integer && r.has_lo && (r.lo.q < 1 || (r.lo.q == 1 && r.lo.d == "1"))) r.has_lo = false;
  return r;
}

bool zero_ok(const NumberSpec& sp) {
  const bool lo_ok = !sp.lo.present || negative(sp.lo) || (sp.lo.zero && !sp.lo.exclusive);
  const bool hi_ok = !sp.hi.present || positive(sp.hi) || (sp.hi.zero && !sp.hi.exclusive);
  return lo_ok && hi_ok;
}

// The exponents E with 0.u × 10^E in r (u: non-empty, no trailing zeros), and E >= |u| (an
// integral value) for an integer spec.
std::pair<int64_t, int64_t> allowed_exponents(const std::string& u, const MagRange& r, bool integer) {
  int64_t ea = -kNumInf, eb = kNumInf;
  if (r.has_lo) {
    const int c = cmp_digits(u, r.lo.d);
    ea = c > 0 ? r.lo.q : c == 0 ? (r.lo_x ? r.lo.q + 1 : r.lo.q) : r.lo.q + 1;
  }
  if (r.has_hi) {
    const int c = cmp_digits(u, r.hi.d);
    eb = c < 0 ? r.hi.q : c == 0 ? (r.hi_x ? r.hi.q - 1 : r.hi.q) : r.hi.q - 1;
  }
  if (integer) ea = std::max(ea, static_cast<int64_t>(u.size()));
  return {ea, eb};
}

// Whether [0.t × 10^e, successor) (the values of the digit strings extending t, at scale e)
// meets r. For an integer spec (e >= |t|, r closed with integral ends) a meeting holds an integer.
bool decade_hits(const std::string& t, int64_t e, const MagRange& r) {
  const Dec a{trim_zeros(t), e};
  if (r.has_lo && cmp_dec(r.lo, successor(t, e)) >= 0) return false;
  if (r.has_hi) {
    const int c = cmp_dec(a, r.hi);
    if (c > 0 || (c == 0 && r.hi_x)) return false;
  }
  return true;
}

bool mantissa_live(const NumberState& s) {
  const NumberSpec& sp = s.spec;
  if (s.digits.empty()) {
    if (zero_ok(sp)) return true;
    if (s.phase == NumberPhase::Start) return !mag_range(sp, false).empty || !mag_range(sp, true).empty;
    return !mag_range(sp, s.neg).empty;
  }
  const MagRange r = mag_range(sp, s.neg);
  if (r.empty) return false;
  const int64_t len = static_cast<int64_t>(s.digits.size());
  if (!sp.integer && (!r.has_lo || !r.has_hi)) return true;  // tiny or huge scales reach it
  if (!r.has_hi) return true;
  // Scales below e0 stay under the lower bound. Past e0 + 1 every decade up to the upper
  // bound's lies strictly inside the range, so three scales decide.
  const int64_t e0 = std::max(r.has_lo ? r.lo.q : -kNumInf, sp.integer ? len : -kNumInf);
  for (int64_t e : {e0, e0 + 1, r.hi.q})
    if (e >= e0 && e <= r.hi.q && decade_hits(s.digits, e, r)) return true;
  if (sp.integer) {
    // The digits themselves with fewer trailing zeros as integer digits: "10" can end as 1 (10e-1).
    const std::string u = trim_zeros(s.digits);
    if (u.size() < s.digits.size()) {
      auto [ea, eb] = allowed_exponents(u, r, true);
      return ea <= std::min<int64_t>(eb, len - 1);
    }
  }
  return false;
}

// Exponent magnitudes m >= 0 that the signed exponent may still take: [ma, mb].
std::pair<int64_t, int64_t> exponent_mags(const NumberState& s) {
  if (!s.exp_neg) return {std::max<int64_t>(s.xa, 0), s.xb};
  return {std::max<int64_t>(-s.xb, 0), -s.xa};
}

bool exponent_live(const NumberState& s) {
  if (s.zero_mant) return zero_ok(s.spec);
  if (s.xa > s.xb) return false;
  if (s.phase == NumberPhase::Exp) return true;
  auto [ma, mb] = exponent_mags(s);
  if (ma > mb) return false;
  if (s.phase == NumberPhase::ExpSign || s.exp_mag == 0) return true;  // any magnitude to come
  if (mb >= kNumInf) return true;
  if (s.exp_mag >= kNumSat) return false;  // mb is finite, far below kNumSat
  // Extensions of n by k digits: [n·10^k, (n+1)·10^k - 1].
  for (int64_t lo = s.exp_mag, hi = s.exp_mag; lo <= mb; lo *= 10, hi = hi * 10 + 9)
    if (hi >= ma) return true;
  return false;
}

void to_exponent(NumberState& s) {
  s.zero_mant = s.digits.empty();
  if (!s.zero_mant) {
    const std::string u = trim_zeros(s.digits);
    auto [ea, eb] = allowed_exponents(u, mag_range(s.spec, s.neg), s.spec.integer);
    s.xa = ea <= -kNumInf ? -kNumInf : ea - s.point;
    s.xb = eb >= kNumInf ? kNumInf : eb - s.point;
  }
  s.digits.clear();
  s.point = 0;
  s.phase = NumberPhase::Exp;
}

// Where the digits t first differ from the bound's digits (padded with zeros), or npos.
size_t decision_point(const std::string& t, const std::string& bound) {
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i] != (i < bound.size() ? bound[i] : '0')) return i;
  return std::string::npos;
}

// Once the digits differ from each bound's (0.digits is above or below it whatever follows),
// the digits after the later difference matter no more, except through their count and
// trailing zeros (integrality): they become a fixed filler, and "123", "124", "199" under
// maximum 254 are one state. Without this, each digit string would be a state of its own and
// each would cost the lexer a mask walk.
void forget_decided_digits(NumberState& s, const MagRange& r) {
  size_t keep = 0;
  const Dec* bounds[2] = {r.has_lo ? &r.lo : nullptr, r.has_hi ? &r.hi : nullptr};
  size_t at[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    if (!bounds[k]) continue;
    at[k] = decision_point(s.digits, bounds[k]->d);
    if (at[k] == std::string::npos) return;  // still on the bound's digits: every digit counts
    keep = std::max(keep, at[k] + 1);
  }
  const size_t u = trim_zeros(s.digits).size();
  const size_t last = keep - 1;
  // The deciding digit itself only matters by its side of the bounds' digits there: take the
  // least digit on the same sides (non-zero where a zero would change the significant digits).
  if (!s.spec.integer || last + 1 < u || (last + 1 == u)) {
    const bool nonzero = last == 0 || (s.spec.integer && last + 1 == u);
    for (char d = nonzero ? '1' : '0'; d <= '9'; ++d) {
      bool same = true;
      for (int k = 0; k < 2 && same; ++k) {
        if (!bounds[k] || at[k] != last) continue;
        const char b = last < bounds[k]->d.size() ? bounds[k]->d[last] : '0';
        same = (d < b) == (s.digits[last] < b) && d != b;
      }
      if (same) {
        s.digits[last] = d;
        break;
      }
    }
  }
  if (!s.spec.integer) {
    s.digits.resize(keep);
    return;
  }
  if (keep < u)
    s.digits = s.digits.substr(0, keep) + std::string(u - keep, '1') + std::string(s.digits.size() - u, '0');
}

// States that no continuation tells apart share one form, so the lexer reuses their masks.
void normalize(NumberState& s) {
  if (s.phase == NumberPhase::ExpDigits && !s.zero_mant && s.exp_mag < kNumSat) {
    auto [ma, mb] = exponent_mags(s);
    if (mb >= kNumInf && s.exp_mag >= ma) s.exp_mag = kNumSat;  // every continuation is in range
    return;
  }
  if (s.phase >= NumberPhase::Exp || s.phase == NumberPhase::Start) return;
  const MagRange r = mag_range(s.spec, s.neg);
  if (r.empty) return;
  if (r.has_lo || r.has_hi) {
    if (!s.digits.empty()) forget_decided_digits(s, r);
    return;
  }
  if (s.digits.empty()) {
    if (!s.spec.integer) s.point = 0;  // leading fraction zeros only scale a value any scale fits
    return;
  }
  // No bound on this side: only integrality still depends on the digits, through the count of
  // trailing zeros and of digits after the point.
  if (!s.spec.integer) {
    s.digits = "1";
    s.point = 1;
    return;
  }
  const int64_t after_point = static_cast<int64_t>(s.digits.size()) - s.point;
  const size_t zeros = s.digits.size() - trim_zeros(s.digits).size();
  s.digits = "1" + std::string(zeros, '0');
  s.point = static_cast<int64_t>(s.digits.size()) - after_point;
}

void fraction_digit(NumberState& s, uint8_t b) {
  if (s.digits.empty() && b == '0')
    --s.point;
  else
    s.digits.push_back(static_cast<char>(b));
}

bool read_exponent(const std::string& text, size_t& i, int64_t& exp) {
  bool neg = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) neg = text[i++] == '-';
  if (i >= text.size()) return false;
  exp = 0;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    exp = exp * 10 + (text[i] - '0');
    if (exp > kMaxBoundExp) return false;
  }
  if (neg) exp = -exp;
  return i == text.size();
}

}  // namespace

size_t significant_length(const std::string& digits) {
  size_t n = digits.size();
  while (n > 0 && digits[n - 1] == '0') --n;
  return n;
}

bool digit_string(const std::string& s, bool canonical_ends) {
  for (char c : s)
    if (!is_digit(static_cast<uint8_t>(c))) return false;
  if (!canonical_ends) return s.empty() || s[0] != '0';
  return !s.empty() && s.front() != '0' && s.back() != '0';
}

NumberBound parse_number_bound(const std::string& text, bool exclusive, const char* what) {
  NumberBound b;
  b.present = true;
  b.exclusive = exclusive;
  auto bad = [&](const char* why) {
    return GrammarError(std::string("number range: ") + what + " '" + text + "' " + why);
  };
  size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) b.neg = text[i++] == '-';
  std::string digits;
  int64_t frac = 0;
  bool any = false, dot = false;
  for (; i < text.size(); ++i) {
    const uint8_t c = static_cast<uint8_t>(text[i]);
    if (is_digit(c)) {
      any = true;
      if (digits.empty() && c == '0') {
        if (dot) ++frac;
        continue;
      }
      if (digits.size() > 100000) throw bad("has too many digits");
      digits.push_back(static_cast<char>(c));
      if (dot) ++frac;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!any) throw bad("is not a decimal number");
  int64_t exp = 0;
  if (i < text.size()) {
    if (text[i] != 'e' && text[i] != 'E') throw bad("is not a decimal number");
    ++i;
    if (!read_exponent(text, i, exp)) throw bad("is not a decimal number or its exponent is too large");
  }
  if (digits.empty()) {
    b.zero = true;
    b.neg = false;
    return b;
  }
  // digits × 10^(exp - frac) = 0.digits × 10^(exp - frac + |digits|)
  b.mag.q = exp - frac + static_cast<int64_t>(digits.size());
  b.mag.d = trim_zeros(digits);
  if (b.mag.q > kMaxBoundExp || b.mag.q < -kMaxBoundExp) throw bad("is too large or too small");
  return b;
}

void check_number_spec(const NumberSpec& spec) {
  if (!spec.integer) return;
  for (const NumberBound* b : {&spec.lo, &spec.hi}) {
    if (!b->present) continue;
    if (b->exclusive) throw GrammarError("number range: an integer range takes inclusive bounds");
    if (!b->zero && b->mag.q < static_cast<int64_t>(b->mag.d.size()))
      throw GrammarError("number range: an integer range takes integral bounds");
  }
}

bool number_live(const NumberState& s) {
  if (s.spec.points) return points_live(s);
  if (s.spec.mult) return multiple_live(s);
  return s.phase >= NumberPhase::Exp ? exponent_live(s) : mantissa_live(s);
}

bool number_nullable(const NumberState& s) {
  if (s.spec.points) return points_nullable(s);
  if (s.spec.mult) return multiple_nullable(s);
  switch (s.phase) {
    case NumberPhase::Zero:
    case NumberPhase::Int:
    case NumberPhase::Frac: {
      if (s.digits.empty()) return zero_ok(s.spec);
      const MagRange r = mag_range(s.spec, s.neg);
      if (r.empty) return false;
      auto [ea, eb] = allowed_exponents(trim_zeros(s.digits), r, s.spec.integer);
      return ea <= s.point && s.point <= eb;
    }
    case NumberPhase::ExpDigits: {
      if (s.zero_mant) return zero_ok(s.spec);
      if (s.exp_mag >= kNumSat) return s.exp_neg ? s.xa <= -kNumInf : s.xb >= kNumInf;
      const int64_t x = s.exp_neg ? -s.exp_mag : s.exp_mag;
      return s.xa <= x && x <= s.xb;
    }
    default:
      return false;
  }
}

bool number_syntax_step(const NumberState& s, uint8_t b, NumberState& out) {
  out = s;
  const bool digit = is_digit(b), exp = b == 'e' || b == 'E';
  switch (s.phase) {
    case NumberPhase::Start:
    case NumberPhase::Minus:
      if (b == '-' && s.phase == NumberPhase::Start) {
        out.phase = NumberPhase::Minus;
        out.neg = true;
      } else if (b == '0') {
        out.phase = NumberPhase::Zero;
      } else if (digit) {
        out.phase = NumberPhase::Int;
        out.digits.assign(1, static_cast<char>(b));
        out.point = 1;
      } else {
        return false;
      }
      break;
    case NumberPhase::Zero:
    case NumberPhase::Int:
    case NumberPhase::Frac:
      if (digit && s.phase == NumberPhase::Int) {
        out.digits.push_back(static_cast<char>(b));
        ++out.point;
      } else if (digit && s.phase == NumberPhase::Frac) {
        fraction_digit(out, b);
      } else if (b == '.' && s.phase != NumberPhase::Frac) {
        out.phase = NumberPhase::Dot;
      } else if (exp) {
        out.phase = NumberPhase::Exp;  // (the mantissa's digits are left for the mode to summarize)
      } else {
        return false;
      }
      break;
    case NumberPhase::Dot:
      if (!digit) return false;
      fraction_digit(out, b);
      out.phase = NumberPhase::Frac;
      break;
    case NumberPhase::Exp:
    case NumberPhase::ExpSign:
      if ((b == '+' || b == '-') && s.phase == NumberPhase::Exp) {
        out.phase = NumberPhase::ExpSign;
        out.exp_neg = b == '-';
      } else if (digit) {
        out.phase = NumberPhase::ExpDigits;
        out.exp_mag = b - '0';
      } else {
        return false;
      }
      break;
    case NumberPhase::ExpDigits:
      if (!digit) return false;
      out.exp_mag = std::min(out.exp_mag * 10 + (b - '0'), kNumSat);
      break;
  }
  return true;
}

bool number_step(const NumberState& s, uint8_t b, NumberState& out) {
  if (s.spec.points) return points_step(s, b, out);
  if (s.spec.mult) return multiple_step(s, b, out);
  if (!number_syntax_step(s, b, out)) return false;
  if (out.phase == NumberPhase::Exp && s.phase < NumberPhase::Exp) to_exponent(out);
  normalize(out);
  return number_live(out);
}

int number_min_accept_bytes(const NumberState& s, size_t max_states, bool* exact) {
  if (exact) *exact = true;
  if (!number_live(s)) return -1;
  if (number_nullable(s)) return 0;
  static const char kBytes[] = "0123456789.-+e";
  std::unordered_set<std::string> seen{number_encode(s)};
  std::vector<NumberState> level{s}, next;
  for (int depth = 1;; ++depth) {
    next.clear();
    for (const NumberState& cur : level) {
      for (const char* c = kBytes; *c; ++c) {
        NumberState n;
        if (!number_step(cur, static_cast<uint8_t>(*c), n)) continue;
        if (number_nullable(n)) return depth;
        if (seen.size() >= max_states) {  // nothing shorter exists: a lower bound
          if (exact) *exact = false;
          return depth + 1;
        }
        if (seen.insert(number_encode(n)).second) next.push_back(std::move(n));
      }
    }
    if (next.empty()) return -1;  // unreachable for a live state; kept for safety
    level.swap(next);
  }
}

namespace {

using number_codec::In;
using number_codec::put_i64;
using number_codec::put_str;

void put_bound(std::string& out, const NumberBound& b) {
  out.push_back(static_cast<char>(b.present | (b.exclusive << 1) | (b.neg << 2) | (b.zero << 3)));
  if (!b.present || b.zero) return;
  put_i64(out, b.mag.q);
  put_str(out, b.mag.d);
}

bool get_bound(In& in, NumberBound& b) {
  const uint8_t f = in.u8();
  if (f > 15) return false;
  b.present = f & 1, b.exclusive = f & 2, b.neg = f & 4, b.zero = f & 8;
  if (!b.present || b.zero) return in.ok;
  b.mag.q = in.i64();
  b.mag.d = in.str();
  return in.ok && digit_string(b.mag.d, true) && b.mag.q <= kMaxBoundExp && b.mag.q >= -kMaxBoundExp;
}

std::string bound_text(const NumberBound& b) {
  if (b.zero) return "0";
  return std::string(b.neg ? "-" : "") + "0." + b.mag.d + "e" + std::to_string(b.mag.q);
}

}  // namespace

// A set's states start with a byte no range bound starts with (those are flags below 16).
constexpr uint8_t kPointsKey = 0x80;

namespace {

// What a set's state has beside its values (the syntax read so far).
void put_points_head(std::string& out, const NumberState& s) {
  out.push_back(static_cast<char>(kPointsKey));
  out.push_back(static_cast<char>(s.neg | (s.zero_mant << 1) | (s.exp_neg << 2)));
  out.push_back(static_cast<char>(s.phase));
  put_str(out, s.digits);
  put_i64(out, s.point);
  put_i64(out, s.exp_mag);
}

}  // namespace

std::string number_key(const NumberState& s) {
  if (!s.spec.points) return number_encode(s);
  std::string out;
  put_points_head(out, s);
  points_key(s, out);
  return out;
}

std::string number_encode(const NumberState& s) {
  std::string out;
  if (s.spec.points) {
    put_points_head(out, s);
    points_encode(s, out);
    return out;
  }
  put_bound(out, s.spec.lo);
  put_bound(out, s.spec.hi);
  out.push_back(static_cast<char>(s.spec.integer | (s.neg << 1) | (s.zero_mant << 2) | (s.exp_neg << 3)));
  out.push_back(static_cast<char>(s.phase));
  put_str(out, s.digits);
  put_i64(out, s.point);
  put_i64(out, s.xa);
  put_i64(out, s.xb);
  put_i64(out, s.exp_mag);
  if (s.spec.mult) {  // appended: range states keep the encoding they had
    put_i64(out, static_cast<int64_t>(s.spec.mult));
    put_i64(out, s.spec.mult_scale);
    put_i64(out, static_cast<int64_t>(s.residue));
    put_i64(out, s.frac_read);
  }
  return out;
}

bool number_decode(const std::string& data, NumberState& s) {
  In in{data};
  s = NumberState{};
  if (!data.empty() && static_cast<uint8_t>(data[0]) == kPointsKey) {
    in.u8();
    const uint8_t flags = in.u8(), phase = in.u8();
    s.neg = flags & 1, s.zero_mant = flags & 2, s.exp_neg = flags & 4;
    s.phase = static_cast<NumberPhase>(phase);
    s.digits = in.str();
    s.point = in.i64();
    s.exp_mag = in.i64();
    if (!in.ok || flags > 7 || phase > static_cast<uint8_t>(NumberPhase::ExpDigits)) return false;
    if (!digit_string(s.digits, false) || s.exp_mag < 0 || s.exp_mag > kNumSat) return false;
    size_t pos = in.pos;
    return points_decode(data, pos, s) && pos == data.size();
  }
  if (!get_bound(in, s.spec.lo) || !get_bound(in, s.spec.hi)) return false;
  const uint8_t flags = in.u8(), phase = in.u8();
  s.spec.integer = flags & 1, s.neg = flags & 2, s.zero_mant = flags & 4, s.exp_neg = flags & 8;
  s.phase = static_cast<NumberPhase>(phase);
  s.digits = in.str();
  s.point = in.i64();
  s.xa = in.i64();
  s.xb = in.i64();
  s.exp_mag = in.i64();
  if (in.ok && in.pos < data.size()) {
    s.spec.mult = static_cast<uint64_t>(in.i64());
    s.spec.mult_scale = in.i64();
    s.residue = static_cast<uint64_t>(in.i64());
    s.frac_read = in.i64();
    if (!in.ok || in.pos != data.size() || s.spec.mult == 0 || !multiple_valid(s)) return false;
  }
  if (!in.ok || in.pos != data.size() || flags > 15 || phase > static_cast<uint8_t>(NumberPhase::ExpDigits))
    return false;
  if (!digit_string(s.digits, false) || s.exp_mag < 0 || s.exp_mag > kNumSat) return false;
  // Finite exponent limits stay far from overflow in exponent_live's scaling.
  for (int64_t v : {s.point, s.xa, s.xb})
    if (v != kNumInf && v != -kNumInf && (v > kMaxFinite || v < -kMaxFinite)) return false;
  try {
    check_number_spec(s.spec);
  } catch (const GrammarError&) {
    return false;
  }
  return true;
}

std::string number_to_string(const NumberState& s) {
  if (s.spec.points) return points_to_string(s);
  if (s.spec.mult) return multiple_to_string(s);
  static const char* kPhase[] = {"start", "-", "0", "int", ".", "frac", "e", "e±", "exp"};
  std::string out = "num";
  out += s.spec.lo.present ? (s.spec.lo.exclusive ? "(" : "[") + bound_text(s.spec.lo) : "(-inf";
  out += ",";
  out += s.spec.hi.present ? bound_text(s.spec.hi) + (s.spec.hi.exclusive ? ")" : "]") : "inf)";
  if (s.spec.integer) out += "int";
  out += "<";
  out += kPhase[static_cast<int>(s.phase)];
  if (s.phase != NumberPhase::Start) {
    out += s.neg ? " -" : " +";
    if (s.phase >= NumberPhase::Exp) {
      if (s.zero_mant)
        out += "0";
      else
        out += "x in [" + (s.xa <= -kNumInf ? "-inf" : std::to_string(s.xa)) + "," +
               (s.xb >= kNumInf ? "inf" : std::to_string(s.xb)) + "]";
      if (s.phase == NumberPhase::ExpDigits) out += (s.exp_neg ? " -" : " +") + std::to_string(s.exp_mag);
    } else {
      out += "0." + s.digits + "e" + std::to_string(s.point);
    }
  }
  return out + ">";
}

}  // namespace stencil
