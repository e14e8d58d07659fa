// A set of bytes as four 64-bit words.
#pragma once
#include <cstdint>
#include <cstring>

namespace stencil {

struct ByteSet {
  uint64_t w[4] = {0, 0, 0, 0};
  bool has(uint8_t b) const { return (w[b >> 6] >> (b & 63)) & 1; }
  void add(uint8_t b) { w[b >> 6] |= uint64_t(1) << (b & 63); }
  void add_range(int lo, int hi) {
    for (int b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
  }
  bool empty() const { return !(w[0] | w[1] | w[2] | w[3]); }
  bool full() const { return (w[0] & w[1] & w[2] & w[3]) == ~uint64_t(0); }
  ByteSet operator|(const ByteSet& o) const {
    ByteSet r;
    for (int i = 0; i < 4; ++i) r.w[i] = w[i] | o.w[i];
    return r;
  }
  ByteSet operator~() const {
    ByteSet r;
    for (int i = 0; i < 4; ++i) r.w[i] = ~w[i];
    return r;
  }
  ByteSet operator&(const ByteSet& o) const {
    ByteSet r;
    for (int i = 0; i < 4; ++i) r.w[i] = w[i] & o.w[i];
    return r;
  }
  bool operator==(const ByteSet& o) const { return std::memcmp(w, o.w, sizeof w) == 0; }
};

}  // namespace stencil
