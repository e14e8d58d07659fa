// support/work_limit.h: a limit stops the work past its units or its time (WorkSpent), nested
// limits keep the tighter one and give the outer back, and a limit on one thread leaves another's
// work alone.
#include <chrono>
#include <cstdint>
#include <thread>
#include <type_traits>

#include "check.h"
#include "stencil/errors.h"
#include "support/work_limit.h"

namespace work = stencil::work;
using stencil::WorkSpent;

// The limits' errors form Python's tree (errors.h): a limit is no GrammarError, and a catch of
// BudgetError (work, memory) is not one of a time limit.
static_assert(std::is_base_of_v<stencil::LimitError, stencil::BudgetError>);
static_assert(std::is_base_of_v<stencil::LimitError, stencil::TimeLimitExceeded>);
static_assert(std::is_base_of_v<stencil::BudgetError, WorkSpent>);
static_assert(!std::is_base_of_v<stencil::GrammarError, stencil::LimitError>);
static_assert(!std::is_base_of_v<stencil::BudgetError, stencil::TimeLimitExceeded>);

namespace {

// Spends one unit at a time until the limit in force stops it; the units it could spend.
uint64_t spend_until_stopped(uint64_t most) {
  uint64_t n = 0;
  try {
    for (; n < most; ++n) work::spend(1);
  } catch (const WorkSpent&) {
  }
  return n;
}

}  // namespace

TEST_CASE(work_limit_stops_past_its_units) {
  uint64_t n = 0;
  {
    work::Limit limit(100);
    n = spend_until_stopped(1000);
  }
  CHECK_EQ(n, uint64_t{100});
  CHECK_EQ(spend_until_stopped(1000), uint64_t{1000});  // no limit once the scope ended
}

TEST_CASE(work_limits_nest) {
  work::Limit outer(50);
  {
    work::Limit inner(1000);  // cannot widen the outer one
    CHECK_EQ(spend_until_stopped(1000), uint64_t{50});
  }
  work::Limit again(10);  // the outer is spent: nothing left within it
  CHECK_EQ(spend_until_stopped(1000), uint64_t{0});
}

TEST_CASE(work_limit_is_per_thread) {
  work::Limit limit(5);
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
    work::Limit limit(~uint64_t{0} >> 1, 0.05);
    n = spend_until_stopped(~uint64_t{0});
  }
  const double seconds = std::chrono::duration<double>(work::Clock::now() - t0).count();
  CHECK(n > 0);
  CHECK(seconds >= 0.05 && seconds < 5);
  CHECK(work::state.until == work::Clock::time_point::max());  // back to none
}

TEST_CASE(work_within_says_whether_its_units_sufficed) {
  uint64_t n = 0;
  auto spend = [&](uint64_t most) {
    for (n = 0; n < most; ++n) work::spend(1);
  };
  CHECK(work::within(100, [&] { spend(50); }));
  CHECK_EQ(n, uint64_t{50});
  CHECK(!work::within(100, [&] { spend(1000); }));
  CHECK_EQ(n, uint64_t{100});
  {
    work::Limit outer(150);  // (about 50 left within it after the first)
    CHECK(!work::within(100, [&] { spend(1000); }));
    bool thrown = false;
    try {  // the outer limit ran out as well inside: its owner hears of it
      work::within(100, [&] { spend(1000); });
    } catch (const WorkSpent&) {
      thrown = true;
    }
    CHECK(thrown);
    CHECK(n < 100);
  }
  CHECK_EQ(spend_until_stopped(1000), uint64_t{1000});  // no limit left behind
}
