// support/thread_pool.h: every item runs exactly once, on up to `threads` threads; exceptions come
// back to the caller after the batch; nested and concurrent calls; workers that slept wake up;
// the destructor joins idle and sleeping workers.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "support/thread_pool.h"

using stencil::ThreadPool;

namespace {

// Runs a batch of n items and checks that each ran exactly once.
bool each_runs_once(ThreadPool& pool, size_t n, size_t threads) {
  std::vector<std::atomic<int>> runs(n);
  pool.parallel_for(n, threads, [&](size_t i) { runs[i].fetch_add(1); });
  for (size_t i = 0; i < n; ++i)
    if (runs[i].load() != 1) return false;
  return true;
}

}  // namespace

TEST_CASE(thread_pool_runs_every_item_once) {
  ThreadPool pool(3);
  for (size_t threads : {size_t(1), size_t(2), size_t(4), size_t(16)})
    for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(7), size_t(1000), size_t(100000)})
      CHECK(each_runs_once(pool, n, threads));
}

TEST_CASE(thread_pool_reuses_its_threads_over_many_batches) {
  // Back-to-back batches exercise the generation handshake (a helper must not join a batch that
  // ended nor read the next batch's function early).
  ThreadPool pool(3);
  bool all = true;
  for (int round = 0; round < 2000; ++round) all = all && each_runs_once(pool, 1 + round % 13, 4);
  CHECK(all);
}

TEST_CASE(thread_pool_uses_several_threads) {
  // Items that wait for each other finish only if at least two threads run them.
  ThreadPool pool(2);
  std::set<std::thread::id> ids;
  std::mutex mu;
  std::atomic<int> arrived{0};
  pool.parallel_for(2, 3, [&](size_t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    }
    arrived.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (arrived.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  });
  CHECK_EQ(arrived.load(), 2);
  CHECK_EQ(ids.size(), size_t(2));
}

TEST_CASE(thread_pool_threads_one_runs_on_the_caller) {
  ThreadPool pool(3);
  std::atomic<int> elsewhere{0};
  const auto me = std::this_thread::get_id();
  pool.parallel_for(500, 1, [&](size_t) { elsewhere += std::this_thread::get_id() != me; });
  CHECK_EQ(elsewhere.load(), 0);
  ThreadPool none(0);  // no workers: the caller alone
  CHECK(each_runs_once(none, 100, 8));
}

TEST_CASE(thread_pool_rethrows_after_every_item_ran) {
  ThreadPool pool(3);
  for (size_t threads : {size_t(1), size_t(4)}) {
    std::vector<std::atomic<int>> runs(1000);
    bool caught = false;
    try {
      pool.parallel_for(runs.size(), threads, [&](size_t i) {
        runs[i].fetch_add(1);
        if (i % 100 == 7) throw std::runtime_error("item " + std::to_string(i));
      });
    } catch (const std::runtime_error& e) {
      caught = std::string(e.what()).rfind("item ", 0) == 0;
    }
    CHECK(caught);
    size_t once = 0;
    for (auto& r : runs) once += r.load() == 1;
    CHECK_EQ(once, runs.size());
    CHECK(each_runs_once(pool, 1000, threads));  // the pool still works, with no stale error
  }
}

TEST_CASE(thread_pool_nested_call_runs_inline) {
  // An item that calls parallel_for on its own pool would wait for the batch it is part of.
  ThreadPool pool(3);
  std::vector<std::atomic<int>> runs(50 * 20);
  pool.parallel_for(50, 4,
                    [&](size_t i) { pool.parallel_for(20, 4, [&](size_t j) { runs[i * 20 + j].fetch_add(1); }); });
  size_t once = 0;
  for (auto& r : runs) once += r.load() == 1;
  CHECK_EQ(once, runs.size());
  ThreadPool other(2);  // another pool inside an item runs in parallel as usual
  std::atomic<int> total{0};
  pool.parallel_for(8, 4, [&](size_t) { other.parallel_for(100, 3, [&](size_t) { total.fetch_add(1); }); });
  CHECK_EQ(total.load(), 800);
}

TEST_CASE(thread_pool_callers_on_several_threads_take_turns) {
  ThreadPool pool(3);
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round)
        if (!each_runs_once(pool, 64, 4)) bad.fetch_add(1);
    });
  for (auto& t : callers) t.join();
  CHECK_EQ(bad.load(), 0);
}

TEST_CASE(thread_pool_wakes_sleeping_workers_and_shuts_down) {
  // Workers sleep on the condition variable after spinning (well under 100 ms); a batch after that
  // must wake them, and the destructor must join them whether they sleep, spin or never ran.
  for (int round = 0; round < 20; ++round) {
    auto pool = std::make_unique<ThreadPool>(3);
    if (round % 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      CHECK(each_runs_once(*pool, 200, 4));
    }
    if (round % 4 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    pool.reset();  // a hang here is reported by the watchdog (main.cpp)
  }
  CHECK(each_runs_once(ThreadPool::shared(), 1000, 8));
}
