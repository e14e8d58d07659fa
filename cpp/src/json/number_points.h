// A finite set of JSON number values (an enum of numbers), as one summary state in every
// spelling: 200, 2e2, 2.00E+2 and 0.2e3 are all the value 200.
//
// An Or of one range expression per value makes the lexer derive every value at each byte a
// token reads (a first mask over a 63-value enum derived 63 states per byte, 4 ms). Here a
// state keeps only the values its text can still reach (ranges into the sorted set, shared by
// all its states): the sign read, then the values whose
// significant digits agree with the digits read so far (the scale is free until an exponent
// fixes it), then, once an exponent starts, the exponents that make one of them. So a state is
// one node whatever the set's size, and it shrinks as it reads.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "json/number_range.h"

namespace stencil {

struct NumberPoints {
  bool zero = false;        // 0 is a value
  bool minus_zero = true;   // 0 may be written with a minus sign (-0, -0.0e1)
  std::vector<Dec> pos, neg;  // the magnitudes of the positive and the negative values, sorted
};

// The set of `values` (decimal strings, as parse_number_bound reads them); duplicates are one.
// `minus_zero`: whether 0 may be written -0. Throws GrammarError for a malformed value.
std::shared_ptr<const NumberPoints> make_number_points(const std::vector<std::string>& values, bool minus_zero);

// s at the start of a number of `points` (every value reachable).
void points_start(NumberState& s, std::shared_ptr<const NumberPoints> points);
bool points_step(const NumberState& s, uint8_t b, NumberState& out);
bool points_live(const NumberState& s);
bool points_nullable(const NumberState& s);
// The state's reachable values and exponents, appended to a number_encode key / read back
// (false: malformed); points_key appends the interning key's part (the set by identity).
void points_encode(const NumberState& s, std::string& out);
void points_key(const NumberState& s, std::string& out);
bool points_decode(const std::string& data, size_t& pos, NumberState& s);
std::string points_to_string(const NumberState& s);

}  // namespace stencil
