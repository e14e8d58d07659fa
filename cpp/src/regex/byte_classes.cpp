#include "regex/byte_classes.h"

#include <map>

namespace stencil {

ByteClasses ByteClasses::from_sets(const std::vector<ByteSet>& sets) {
  ByteClasses bc;
  bc.class_of.fill(0);
  int count = 1;
  for (const ByteSet& s : sets) {
    // Split every class into its part inside s and its part outside.
    std::map<std::pair<int, bool>, int> remap;
    int next = 0;
    std::array<uint16_t, 256> refined{};
    for (int b = 0; b < 256; ++b) {
      auto key = std::make_pair(static_cast<int>(bc.class_of[b]), s.has(static_cast<uint8_t>(b)));
      auto it = remap.find(key);
      if (it == remap.end()) it = remap.emplace(key, next++).first;
      refined[b] = static_cast<uint16_t>(it->second);
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
