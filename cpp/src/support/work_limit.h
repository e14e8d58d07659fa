// Limits on the work the current thread may spend inside a scope, and optionally on its time.
// Searches that are worth their work only while it is small (the token budget's cost searches,
// matcher/budget.cpp) run under one. Two counts, limited apart:
// - steps (spend): the search's own steps, which a search repeated on warm caches takes alike,
//   so that a limit on them stops it at the same point whatever earlier calls cached (a budget
//   mask is then a function of the grammar, the state and the budget: cost/README.md);
// - building (build): filling the caches a search reads (Deriver::burn's derivatives for new
//   lexer states, the trie walks that fill the cost tables), which a warm cache skips. Its limit
//   is a safety net against lexers whose every new state costs milliseconds (intersections of
//   counted patterns: a search would otherwise run for minutes), set well above what searches
//   build. A unit's cost varies with the expressions (0.1 us in a large enum, 1.5 us in
//   intersected counted patterns): the time bounds the worst.
// Past a limit the work stops with WorkSpent; unlike the lexer's fuel, the lexer stays usable
// (what was derived stays cached).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>

#include "stencil/errors.h"

namespace stencil {

// Thrown by work::spend and work::build past their limits; caught by the scope's owner. (A
// BudgetError, should it ever reach the bindings: a work limit ran out.)
struct WorkSpent : BudgetError {
  WorkSpent() : BudgetError("a search passed its work limit") {}
};

namespace work {

using Clock = std::chrono::steady_clock;
inline thread_local uint64_t done = 0;                  // steps spent by this thread, ever
inline thread_local uint64_t end = ~uint64_t{0};        // their limit in force (none: the maximum)
inline thread_local uint64_t built = 0;                 // building units spent by this thread, ever
inline thread_local uint64_t build_end = ~uint64_t{0};  // their limit in force
inline thread_local Clock::time_point until = Clock::time_point::max();  // and its time
inline thread_local uint32_t spends = 0;  // (the clock is read every 256 spends)

inline void check_time() {
  if ((++spends & 255) == 0 && until != Clock::time_point::max() && Clock::now() > until) throw WorkSpent();
}
// Counts `units` of search steps; throws WorkSpent past the limit in force.
inline void spend(uint64_t units) {
  if ((done += units) > end) throw WorkSpent();
  check_time();
}
// Counts `units` of cache building; throws WorkSpent past the building limit in force.
inline void build(uint64_t units) {
  if ((built += units) > build_end) throw WorkSpent();
  check_time();
}

// Steps of a walk: one per 16 nodes (a node costs a few nanoseconds, a step about a microsecond).
class WalkSteps {
 public:
  void tick() {
    if ((++nodes_ & 15) == 0) spend(1);
  }

 private:
  uint32_t nodes_ = 0;
};

constexpr uint64_t kNone = ~uint64_t{0} >> 1;  // no limit (of steps or building units)

// At most `steps` more steps and `builds` more building units, and with `seconds` > 0 at most
// that long, for the life of the scope (within any limit already in force, which is back when the
// scope ends). Catch WorkSpent outside the scope.
class Limit {
 public:
  Limit(uint64_t steps, uint64_t builds, double seconds = 0)
      : outer_end_(end), outer_build_end_(build_end), outer_until_(until) {
    end = std::min(end, done + steps);
    build_end = std::min(build_end, built + builds);
    if (seconds > 0)
      until = std::min(until, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(seconds)));
  }
  ~Limit() {
    end = outer_end_;
    build_end = outer_build_end_;
    until = outer_until_;
  }
  Limit(const Limit&) = delete;
  Limit& operator=(const Limit&) = delete;

 private:
  uint64_t outer_end_, outer_build_end_;
  Clock::time_point outer_until_;
};

}  // namespace work
}  // namespace stencil
