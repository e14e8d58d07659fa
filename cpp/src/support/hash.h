// Small hashing helpers shared by the hash-consing tables.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace stencil {

// murmur3's 64-bit finalizer: every bit of k moves every bit of the result.
inline uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

inline uint64_t hash_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

struct VectorHash {
  size_t operator()(const std::vector<uint32_t>& v) const {
    uint64_t h = 0xcbf29ce484222325ull ^ v.size();
    for (uint32_t x : v) h = hash_mix(h, x);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

}  // namespace stencil
