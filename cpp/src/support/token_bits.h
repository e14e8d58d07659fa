// A token mask as 32-bit words, bit t of word t / 32 for token t (the layout of the
// bitmasks the bindings fill): the word count and the bit operations, written once.
#pragma once
#include <cstddef>
#include <cstdint>

namespace stencil::token_bits {

// Words of a mask over `vocab_size` tokens.
inline size_t words_for(int64_t vocab_size) { return (static_cast<size_t>(vocab_size) + 31) / 32; }

inline bool has(const uint32_t* words, int32_t t) { return (words[t >> 5] >> (t & 31)) & 1u; }
// has() for any t: false for a negative id or one past the mask's `n_words` words.
inline bool has_checked(const uint32_t* words, size_t n_words, int32_t t) {
  return t >= 0 && static_cast<size_t>(t >> 5) < n_words && has(words, t);
}
inline void set(uint32_t* words, int32_t t) { words[t >> 5] |= 1u << (t & 31); }
inline void clear(uint32_t* words, int32_t t) { words[t >> 5] &= ~(1u << (t & 31)); }
inline void put(uint32_t* words, int32_t t, bool on) { on ? set(words, t) : clear(words, t); }

}  // namespace stencil::token_bits
