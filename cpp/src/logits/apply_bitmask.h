#pragma once
// Applying a token bitmask to one row of logits, on the logits' integer view.
//
// Bit t % 32 of word t / 32 allows token t. Disallowed logits get the bit pattern of -inf; allowed
// ones keep their exact bits. Working on the integer view (int16 for float16/bfloat16, int32 for
// float32, int64 for float64) makes one kernel serve every float type with no float compares.
#include <cstddef>
#include <cstdint>

namespace stencil {

// Which implementation runs: automatic picks the widest the CPU has. The others exist so that
// tests can check every path against the same reference.
enum class BitmaskKernel { automatic, portable, avx2, avx512 };

// Whether this build and CPU can run `kernel`.
bool bitmask_kernel_available(BitmaskKernel kernel);

// row: vocab logits (contiguous); words: nwords mask words. Columns past nwords * 32 are
// disallowed; bits past vocab are ignored.
void apply_bitmask_row(int16_t* row, size_t vocab, const uint32_t* words, size_t nwords, int16_t ninf,
                       BitmaskKernel kernel = BitmaskKernel::automatic);
void apply_bitmask_row(int32_t* row, size_t vocab, const uint32_t* words, size_t nwords, int32_t ninf,
                       BitmaskKernel kernel = BitmaskKernel::automatic);
void apply_bitmask_row(int64_t* row, size_t vocab, const uint32_t* words, size_t nwords, int64_t ninf,
                       BitmaskKernel kernel = BitmaskKernel::automatic);

}  // namespace stencil
