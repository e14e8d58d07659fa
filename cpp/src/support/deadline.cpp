#include "support/deadline.h"

#include <chrono>
#include <cstdio>
#include <string>

#include "stencil/errors.h"

namespace stencil::deadline {

namespace {
using Clock = std::chrono::steady_clock;
thread_local bool active = false;
thread_local Clock::time_point until;
thread_local double limit_seconds = 0;
}  // namespace

void set(double seconds) {
  active = seconds > 0;
  limit_seconds = seconds;
  if (active)
    until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void check() {
  if (active && Clock::now() > until) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", limit_seconds);
    throw CompileTimeout(std::string("compilation exceeded its time limit of ") + buf +
                         " s (GrammarCompiler(compile_timeout=...)) while computing regular expression derivatives");
  }
}

}  // namespace stencil::deadline
