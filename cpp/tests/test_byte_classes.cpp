// regex/byte_classes.h: the partition ByteClasses::from_sets makes is the coarsest one every set
// is a union of (two bytes share a class exactly where every set holds both or neither), its
// classes are numbered by their first byte and represented by it; on random mixes of single
// bytes, ranges, complements and scattered sets, as grammars' byte sets are.
#include <cstdint>
#include <string>
#include <vector>

#include "check.h"
#include "regex/byte_classes.h"
#include "test_rng.h"

using stencil::ByteClasses;
using stencil::ByteSet;

TEST_CASE(byte_classes_are_the_coarsest_partition_the_sets_respect) {
  stencil_test::Rng r{0x5EEDB17E5ull};
  size_t classes_seen = 0;
  for (int round = 0; round < 400; ++round) {
    std::vector<ByteSet> sets;
    for (uint32_t i = 0, n = r.below(round % 4 == 0 ? 4 : 60); i < n; ++i) {
      ByteSet s;
      switch (r.below(5)) {
        case 0:
          s.add(static_cast<uint8_t>(r.below(256)));
          break;  // a literal's byte
        case 1: {
          const uint32_t lo = r.below(256);
          s.add_range(static_cast<int>(lo), static_cast<int>(lo + r.below(256 - lo)));
          break;
        }
        case 2: {  // a complement (`[^"\\]`), the bigger side moves nothing
          s.add_range(0, 255);
          for (uint32_t k = 0, m = 1 + r.below(4); k < m; ++k) {
            const uint8_t b = static_cast<uint8_t>(r.below(256));
            s.w[b >> 6] &= ~(uint64_t(1) << (b & 63));
          }
          break;
        }
        case 3:
          for (uint32_t k = 0, m = r.below(200); k < m; ++k) s.add(static_cast<uint8_t>(r.below(256)));
          break;
        default:
          if (r.below(2)) s.add_range(0, 255);
          break;  // empty or full: no split
      }
      sets.push_back(s);
    }
    const ByteClasses bc = ByteClasses::from_sets(sets);
    const std::string at = "round " + std::to_string(round);
    for (int a = 0; a < 256; ++a) {
      const uint16_t ca = bc.class_of[a];
      CHECK_MSG(ca < bc.count(), at);
      for (int b = a + 1; b < 256; ++b) {
        bool alike = true;
        for (const ByteSet& s : sets) alike = alike && s.has(static_cast<uint8_t>(a)) == s.has(static_cast<uint8_t>(b));
        CHECK_MSG((bc.class_of[b] == ca) == alike, at + ": bytes " + std::to_string(a) + " and " + std::to_string(b));
      }
    }
    int next = 0;  // numbered by first byte, each represented by it
    for (int b = 0; b < 256; ++b)
      if (bc.class_of[b] == next) {
        CHECK_MSG(bc.representative[next] == b, at);
        ++next;
      } else {
        CHECK_MSG(bc.class_of[b] < next, at + ": class " + std::to_string(bc.class_of[b]) + " before its first byte");
      }
    CHECK_MSG(next == bc.count(), at);
    classes_seen += bc.count();
  }
  CHECK(classes_seen > 400 * 20);
}
