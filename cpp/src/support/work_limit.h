// A limit on the derivative work (Deriver::burn's units) the current thread may spend inside a
// scope. Searches that are worth their work only while it is small (the token budget's cost
// searches, matcher/budget.cpp) run under one: on a lexer whose every new state costs
// milliseconds (intersections of counted patterns), a search would otherwise run for minutes.
// Past the limit the work stops with WorkSpent; unlike the lexer's fuel, the lexer stays usable
// (what was derived stays cached).
#pragma once
#include <algorithm>
#include <cstdint>

#include "stencil/errors.h"

namespace stencil {

// Thrown by work::spend past the limit; caught by the scope's owner. (A BudgetError, should it
// ever reach the bindings: a work limit ran out.)
struct WorkSpent : BudgetError {
  WorkSpent() : BudgetError("a search passed its derivative work limit") {}
};

namespace work {

inline thread_local uint64_t done = 0;            // units spent by this thread, ever
inline thread_local uint64_t end = ~uint64_t{0};  // the limit in force (none: the maximum)

// Counts `units` of work; throws WorkSpent past the limit in force.
inline void spend(uint64_t units) {
  if ((done += units) > end) throw WorkSpent();
}

// At most `units` more for the life of the scope (within any limit already in force, which is
// back when the scope ends). Catch WorkSpent outside the scope.
class Limit {
 public:
  explicit Limit(uint64_t units) : outer_(end) { end = std::min(end, done + units); }
  ~Limit() { end = outer_; }
  Limit(const Limit&) = delete;
  Limit& operator=(const Limit&) = delete;

 private:
  uint64_t outer_;
};

}  // namespace work
}  // namespace stencil
