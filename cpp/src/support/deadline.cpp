#include "support/deadline.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "stencil/errors.h"
#include "support/memory_limit.h"

namespace stencil::deadline {

namespace {
using Clock = std::chrono::steady_clock;
thread_local Limit current;

// Past about 30 years a limit is none (and now + seconds would overflow the clock).
constexpr double kLongest = 1e9;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}
}  // namespace

void set(double seconds) {
  current = Limit{};
  if (!(seconds > 0) || seconds > kLongest) return;
  current = {true, after(seconds), seconds, nullptr};
}

void check() {
  CallMemory::check();
  if (!current.active || Clock::now() <= current.until) return;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", current.seconds);
  if (!current.call)
    throw CompileTimeout(std::string("compilation exceeded its time limit of ") + buf +
                         " s (GrammarCompiler(compile_timeout=...)) while computing regular expression derivatives");
  throw TimeLimitExceeded(std::string(current.call) + " exceeded the matcher's time limit of " + buf +
                          " s (Matcher(time_limit=...))");
}

Scope::Scope(double seconds, const char* call) : outer_(current) {
  if (!(seconds > 0) || seconds > kLongest) return;
  const Clock::time_point until = after(seconds);
  if (current.active && current.until <= until) return;  // an earlier limit is in force
  current = {true, until, seconds, call};
  set_ = true;
}

Scope::~Scope() {
  if (set_) current = outer_;
}

Suspend::Suspend() : outer_(current) { current = Limit{}; }

Suspend::~Suspend() { current = outer_; }

}  // namespace stencil::deadline
