#include "regex/byte_classes.h"

#include <array>

namespace stencil {

ByteClasses ByteClasses::from_sets(const std::vector<ByteSet>& sets) {
  ByteClasses bc;
  bc.class_of.fill(0);
  int count = 1;
  for (const ByteSet& s : sets) {
    // Split every class into its part inside s and its part outside (a flat table: this runs
    // for every byte set of the grammar at each compile).
    std::array<int16_t, 512> remap;
    remap.fill(-1);
    int next = 0;
    std::array<uint16_t, 256> refined{};
    for (int b = 0; b < 256; ++b) {
      int key = bc.class_of[b] * 2 + (s.has(static_cast<uint8_t>(b)) ? 1 : 0);
      if (remap[key] < 0) remap[key] = static_cast<int16_t>(next++);
      refined[b] = static_cast<uint16_t>(remap[key]);
    }
    bc.class_of = refined;
    count = next;
  }
  bc.representative.assign(count, 0);
  std::vector<bool> seen(count, false);
  for (int b = 0; b < 256; ++b) {
    int c = bc.class_of[b];
    if (!seen[c]) {
      seen[c] = true;
      bc.representative[c] = static_cast<uint8_t>(b);
    }
  }
  return bc;
}

}  // namespace stencil
