// The characters below a trie node, as 32 bits: a token walk can skip a whole sub-trie when a
// lexer state loops on every character in it (a string body with `[^/]*`, `[\w.-]*`, `\S*`...).
#pragma once
#include <cstdint>

#include "support/byteset.h"

namespace stencil {

struct CharSummary {
  // Bits: ASCII text characters (tab, line feed, carriage return, 0x20..0x7E) by bucket: the ones
  // patterns single out alone (space, `-`, `_`, `.`, `/`, `:`, `"`, `\`, `,`, `@`, `'`), the
  // others by kind (digits, a-f, g-z, A-F, G-Z, two groups of other punctuation); plain non-ASCII
  // characters (plain_text_step's, whole or cut by the token's end) by the group of their lead
  // byte, so that a state excluding a few of them (`\s` has U+00A0, U+2000..U+200A, U+3000,
  // U+FEFF) still loops on the others; kPoison for anything else (other controls, bytes that are
  // not plain UTF-8 from a character boundary), which no state loops on. A bucket counts as a
  // loop only when each of its characters loops. Four bytes per trie node keep a 151k vocabulary
  // under 10 MB.
  static constexpr int kPoison = 0, kGroupBase = 22, kGroups = 10;
  static constexpr uint32_t kGroupBits = ((uint32_t(1) << kGroups) - 1) << kGroupBase;
  static bool ascii_text(uint8_t b) { return b == '\t' || b == '\n' || b == '\r' || (b >= 0x20 && b < 0x7F); }
  // The bit of an ASCII text byte (kPoison for other bytes).
  static int bucket_of(uint8_t b) {
    if (!ascii_text(b)) return kPoison;
    if (b >= '0' && b <= '9') return 1;
    if (b >= 'a' && b <= 'f') return 2;
    if (b >= 'g' && b <= 'z') return 3;
    if (b >= 'A' && b <= 'F') return 4;
    if (b >= 'G' && b <= 'Z') return 5;
    switch (b) {
      case ' ':
        return 6;
      case '\t':
        return 7;
      case '\n':
        return 8;
      case '\r':
        return 9;
      case '-':
        return 10;
      case '_':
        return 11;
      case '.':
        return 12;
      case '/':
        return 13;
      case ':':
        return 14;
      case '"':
        return 15;
      case '\\':
        return 16;
      case ',':
        return 17;
      case '@':
        return 18;
      case '\'':
        return 19;
      case '[':
      case ']':
      case '^':
      case '`':
      case '{':
      case '|':
      case '}':
      case '~':
        return 20;
      default:
        return 21;  // ! # $ % & ( ) * + ; < = > ?
    }
  }
  // The group of a lead byte (0xC2..0xF4): rough Unicode blocks, split where common exclusions lie.
  static int group_of_lead(uint8_t lead) {
    if (lead == 0xC2) return 0;  // U+0080..U+00BF (U+00A0)
    if (lead < 0xD0) return 1;   // Latin, Greek
    if (lead < 0xE0) return 2;   // Cyrillic .. Arabic
    if (lead < 0xE2) return 3;   // U+0800..U+1FFF (U+1680)
    if (lead == 0xE2) return 4;  // U+2000 (spaces, quotes, dashes)
    if (lead == 0xE3) return 5;  // U+3000
    if (lead < 0xEA) return 6;   // CJK ideographs
    if (lead < 0xEF) return 7;   // Yi, Hangul, private use
    if (lead == 0xEF) return 8;  // U+F000..U+FFFF (U+FEFF, full-width forms)
    return 9;                    // U+10000 and up (emoji)
  }
  // The ASCII buckets whose every character is in `loops` (the bytes that lead a state, or a
  // part of it, back to itself; bytes outside ASCII text are not looked at).
  static CharSummary of_ascii_loops(const ByteSet& loops) {
    uint32_t all = ~uint32_t(0) & ~kGroupBits & ~uint32_t(1);
    for (int b = 0; b < 0x80; ++b)
      if (ascii_text(static_cast<uint8_t>(b)) && !loops.has(static_cast<uint8_t>(b)))
        all &= ~(uint32_t(1) << bucket_of(static_cast<uint8_t>(b)));
    CharSummary out;
    out.bits = all & ((uint32_t(1) << kGroupBase) - 2);  // bits 1..21: the ASCII buckets
    return out;
  }

  uint32_t bits = 0;
  void add(int bit) { bits |= uint32_t(1) << bit; }
  bool has(int bit) const { return (bits >> bit) & 1; }
  void merge(const CharSummary& o) { bits |= o.bits; }
  bool within(const CharSummary& o) const { return !(bits & ~o.bits); }
  bool empty() const { return !bits; }
  bool has_groups() const { return bits & kGroupBits; }
};

}  // namespace stencil
