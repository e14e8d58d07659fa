#include "matcher/batch.h"

#include <exception>

#include "support/thread_pool.h"

namespace stencil {

void fill_masks_parallel(const std::vector<Matcher*>& matchers, const std::vector<int64_t>& rows, uint32_t* bitmask,
                         size_t row_words, int num_threads, const std::vector<int64_t>& remaining,
                         std::vector<std::exception_ptr>* errors) {
  std::vector<std::exception_ptr> own;
  std::vector<std::exception_ptr>& caught = errors ? *errors : own;
  caught.assign(matchers.size(), nullptr);  // one slot per row: no lock needed
  ThreadPool::shared().parallel_for(
      matchers.size(), num_threads < 1 ? 1 : static_cast<size_t>(num_threads), [&](size_t i) {
        try {
          matchers[i]->fill_mask_within(bitmask + static_cast<size_t>(rows[i]) * row_words, row_words,
                                        remaining.empty() ? -1 : remaining[i], "fill_next_token_bitmasks");
        } catch (...) {
          caught[i] = std::current_exception();
        }
      });
  if (errors) return;
  for (const auto& e : caught)
    if (e) std::rethrow_exception(e);
}

}  // namespace stencil
