#include "parser/checks.h"

#include <algorithm>

#include "support/json_canon.h"

namespace stencil {

template <class Compute>
bool CheckRunner::verdict(const CompletionCheck& c, uint32_t siblings_from, uint32_t from, uint32_t to,
                          Compute compute) {
  const uint64_t version = text_->text_version(to);
  if (version == 0) return compute();
  for (const Verdict& v : verdicts_) {
    if (v.version != version || v.to != to || v.from != from || v.siblings_from != siblings_from || v.check != &c)
      continue;
    for (auto [a, b] : v.reads) note_read(a, b);
    return v.ok;
  }
  Verdict& v = verdicts_[next_verdict_++ % kVerdicts];
  v.check = &c;
  v.siblings_from = siblings_from;
  v.from = from;
  v.to = to;
  v.version = 0;  // not valid until computed (compute may throw)
  v.reads.clear();
  recording_ = &v;
  struct Stop {
    Verdict*& r;
    ~Stop() { r = nullptr; }
  } stop{recording_};
  v.ok = compute();
  v.version = version;
  return v.ok;
}

void CheckRunner::reset() {
  for (Verdict& v : verdicts_) v.version = 0;
  sibling_memo_.clear();
  memo_top_row_ = 0;
}

bool CheckRunner::whole(const CompletionCheck& c, uint32_t from, uint32_t to) {
  if (!text_) return true;
  return verdict(c, from, from, to, [&] { return whole_text(c, from, to); });
}

bool CheckRunner::sibling(const CompletionCheck& c, At siblings, At item, uint32_t to) {
  if (!text_ || siblings.offset >= item.offset) return true;
  return verdict(c, siblings.offset, item.offset, to, [&] { return sibling_text(c, siblings, item, to); });
}

// Checks on the completed text alone. An object (`{...}`): every required
// name present, the member count within bounds. A string: none of the names.
// Unreadable text vetoes (it cannot be checked).
bool CheckRunner::whole_text(const CompletionCheck& c, uint32_t from, uint32_t to) {
  scratch_text_.clear();
  text_->text(from, to, scratch_text_);
  if (c.kind == CheckKind::NotIn) {
    note_read(from, to);
    std::string value;
    if (!canonical_value(scratch_text_, value) || value.empty() || value[0] != 's') return false;
    return !std::binary_search(c.names.begin(), c.names.end(), value.substr(1));
  }
  std::vector<std::string> keys;
  std::vector<uint32_t> key_offsets;
  if (!object_keys(scratch_text_, keys, &key_offsets)) {
    note_read(from, to);
    return false;
  }
  for (uint32_t at : key_offsets) note_key(from + at);
  const int64_t n = static_cast<int64_t>(keys.size());
  if (n < c.min || (c.max >= 0 && n > c.max)) return false;
  std::sort(keys.begin(), keys.end());
  for (const std::string& name : c.names)
    if (!std::binary_search(keys.begin(), keys.end(), name)) return false;
  return true;
}

// The completed item (from row item_row to byte `to`) against its earlier siblings (from row
// siblings_row to the item).
bool CheckRunner::sibling_text(const CompletionCheck& c, At siblings, At item, uint32_t to) {
  const uint32_t from = item.offset;
  const uint32_t siblings_from = siblings.offset;
  const std::vector<std::string>* earlier = earlier_siblings(c.kind, siblings, item);
  if (!earlier) {
    note_read(siblings_from, from);
    return false;
  }
  if (c.kind == CheckKind::MoreMembers) return room_for_members(c, *earlier, nullptr);
  scratch_item_.clear();
  text_->text(from, to, scratch_item_);
  std::string mine;
  uint32_t key_at = 0;
  if (c.kind == CheckKind::UniqueItem) {
    note_read(siblings_from, to);
    if (!canonical_value(scratch_item_, mine)) return false;
  } else if (!leading_member_key(scratch_item_, mine, &key_at)) {
    note_read(from, to);
    return false;
  } else {
    note_key(from + key_at);
  }
  return !std::binary_search(earlier->begin(), earlier->end(), mine);
}

bool CheckRunner::next(const CompletionCheck& c, uint32_t from, uint32_t to) {
  if (!text_) return true;
  return verdict(c, from, to, to, [&] { return next_key_text(c, from, to); });
}

bool CheckRunner::next_key_text(const CompletionCheck& c, uint32_t from, uint32_t to) {
  std::vector<std::string> earlier;
  std::vector<uint32_t> key_offsets;
  scratch_text_.clear();
  if (from < to) text_->text(from, to, scratch_text_);
  if (c.kind == CheckKind::NextItem) {
    note_read(from, to);
    std::string mine;
    if (!canonical_values(scratch_text_, earlier) || !canonical_value(c.key, mine)) return false;
    return std::find(earlier.begin(), earlier.end(), mine) == earlier.end();
  }
  if (!member_keys(scratch_text_, earlier, &key_offsets)) {
    note_read(from, to);
    return false;
  }
  for (uint32_t at : key_offsets) note_key(from + at);
  std::sort(earlier.begin(), earlier.end());
  if (!c.has_key) return c.max < 0 || room_for_members(c, earlier, nullptr, true);
  if (std::binary_search(earlier.begin(), earlier.end(), c.key)) return false;
  return c.max < 0 || room_for_members(c, earlier, &c.key);
}

// Whether an object whose members so far have the keys `earlier` (sorted), then `mine` if given
// (or a key outside c.names if other_key), can still be completed within c.max members: each
// required name (c.names) not written yet needs a member of its own, and a separator (no key
// given) needs at least one more member. So the member list never walks into a state where only
// a veto at the close is left.
bool CheckRunner::room_for_members(const CompletionCheck& c, const std::vector<std::string>& earlier,
                                   const std::string* mine, bool other_key) {
  const bool adds = mine || other_key;  // a member with a key outside `names` when other_key
  int64_t members = static_cast<int64_t>(earlier.size()) + (adds ? 1 : 0);
  int64_t missing = 0;
  for (const std::string& name : c.names)
    missing += !std::binary_search(earlier.begin(), earlier.end(), name) && !(mine && *mine == name);
  return members + std::max<int64_t>(missing, adds ? 0 : 1) <= c.max;
}

// The sorted keys (or canonical values) of the siblings before item_row; null when their text
// does not parse (the check then vetoes).
const std::vector<std::string>* CheckRunner::earlier_siblings(CheckKind kind, At siblings, At item) {
  const uint32_t siblings_row = siblings.row, item_row = item.row;
  for (const SiblingMemo& m : sibling_memo_) {
    if (m.siblings_row != siblings_row || m.item_row != item_row || m.kind != kind) continue;
    for (uint32_t at : m.key_offsets) note_key(at);
    return m.ok ? &m.earlier : nullptr;
  }
  constexpr size_t kMemoEntries = 16;
  if (sibling_memo_.size() >= kMemoEntries) sibling_memo_.erase(sibling_memo_.begin());
  SiblingMemo m{siblings_row, item_row, kind, false, {}, {}};
  scratch_text_.clear();
  text_->text(siblings.offset, item.offset, scratch_text_);
  m.ok = reads_items(kind) ? canonical_values(scratch_text_, m.earlier)
                           : member_keys(scratch_text_, m.earlier, &m.key_offsets);
  for (uint32_t& at : m.key_offsets) at += siblings.offset;
  for (uint32_t at : m.key_offsets) note_key(at);
  std::sort(m.earlier.begin(), m.earlier.end());
  memo_top_row_ = std::max(memo_top_row_, m.item_row);
  sibling_memo_.push_back(std::move(m));
  return sibling_memo_.back().ok ? &sibling_memo_.back().earlier : nullptr;
}

void CheckRunner::forget_siblings_from(size_t rows) {
  sibling_memo_.erase(std::remove_if(sibling_memo_.begin(), sibling_memo_.end(),
                                     [rows](const SiblingMemo& m) { return m.item_row >= rows; }),
                      sibling_memo_.end());
  memo_top_row_ = 0;
  for (const SiblingMemo& m : sibling_memo_) memo_top_row_ = std::max(memo_top_row_, m.item_row);
}

}  // namespace stencil
