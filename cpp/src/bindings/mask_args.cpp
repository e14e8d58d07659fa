#include "bindings/mask_args.h"

#include <string>

#include <nanobind/ndarray.h>

#include "bindings/args.h"
#include "stencil/errors.h"

namespace nb = nanobind;

namespace stencil::bindings {

static std::string dtype_name(nb::dlpack::dtype t) {
  static const char* kinds[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  std::string kind = t.code < 7 ? kinds[t.code] : "code" + std::to_string(t.code);
  return kind + std::to_string(t.bits);
}

MaskRows check_bitmask(nb::handle arg) {
  nb::ndarray<> bm = bitmask_arg(arg);
  if (bm.device_type() != nb::device::cpu::value)
    throw nb::type_error("the bitmask must be in CPU memory (fill it on the CPU, then copy it to the device)");
  if (bm.dtype() != nb::dtype<int32_t>())
    throw nb::type_error(
        ("the bitmask must be an int32 array (stencil.allocate_token_bitmask), got " + dtype_name(bm.dtype())).c_str());
  if (bm.ndim() != 2)
    throw nb::value_error(
        ("the bitmask must be 2-D [rows, ceil(vocab_size / 32)], got " + std::to_string(bm.ndim()) + " dimensions")
            .c_str());
  const bool contiguous = (bm.shape(1) <= 1 || bm.stride(1) == 1) &&
                          (bm.shape(0) <= 1 || bm.stride(0) == static_cast<int64_t>(bm.shape(1)));
  if (!contiguous)
    throw nb::value_error(("the bitmask must be C-contiguous (row-major, no strides), got strides (" +
                           std::to_string(bm.stride(0)) + ", " + std::to_string(bm.stride(1)) + ") for shape (" +
                           std::to_string(bm.shape(0)) + ", " + std::to_string(bm.shape(1)) + ")")
                              .c_str());
  return {static_cast<uint32_t*>(bm.data()), bm.shape(0), bm.shape(1)};
}

int64_t check_remaining(nb::handle remaining) {
  if (remaining.is_none()) return -1;
  const int64_t r = int_arg(remaining, "remaining_tokens", "an int >= 0 (or None for no budget)");
  if (r < 0) throw UsageError("remaining_tokens must be >= 0 (or None for no budget), got " + std::to_string(r));
  return r;
}

uint32_t* bitmask_row(const MaskRows& bm, int64_t index) {
  if (index < 0 || static_cast<size_t>(index) >= bm.rows)
    throw UsageError("bitmask row index " + std::to_string(index) + " is out of range for a bitmask of " +
                     std::to_string(bm.rows) + " rows");
  return bm.data + static_cast<size_t>(index) * bm.words;
}

}  // namespace stencil::bindings
