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

bool is_digit(uint8_t b) { return b >= '0' && b <= '9'; }

bool dec_less(const Dec& a, const Dec& b) { return a.d != b.d ? a.d < b.d : a.q < b.q; }
bool dec_equal(const Dec& a, const Dec& b) { return a.d == b.d && a.q == b.q; }

// The digits t (significant digits read: no leading zero, trailing ones kept) can still grow
// into d: they agree with d, and past d's end they are zeros.
bool agrees(const std::string& t, const std::string& d) {
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i] != (i < d.size() ? d[i] : '0')) return false;
  return true;
}

size_t significant(const std::string& t) {
  size_t n = t.size();
  while (n > 0 && t[n - 1] == '0') --n;
  return n;
}

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

std::shared_ptr<NumberPoints> copy_of(const NumberState& s) { return std::make_shared<NumberPoints>(*s.spec.points); }

// The values of the sign just read (and 0 where it may carry that sign).
void keep_sign(NumberState& out, bool neg) {
  auto p = copy_of(out);
  (neg ? p->pos : p->neg).clear();
  if (neg && !p->minus_zero) p->zero = false;
  out.spec.points = std::move(p);
}

// After a significant digit: the values the digits still agree with (0 is no longer one).
void keep_agreeing(NumberState& out) {
  const NumberPoints& cur = *out.spec.points;
  const std::vector<Dec>& from = out.neg ? cur.neg : cur.pos;
  auto p = std::make_shared<NumberPoints>();
  p->minus_zero = cur.minus_zero;
  std::vector<Dec>& to = out.neg ? p->neg : p->pos;
  for (const Dec& v : from)
    if (agrees(out.digits, v.d)) to.push_back(v);
  out.spec.points = std::move(p);
}

// At the exponent's mark: the exponents that make the mantissa read one of the values.
void to_exponent(NumberState& out) {
  const NumberPoints& cur = *out.spec.points;
  auto p = std::make_shared<NumberPoints>();
  p->minus_zero = cur.minus_zero;
  out.zero_mant = out.digits.empty();
  out.xs.clear();
  if (out.zero_mant) {
    p->zero = cur.zero;
  } else {
    const std::string u = out.digits.substr(0, significant(out.digits));
    for (const Dec& v : out.neg ? cur.neg : cur.pos)
      if (v.d == u) out.xs.push_back(v.q - out.point);
    std::sort(out.xs.begin(), out.xs.end());
  }
  out.spec.points = std::move(p);
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

bool points_live(const NumberState& s) {
  const NumberPoints& p = *s.spec.points;
  if (s.phase >= NumberPhase::Exp) return s.zero_mant ? p.zero : !s.xs.empty();
  return p.zero || !p.pos.empty() || !p.neg.empty();
}

bool points_nullable(const NumberState& s) {
  const NumberPoints& p = *s.spec.points;
  switch (s.phase) {
    case NumberPhase::Zero:
    case NumberPhase::Int:
    case NumberPhase::Frac: {
      if (s.digits.empty()) return p.zero;
      const size_t n = significant(s.digits);
      for (const Dec& v : s.neg ? p.neg : p.pos)
        if (v.q == s.point && v.d.size() == n && s.digits.compare(0, n, v.d) == 0) return true;
      return false;
    }
    case NumberPhase::ExpDigits: {
      if (s.zero_mant) return p.zero;
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
  const NumberPoints& p = *s.spec.points;
  out.push_back(static_cast<char>(p.zero | (p.minus_zero << 1)));
  for (const std::vector<Dec>* side : {&p.pos, &p.neg}) {
    put_i64(out, static_cast<int64_t>(side->size()));
    for (const Dec& v : *side) {
      put_i64(out, v.q);
      put_str(out, v.d);
    }
  }
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
      const bool canonical = !v.d.empty() && v.d.front() != '0' && v.d.back() != '0' &&
                             std::all_of(v.d.begin(), v.d.end(), [](char c) { return is_digit(c); });
      if (!in.ok || !canonical || v.q > kMaxExp || v.q < -kMaxExp) return false;
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
  s.spec.points = std::move(p);
  // What each phase may hold: exponents only past the mantissa, a sign's values only.
  if (s.phase < NumberPhase::Exp && !s.xs.empty()) return false;
  if (s.phase >= NumberPhase::Exp && (!s.digits.empty() || !s.spec.points->pos.empty() || !s.spec.points->neg.empty()))
    return false;
  if (s.phase > NumberPhase::Start && !(s.neg ? s.spec.points->pos : s.spec.points->neg).empty()) return false;
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
  const size_t total = p.zero + p.pos.size() + p.neg.size();
  if (p.zero) out += "0", ++shown;
  for (bool neg : {true, false})
    for (const Dec& v : neg ? p.neg : p.pos)
      if (shown < 8) out += (shown++ ? "," : "") + value(neg, v);
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
