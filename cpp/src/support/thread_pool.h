// A small persistent pool: parallel_for runs fn(i) for i in [0, n) on up to
// `threads` threads (the caller's included) and returns when all are done.
// Threads are started once and reused, so a batch costs no thread creation.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stencil {

class ThreadPool {
 public:
  static ThreadPool& shared();
  explicit ThreadPool(size_t workers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void parallel_for(size_t n, size_t threads, const std::function<void(size_t)>& fn);

 private:
  void worker_loop();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::mutex run_mu_;  // one parallel_for at a time
  const std::function<void(size_t)>* fn_ = nullptr;
  size_t n_ = 0, next_ = 0, finished_ = 0, helpers_wanted_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace stencil
