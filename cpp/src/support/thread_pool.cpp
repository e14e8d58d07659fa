#include "support/thread_pool.h"

#include <algorithm>

namespace stencil {

ThreadPool& ThreadPool::shared() {
  static ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()));
  return pool;
}

ThreadPool::ThreadPool(size_t workers) {
  for (size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || (generation_ != seen && helpers_wanted_ > 0); });
    if (stop_) return;
    seen = generation_;
    --helpers_wanted_;
    while (next_ < n_) {
      size_t i = next_++;
      const auto* fn = fn_;
      lock.unlock();
      (*fn)(i);
      lock.lock();
      if (++finished_ == n_) done_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(size_t n, size_t threads, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (threads <= 1 || workers_.empty() || n == 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::lock_guard<std::mutex> run(run_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  fn_ = &fn;
  n_ = n;
  next_ = finished_ = 0;
  helpers_wanted_ = std::min(threads - 1, workers_.size());
  ++generation_;
  wake_.notify_all();
  // The caller works too.
  while (next_ < n_) {
    size_t i = next_++;
    lock.unlock();
    fn(i);
    lock.lock();
    ++finished_;
  }
  done_.wait(lock, [&] { return finished_ == n_; });
  helpers_wanted_ = 0;
  fn_ = nullptr;
  n_ = 0;
}

}  // namespace stencil
