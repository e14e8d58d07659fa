// The multiples of a decimal d = mult / 10^scale among the JSON numbers written without
// exponent (-?(0|[1-9][0-9]*)(\.[0-9]+)?): a residue automaton over the text, its state the
// value read times 10^scale, mod mult (NumberState::residue), built lazily like any number state,
// so the lexer only ever holds the residues a text reaches (0.123456789 has 123,456,789).
// Exponent forms are left to the front-end (it adds the zero ones).
//
// Liveness is exact: an integer part can always be extended to a multiple; after j fraction
// digits, the scale - j digits left add any Z < 10^(scale - j) to the residue, so the state is
// live when the Z that completes it is that small; past the scale only zeros follow.
#pragma once
#include <cstdint>
#include <string>

#include "json/number_range.h"

namespace stencil {

bool multiple_step(const NumberState& s, uint8_t b, NumberState& out);
bool multiple_live(const NumberState& s);
bool multiple_nullable(const NumberState& s);
// Whether a decoded state is one multiple_step can build (serialization check).
bool multiple_valid(const NumberState& s);
std::string multiple_to_string(const NumberState& s);

}  // namespace stencil
