// An Earley parser over lexemes. Rows (Earley sets) form a stack: scanning a
// lexeme pushes a row, and rollback is truncation. Each row knows the lexer
// state that starts the next lexeme: the set of lexemes the row can accept.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/ir.h"
#include "lexer/lexer.h"
#include "parser/read_watch.h"
#include "support/deadline.h"

namespace stencil {

struct EarleyItem {
  uint32_t pos;     // index into Grammar::dotted: the symbol after the dot
  uint32_t origin;  // row where the rule started
};

struct EarleyRow {
  uint32_t begin, end;    // items
  uint32_t offset;        // bytes of input before this row
  uint32_t lexer_start;   // lexer state for the next lexeme
  bool accepting;         // the start rule is complete here
  bool has_special;       // some special-token lexeme is expected here
  uint64_t serial;        // unique per row pushed by this parser: same serial, same row stack
                          // (64 bits: a server pushes billions of rows; caches key on it)
  // Lexemes a prediction check vetoed here (EarleyParser::vetoed_only): [veto_begin, veto_end)
  // in the parser's veto list, and their summary (bit l % 64).
  uint32_t veto_begin = 0, veto_end = 0;
  uint64_t veto_bits = 0;
};

// Where completion checks read the bytes of the input.
class TextSource {
 public:
  virtual ~TextSource() = default;
  virtual void text(uint32_t from, uint32_t to, std::string& out) const = 0;
  // Equal for two calls only if the bytes before `to` are the same (0: unknown).
  virtual uint64_t text_version(uint32_t to) const = 0;
};

class EarleyParser {
 public:
  EarleyParser(const Grammar& g, const Lexer& lexer);
  void reset();
  // Works with another lexer from now on (a renewed lexer epoch); resets the parse.
  void set_lexer(const Lexer& lexer) {
    lexer_ = &lexer;
    start_slots_.clear();
    reset();
  }
  size_t num_rows() const { return rows_.size(); }
  size_t num_items() const { return items_.size(); }
  const EarleyRow& top() const { return rows_.back(); }
  const EarleyRow& row(size_t i) const { return rows_[i]; }
  const EarleyItem& item(size_t j) const { return items_[j]; }
  // The lexemes vetoed at row i (sorted): its [veto_begin, veto_end) in the parser's veto list.
  const uint32_t* vetoes_of(size_t i) const { return vetoes_.data() + rows_[i].veto_begin; }
  // After an exception anywhere in a scan or a walk: the row being built (its items and
  // vetoes past the top row), the watches and the walk's mark are dropped; rows and memos that
  // were finished stay valid.
  void recover() {
    items_.resize(rows_.back().end);
    vetoes_.resize(rows_.back().veto_end);
    vetoed_.clear();
    reads_.watch(ReadWatch::kText, 0, 0);
    reads_.watch(ReadWatch::kPrefix, 0, 0);
    watch_key_sets(false);
    stable_end_ = ~0u;
    row_keys_ = nullptr;
    recording_ = nullptr;
  }
  // Advances the items of the top row over any of `lexemes` (sorted ids)
  // and pushes the new row; false (and nothing pushed) when none advances.
  bool scan(const uint32_t* lexemes, size_t n, uint32_t offset);
  void set_text_source(const TextSource* src) { text_ = src; }
  // The special-token lexemes the top row accepts that hold `token`.
  int special_lexeme_for(int32_t token) const;
  void add_allowed_specials(std::vector<int32_t>& out) const;
  // Vetoed lexemes. A next_key check that fails where a member may start drops the member's
  // alternative, and with it the key's lexeme; but the row's lexer start state still holds that
  // lexeme, so that every place of an object's member list starts from one lexer state (and one
  // cached mask entry) whatever keys it has seen. The lexeme is vetoed at the row instead: a
  // lexer state whose live lexemes are all vetoed at the row where its lexeme began is dead.
  bool vetoed_only(uint32_t row, const LexState& s) const {
    const EarleyRow& r = rows_[row];
    if (r.veto_end == r.veto_begin || (s.live_bits & ~r.veto_bits) != 0 || s.live.empty()) return false;
    return std::all_of(s.live.begin(), s.live.end(), [&](uint32_t l) { return vetoed_at(r, l); });
  }
  // Whether lexeme `lex` is vetoed at the row.
  bool vetoed(uint32_t row, uint32_t lex) const { return vetoed_at(rows_[row], lex); }
  // Whether some live lexeme of s is vetoed at the row (then a mask entry of s needs filtering).
  bool veto_touches(uint32_t row, const LexState& s) const {
    const EarleyRow& r = rows_[row];
    if (r.veto_end == r.veto_begin || (s.live_bits & r.veto_bits) == 0) return false;
    return std::any_of(s.live.begin(), s.live.end(), [&](uint32_t l) { return vetoed_at(r, l); });
  }
  // Whether every lexeme live in lexer state s is vetoed at `row` (where it began) or is a key
  // whose every completion repeats a key written before it in its object, or a name its not_in
  // check refuses: a key prefix that can only end as a duplicate (unique_key vetoes it only as it
  // ends). `prefix`: the lexeme's bytes so far, from byte `from` of the text (the text holds them
  // up to `to`). Ask only where LexState::key_finite: elsewhere no key can be exhausted.
  bool exhausted_only(uint32_t row, uint32_t s, std::string_view prefix, uint32_t from, uint32_t to);
  // exhausted_only for a state where a key of any string closes (LexState::key_closed): `raw`
  // is the whole key, quotes included. A spelling that decodes to no forbidden key (nearly every
  // closing quote) is answered by one lookup.
  bool closes_written_key(uint32_t row, uint32_t s, std::string_view raw, uint32_t from, uint32_t to);
  // closes_written_key's first test, for a key whose spelling decodes (`key`: json_whole_string):
  // no forbidden key (first_key_forbidden's answer) is it, so it is new.
  static bool new_key(std::string_view key, bool found, const std::vector<std::string>* forbidden);
  // Whether a key whose decoded bytes so far are `prefix` may still close as a forbidden key at
  // s (some forbidden key begins with it); false lets a mask walk skip closes_written_key, and
  // read nothing, for every token that closes it.
  bool key_may_close_written(uint32_t row, uint32_t s, std::string_view prefix);
  // Whether every key lexeme of s with keys to forbid at the row (neither ignored nor vetoed) has
  // a prefix (bytes from `from`; the text holds them up to `to`) that begins none of them. Then no
  // state below s inside this lexeme is exhausted (their lexemes are s's or fewer), whatever other
  // lexemes s holds: exhausted_only, which answers no at once where a lexeme is no such key, does
  // not tell a walk that.
  bool keys_left(uint32_t row, uint32_t s, std::string_view prefix, uint32_t from, uint32_t to);
  // After exhausted_only answered no: whether that was because the key's bytes left every
  // forbidden key (then no continuation of them is exhausted either).
  bool exhaust_left() const { return exhaust_left_; }
  // Whether the key begun at byte `from` (at `row`) is known to have left every forbidden key
  // within the bytes before `to` (an earlier exhausted_only said so, on the same bytes).
  bool left_before(uint32_t row, uint32_t from, uint32_t to) {
    const LeftMemo& l = left_;
    if (l.version == 0 || l.serial != rows_[row].serial || l.from != from || l.at > to ||
        text_->text_version(l.at) != l.version)
      return false;
    note_read(from, l.at);
    return true;
  }
  // Whether exhausted_only may hold for s at `row` whatever the prefix: each of its lexemes is a
  // key of an object with keys to forbid. Cheap (memoized by row): ask it first.
  bool may_exhaust(uint32_t row, uint32_t s);
  // Whether some key lexeme of s (neither ignored nor vetoed at the row) has keys to forbid there.
  // No: no state the lexer reaches from s inside its lexeme is exhausted (its lexemes are s's or
  // fewer), so a walk below s need not ask exhausted_only.
  bool some_key_forbidden(uint32_t row, uint32_t s);
  // The forbidden keys of s's first lexeme neither ignored nor vetoed at the row (null: none
  // forbidden); `found` is false when s has no such lexeme.
  const std::vector<std::string>* first_key_forbidden(uint32_t row, uint32_t s, bool& found);
  // The rows where the lists of uniqueItems arrays that the top row is inside began (the rows
  // after their `[`), innermost first (parser/unique_lists.cpp). Empty when the grammar has no
  // unique_item check. Memoized by the top row.
  const std::vector<uint32_t>& unique_lists();
  // What completion checks read (for the matcher's mask memo and boundary runs).
  ReadWatch& reads() { return reads_; }
  // Membership reads, for a mask walk's run of tokens that close a key alike (one scan for all):
  // while on, a check that reads the key ending at byte `key_end` only to ask whether it is one
  // of a set of names (not_in, unique_key) notes the set here, and its read in the text window
  // alone (not the prefix window, which would split the run). Each token's own key is then
  // looked up in the sets. Off again with on = false.
  void watch_key_sets(bool on, uint32_t key_end = 0) {
    key_sets_on_ = on;
    key_sets_end_ = key_end;
    key_sets_.clear();
  }
  // Ends the watch, handing over the sets noted (into `out`, which is cleared first).
  void take_key_sets(std::vector<std::vector<std::string>>& out) {
    out.clear();
    out.swap(key_sets_);
    watch_key_sets(false);
  }
  // Bytes from `at` on are a trie walk's (until reset to ~0u): memos of their rows are not kept.
  void set_stable_end(uint32_t at) { stable_end_ = at; }
  size_t memory_bytes() const { return items_.capacity() * sizeof(EarleyItem) + rows_.capacity() * sizeof(EarleyRow); }

 private:
  // The rows move with ParseState's frames: it alone truncates them (matcher/parse_state.h).
  friend class ParseState;
  void truncate(size_t rows) {
    if (rows < rows_.size()) {
      rows_.resize(rows);
      items_.resize(rows_.back().end);
      vetoes_.resize(rows_.back().veto_end);
      if (rows <= memo_top_row_) forget_siblings_from(rows);  // walks truncate above it: no scan
    }
  }
  void add(uint32_t pos, uint32_t origin);
  void close_row(uint32_t row, uint32_t begin, uint32_t offset);
  bool whole_check(const CompletionCheck& c, uint32_t from, uint32_t to);
  bool sibling_check(const CompletionCheck& c, uint32_t siblings_row, uint32_t item_row, uint32_t to);
  const std::vector<std::string>* earlier_siblings(CheckKind kind, uint32_t siblings_row, uint32_t item_row);
  void forget_siblings_from(size_t rows);
  void note_read(uint32_t from, uint32_t to) {
    reads_.note(from, to);
    if (recording_) recording_->reads.push_back({from, to});
  }
  // note_read of a key's bytes [from, to) by a check whose verdict is whether the key, ending at
  // byte key_end, is in `set`: a membership read while watch_key_sets is on for that key.
  void note_key_read(uint32_t from, uint32_t to, uint32_t key_end, const std::vector<std::string>& set) {
    if (!key_sets_on_ || key_end != key_sets_end_) return note_read(from, to);
    reads_.note_text(from, to);
    if (recording_) recording_->reads.push_back({from, to});
    key_sets_.push_back(set);
  }
  // A key read by its opening quote alone: enough for a key that ended before the lexeme whose end
  // runs the check began (the watched windows start at or after that lexeme's first byte: the
  // mask memo's at its start, a boundary run's at the token's start), never for that lexeme's own
  // key (sibling_check_text notes the bytes its verdict read).
  void note_key(uint32_t at) { note_read(at, at + 1); }
  bool whole_check_text(const CompletionCheck& c, uint32_t from, uint32_t to);
  bool sibling_check_text(const CompletionCheck& c, uint32_t siblings_row, uint32_t item_row, uint32_t to);
  // Whether an object with `count` members so far, whose keys `has` tells, then `mine` if given
  // (or a key outside c.names if other_key), can still be completed within c.max members: each
  // required name (c.names) not written yet needs a member of its own, and a separator (no key
  // given) needs at least one more member. So the member list never walks into a state where
  // only a veto at the close is left.
  template <class Has>
  static bool room_for_members(const CompletionCheck& c, size_t count, Has has, const std::string* mine,
                               bool other_key = false) {
    const bool adds = mine || other_key;
    int64_t members = static_cast<int64_t>(count) + (adds ? 1 : 0);
    int64_t missing = 0;
    for (const std::string& name : c.names) missing += !has(name) && !(mine && *mine == name);
    return members + std::max<int64_t>(missing, adds ? 0 : 1) <= c.max;
  }
  bool next_key_check(const CompletionCheck& c, uint32_t siblings_row, uint32_t to);
  template <class Compute>
  bool verdict(const CompletionCheck& c, uint32_t siblings_from, uint32_t from, uint32_t to, Compute compute);
  void grow_set();
  uint32_t lexer_start_for(const std::vector<uint32_t>& lexemes);
  bool vetoed_at(const EarleyRow& r, uint32_t lex) const {
    return std::binary_search(vetoes_.begin() + r.veto_begin, vetoes_.begin() + r.veto_end, lex);
  }
  void note_vetoed(uint32_t pos);
  uint32_t close_vetoes(EarleyRow& r);
  // exhausted_only's parts (parser/key_exhaust.cpp).
  struct Recorder;
  bool exhausted_now(uint32_t row, uint32_t s, std::string_view prefix, uint32_t from, uint32_t to);
  static size_t leaves_at(std::string_view prefix, const std::vector<std::string>& forbidden);
  const std::vector<std::string>* key_forbidden(uint32_t row, uint32_t lex);
  bool key_forbidden_now(uint32_t row, uint32_t lex, std::vector<std::string>& out);
  bool key_item_context(uint32_t row, EarleyItem it, std::vector<std::string>& names, std::vector<std::string>& out,
                        bool& first);
  bool add_key_context(uint32_t row, uint32_t lhs, const std::vector<std::string>& names, std::vector<std::string>& out,
                       bool& first);
  uint32_t rule_of(uint32_t pos) const;
  bool completions_all_in(uint32_t s, std::string_view prefix, const std::vector<std::string>& forbidden) const;
  // The forbidden keys of a key lexeme at a row (key_forbidden), with what they read.
  struct KeyContext {
    uint64_t serial = 0;  // 0: empty
    uint32_t lex = 0;
    bool ok = false;
    std::vector<std::string> forbidden;
    std::vector<std::pair<uint32_t, uint32_t>> reads;
  };
  static constexpr size_t kKeyContexts = 4;
  KeyContext key_contexts_[kKeyContexts];
  size_t next_key_context_ = 0;
  // exhausted_only's recent verdicts, by (row serial, lexer state, prefix, where the key began),
  // with what they read. The verdict is the same wherever the key begins after its row (white
  // space may come first), but what it read is not: a verdict on `"a"` begun right after `,`,
  // replayed for `"a"` begun after `, `, would report the bytes one place early, missing the key's
  // last byte (a mask walk would then share its refusal with tokens that close other keys). A
  // verdict that read the whole prefix (to_end) notes it up to each caller's `to`.
  struct ExhaustMemo {
    uint64_t serial = 0;  // 0: empty
    uint32_t state = 0, from = 0;
    bool ok = false, left = false, to_end = false;
    std::string prefix;
    std::vector<std::pair<uint32_t, uint32_t>> reads;
  };
  static constexpr size_t kExhaustMemos = 16;
  bool exhaust_left_ = false;
  bool exhaust_to_end_ = false;  // exhausted_now read the whole prefix (up to its `to`)
  struct LeftMemo {
    uint64_t serial = 0, version = 0;  // version 0: empty
    uint32_t from = 0, at = 0;
  } left_;
  ExhaustMemo exhaust_memo_[kExhaustMemos];
  size_t next_exhaust_ = 0;
  // Calls f(j) for each item j of `row` waiting on `sym`, in row order. A big row (an object
  // with many alternative shapes predicts thousands of items) is searched through a sorted index
  // kept for a few recent rows: completions into it no longer scan it whole each time.
  template <class F>
  void for_each_waiting(uint32_t row, uint32_t sym, F f) {
    const EarleyRow& r = rows_[row];
    if (r.end - r.begin < kIndexFrom) {
      for (uint32_t j = r.begin; j < r.end; ++j)
        if (g_->dotted[items_[j].pos] == sym) f(j);
      return;
    }
    const std::vector<uint64_t>& ix = row_index(row);
    for (auto at = std::lower_bound(ix.begin(), ix.end(), uint64_t(sym) << 32); at != ix.end() && (*at >> 32) == sym;
         ++at)
      f(static_cast<uint32_t>(*at));
  }
  const std::vector<uint64_t>& row_index(uint32_t row);
  static constexpr uint32_t kIndexFrom = 64;
  static constexpr size_t kRowIndexes = 4;
  struct RowIndex {
    uint64_t serial = 0;             // 0: unused (serials start at 1)
    std::vector<uint64_t> entries;   // (dotted symbol << 32 | item index), sorted
  };
  RowIndex row_index_[kRowIndexes];
  size_t next_row_index_ = 0;
  // Leo's memo (see leo_top): (row serial, symbol) -> the completed item (pos << 32 | origin)
  // that completing the symbol there amounts to, or kNoLeo. A lossy direct-mapped cache: rows
  // never change once pushed and serials are never reused, so entries stay true.
  static constexpr uint64_t kNoLeo = ~uint64_t(0);
  static constexpr size_t kLeoSlots = 1024;
  uint64_t leo_top(uint32_t row, uint32_t sym);
  struct LeoKey {
    uint64_t serial = 0;  // 0: an empty slot
    uint32_t sym = 0;
    bool operator==(const LeoKey& o) const { return serial == o.serial && sym == o.sym; }
  };
  static size_t leo_slot(const LeoKey& k) {
    return ((k.serial * 0x9e3779b97f4a7c15ull) ^ (uint64_t(k.sym) * 0xc2b2ae3d27d4eb4full)) >> 54;
  }
  const uint64_t* leo_find(const LeoKey& key) const {
    if (leo_.empty()) return nullptr;
    const LeoSlot& s = leo_[leo_slot(key)];
    return s.key == key ? &s.top : nullptr;
  }
  void leo_store(const LeoKey& key, uint64_t top) {
    if (leo_.empty()) leo_.resize(kLeoSlots);  // on first use: most grammars never complete a deep chain
    leo_[leo_slot(key)] = {key, top};
  }

  const Grammar* g_;
  const Lexer* lexer_;
  std::vector<EarleyItem> items_;
  std::vector<EarleyRow> rows_;
  // Open-addressed set of (pos, origin) for the row being built.
  std::vector<uint64_t> set_keys_;
  std::vector<uint32_t> set_gen_;
  uint32_t gen_ = 0;
  uint32_t set_count_ = 0;
  std::vector<uint32_t> predicted_;  // per nonterminal: close_gen_ when predicted
  uint32_t close_gen_ = 0;
  std::vector<uint32_t> lex_stamp_;  // per lexeme: scratch stamps
  uint32_t lex_gen_ = 0;
  std::vector<uint32_t> allowed_;
  std::vector<uint32_t> vetoes_;         // the rows' vetoed lexemes (EarleyRow::veto_begin)
  std::vector<uint32_t> vetoed_;         // lexemes of the row being built whose item a check dropped
  std::vector<uint32_t> start_lexemes_;  // allowed_ and the row's vetoes
  // A per-parser, lock-free front for Lexer::start_state (a shared map behind a lock): rows of
  // one generation keep asking for the same few lexeme sets.
  struct StartSlot {
    uint64_t hash = 0;
    uint32_t state = 0;
    std::vector<uint32_t> allowed;
  };
  std::vector<StartSlot> start_slots_;
  const TextSource* text_ = nullptr;
  std::string scratch_text_;
  std::string key_scratch_;  // a key's decoded text (closes_written_key)
  uint64_t next_serial_ = 0;
  ReadWatch reads_;
  bool key_sets_on_ = false;  // watch_key_sets
  uint32_t key_sets_end_ = 0;
  std::vector<std::vector<std::string>> key_sets_;
  // The parsed earlier siblings of recent sibling checks (sorted keys or canonical values),
  // by the rows where the siblings and the checked item start. The bytes before a row stay
  // the same while the row exists, so an entry lives until its item row is truncated. Every
  // boundary of a mask and every token inside one member share the entry: without it each
  // check re-parses the whole object or array so far.
  struct SiblingMemo {
    uint32_t siblings_row, item_row;
    CheckKind kind;
    bool ok;
    std::vector<std::string> earlier;
    std::vector<uint32_t> key_offsets;  // where the earlier keys start (unique keys)
  };
  std::vector<SiblingMemo> sibling_memo_;
  // The earlier members' keys (sorted) and where they start, for the next_key checks of one
  // row: an object's N named keys are N checks on the same text, parsed once; the text of a later
  // row extends it (only the members since are parsed). Rows of accepted text are kept (least
  // recently used goes); a trie walk's rows, whose text is gone at the next token, are built in
  // `walk_keys_` on top of a kept one, which the walk does not change.
  struct KeysMemo {
    uint32_t from = 0, to = 0;
    uint64_t version = 0;  // text_version(to) when parsed; 0: not valid
    uint64_t last_use = 0;
    bool ok = false;
    const KeysMemo* base = nullptr;  // walk_keys_ only: the kept memo it extends
    std::vector<std::string> keys;   // sorted; base's not included
    std::vector<uint32_t> offsets;   // ascending; base's not included
    std::vector<int8_t> verdicts;    // by check index: -1 unknown, else the next_key check's verdict
    std::vector<std::pair<uint32_t, int64_t>> missing;  // (names_group, required names not written)
    size_t count() const { return keys.size() + (base ? base->keys.size() : 0); }
    bool has(const std::string& k) const {
      return std::binary_search(keys.begin(), keys.end(), k) || (base && base->has(k));
    }
  };
  static constexpr size_t kKeysMemos = 8;
  KeysMemo keys_memo_[kKeysMemos];
  KeysMemo walk_keys_;
  uint64_t keys_clock_ = 0;
  uint32_t stable_end_ = ~0u;  // text from here on is a trie walk's
  void note_keys(const KeysMemo& k);
  KeysMemo& keys_between(uint32_t from, uint32_t to);
  void mark_key_verdicts(KeysMemo& k) const;
  bool key_room(KeysMemo& k, const CompletionCheck& c) const;
  // The memo the last next_key check of the row being closed used: its other keys' checks ask
  // for the same text.
  KeysMemo* row_keys_ = nullptr;
  uint32_t add_offset_ = 0;  // the text end of the row items are added to
  uint32_t predicting_origin_ = 0;  // the origin of the item whose prediction adds items now
  uint32_t row_keys_from_ = 0;
  uint64_t row_keys_gen_ = 0;
  std::vector<std::string> scratch_keys_;
  std::vector<uint32_t> scratch_offsets_;
  uint32_t memo_top_row_ = 0;  // the largest item_row in sibling_memo_ (0 when empty)
  // Recent verdicts of completion checks, by the text they read ([siblings_from or from, to)
  // and its version): a mask's boundary walks complete the same object or member at the same
  // byte for many tokens (`"}`, `"},`, `"}]`, ...). A hit replays the bytes the check read,
  // for the watch windows.
  struct Verdict {
    const CompletionCheck* check = nullptr;
    uint32_t siblings_from = 0, from = 0, to = 0;
    uint64_t version = 0;
    bool ok = false;
    std::vector<std::pair<uint32_t, uint32_t>> reads;
  };
  static constexpr size_t kVerdicts = 8;
  Verdict verdicts_[kVerdicts];
  size_t next_verdict_ = 0;
  Verdict* recording_ = nullptr;
  std::string scratch_item_;
  struct LeoSlot {
    LeoKey key;
    uint64_t top = 0;
  };
  std::vector<LeoSlot> leo_;
  std::vector<std::pair<LeoKey, uint64_t>> leo_chain_;
  deadline::Ticker ticker_;  // items closed, for the time limits
  // unique_lists: per dotted position, whether its rule's right side holds a unique_item
  // nonterminal (a list of unique items); empty when the grammar has none. The answer for the
  // top row (its serial).
  std::vector<uint8_t> unique_list_pos_;
  uint64_t unique_lists_serial_ = 0;
  std::vector<uint32_t> unique_lists_;
  std::vector<uint32_t> walk_items_;
  std::vector<uint64_t> walk_marks_;  // unique_lists: a bit per item visited, all clear between walks
};

}  // namespace stencil
