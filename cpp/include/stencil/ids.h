// The ids the grammar builder's API speaks in, shared with the core's own headers.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace stencil {

using ExprId = uint32_t;  // a regular expression in an expression store
using Symbol = uint32_t;  // a grammar symbol: a lexeme (terminal) or a rule
using CodepointRanges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive code point ranges

}  // namespace stencil
