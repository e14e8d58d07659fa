// Error types raised by the core. Bindings map them to Python exceptions:
// GrammarError (bad or unsupported grammar input, a ValueError), BudgetError
// (a work budget ran out: also a GrammarError) and UsageError (API misuse,
// ValueError).
#pragma once
#include <stdexcept>
#include <string>

namespace stencil {

struct GrammarError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct BudgetError : GrammarError {
  using GrammarError::GrammarError;
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace stencil
