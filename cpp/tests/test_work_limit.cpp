// support/work_limit.h: a limit stops the work past its steps, its building units or its time
// (WorkSpent), each counted apart, nested limits keep the tighter one and give the outer back, and
// a limit on one thread leaves another's work alone.
#include <chrono>
#include <cstdint>
#include <thread>

#include "check.h"
#include "support/work_limit.h"

namespace work = stencil::work;
using stencil::WorkSpent;

namespace {

// Spends one unit at a time until the limit in force stops it; the units it could spend.
uint64_t spend_until_stopped(uint64_t most, bool building = false) {
  uint64_t n = 0;
  try {
    for (; n < most; ++n) building ? work::build(1) : work::spend(1);
  } catch (const WorkSpent&) {
  }
  return n;
}

}  // namespace

TEST_CASE(work_limit_stops_past_its_units) {
  uint64_t n = 0;
  {
    work::Limit limit(100, work::kNone);
    n = spend_until_stopped(1000);
  }
  CHECK_EQ(n, uint64_t{100});
  CHECK_EQ(spend_until_stopped(1000), uint64_t{1000});  // no limit once the scope ended
}

TEST_CASE(work_limits_nest) {
  work::Limit outer(50, work::kNone);
  {
    work::Limit inner(1000, work::kNone);  // cannot widen the outer one
    CHECK_EQ(spend_until_stopped(1000), uint64_t{50});
  }
  work::Limit again(10, work::kNone);  // the outer is spent: nothing left within it
  CHECK_EQ(spend_until_stopped(1000), uint64_t{0});
}

TEST_CASE(work_limit_is_per_thread) {
  work::Limit limit(5, work::kNone);
  uint64_t other = 0;
  std::thread t([&] { other = spend_until_stopped(1000); });
  t.join();
  CHECK_EQ(other, uint64_t{1000});
  CHECK_EQ(spend_until_stopped(1000), uint64_t{5});
}

TEST_CASE(work_limit_stops_at_its_time) {
  const auto t0 = work::Clock::now();
  uint64_t n = 0;
  {
    work::Limit limit(work::kNone, work::kNone, 0.05);
    n = spend_until_stopped(~uint64_t{0});
  }
  const double seconds = std::chrono::duration<double>(work::Clock::now() - t0).count();
  CHECK(n > 0);
  CHECK(seconds >= 0.05 && seconds < 5);
  CHECK(work::until == work::Clock::time_point::max());  // back to none
}

TEST_CASE(steps_and_building_are_limited_apart) {
  work::Limit limit(10, 100);
  CHECK_EQ(spend_until_stopped(1000, true), uint64_t{100});  // building stops at its own limit
  CHECK_EQ(spend_until_stopped(1000), uint64_t{10});         // the steps' limit was untouched by it
  work::WalkSteps walk;  // a step per 16 nodes: none left
  bool stopped = false;
  try {
    for (int i = 0; i < 16; ++i) walk.tick();
  } catch (const WorkSpent&) {
    stopped = true;
  }
  CHECK(stopped);
}
