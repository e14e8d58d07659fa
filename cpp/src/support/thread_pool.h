// A small persistent pool: parallel_for runs fn(i) for i in [0, n) on up to
// `threads` threads (the caller's included) and returns when all are done.
// Threads are started once and reused, so a batch costs no thread creation.
// Items are claimed with an atomic counter (no lock per item), and an idle worker
// spins briefly before it sleeps: batches of masks come every few microseconds
// to milliseconds, and a futex wake-up would cost a good part of a batch.
//
// Every item runs, even when some throw: parallel_for then rethrows the first exception caught
// (in any thread) after the batch is over. A parallel_for called from inside one of this pool's
// items runs its items inline on the calling thread (the pool is busy with the outer batch).
// Calls from several threads at once take turns. The destructor wakes and joins the workers.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
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
  void run_items(const std::function<void(size_t)>& fn, size_t n);

  std::vector<std::thread> workers_;
  std::mutex mu_;                // guards sleeping on wake_
  std::condition_variable wake_;
  std::mutex run_mu_;            // one parallel_for at a time
  const std::function<void(size_t)>* fn_ = nullptr;
  size_t n_ = 0;
  std::atomic<size_t> next_{0}, finished_{0};
  std::atomic<int64_t> helpers_wanted_{0};
  std::atomic<int> active_{0};   // workers inside a batch
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::mutex error_mu_;          // guards error_ (taken only when an item throws)
  std::exception_ptr error_;     // the batch's first exception
};

}  // namespace stencil
