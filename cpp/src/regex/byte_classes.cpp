#include "regex/byte_classes.h"

namespace stencil {

// Each set splits the classes it cuts: the bytes of a class inside the set (or outside it, the
// smaller side: the same split) move to a class of their own. Work per set in the bytes of its
// smaller side, not 256: this runs at every compile over every byte set of the grammar, most of
// them single bytes of keys and literals.
ByteClasses ByteClasses::from_sets(const std::vector<ByteSet>& sets) {
  std::array<uint16_t, 256> cls{};    // class per byte, numbered as made
  std::vector<uint16_t> size{256};    // bytes per class
  std::array<uint16_t, 256> hit{};    // per class: its bytes on the moving side (this set)
  std::array<int16_t, 256> moved_to;  // per class: the class its moving bytes go to (-1: none yet)
  moved_to.fill(-1);
  std::vector<uint16_t> touched;
  uint8_t side[256];
  for (const ByteSet& s : sets) {
    int n = 0;
    for (uint64_t w : s.w) n += __builtin_popcountll(w);
    if (n == 0 || n == 256) continue;
    const bool inside = n <= 128;
    int k = 0;
    for (int i = 0; i < 4; ++i)
      for (uint64_t bits = inside ? s.w[i] : ~s.w[i]; bits; bits &= bits - 1)
        side[k++] = static_cast<uint8_t>(64 * i + __builtin_ctzll(bits));
    touched.clear();
    for (int j = 0; j < k; ++j) {
      const uint16_t c = cls[side[j]];
      if (hit[c]++ == 0) touched.push_back(c);
    }
    for (uint16_t c : touched)  // (a class wholly on this side is not split)
      if (hit[c] < size[c]) {
        moved_to[c] = static_cast<int16_t>(size.size());
        size[c] = static_cast<uint16_t>(size[c] - hit[c]);
        size.push_back(hit[c]);
      }
    for (int j = 0; j < k; ++j)
      if (const int16_t to = moved_to[cls[side[j]]]; to >= 0) cls[side[j]] = static_cast<uint16_t>(to);
    for (uint16_t c : touched) {
      hit[c] = 0;
      moved_to[c] = -1;
    }
  }
  // Numbered by first byte (class 0 holds byte 0), as the tables and representatives expect.
  ByteClasses bc;
  std::array<int16_t, 256> number;
  number.fill(-1);
  for (int b = 0; b < 256; ++b) {
    int16_t& id = number[cls[b]];
    if (id < 0) {
      id = static_cast<int16_t>(bc.representative.size());
      bc.representative.push_back(static_cast<uint8_t>(b));
    }
    bc.class_of[b] = static_cast<uint16_t>(id);
  }
  return bc;
}

}  // namespace stencil
