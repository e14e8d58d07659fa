#include "support/thread_pool.h"

#include <algorithm>

namespace stencil {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

constexpr int kSpinRounds = 20000;  // roughly 100-200 us of pause before a worker sleeps

// Waits for `done()`, pausing at first and then yielding the core, so that a helper sharing
// the core (fewer cores than threads) still gets to finish its item.
template <typename Done>
void wait_until(Done done) {
  for (int spin = 0; !done(); ++spin) {
    if (spin < kSpinRounds)
      cpu_relax();
    else
      std::this_thread::yield();
  }
}

// The pool whose batch this thread is running an item of (a nested parallel_for runs inline).
thread_local const ThreadPool* t_inside = nullptr;

// Marks the current thread as working for `pool` while it lives.
struct Inside {
  const ThreadPool* outer;
  explicit Inside(const ThreadPool* pool) : outer(t_inside) { t_inside = pool; }
  ~Inside() { t_inside = outer; }
};

}  // namespace

ThreadPool& ThreadPool::shared() {
  // The caller of parallel_for works too: one worker fewer than the cores, so that no idle
  // spinning worker takes a core from a working one.
  static const unsigned cores = std::thread::hardware_concurrency();
  static ThreadPool pool(cores > 1 ? cores - 1 : 1);
  return pool;
}

ThreadPool::ThreadPool(size_t workers) {
  for (size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_items(const std::function<void(size_t)>& fn, size_t n) {
  Inside inside(this);
  for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < n;
       i = next_.fetch_add(1, std::memory_order_relaxed)) {
    // Caught here so that the item still counts as finished (the caller waits for all of them)
    // and no exception leaves a worker's thread (std::terminate).
    try {
      fn(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu_);
      if (!error_) error_ = std::current_exception();
    }
    finished_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && !stop_.load(std::memory_order_relaxed); ++spin) {
      if (spin < kSpinRounds) {
        cpu_relax();
      } else {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      }
      g = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    seen = g;
    // Counted as active before it takes a helper's place (both sequentially consistent, as the
    // caller's end of a batch: zero the places, then wait for no active worker): a worker that took
    // a place of a batch ending, but was not active yet, let the caller return and start the next
    // batch, then ran that batch's first items before the caller zeroed its count of finished
    // items; the lost count left the caller waiting forever (seen once in CI, under load).
    active_.fetch_add(1, std::memory_order_seq_cst);
    if (helpers_wanted_.fetch_sub(1, std::memory_order_seq_cst) > 0 &&
        generation_.load(std::memory_order_acquire) == g)  // (the batch may have ended since g was read)
      run_items(*fn_, n_);
    active_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

void ThreadPool::parallel_for(size_t n, size_t threads, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (threads <= 1 || workers_.empty() || n == 1 || t_inside == this) {
    std::exception_ptr error;
    for (size_t i = 0; i < n; ++i) {
      try {
        fn(i);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    return;
  }
  std::lock_guard<std::mutex> run(run_mu_);
  fn_ = &fn;
  n_ = n;
  next_.store(0, std::memory_order_relaxed);
  finished_.store(0, std::memory_order_relaxed);
  // (after fn_, n_, next_ and finished_: a helper that takes a place sees them)
  helpers_wanted_.store(static_cast<int64_t>(std::min(threads - 1, workers_.size())), std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> lock(mu_);  // a worker about to sleep sees the new generation
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_items(fn, n);  // the caller works too
  wait_until([&] { return finished_.load(std::memory_order_acquire) >= n; });
  // No helper may still be reading fn_ / n_ when the next batch sets them.
  helpers_wanted_.store(0, std::memory_order_seq_cst);
  wait_until([&] { return active_.load(std::memory_order_seq_cst) == 0; });
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    std::swap(error, error_);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace stencil
