// support/flat_map.h: find after put, overwrite, absent keys, growth of each shard, clear, and
// long probe chains; against std::unordered_map over many random operations.
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "check.h"
#include "support/flat_map.h"
#include "support/hash.h"

using stencil::FlatMap64;

namespace {

// The map's hash (murmur3's finalizer, support/hash.h) and its inverse: keys with a chosen hash,
// to force collisions. If the map's hash changes, these keys merely stop colliding.
using stencil::fmix64;

uint64_t inverse_odd(uint64_t a) {  // a * x == 1 mod 2^64 (Newton's iteration)
  uint64_t x = a;
  for (int i = 0; i < 6; ++i) x *= 2 - a * x;
  return x;
}

uint64_t unfmix(uint64_t h) {
  h ^= h >> 33;
  h *= inverse_odd(0xc4ceb9fe1a85ec53ull);
  h ^= h >> 33;
  h *= inverse_odd(0xff51afd7ed558ccdull);
  h ^= h >> 33;
  return h;
}

// The value for key, or ~0u when absent (a check that fails does not dereference a null).
uint32_t get(const FlatMap64& m, uint64_t key) {
  const uint32_t* v = m.find(key);
  return v ? *v : ~0u;
}

}  // namespace

TEST_CASE(flat_map_put_find_overwrite) {
  FlatMap64 m;
  CHECK(m.find(0) == nullptr);
  CHECK_EQ(m.size(), size_t(0));
  m.put(0, 10);
  m.put(1, 11);
  m.put(FlatMap64::kEmptyKey - 1, 12);
  CHECK_EQ(get(m, 0), 10u);
  CHECK_EQ(get(m, 1), 11u);
  CHECK_EQ(get(m, FlatMap64::kEmptyKey - 1), 12u);
  CHECK(m.find(2) == nullptr);
  CHECK_EQ(m.size(), size_t(3));
  m.put(1, 99);  // overwrite: same size, new value
  CHECK_EQ(get(m, 1), 99u);
  CHECK_EQ(m.size(), size_t(3));
}

TEST_CASE(flat_map_grows_and_clears) {
  FlatMap64 m;
  const size_t empty_bytes = m.memory_bytes();
  const uint32_t n = 200000;
  for (uint32_t i = 0; i < n; ++i) m.put(uint64_t(i) * 7919, i);
  CHECK_EQ(m.size(), size_t(n));
  // Load factor at most 1/2: at least two slots (12 bytes each) per key.
  CHECK(m.memory_bytes() >= size_t(n) * 2 * 12);
  size_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t* v = m.find(uint64_t(i) * 7919);
    wrong += !v || *v != i;
  }
  CHECK_EQ(wrong, size_t(0));
  CHECK(m.find(uint64_t(n) * 7919) == nullptr);
  m.clear();
  CHECK_EQ(m.size(), size_t(0));
  CHECK_EQ(m.memory_bytes(), empty_bytes);
  CHECK(m.find(7919) == nullptr);
  m.put(7919, 5);
  CHECK_EQ(get(m, 7919), 5u);
}

TEST_CASE(flat_map_long_collision_chains) {
  // Keys whose hashes share the shard bits and the low 24 bits start probing at the same slot in
  // every table size up to 2^24: a chain of 3,000 keys, found and missed across its length.
  FlatMap64 m;
  std::vector<uint64_t> keys;
  for (uint64_t j = 0; j < 4000; ++j) keys.push_back(unfmix((uint64_t(5) << 58) | (j << 24) | 0x123456));
  CHECK_EQ(fmix64(keys[17]), (uint64_t(5) << 58) | (uint64_t(17) << 24) | 0x123456);
  for (uint32_t j = 0; j < 3000; ++j) m.put(keys[j], j + 1);
  size_t wrong = 0;
  for (uint32_t j = 0; j < 3000; ++j) wrong += !m.find(keys[j]) || get(m, keys[j]) != j + 1;
  CHECK_EQ(wrong, size_t(0));
  size_t found_absent = 0;
  for (uint32_t j = 3000; j < 4000; ++j) found_absent += m.find(keys[j]) != nullptr;
  CHECK_EQ(found_absent, size_t(0));
  for (uint32_t j = 0; j < 3000; j += 3) m.put(keys[j], 0);
  CHECK_EQ(m.size(), size_t(3000));
  CHECK_EQ(get(m, keys[2997]), 0u);
  CHECK_EQ(get(m, keys[2998]), 2999u);
}

TEST_CASE(flat_map_matches_unordered_map) {
  std::mt19937_64 rng(29);
  FlatMap64 m;
  std::unordered_map<uint64_t, uint32_t> ref;
  size_t wrong = 0;
  for (int round = 0; round < 300000; ++round) {
    // Small keys (many overwrites), spread keys, and keys near the reserved ~0.
    const uint64_t r = rng();
    uint64_t key = r % 3 == 0 ? r % 5000 : r % 3 == 1 ? r >> 1 : FlatMap64::kEmptyKey - 1 - r % 64;
    if (rng() % 4 == 0) {
      const uint32_t* v = m.find(key);
      auto it = ref.find(key);
      wrong += (v == nullptr) != (it == ref.end()) || (v && *v != it->second);
    } else {
      const uint32_t value = static_cast<uint32_t>(rng());
      m.put(key, value);
      ref[key] = value;
    }
  }
  CHECK_EQ(wrong, size_t(0));
  CHECK_EQ(m.size(), ref.size());
  for (const auto& [key, value] : ref) wrong += !m.find(key) || get(m, key) != value;
  CHECK_EQ(wrong, size_t(0));
}
