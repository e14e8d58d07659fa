// Error types raised by the core. Bindings map them to Python exceptions, all under
// StencilError (one except catches whatever stencil raises): GrammarError (bad or unsupported
// grammar input, a ValueError), LimitError (a limit ran out: BudgetError for a work or memory
// limit, TimeLimitExceeded for a wall-clock one, CompileTimeout a compilation's), UsageError (API
// misuse, ValueError) and ConcurrentUseError (RuntimeError). The same tree as Python's: a limit
// is not a GrammarError (the input may be fine), and a catch of BudgetError is not one of a time
// limit.
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

// A time, work or memory limit ran out: none is thrown as this type itself.
struct LimitError : StencilError {
  using StencilError::StencilError;
};

// A compile/work limit ran out (lexer states, expressions, derivative fuel, memory). The
// name is kept for the API; "budget" elsewhere means the output-token budget (TokenBudget).
struct BudgetError : LimitError {
  using LimitError::LimitError;
};

// A call ran past its wall-clock limit (Matcher(time_limit=...)).
struct TimeLimitExceeded : LimitError {
  using LimitError::LimitError;
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
