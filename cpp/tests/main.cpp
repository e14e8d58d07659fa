// Runs the registered test cases: `stencil_cpp_tests [name-part ...]` runs the cases whose name
// contains one of the parts (all without arguments). A watchdog ends the run when one case takes
// longer than STENCIL_TEST_TIMEOUT seconds (default 120), naming it: a hang fails, it never blocks CI.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

namespace stencil_test {
namespace {

struct Case {
  const char* name;
  CaseFn fn;
  const char* file;
  int line;
};

std::vector<Case>& cases() {
  static std::vector<Case> all;
  return all;
}

size_t checks = 0, failures = 0;
std::mutex watch_mu;
std::condition_variable watch_cv;
const char* running = nullptr;  // the case in progress (watch_mu)
uint64_t started = 0;           // cases started (watch_mu): the watchdog's progress signal
bool done = false;              // all cases ran (watch_mu)

void watchdog(int seconds) {
  std::unique_lock<std::mutex> lock(watch_mu);
  for (;;) {
    const uint64_t seen = started;
    const bool moved = watch_cv.wait_for(lock, std::chrono::seconds(seconds), [&] { return done || started != seen; });
    if (done) return;
    if (!moved && running) {
      std::fprintf(stderr, "TIMEOUT: %s ran past %d s (STENCIL_TEST_TIMEOUT)\n", running, seconds);
      std::fflush(stderr);
      std::_Exit(2);
    }
  }
}

// A crash names the case it happened in, then ends the run as it would have (write() alone: the
// handler may run anywhere).
void on_crash(int sig) {
  const char* name = running ? running : "(none)";
  const char head[] = "CRASH in test case ";
  (void)!write(2, head, sizeof head - 1);
  (void)!write(2, name, std::char_traits<char>::length(name));
  (void)!write(2, "\n", 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

bool selected(const Case& c, int argc, char** argv) {
  if (argc < 2) return true;
  for (int i = 1; i < argc; ++i)
    if (std::string(c.name).find(argv[i]) != std::string::npos) return true;
  return false;
}

// Runs one case; false when it failed a check or threw.
bool run_case(const Case& c) {
  {
    std::lock_guard<std::mutex> lock(watch_mu);
    running = c.name;
    ++started;
  }
  watch_cv.notify_all();
  const size_t before = failures;
  try {
    c.fn();
  } catch (const Abort&) {
  } catch (const std::exception& e) {
    check(false, c.file, c.line, std::string(c.name) + " threw " + typeid(e).name() + ": " + e.what());
  } catch (...) {
    check(false, c.file, c.line, std::string(c.name) + " threw a non-std exception");
  }
  return failures == before;
}

}  // namespace

Register::Register(const char* name, CaseFn fn, const char* file, int line) {
  cases().push_back({name, fn, file, line});
}

bool check(bool ok, const char* file, int line, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "%s:%d: FAILED %s\n", file, line, what.c_str());
  }
  return ok;
}

}  // namespace stencil_test

int main(int argc, char** argv) {
  using namespace stencil_test;
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) signal(sig, on_crash);
  const char* env = std::getenv("STENCIL_TEST_TIMEOUT");
  std::thread watch(watchdog, env && std::atoi(env) > 0 ? std::atoi(env) : 120);
  size_t ran = 0, failed_cases = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const Case& c : cases()) {
    if (!selected(c, argc, argv)) continue;
    ++ran;
    if (!run_case(c)) {
      ++failed_cases;
      std::fprintf(stderr, "  in test case %s (%s:%d)\n", c.name, c.file, c.line);
    }
  }
  {
    std::lock_guard<std::mutex> lock(watch_mu);
    done = true;
  }
  watch_cv.notify_all();
  watch.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("C++ unit tests: %zu cases, %zu checks, %zu failed checks in %zu cases (%.1f s)\n", ran, checks, failures,
              failed_cases, secs);
  return failures || ran == 0 ? 1 : 0;
}
