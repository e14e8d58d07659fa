// Bitmask and budget arguments of the mask-filling calls, checked by hand (see args.h): shared by
// the single-matcher calls (matcher_binding.cpp) and the batch calls (batch_binding.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include <nanobind/nanobind.h>

namespace stencil::bindings {

// Bitmasks are taken as any array and checked here rather than typed in the signature: a typed
// ndarray argument lets nanobind convert (copy) an int64, Fortran-order or strided array, and
// the mask would then be written into the copy, leaving the caller's array, and the grammar,
// unenforced.
struct MaskRows {
  uint32_t* data;
  size_t rows, words;
};

// A C-contiguous 2-D int32 array in CPU memory, or a TypeError/ValueError saying what it is.
MaskRows check_bitmask(nanobind::handle arg);

// remaining_tokens: an int >= 0, or None (-1: no budget).
int64_t check_remaining(nanobind::handle remaining);

// Row `index` of the bitmask, or a UsageError naming the index and the row count.
uint32_t* bitmask_row(const MaskRows& bm, int64_t index);

}  // namespace stencil::bindings
