// Filling the mask rows of many matchers at once on a few threads.
#pragma once
#include <cstdint>
#include <exception>
#include <vector>

#include "stencil/matcher.h"

namespace stencil {

// rows[i] is the bitmask row index for matchers[i]; the caller has released
// the GIL. remaining[i] is matchers[i]'s token budget (Matcher::fill_mask_within; < 0 or no
// entries: none). Every row is filled whatever the others do. With `errors`, it gets one entry
// per matcher (null, or what that matcher threw) and nothing is thrown; without, the first error
// is rethrown after all threads finish.
void fill_masks_parallel(const std::vector<Matcher*>& matchers, const std::vector<int64_t>& rows, uint32_t* bitmask,
                         size_t row_words, int num_threads, const std::vector<int64_t>& remaining = {},
                         std::vector<std::exception_ptr>* errors = nullptr);

}  // namespace stencil
