// The JSON checks of the Earley parser (cpp/src/json/README.md names each kind and why it
// exists): completion checks on a finished object, member, item or string, and the checks on the
// empty rules before a key or an item, with the memo of the sibling keys they read. Same class as
// earley.cpp, its own file: the JSON knowledge in one place (a separate class measured 8% slower).
#include <algorithm>
#include <iterator>

#include "json/canon.h"
#include "parser/earley.h"

namespace stencil {

template <class Compute>
bool EarleyParser::verdict(const CompletionCheck& c, uint32_t siblings_from, uint32_t from, uint32_t to,
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

bool EarleyParser::whole_check(const CompletionCheck& c, uint32_t from, uint32_t to) {
  if (!text_) return true;
  return verdict(c, from, from, to, [&] { return whole_check_text(c, from, to); });
}

bool EarleyParser::sibling_check(const CompletionCheck& c, uint32_t siblings_row, uint32_t item_row, uint32_t to) {
  const uint32_t from = rows_[item_row].offset;
  if (!text_ || rows_[siblings_row].offset >= from) return true;
  return verdict(c, rows_[siblings_row].offset, from, to,
                 [&] { return sibling_check_text(c, siblings_row, item_row, to); });
}

// Checks on the completed text alone. An object (`{...}`): every required
// name present, the member count within bounds. A string: none of the names.
// Unreadable text vetoes (it cannot be checked).
bool EarleyParser::whole_check_text(const CompletionCheck& c, uint32_t from, uint32_t to) {
  scratch_text_.clear();
  text_->text(from, to, scratch_text_);
  if (c.kind == CheckKind::NotIn) {
    note_key_read(from, to, to, c.names);  // the string ends at `to`
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
bool EarleyParser::sibling_check_text(const CompletionCheck& c, uint32_t siblings_row, uint32_t item_row, uint32_t to) {
  const uint32_t from = rows_[item_row].offset;
  const uint32_t siblings_from = rows_[siblings_row].offset;
  const std::vector<std::string>* earlier = earlier_siblings(c.kind, siblings_row, item_row);
  if (!earlier) {
    note_read(siblings_from, from);
    return false;
  }
  if (c.kind == CheckKind::MoreMembers)
    return room_for_members(
        c, earlier->size(),
        [&](const std::string& n) { return std::binary_search(earlier->begin(), earlier->end(), n); }, nullptr);
  scratch_item_.clear();
  text_->text(from, to, scratch_item_);
  std::string mine;
  uint32_t key_at = 0, key_end = 0;
  if (c.kind == CheckKind::UniqueItem) {
    note_read(siblings_from, to);
    if (!canonical_value(scratch_item_, mine)) return false;
  } else if (!leading_member_key(scratch_item_, mine, &key_at, &key_end)) {
    note_read(from, to);
    return false;
  } else {
    const bool repeat = std::binary_search(earlier->begin(), earlier->end(), mine);
    // The verdict read this key's bytes up to where they left every earlier key (a key that begins
    // like none of them is new whatever follows), else all of them; not its first byte alone
    // (note_key, enough for the earlier keys): a key checked as it ends may have begun before the
    // token a mask walk tries, and the walk shares one scan among tokens only when no check read
    // their bytes (ReadWatch::kPrefix).
    const std::string_view raw = std::string_view(scratch_item_).substr(key_at, key_end - key_at);
    const size_t left = repeat ? 0 : leaves_at(raw, *earlier);
    note_key_read(from + key_at, from + key_at + static_cast<uint32_t>(left > 0 ? left : raw.size()), from + key_end,
                  *earlier);
    return !repeat;
  }
  return !std::binary_search(earlier->begin(), earlier->end(), mine);
}

// A next_key or next_item check, where its empty rule is predicted: the members or items from row
// siblings_row up to byte `to` (the separator before this one included) against the key or value
// about to start.
bool EarleyParser::next_key_check(const CompletionCheck& c, uint32_t siblings_row, uint32_t to) {
  if (!text_) return true;
  const uint32_t from = siblings_row < rows_.size() ? rows_[siblings_row].offset : to;
  if (c.kind == CheckKind::NextItem) {
    return verdict(c, from, to, to, [&] {
      std::vector<std::string> earlier;
      scratch_text_.clear();
      if (from < to) text_->text(from, to, scratch_text_);
      note_read(from, to);
      std::string mine;
      if (!canonical_values(scratch_text_, earlier) || !canonical_value(c.key, mine)) return false;
      return std::find(earlier.begin(), earlier.end(), mine) == earlier.end();
    });
  }
  if (!row_keys_ || row_keys_gen_ != close_gen_ || row_keys_from_ != from) {
    row_keys_ = &keys_between(from, to);
    row_keys_gen_ = close_gen_;
    row_keys_from_ = from;
  }
  KeysMemo& k = *row_keys_;
  if (!k.ok) {
    note_read(from, to);
    return false;
  }
  note_keys(k);
  int8_t& v = k.verdicts[static_cast<size_t>(&c - g_->checks.data())];
  if (v < 0) v = key_room(k, c);
  return v;
}

// A next_key verdict that the keys' marks left open (mark_key_verdicts): the check's key, if it
// has one, is not written yet, so the room within c.max for one more member decides
// (room_for_members with that key), from the required names missing: counted once per object
// (names_group) and memo.
bool EarleyParser::key_room(KeysMemo& k, const CompletionCheck& c) const {
  if (c.max < 0) return true;
  const size_t i = static_cast<size_t>(&c - g_->checks.data());
  const uint32_t group = g_->names_group[i];
  int64_t missing = -1;
  for (const auto& [g, m] : k.missing)
    if (g == group) missing = m;
  if (missing < 0) {
    missing = 0;
    for (const std::string& name : c.names) missing += !k.has(name);
    k.missing.emplace_back(group, missing);
  }
  missing -= g_->key_in_names[i];  // the key itself, written by this member
  return static_cast<int64_t>(k.count()) + 1 + std::max<int64_t>(missing, 0) <= c.max;
}

// The verdict read the keys: note them, unless no watched window reaches them (the usual case:
// the windows are at the current token, the keys before it).
void EarleyParser::note_keys(const KeysMemo& k) {
  if (k.base) note_keys(*k.base);
  if (k.offsets.empty()) return;
  if (reads_.touches(k.offsets.front(), k.offsets.back() + 1) || recording_)
    for (uint32_t at : k.offsets) note_key(at);
}

EarleyParser::KeysMemo& EarleyParser::keys_between(uint32_t from, uint32_t to) {
  const uint64_t version = text_->text_version(to);
  KeysMemo* base = nullptr;  // the longest kept memo of the same list whose text is still a prefix of this one
  KeysMemo* victim = &keys_memo_[0];
  for (KeysMemo& k : keys_memo_) {
    if (k.version != 0 && k.from == from && k.ok) {
      if (k.to == to && k.version == version) {
        k.last_use = ++keys_clock_;
        return k;
      }
      if (k.to < to && (!base || k.to > base->to) && text_->text_version(k.to) == k.version) base = &k;
    }
    if (k.last_use < victim->last_use && &k != base) victim = &k;
  }
  if (base) base->last_use = ++keys_clock_;
  const bool kept = to <= stable_end_;
  if (kept && victim == base) victim = &keys_memo_[base == &keys_memo_[0] ? 1 : 0];
  KeysMemo& k = kept ? *victim : walk_keys_;
  k.version = 0;  // not valid until parsed (text() may throw)
  k.from = from;
  k.to = to;
  k.last_use = ++keys_clock_;
  k.keys.clear();
  k.offsets.clear();
  k.base = nullptr;
  if (base && kept) {
    k.keys = base->keys;
    k.offsets = base->offsets;
  } else {
    k.base = base;
  }
  const uint32_t start = base ? base->to : from;
  scratch_text_.clear();
  if (start < to) text_->text(start, to, scratch_text_);
  scratch_keys_.clear();
  scratch_offsets_.clear();
  k.ok = member_keys(scratch_text_, scratch_keys_, &scratch_offsets_);
  for (size_t i = 0; i < scratch_keys_.size(); ++i) {
    k.keys.insert(std::lower_bound(k.keys.begin(), k.keys.end(), scratch_keys_[i]), std::move(scratch_keys_[i]));
    k.offsets.push_back(start + scratch_offsets_[i]);
  }
  mark_key_verdicts(k);
  k.version = version;
  return k;
}

// The verdicts of the next_key checks of a known key, from the memo's keys: 0 for a key written,
// 1 for one absent where no member bound remains to decide (next_key_check computes the rest).
void EarleyParser::mark_key_verdicts(KeysMemo& k) const {
  const auto& table = g_->key_checks;
  k.verdicts = g_->key_verdicts;
  k.missing.clear();
  if (table.empty()) return;
  auto mark = [&](const std::vector<std::string>& keys) {
    for (const std::string& key : keys) {
      auto at =
          std::lower_bound(table.begin(), table.end(), key,
                           [](const std::pair<std::string, uint32_t>& e, const std::string& x) { return e.first < x; });
      for (; at != table.end() && at->first == key; ++at) k.verdicts[at->second] = 0;
    }
  };
  mark(k.keys);
  if (k.base) mark(k.base->keys);
}

// The sorted keys (or canonical values) of the siblings before item_row; null when their text
// does not parse (the check then vetoes).
const std::vector<std::string>* EarleyParser::earlier_siblings(CheckKind kind, uint32_t siblings_row,
                                                               uint32_t item_row) {
  for (const SiblingMemo& m : sibling_memo_) {
    if (m.siblings_row != siblings_row || m.item_row != item_row || m.kind != kind) continue;
    for (uint32_t at : m.key_offsets) note_key(at);
    return m.ok ? &m.earlier : nullptr;
  }
  constexpr size_t kMemoEntries = 16;
  if (sibling_memo_.size() >= kMemoEntries) sibling_memo_.erase(sibling_memo_.begin());
  SiblingMemo m{siblings_row, item_row, kind, false, {}, {}};
  scratch_text_.clear();
  text_->text(rows_[siblings_row].offset, rows_[item_row].offset, scratch_text_);
  m.ok = reads_items(kind) ? canonical_values(scratch_text_, m.earlier)
                           : member_keys(scratch_text_, m.earlier, &m.key_offsets);
  for (uint32_t& at : m.key_offsets) at += rows_[siblings_row].offset;
  for (uint32_t at : m.key_offsets) note_key(at);
  std::sort(m.earlier.begin(), m.earlier.end());
  memo_top_row_ = std::max(memo_top_row_, m.item_row);
  sibling_memo_.push_back(std::move(m));
  return sibling_memo_.back().ok ? &sibling_memo_.back().earlier : nullptr;
}

void EarleyParser::forget_siblings_from(size_t rows) {
  sibling_memo_.erase(std::remove_if(sibling_memo_.begin(), sibling_memo_.end(),
                                     [rows](const SiblingMemo& m) { return m.item_row >= rows; }),
                      sibling_memo_.end());
  memo_top_row_ = 0;
  for (const SiblingMemo& m : sibling_memo_) memo_top_row_ = std::max(memo_top_row_, m.item_row);
}

}  // namespace stencil
