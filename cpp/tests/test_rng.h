// A small seeded generator for the randomized C++ tests (xorshift64): the same draws on every
// platform, unlike the standard distributions.
#pragma once
#include <cstdint>

namespace stencil_test {

struct Rng {
  uint64_t s;
  uint32_t below(uint32_t n) {  // in [0, n)
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return static_cast<uint32_t>(s % n);
  }
};

}  // namespace stencil_test
