#include "matcher/batch.h"

#include <algorithm>
#include <cstring>
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

namespace {

bool allows(const uint32_t* row, size_t words, int64_t token) {
  return token >= 0 && static_cast<size_t>(token >> 5) < words && ((row[token >> 5] >> (token & 31)) & 1u);
}

bool empty_row(const uint32_t* row, size_t words) {
  return std::all_of(row, row + words, [](uint32_t w) { return w == 0; });
}

// One request's rows (fill_draft_masks); `taken` counts the draft tokens accepted, for the rollback.
void fill_draft_rows(DraftRows& r, uint32_t* bitmask, size_t words, size_t& taken) {
  Matcher& m = *r.matcher;
  const size_t n = r.draft.size();
  const uint32_t* copy = nullptr;  // the row the rows after a refused token repeat
  bool open = false;               // the rows after a token its budget refused allow every token
  for (size_t j = 0; j <= n; ++j) {
    uint32_t* row = bitmask + static_cast<size_t>(r.first_row + static_cast<int64_t>(j)) * words;
    if (copy) {
      std::memcpy(row, copy, words * sizeof(uint32_t));
      continue;
    }
    if (open || m.is_terminated()) {
      std::fill(row, row + words, ~0u);
      continue;
    }
    const int64_t budget = r.remaining < 0 ? -1 : std::max<int64_t>(0, r.remaining - static_cast<int64_t>(j));
    m.fill_mask_within(row, words, budget, "fill_draft_bitmasks");
    // (a budget of one token or more keeps the cheapest tokens where none fits: only a spent one
    // leaves a row empty, and a row is never left empty)
    if (budget == 0 && empty_row(row, words)) m.fill_mask_within(row, words, -1, "fill_draft_bitmasks");
    if (j == n) break;
    if (!allows(row, words, r.draft[j])) {
      open = true;
    } else if (m.accept_token(r.draft[j])) {
      ++taken;
    } else {
      r.refused_at = static_cast<int64_t>(j);
      copy = row;
    }
  }
}

}  // namespace

void fill_draft_masks(std::vector<DraftRows>& requests, uint32_t* bitmask, size_t row_words, int num_threads,
                      std::vector<std::exception_ptr>* errors) {
  std::vector<std::exception_ptr> own;
  std::vector<std::exception_ptr>& caught = errors ? *errors : own;
  caught.assign(requests.size(), nullptr);
  ThreadPool::shared().parallel_for(requests.size(), num_threads < 1 ? 1 : static_cast<size_t>(num_threads),
                                    [&](size_t i) {
                                      size_t taken = 0;
                                      try {
                                        fill_draft_rows(requests[i], bitmask, row_words, taken);
                                      } catch (...) {
                                        caught[i] = std::current_exception();
                                      }
                                      try {
                                        if (taken) requests[i].matcher->rollback(static_cast<int64_t>(taken));
                                      } catch (...) {
                                        if (!caught[i]) caught[i] = std::current_exception();
                                      }
                                    });
  if (errors) return;
  for (const auto& e : caught)
    if (e) std::rethrow_exception(e);
}

}  // namespace stencil
