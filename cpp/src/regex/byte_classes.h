// The coarsest partition of the 256 bytes such that every byte set used by a
// grammar holds either all or none of each part: derivatives by bytes of one
// class are equal, so the lexer's transition table has one column per class.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "support/byteset.h"

namespace stencil {

struct ByteClasses {
  std::array<uint16_t, 256> class_of{};
  std::vector<uint8_t> representative;  // one byte per class
  int count() const { return static_cast<int>(representative.size()); }
  static ByteClasses from_sets(const std::vector<ByteSet>& sets);
};

}  // namespace stencil
