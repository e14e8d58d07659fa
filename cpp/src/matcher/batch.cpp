#include "matcher/batch.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace stencil {

void fill_masks_parallel(const std::vector<Matcher*>& matchers, const std::vector<int64_t>& rows,
                         uint32_t* bitmask, size_t row_words, int num_threads) {
  const size_t n = matchers.size();
  num_threads = std::max(1, std::min<int>(num_threads, static_cast<int>(n)));
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        matchers[i]->fill_mask(bitmask + static_cast<size_t>(rows[i]) * row_words, row_words);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < num_threads; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace stencil
