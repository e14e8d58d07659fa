// The characters below a trie node, as 128 bits: a token walk can skip a whole sub-trie when a
// lexer state loops on every character in it (a string body with `[^/]*`, `[\w.-]*`, `\S*`...).
#pragma once
#include <cstdint>

namespace stencil {

struct CharSummary {
  // Bits: the ASCII text bytes (tab, line feed, carriage return, 0x20..0x7E) as themselves; plain
  // non-ASCII characters (plain_text_step's, whole or cut by the token's end) by the group of
  // their lead byte, at bits 0x10 + group, so that a state excluding a few of them (`\s` has
  // U+00A0, U+2000..U+200A, U+3000, U+FEFF) still loops on the others; kPoison for anything else
  // (other controls, bytes that are not plain UTF-8 from a character boundary), which no state
  // loops on.
  static constexpr int kPoison = 0, kGroupBase = 0x10, kGroups = 13;
  static constexpr uint64_t kGroupBits = ((uint64_t(1) << kGroups) - 1) << kGroupBase;
  static bool ascii_text(uint8_t b) { return b == '\t' || b == '\n' || b == '\r' || (b >= 0x20 && b < 0x7F); }
  // The group of a lead byte (0xC2..0xF4): rough Unicode blocks, split where common exclusions lie.
  static int group_of_lead(uint8_t lead) {
    if (lead == 0xC2) return 0;  // U+0080..U+00BF (U+00A0)
    if (lead < 0xD0) return 1;   // Latin, Greek
    if (lead < 0xE0) return 2;   // Cyrillic .. Arabic
    if (lead < 0xE4) return 3 + (lead - 0xE0);  // U+0800, U+1000 (U+1680), U+2000 (spaces, quotes), U+3000
    if (lead < 0xEA) return 7;   // CJK ideographs
    if (lead < 0xED) return 8;   // Yi, Hangul
    if (lead < 0xEF) return 9;   // U+D000..U+D7FF, private use
    if (lead == 0xEF) return 10; // U+F000..U+FFFF (U+FEFF, full-width forms)
    if (lead == 0xF0) return 11; // U+10000..U+3FFFF (emoji)
    return 12;                   // U+40000 and up
  }

  uint64_t lo = 0, hi = 0;
  void add(int bit) { (bit < 64 ? lo : hi) |= uint64_t(1) << (bit & 63); }
  bool has(int bit) const { return ((bit < 64 ? lo : hi) >> (bit & 63)) & 1; }
  void merge(const CharSummary& o) {
    lo |= o.lo;
    hi |= o.hi;
  }
  bool within(const CharSummary& o) const { return !(lo & ~o.lo) && !(hi & ~o.hi); }
  bool empty() const { return !(lo | hi); }
  bool has_groups() const { return lo & kGroupBits; }
};

}  // namespace stencil
