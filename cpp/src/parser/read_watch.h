// Which input bytes completion checks read while a window is watched. The matcher's caches
// ask it and nothing else of the checks: a memoized mask must not outlive a verdict that read
// the current lexeme's bytes (kText), and a boundary run shares one parser scan across token
// prefixes only when no check read the prefix (kPrefix).
#pragma once
#include <cstdint>

namespace stencil {

class ReadWatch {
 public:
  enum Window { kText = 0, kPrefix = 1 };
  // Watches [from, to) from now on (an empty window watches nothing) and clears its mark.
  void watch(Window w, uint32_t from, uint32_t to) {
    from_[w] = from;
    to_[w] = to;
    read_[w] = false;
  }
  // Whether a check read a byte of window w since it was set.
  bool read(Window w) const { return read_[w]; }
  // Whether a read of [from, to) would mark a window.
  bool touches(uint32_t from, uint32_t to) const {
    return (from < to_[kText] && to > from_[kText]) || (from < to_[kPrefix] && to > from_[kPrefix]);
  }
  // How many reads marked the text window, ever: a caller compares two counts to learn whether
  // the work between them read it (the mark alone stays set from an earlier read).
  uint64_t text_reads() const { return text_reads_; }
  // A check read [from, to), of which only the text window is told (a read that the prefix
  // window's user judges by other means: EarleyParser::watch_key_sets).
  void note_text(uint32_t from, uint32_t to) {
    if (from < to_[kText] && to > from_[kText]) {
      read_[kText] = true;
      ++text_reads_;
    }
  }
  // A check read [from, to).
  void note(uint32_t from, uint32_t to) {
    note_text(from, to);
    read_[kPrefix] |= from < to_[kPrefix] && to > from_[kPrefix];
  }

 private:
  uint32_t from_[2] = {0, 0}, to_[2] = {0, 0};
  bool read_[2] = {false, false};
  uint64_t text_reads_ = 0;
};

}  // namespace stencil
