// A recognizer of the JSON numbers whose exact decimal value lies in a range, as a summary state
// that the regex store hash-conses like any expression (ExprKind::Number).
//
// The language is not regular: `123456e-5` (1.23) < 5 <= `1234567e-5` (12.3) compares the
// mantissa's digit count with the exponent's value. A state records the number read so far
// (sign, significant digits, decimal point position, exponent so far) and decides exactly
// whether it is a number in range now (nullable) and whether some continuation reaches one
// (live): a dead state is never built, so every prefix a mask allows can be completed.
// Comparisons are on decimal digit strings, never doubles.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stencil {

// A positive decimal 0.d × 10^q: d non-empty, no leading or trailing zeros.
struct Dec {
  std::string d;
  int64_t q = 0;
};

struct NumberBound {
  bool present = false;
  bool exclusive = false;
  bool neg = false;
  bool zero = false;  // the bound is 0 (mag unused)
  Dec mag;
};

struct NumberPoints;

struct NumberSpec {
  NumberBound lo, hi;
  bool integer = false;  // the value must be integral (1.0 and 1e2 are integers)
  // mult > 0: instead of a range, the numbers written without exponent whose value is an integer
  // multiple of mult / 10^mult_scale (regex/number_multiple.cpp); lo, hi, integer unused.
  uint64_t mult = 0;
  int64_t mult_scale = 0;
  // Non-null: instead of a range, a finite set of values (json/number_points.h), narrowed to
  // those the text read can still reach; lo, hi, integer and mult unused.
  std::shared_ptr<const NumberPoints> points;
};

enum class NumberPhase : uint8_t {
  Start,      // nothing read
  Minus,      // "-"
  Zero,       // integer part "0"
  Int,        // integer digits, the first non-zero
  Dot,        // "." read, a digit must follow
  Frac,       // fraction digits
  Exp,        // "e" or "E"
  ExpSign,    // exponent sign
  ExpDigits,  // exponent digits
};

struct NumberState {
  NumberSpec spec;
  NumberPhase phase = NumberPhase::Start;
  bool neg = false;
  // Mantissa phases: the significant digits (leading zeros dropped, trailing ones kept) and the
  // point position: the mantissa is 0.digits × 10^point.
  std::string digits;
  int64_t point = 0;
  // Exponent phases: the mantissa is summarized by the exponents that keep the value in range
  // ([xa, xb], ±kInf unbounded), or by zero_mant when it is zero.
  bool zero_mant = false;
  int64_t xa = 0, xb = 0;
  bool exp_neg = false;
  int64_t exp_mag = 0;  // saturates at kSat: "larger than any finite limit"
  // A set of values (spec.points): the values the text can still reach, as index ranges into the
  // set's sorted positive and negative values (those that agree with the digits read are
  // contiguous), and whether 0 still is one; in the exponent phases, the exponents that make the
  // mantissa read one of them, sorted (xa and xb unused).
  uint32_t pos_lo = 0, pos_hi = 0, neg_lo = 0, neg_hi = 0;
  bool zero_left = false;
  std::vector<int64_t> xs;
  // A multiple (spec.mult > 0): the value read times 10^mult_scale, mod mult (fraction digits
  // not yet read count as zeros), and how many fraction digits were read (at most mult_scale).
  uint64_t residue = 0;
  int64_t frac_read = 0;
};

constexpr int64_t kNumInf = int64_t(4) << 60;
constexpr int64_t kNumSat = int64_t(100'000'000'000'000'000);

// An ASCII decimal digit.
inline bool is_digit(uint8_t b) { return b >= '0' && b <= '9'; }
// The length of a digit string without its trailing zeros: its significant digits after the
// leading ones are dropped.
size_t significant_length(const std::string& digits);
// Whether s is digits only and does not start with a zero; with canonical_ends, also non-empty
// and not ending with one (a value's significant digits).
bool digit_string(const std::string& s, bool canonical_ends);

// Parses a bound written as a decimal (`-12.5`, `1e308`, `1E+308`, `0.1`); throws GrammarError
// for anything else. `what` names the bound in the message.
NumberBound parse_number_bound(const std::string& text, bool exclusive, const char* what);
// The spec of the multiples of `multiple` (a positive decimal: `0.25`, `1.5e-8`, `3`): throws
// GrammarError, naming `what`, where it is not one or needs more than 19 significant digits.
NumberSpec parse_multiple(const std::string& multiple, const char* what);
// Validates a spec (throws GrammarError): an integer spec needs integral, inclusive bounds.
void check_number_spec(const NumberSpec& spec);

// The state after byte b, or false when no number in range starts with the bytes read plus b.
bool number_step(const NumberState& s, uint8_t b, NumberState& out);
// The syntax of a JSON number alone, one byte: the phase, sign, significant digits, point and
// exponent read (false where b cannot follow). At the exponent's mark the phase becomes Exp with
// the mantissa's digits kept: each kind of spec summarizes them its own way.
bool number_syntax_step(const NumberState& s, uint8_t b, NumberState& out);
// Whether some continuation (possibly empty) of s is a number in range.
bool number_live(const NumberState& s);
// Whether the bytes read are a number in range.
bool number_nullable(const NumberState& s);
// The fewest bytes that complete s into a number in range: exact when at most `max_states`
// states are searched, else a lower bound (the search is breadth-first; *exact, when given, says
// which). -1 when s is dead.
int number_min_accept_bytes(const NumberState& s, size_t max_states = 4096, bool* exact = nullptr);

// A byte string equal for equal states (serialization, canonical form).
std::string number_encode(const NumberState& s);
// The key under which a store interns the state: number_encode's, except for a set's states,
// which name their set by identity rather than by its values (one set's states share it).
std::string number_key(const NumberState& s);
// The inverse of number_encode; false for malformed data.
bool number_decode(const std::string& data, NumberState& out);
std::string number_to_string(const NumberState& s);

}  // namespace stencil
