// Unicode code point classes as byte-level expressions: a class becomes an
// alternation of UTF-8 byte-range sequences (surrogates and overlong forms
// never match), so UTF-8 validity is enforced by the grammar itself.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "regex/expr.h"
#include "stencil/ids.h"

namespace stencil {

// Sorted, merged, clipped to valid scalar values (no surrogates).
CodepointRanges normalize_ranges(CodepointRanges ranges);
CodepointRanges complement_ranges(const CodepointRanges& normalized);
ExprId utf8_class(ExprStore& store, const CodepointRanges& ranges, bool negate);
// One UTF-8 encoded code point.
std::string utf8_encode(uint32_t cp);

}  // namespace stencil
