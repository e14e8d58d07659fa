#include "json/number_multiple.h"

#include "stencil/errors.h"

namespace stencil {

namespace {

using u128 = unsigned __int128;

// Scales (fraction digits) past this are refused: the lexer may hold a state per digit position.
constexpr int64_t kMaxScale = 10'000'000;

uint64_t pow10_mod(int64_t k, uint64_t m) {
  u128 r = 1 % m, b = 10 % m;
  for (; k > 0; k >>= 1) {
    if (k & 1) r = r * b % m;
    b = b * b % m;
  }
  return static_cast<uint64_t>(r);
}

// Whether some Z < 10^k is `need` mod m (need < m): the smallest such Z is need itself.
bool within_digits(uint64_t need, int64_t k) {
  if (k >= 20) return true;  // 10^20 > 2^64 > need
  u128 p = 1;
  for (int64_t i = 0; i < k; ++i) p *= 10;
  return need < p;
}

}  // namespace

NumberSpec parse_multiple(const std::string& multiple, const char* what) {
  const NumberBound b = parse_number_bound(multiple, false, what);
  auto bad = [&](const std::string& why) {
    return GrammarError(std::string("multiple of: ") + what + " '" + multiple + "' " + why);
  };
  if (b.zero || b.neg) throw bad("must be greater than 0");
  if (b.mag.d.size() > 19) throw bad("has more than 19 significant digits (not enforceable exactly)");
  // 0.d × 10^q = int(d) × 10^(q - |d|)
  u128 m = std::stoull(b.mag.d);
  int64_t e = b.mag.q - static_cast<int64_t>(b.mag.d.size());
  NumberSpec sp;
  for (; e > 0; --e) {
    m *= 10;
    if (m > UINT64_MAX) throw bad("is too large for a residue automaton (at most 2^64 - 1)");
  }
  if (-e > kMaxScale) throw bad("has more than 10,000,000 fraction digits");
  sp.mult = static_cast<uint64_t>(m);
  sp.mult_scale = -e;
  return sp;
}

bool multiple_live(const NumberState& s) {
  if (s.phase != NumberPhase::Dot && s.phase != NumberPhase::Frac) return true;
  const uint64_t m = s.spec.mult;
  return within_digits((m - s.residue) % m, s.spec.mult_scale - s.frac_read);
}

bool multiple_nullable(const NumberState& s) {
  const bool done = s.phase == NumberPhase::Zero || s.phase == NumberPhase::Int || s.phase == NumberPhase::Frac;
  return done && s.residue == 0;
}

bool multiple_step(const NumberState& s, uint8_t b, NumberState& out) {
  out = s;
  const uint64_t m = s.spec.mult;
  const int64_t scale = s.spec.mult_scale;
  const uint64_t d = is_digit(b) ? b - '0' : 0;
  switch (s.phase) {
    case NumberPhase::Start:
    case NumberPhase::Minus:
      if (b == '-' && s.phase == NumberPhase::Start) {
        out.phase = NumberPhase::Minus;
      } else if (b == '0') {
        out.phase = NumberPhase::Zero;
      } else if (is_digit(b)) {
        out.phase = NumberPhase::Int;
        out.residue = static_cast<uint64_t>(u128(d) * pow10_mod(scale, m) % m);
      } else {
        return false;
      }
      return true;
    case NumberPhase::Zero:
    case NumberPhase::Int:
      if (b == '.') {
        out.phase = NumberPhase::Dot;
      } else if (is_digit(b) && s.phase == NumberPhase::Int) {
        out.residue = static_cast<uint64_t>((u128(s.residue) * 10 + u128(d) * pow10_mod(scale, m)) % m);
      } else {
        return false;
      }
      return multiple_live(out);
    case NumberPhase::Dot:
    case NumberPhase::Frac:
      if (!is_digit(b)) return false;
      out.phase = NumberPhase::Frac;
      if (s.frac_read < scale) {
        out.residue = static_cast<uint64_t>((u128(s.residue) + u128(d) * pow10_mod(scale - s.frac_read - 1, m)) % m);
        ++out.frac_read;
      } else if (d != 0) {
        return false;  // a digit past the scale: not a multiple whatever follows
      }
      return multiple_live(out);
    default:
      return false;
  }
}

bool multiple_valid(const NumberState& s) {
  const NumberSpec& sp = s.spec;
  if (sp.lo.present || sp.hi.present || sp.integer || s.neg || !s.digits.empty()) return false;
  if (sp.mult_scale < 0 || sp.mult_scale > kMaxScale || s.residue >= sp.mult) return false;
  if (s.frac_read < 0 || s.frac_read > sp.mult_scale || s.phase > NumberPhase::Frac) return false;
  return s.phase != NumberPhase::Zero || s.residue == 0;
}

std::string multiple_to_string(const NumberState& s) {
  static const char* kPhase[] = {"start", "-", "0", "int", ".", "frac"};
  return "mult(" + std::to_string(s.spec.mult) + "e-" + std::to_string(s.spec.mult_scale) + ")<" +
         kPhase[static_cast<int>(s.phase)] + " r" + std::to_string(s.residue) + " f" + std::to_string(s.frac_read) +
         ">";
}

}  // namespace stencil
