// The lists of uniqueItems arrays that the parse is inside: where the matcher must make sure an
// item being written can still end unlike every earlier item (matcher/item_guard.h). A list of
// unique items is a left-nested rule holding the unique_item nonterminal, whose items all start
// where the list does, so the rows found are the lists' first rows.
#include <algorithm>

#include "parser/earley.h"

namespace stencil {

namespace {
// Items the walk may visit: past it, outer lists are not looked for (a list inside thousands of
// nested rules; inner lists come first).
constexpr size_t kMaxWalk = 4096;
}  // namespace

// A list of the top row's own items (one predicted there: its first item is being written), and
// up from the top row's items that began before it (the rest were predicted there by them): an
// item's rule began at its origin, where the items waiting on its left side are its parents.
const std::vector<uint32_t>& EarleyParser::unique_lists() {
  if (unique_list_pos_.empty()) return unique_lists_;
  const EarleyRow& top = rows_.back();
  if (unique_lists_serial_ == top.serial) return unique_lists_;
  unique_lists_.clear();
  const uint32_t top_row = static_cast<uint32_t>(rows_.size() - 1);
  auto note = [&](const EarleyItem& it) {
    if (unique_list_pos_[it.pos] &&
        std::find(unique_lists_.begin(), unique_lists_.end(), it.origin) == unique_lists_.end())
      unique_lists_.push_back(it.origin);
  };
  walk_items_.clear();
  for (uint32_t j = top.begin; j < top.end; ++j) {
    if (items_[j].origin < top_row)
      walk_items_.push_back(j);
    else
      note(items_[j]);
  }
  std::sort(walk_items_.begin(), walk_items_.end());
  // The items walked, a bit each (cleared after): a sorted vector's inserts made the walk
  // quadratic in its items (half of a 19 ms mask of tson's uniqueItems guard).
  if (walk_marks_.size() * 64 <= items_.size()) walk_marks_.resize(items_.size() / 64 + 1, 0);
  auto first_visit = [&](uint32_t j) {
    uint64_t& w = walk_marks_[j >> 6];
    const uint64_t bit = uint64_t(1) << (j & 63);
    const bool fresh = !(w & bit);
    w |= bit;
    return fresh;
  };
  for (const uint32_t j : walk_items_) first_visit(j);
  for (size_t k = 0; k < walk_items_.size() && walk_items_.size() < kMaxWalk; ++k) {
    const EarleyItem it = items_[walk_items_[k]];
    const uint32_t rule = rule_of(it.pos);
    note(it);
    if (it.origin == 0 && rule == 0) continue;
    for_each_waiting(it.origin, g_->rules[rule].lhs, [&](uint32_t j) {
      if (first_visit(j)) walk_items_.push_back(j);
    });
  }
  for (const uint32_t j : walk_items_) walk_marks_[j >> 6] = 0;
  std::sort(unique_lists_.begin(), unique_lists_.end(), [](uint32_t a, uint32_t b) { return a > b; });
  unique_lists_serial_ = top.serial;
  return unique_lists_;
}

}  // namespace stencil
