#include "logits/apply_bitmask.h"

#include <algorithm>
#include <array>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define STENCIL_X86_DISPATCH 1
#include <immintrin.h>
#endif

namespace stencil {
namespace {

// For each byte value, 8 lane masks (all ones where the bit is set): a mixed word is applied
// 8 logits at a time with and/andnot/or, which the compiler turns into vector code with no
// per-bit branches.
template <typename T>
struct ByteLanes {
  std::array<std::array<T, 8>, 256> lanes;
  ByteLanes() {
    for (int b = 0; b < 256; ++b)
      for (int k = 0; k < 8; ++k) lanes[b][k] = ((b >> k) & 1) ? T(-1) : T(0);
  }
};

template <typename T>
const ByteLanes<T>& byte_lanes() {
  static const ByteLanes<T> table;
  return table;
}

// The whole words of one row. Always inlined so that each ISA wrapper below compiles it with
// its own vector width.
template <typename T>
__attribute__((always_inline)) inline void blend_words(T* row, const uint32_t* words, size_t full, T ninf,
                                                       const ByteLanes<T>& table) {
  for (size_t w = 0; w < full; ++w) {
    uint32_t bits = words[w];
    T* out = row + w * 32;
    if (bits == 0xFFFFFFFFu) continue;  // common inside string bodies
    if (bits == 0) {
      std::fill(out, out + 32, ninf);
      continue;
    }
    for (int byte = 0; byte < 4; ++byte) {
      uint32_t b = (bits >> (8 * byte)) & 0xFF;
      if (b == 0xFF) continue;
      const T* keep = table.lanes[b].data();
      T* o = out + 8 * byte;
      for (int k = 0; k < 8; ++k) o[k] = static_cast<T>((o[k] & keep[k]) | (ninf & ~keep[k]));
    }
  }
}

template <typename T>
void words_portable(T* row, const uint32_t* words, size_t full, T ninf) {
  blend_words(row, words, full, ninf, byte_lanes<T>());
}

#ifdef STENCIL_X86_DISPATCH
template <typename T>
__attribute__((target("avx2"))) void words_avx2(T* row, const uint32_t* words, size_t full, T ninf) {
  blend_words(row, words, full, ninf, byte_lanes<T>());
}

// AVX-512: a word's bits are a store mask; -inf is written to the disallowed lanes only.
__attribute__((target("avx512f,avx512bw"))) void words_avx512(int16_t* row, const uint32_t* words, size_t full,
                                                              int16_t ninf) {
  __m512i v = _mm512_set1_epi16(ninf);
  for (size_t w = 0; w < full; ++w)
    if (words[w] != 0xFFFFFFFFu) _mm512_mask_storeu_epi16(row + w * 32, static_cast<__mmask32>(~words[w]), v);
}
__attribute__((target("avx512f,avx512bw"))) void words_avx512(int32_t* row, const uint32_t* words, size_t full,
                                                              int32_t ninf) {
  __m512i v = _mm512_set1_epi32(ninf);
  for (size_t w = 0; w < full; ++w) {
    uint32_t drop = ~words[w];
    if (!drop) continue;
    _mm512_mask_storeu_epi32(row + w * 32, static_cast<__mmask16>(drop), v);
    _mm512_mask_storeu_epi32(row + w * 32 + 16, static_cast<__mmask16>(drop >> 16), v);
  }
}
__attribute__((target("avx512f,avx512bw"))) void words_avx512(int64_t* row, const uint32_t* words, size_t full,
                                                              int64_t ninf) {
  __m512i v = _mm512_set1_epi64(ninf);
  for (size_t w = 0; w < full; ++w) {
    uint32_t drop = ~words[w];
    if (!drop) continue;
    for (int q = 0; q < 4; ++q)
      _mm512_mask_storeu_epi64(row + w * 32 + 8 * q, static_cast<__mmask8>(drop >> (8 * q)), v);
  }
}

#endif

BitmaskKernel widest_kernel() {
#ifdef STENCIL_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) return BitmaskKernel::avx512;
  if (__builtin_cpu_supports("avx2")) return BitmaskKernel::avx2;
#endif
  return BitmaskKernel::portable;
}

template <typename T>
void apply_row(T* row, size_t vocab, const uint32_t* words, size_t nwords, T ninf, BitmaskKernel kernel) {
  static const BitmaskKernel widest = widest_kernel();
  size_t covered = std::min(vocab, nwords * 32);
  size_t full = covered / 32;
  if (kernel == BitmaskKernel::automatic || kernel > widest) kernel = widest;
#ifdef STENCIL_X86_DISPATCH
  if (kernel == BitmaskKernel::avx512)
    words_avx512(row, words, full, ninf);
  else if (kernel == BitmaskKernel::avx2)
    words_avx2(row, words, full, ninf);
  else
#endif
    words_portable(row, words, full, ninf);
  // The partial last word, one bit at a time; columns past the mask are not tokens.
  for (size_t t = full * 32; t < covered; ++t)
    if (!((words[t / 32] >> (t % 32)) & 1)) row[t] = ninf;
  std::fill(row + covered, row + vocab, ninf);
}

}  // namespace

bool bitmask_kernel_available(BitmaskKernel kernel) {
  static const BitmaskKernel widest = widest_kernel();
  return kernel <= widest;
}

void apply_bitmask_row(int16_t* row, size_t vocab, const uint32_t* words, size_t nwords, int16_t ninf,
                       BitmaskKernel kernel) {
  apply_row(row, vocab, words, nwords, ninf, kernel);
}
void apply_bitmask_row(int32_t* row, size_t vocab, const uint32_t* words, size_t nwords, int32_t ninf,
                       BitmaskKernel kernel) {
  apply_row(row, vocab, words, nwords, ninf, kernel);
}
void apply_bitmask_row(int64_t* row, size_t vocab, const uint32_t* words, size_t nwords, int64_t ninf,
                       BitmaskKernel kernel) {
  apply_row(row, vocab, words, nwords, ninf, kernel);
}

}  // namespace stencil
