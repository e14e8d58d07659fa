#include "json/number_points.h"

#include <algorithm>

#include "json/number_codec.h"
#include "stencil/errors.h"

namespace stencil {

namespace {

using number_codec::In;
using number_codec::put_i64;
using number_codec::put_str;

// Exponent limits of a value's 0.d × 10^q form are within this (parse_number_bound refuses more);
// decoded states are held to it, so exponents and scales never overflow.
constexpr int64_t kMaxExp = 4'000'000'000'000'000;

bool dec_less(const Dec& a, const Dec& b) { return a.d != b.d ? a.d < b.d : a.q < b.q; }
bool dec_equal(const Dec& a, const Dec& b) { return a.d == b.d && a.q == b.q; }

// Whether an exponent written so far (sign, magnitude n; n == 0 while only zeros were read) may
// still end as x.
bool exponent_reaches(bool neg, int64_t n, int64_t x) {
  if (x != 0 && (x < 0) != neg) return false;
  const int64_t m = x < 0 ? -x : x;
  if (n == 0) return true;
  // the magnitudes with n's digits first: [n·10^k, (n+1)·10^k - 1]
  for (int64_t lo = n, hi = n; lo <= m; lo *= 10, hi = hi * 10 + 9)
    if (hi >= m) return true;
  return false;
}

// The first of values [lo, hi) whose digits are not below t (string order).
uint32_t first_from(const std::vector<Dec>& values, uint32_t lo, uint32_t hi, const std::string& t) {
  return static_cast<uint32_t>(std::lower_bound(values.begin() + lo, values.begin() + hi, t,
                                                [](const Dec& v, const std::string& x) { return v.d < x; }) -
                               values.begin());
}

// The values of the sign just read (and 0 where it may carry that sign).
void keep_sign(NumberState& out, bool neg) {
  if (neg) {
    out.pos_lo = out.pos_hi = 0;
    out.zero_left = out.zero_left && out.spec.points->minus_zero;
  } else {
    out.neg_lo = out.neg_hi = 0;
  }
}

// After a significant digit: the values the digits t still agree with, 0 no longer. In the sorted
// order they are one run: d == t without its trailing zeros, then the d that start with t (no d
// lies between: it would end in a zero).
void keep_agreeing(NumberState& out) {
  const std::vector<Dec>& values = out.neg ? out.spec.points->neg : out.spec.points->pos;
  uint32_t& lo = out.neg ? out.neg_lo : out.pos_lo;
  uint32_t& hi = out.neg ? out.neg_hi : out.pos_hi;
  std::string past = out.digits;
  ++past.back();  // (past '9' is ':', above every digit)
  const uint32_t end = first_from(values, lo, hi, past);
  lo = first_from(values, lo, end, out.digits.substr(0, significant_length(out.digits)));
  hi = end;
  out.zero_left = false;
}

// At the exponent's mark: the exponents that make the mantissa read one of the values (those
// whose digits are the mantissa's: the first of the run, in order of their exponents).
void to_exponent(NumberState& out) {
  out.zero_mant = out.digits.empty();
  out.xs.clear();
  if (!out.zero_mant) {
    const std::vector<Dec>& values = out.neg ? out.spec.points->neg : out.spec.points->pos;
    const std::string u = out.digits.substr(0, significant_length(out.digits));
    for (uint32_t i = out.neg ? out.neg_lo : out.pos_lo, hi = out.neg ? out.neg_hi : out.pos_hi;
         i < hi && values[i].d == u; ++i)
      out.xs.push_back(values[i].q - out.point);
    out.zero_left = false;
  }
  out.pos_lo = out.pos_hi = out.neg_lo = out.neg_hi = 0;
  out.digits.clear();
  out.point = 0;
  out.phase = NumberPhase::Exp;
}

void keep_exponents(NumberState& out) {
  if (out.zero_mant) {  // 0 whatever the exponent: one state
    out.exp_neg = false;
    out.exp_mag = 0;
    return;
  }
  std::vector<int64_t> kept;
  for (int64_t x : out.xs)
    if (exponent_reaches(out.exp_neg, out.phase == NumberPhase::ExpDigits ? out.exp_mag : 0, x)) kept.push_back(x);
  out.xs.swap(kept);
}

}  // namespace

std::shared_ptr<const NumberPoints> make_number_points(const std::vector<std::string>& values, bool minus_zero) {
  auto p = std::make_shared<NumberPoints>();
  p->minus_zero = minus_zero;
  for (const std::string& v : values) {
    const NumberBound b = parse_number_bound(v, false, "value");
    if (b.zero)
      p->zero = true;
    else
      (b.neg ? p->neg : p->pos).push_back(b.mag);
  }
  for (std::vector<Dec>* side : {&p->pos, &p->neg}) {
    std::sort(side->begin(), side->end(), dec_less);
    side->erase(std::unique(side->begin(), side->end(), dec_equal), side->end());
  }
  return p;
}

void points_start(NumberState& s, std::shared_ptr<const NumberPoints> points) {
  s.pos_lo = s.neg_lo = 0;
  s.pos_hi = static_cast<uint32_t>(points->pos.size());
  s.neg_hi = static_cast<uint32_t>(points->neg.size());
  s.zero_left = points->zero;
  s.spec.points = std::move(points);
}

bool points_live(const NumberState& s) {
  if (s.phase >= NumberPhase::Exp) return s.zero_mant ? s.zero_left : !s.xs.empty();
  return s.zero_left || s.pos_lo < s.pos_hi || s.neg_lo < s.neg_hi;
}

bool points_nullable(const NumberState& s) {
  switch (s.phase) {
    case NumberPhase::Zero:
    case NumberPhase::Int:
    case NumberPhase::Frac: {
      if (s.digits.empty()) return s.zero_left;
      const std::vector<Dec>& values = s.neg ? s.spec.points->neg : s.spec.points->pos;
      const size_t n = significant_length(s.digits);
      for (uint32_t i = s.neg ? s.neg_lo : s.pos_lo, hi = s.neg ? s.neg_hi : s.pos_hi; i < hi; ++i) {
        const Dec& v = values[i];
        if (v.d.size() != n || s.digits.compare(0, n, v.d) != 0) break;  // (the run's first values)
        if (v.q == s.point) return true;
      }
      return false;
    }
    case NumberPhase::ExpDigits: {
      if (s.zero_mant) return s.zero_left;
      const int64_t x = s.exp_neg ? -s.exp_mag : s.exp_mag;
      return std::binary_search(s.xs.begin(), s.xs.end(), x);
    }
    default:
      return false;
  }
}

bool points_step(const NumberState& s, uint8_t b, NumberState& out) {
  if (!number_syntax_step(s, b, out)) return false;
  if (s.phase == NumberPhase::Start) keep_sign(out, out.neg);  // the first byte decides the sign
  if (out.phase == NumberPhase::Exp && s.phase < NumberPhase::Exp)
    to_exponent(out);
  else if (out.phase > NumberPhase::Exp)
    keep_exponents(out);
  else if (out.digits.size() != s.digits.size())
    keep_agreeing(out);
  return points_live(out);
}

void points_encode(const NumberState& s, std::string& out) {
  // The values still reachable, by value: equal states of sets built apart encode alike.
  const NumberPoints& p = *s.spec.points;
  out.push_back(static_cast<char>(s.zero_left | (p.minus_zero << 1)));
  for (bool neg : {false, true}) {
    const std::vector<Dec>& side = neg ? p.neg : p.pos;
    const uint32_t lo = neg ? s.neg_lo : s.pos_lo, hi = neg ? s.neg_hi : s.pos_hi;
    put_i64(out, static_cast<int64_t>(hi - lo));
    for (uint32_t i = lo; i < hi; ++i) {
      put_i64(out, side[i].q);
      put_str(out, side[i].d);
    }
  }
  put_i64(out, static_cast<int64_t>(s.xs.size()));
  for (int64_t x : s.xs) put_i64(out, x);
}

void points_key(const NumberState& s, std::string& out) {
  // The set by identity (a store keeps its states, and so their set, alive), the ranges into it.
  const auto id = reinterpret_cast<uintptr_t>(s.spec.points.get());
  put_i64(out, static_cast<int64_t>(id));
  out.push_back(static_cast<char>(s.zero_left));
  for (uint32_t v : {s.pos_lo, s.pos_hi, s.neg_lo, s.neg_hi}) out.append(reinterpret_cast<const char*>(&v), 4);
  put_i64(out, static_cast<int64_t>(s.xs.size()));
  for (int64_t x : s.xs) put_i64(out, x);
}

bool points_decode(const std::string& data, size_t& pos, NumberState& s) {
  In in{data, pos};
  auto p = std::make_shared<NumberPoints>();
  const uint8_t flags = in.u8();
  if (flags > 3) return false;
  p->zero = flags & 1, p->minus_zero = flags & 2;
  for (std::vector<Dec>* side : {&p->pos, &p->neg}) {
    const int64_t n = in.i64();
    if (!in.ok || n < 0 || static_cast<uint64_t>(n) > data.size()) return false;
    for (int64_t i = 0; i < n && in.ok; ++i) {
      Dec v;
      v.q = in.i64();
      v.d = in.str();
      if (!in.ok || !digit_string(v.d, true) || v.q > kMaxExp || v.q < -kMaxExp) return false;
      if (!side->empty() && !dec_less(side->back(), v)) return false;
      side->push_back(std::move(v));
    }
  }
  const int64_t n = in.i64();
  if (!in.ok || n < 0 || static_cast<uint64_t>(n) > data.size()) return false;
  s.xs.clear();
  for (int64_t i = 0; i < n && in.ok; ++i) {
    const int64_t x = in.i64();
    if (x > kMaxExp || x < -kMaxExp || (!s.xs.empty() && s.xs.back() >= x)) return false;
    s.xs.push_back(x);
  }
  if (!in.ok) return false;
  pos = in.pos;
  // What each phase may hold: exponents only past the mantissa, a sign's values only.
  if (s.phase < NumberPhase::Exp && !s.xs.empty()) return false;
  if (s.phase >= NumberPhase::Exp && (!s.digits.empty() || !p->pos.empty() || !p->neg.empty())) return false;
  if (s.phase > NumberPhase::Start && !(s.neg ? p->pos : p->neg).empty()) return false;
  points_start(s, std::move(p));  // (the values read are the state's, all still reachable)
  return s.point <= kMaxExp && s.point >= -kMaxExp;
}

std::string points_to_string(const NumberState& s) {
  static const char* kPhase[] = {"start", "-", "0", "int", ".", "frac", "e", "e±", "exp"};
  const NumberPoints& p = *s.spec.points;
  std::string out = "numset{";
  auto value = [](bool neg, const Dec& v) {
    return std::string(neg ? "-" : "") + "0." + v.d + "e" + std::to_string(v.q);
  };
  size_t shown = 0;
  const size_t total = s.zero_left + (s.pos_hi - s.pos_lo) + (s.neg_hi - s.neg_lo);
  if (s.zero_left) out += "0", ++shown;
  for (bool neg : {true, false})
    for (uint32_t i = neg ? s.neg_lo : s.pos_lo, hi = neg ? s.neg_hi : s.pos_hi; i < hi; ++i)
      if (shown < 8) out += (shown++ ? "," : "") + value(neg, (neg ? p.neg : p.pos)[i]);
  if (total > shown) out += ",... " + std::to_string(total) + " values";
  out += "}<";
  out += kPhase[static_cast<int>(s.phase)];
  if (s.phase != NumberPhase::Start) {
    out += s.neg ? " -" : " +";
    if (s.phase >= NumberPhase::Exp) {
      if (s.zero_mant) {
        out += "0";
      } else {
        out += "x in {";
        for (size_t i = 0; i < s.xs.size(); ++i) out += (i ? "," : "") + std::to_string(s.xs[i]);
        out += "}";
      }
      if (s.phase == NumberPhase::ExpDigits) out += (s.exp_neg ? " -" : " +") + std::to_string(s.exp_mag);
    } else {
      out += "0." + s.digits + "e" + std::to_string(s.point);
    }
  }
  return out + ">";
}

}  // namespace stencil
