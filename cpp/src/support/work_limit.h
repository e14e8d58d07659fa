// A limit on the derivative work (Deriver::burn's units) the current thread may spend inside a
// scope, and optionally on its time. Searches that are worth their work only while it is small
// (the token budget's cost searches, matcher/budget.cpp) run under one: on a lexer whose every
// new state costs milliseconds (intersections of counted patterns), a search would otherwise run
// for minutes. Past the limit the work stops with WorkSpent; unlike the lexer's fuel, the lexer
// stays usable (what was derived stays cached). A unit's cost varies with the expressions (0.1
// us in a large enum, 1.5 us in intersected counted patterns): the time bounds the worst.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>

#include "stencil/errors.h"

namespace stencil {

// Thrown by work::spend past the limit; caught by the scope's owner. (A BudgetError, should it
// ever reach the bindings: a work limit ran out.)
struct WorkSpent : BudgetError {
  WorkSpent() : BudgetError("a search passed its derivative work limit") {}
};

namespace work {

using Clock = std::chrono::steady_clock;
// The thread's work state, one thread_local: in a shared library each thread_local read is a
// call (__tls_get_addr), so a spend or a scope reads its address once rather than per field.
struct State {
  uint64_t done = 0;                                // units spent by this thread, ever
  uint64_t end = ~uint64_t{0};                      // the limit in force (none: the maximum)
  Clock::time_point until = Clock::time_point::max();  // and its time
  uint32_t spends = 0;                              // (the clock is read every 256 spends)
};
inline thread_local State state;

// Counts `units` of work; throws WorkSpent past the limit in force.
inline void spend(uint64_t units) {
  State& s = state;
  if ((s.done += units) > s.end) throw WorkSpent();
  if ((++s.spends & 255) == 0 && s.until != Clock::time_point::max() && Clock::now() > s.until) throw WorkSpent();
}

// At most `units` more, and with `seconds` > 0 at most that long, for the life of the scope
// (within any limit already in force, which is back when the scope ends). Catch WorkSpent
// outside the scope.
class Limit {
 public:
  explicit Limit(uint64_t units, double seconds = 0) : s_(state), outer_end_(s_.end), outer_until_(s_.until) {
    s_.end = std::min(s_.end, s_.done + units);
    if (seconds > 0)
      s_.until = std::min(
          s_.until, Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
  }
  ~Limit() {
    s_.end = outer_end_;
    s_.until = outer_until_;
  }
  Limit(const Limit&) = delete;
  Limit& operator=(const Limit&) = delete;

 private:
  State& s_;  // (a scope ends on the thread it began on)
  uint64_t outer_end_;
  Clock::time_point outer_until_;
};

// Runs f with at most `units` more: false where they ran out (and where the limit in force
// around ran out as well, WorkSpent goes on to its owner).
template <class F>
bool within(uint64_t units, F&& f) {
  try {
    Limit limit(units);
    f();
    return true;
  } catch (const WorkSpent&) {
    spend(0);
    return false;
  }
}

}  // namespace work
}  // namespace stencil
