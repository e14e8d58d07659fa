// Wall-clock limits on the work of the current thread: a compilation's (GrammarCompiler's
// compile_timeout, set()) and a matcher call's (Matcher(time_limit=...), Scope). The long loops
// (derivatives, emptiness searches, lexer states, the Earley parser, trie walks, completion
// costs) count their work with a Ticker, which reads the clock once per 1024 units of it.
#pragma once
#include <chrono>
#include <cstdint>

namespace stencil::deadline {

// Limit the current thread's compile work to `seconds` from now; seconds <= 0 lifts the limit.
void set(double seconds);
// Throws when the current thread's limit has passed: CompileTimeout for a compilation's,
// TimeLimitExceeded (naming the call) for a matcher call's; and watches the call's memory
// (CallMemory::check, support/memory_limit.h).
void check();

// The limit in force on a thread: until when, how long it was, and whose it is.
struct Limit {
  bool active = false;
  std::chrono::steady_clock::time_point until{};
  double seconds = 0;
  const char* call = nullptr;  // the matcher call it limits; null: a compilation
};

// A matcher call's limit of `seconds` (<= 0: none of its own) for the life of the scope. The
// earlier of it and the limit already in force wins; that one is back when the scope ends.
class Scope {
 public:
  Scope(double seconds, const char* call);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Limit outer_;
  bool set_ = false;
};

// No limit at all for the life of the scope (work that must not stop half-way); the limit in
// force comes back at its end.
class Suspend {
 public:
  Suspend();
  ~Suspend();
  Suspend(const Suspend&) = delete;
  Suspend& operator=(const Suspend&) = delete;

 private:
  Limit outer_;
};

// Counts units of work and looks at the clock (check) once every 1024: a clock read costs about
// 20 ns, a unit of the loops that tick at least a hash lookup.
class Ticker {
 public:
  void tick(uint32_t units = 1) {
    if ((count_ += units) >= kEvery) {
      count_ = 0;
      check();
    }
  }

 private:
  static constexpr uint32_t kEvery = 1024;
  uint32_t count_ = 0;
};

}  // namespace stencil::deadline
