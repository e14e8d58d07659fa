// Small hashing helpers shared by the hash-consing tables.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace stencil {

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
