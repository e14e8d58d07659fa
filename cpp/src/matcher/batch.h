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

// One request of a speculative step (fill_draft_masks): its matcher, its draft, the bitmask row
// of the mask before the draft's first token, and its token budget (< 0: none).
struct DraftRows {
  Matcher* matcher;
  std::vector<int64_t> draft;
  int64_t first_row;
  int64_t remaining;
  // Out: the draft position of a token that its row allowed but the matcher refused (-1: none).
  int64_t refused_at = -1;
};

// The masks of every position of each request's draft and of the token after it, rows
// first_row .. first_row + draft.size(): the matcher is advanced through its draft and rolled
// back after, each row under the budget less the draft tokens before it (a spent budget whose
// row would be empty is filled without one). Where a row refuses its draft token (the budget),
// the rows after it allow every token; where the matcher refuses a token its row allowed, the
// rows after it copy that row; a terminated matcher's rows allow every token. Requests run in
// parallel, each on one thread; `errors` as in fill_masks_parallel, and a request that throws
// is rolled back too.
void fill_draft_masks(std::vector<DraftRows>& requests, uint32_t* bitmask, size_t row_words, int num_threads,
                      std::vector<std::exception_ptr>* errors = nullptr);

}  // namespace stencil
