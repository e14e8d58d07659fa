// Completion checks (CheckKind) run on the input's bytes: what no context-free grammar
// expresses (uniqueItems, duplicate keys, required keys in any order). The parser asks when an
// item with a check completes or an empty rule with one is predicted, naming the rows and byte
// offsets involved; the runner reads the bytes from a TextSource and keeps two memos: recent
// verdicts by the text they read, and the parsed earlier siblings by their rows. What a check
// read is reported to a ReadWatch for the matcher's caches.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar/ir.h"
#include "parser/read_watch.h"

namespace stencil {

// Where completion checks read the bytes of the input.
class TextSource {
 public:
  virtual ~TextSource() = default;
  virtual void text(uint32_t from, uint32_t to, std::string& out) const = 0;
  // Equal for two calls only if the bytes before `to` are the same (0: unknown).
  virtual uint64_t text_version(uint32_t to) const = 0;
};

class CheckRunner {
 public:
  // A parser row where a span begins, with its byte offset (memo entries are keyed on rows).
  struct At {
    uint32_t row, offset;
  };
  void set_text_source(const TextSource* src) { text_ = src; }
  ReadWatch& reads() { return reads_; }
  void reset();
  // Rows from `rows` on were truncated: memo entries keyed on them go (a trie walk truncates
  // above them: a comparison).
  void truncate(size_t rows) {
    if (rows <= memo_top_row_) forget_siblings_from(rows);
  }
  // An object_keys or not_in check on the completed text [from, to).
  bool whole(const CompletionCheck& c, uint32_t from, uint32_t to);
  // A check on the completed item (from `item` to byte `to`) against its earlier siblings (from
  // `siblings` to the item): unique_item, unique_key, more_members.
  bool sibling(const CompletionCheck& c, At siblings, At item, uint32_t to);
  // A next_key or next_item check, where its empty rule is predicted: the members or items in
  // [from, to) (the separator before this one included) against the key or value about to start.
  bool next(const CompletionCheck& c, uint32_t from, uint32_t to);

 private:
  void note_read(uint32_t from, uint32_t to) {
    reads_.note(from, to);
    if (recording_) recording_->reads.push_back({from, to});
  }
  void note_key(uint32_t at) { note_read(at, at + 1); }
  bool whole_text(const CompletionCheck& c, uint32_t from, uint32_t to);
  bool sibling_text(const CompletionCheck& c, At siblings, At item, uint32_t to);
  bool next_key_text(const CompletionCheck& c, uint32_t from, uint32_t to);
  static bool room_for_members(const CompletionCheck& c, const std::vector<std::string>& earlier,
                               const std::string* mine, bool other_key = false);
  const std::vector<std::string>* earlier_siblings(CheckKind kind, At siblings, At item);
  void forget_siblings_from(size_t rows);
  template <class Compute>
  bool verdict(const CompletionCheck& c, uint32_t siblings_from, uint32_t from, uint32_t to, Compute compute);

  const TextSource* text_ = nullptr;
  ReadWatch reads_;
  std::string scratch_text_, scratch_item_;
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
};

}  // namespace stencil
