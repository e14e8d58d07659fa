// Error types raised by the core. Bindings map them to Python exceptions, all under
// StencilError (one except catches whatever stencil raises):
// GrammarError (bad or unsupported grammar input, a ValueError), BudgetError
// (a work or memory limit ran out) and TimeLimitExceeded (a wall-clock one; CompileTimeout, a
// compilation's, is one), UsageError (API misuse, ValueError) and ConcurrentUseError
// (RuntimeError). In Python, BudgetError and TimeLimitExceeded are siblings under LimitError
// (StencilError, ValueError) and not GrammarErrors; here they keep their bases, so a C++ catch
// of BudgetError also catches a time limit.
#pragma once
#include <stdexcept>
#include <string>

namespace stencil {

// The root of every error below (stencil.StencilError in Python).
struct StencilError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct GrammarError : StencilError {
  using StencilError::StencilError;
};

// A compile/work limit ran out (lexer states, expressions, derivative fuel, memory). The
// name is kept for the API; "budget" elsewhere means the output-token budget (TokenBudget).
struct BudgetError : GrammarError {
  using GrammarError::GrammarError;
};

// A call ran past its wall-clock limit (Matcher(time_limit=...)); also a BudgetError.
struct TimeLimitExceeded : BudgetError {
  using BudgetError::BudgetError;
};

// A compilation ran past its wall-clock limit (GrammarCompiler(compile_timeout=...)).
struct CompileTimeout : TimeLimitExceeded {
  using TimeLimitExceeded::TimeLimitExceeded;
};

struct UsageError : StencilError {
  using StencilError::StencilError;
};

// One matcher used by two threads at once (a RuntimeError in Python).
struct ConcurrentUseError : StencilError {
  using StencilError::StencilError;
};

}  // namespace stencil
