#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings/bindings.h"
#include "logits/apply_bitmask.h"
#include "stencil/errors.h"

namespace nb = nanobind;
using namespace stencil;

using Rows = nb::ndarray<nb::ndim<2>, nb::device::cpu>;
using Words = nb::ndarray<int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

template <typename T>
static void apply_rows(Rows& rows, int64_t ninf, const Words& mask, const std::vector<size_t>& idx,
                       BitmaskKernel kernel) {
  T* base = static_cast<T*>(rows.data());
  size_t vocab = rows.shape(1), nwords = mask.shape(1);
  const uint32_t* words = reinterpret_cast<const uint32_t*>(mask.data());
  int64_t stride = rows.stride(0);
  nb::gil_scoped_release release;
  for (size_t r = 0; r < idx.size(); ++r)
    apply_bitmask_row(base + static_cast<int64_t>(idx[r]) * stride, vocab, words + r * nwords, nwords,
                      static_cast<T>(ninf), kernel);
}

static BitmaskKernel parse_kernel(const std::string& name) {
  BitmaskKernel k;
  if (name == "auto") return BitmaskKernel::automatic;
  if (name == "portable")
    k = BitmaskKernel::portable;
  else if (name == "avx2")
    k = BitmaskKernel::avx2;
  else if (name == "avx512")
    k = BitmaskKernel::avx512;
  else
    throw UsageError("unknown bitmask kernel '" + name + "' (auto, portable, avx2 or avx512)");
  if (!bitmask_kernel_available(k)) throw UsageError("bitmask kernel '" + name + "' is not available on this CPU");
  return k;
}

void bind_logits(nb::module_& m) {
  m.def(
      "bitmask_kernels",
      [] {
        std::vector<std::string> names;
        const std::pair<const char*, BitmaskKernel> all[] = {
            {"portable", BitmaskKernel::portable}, {"avx2", BitmaskKernel::avx2}, {"avx512", BitmaskKernel::avx512}};
        for (const auto& [name, kernel] : all)
          if (bitmask_kernel_available(kernel)) names.push_back(name);
        return names;
      },
      "The bitmask kernels this CPU can run, narrowest first.");
  m.def(
      "apply_bitmask_bits",
      [](Rows rows, int64_t ninf, Words mask, std::vector<int64_t> indices, const std::string& kernel_name) {
        BitmaskKernel kernel = parse_kernel(kernel_name);
        if (rows.dtype().code != static_cast<uint8_t>(nb::dlpack::dtype_code::Int))
          throw UsageError("apply_bitmask_bits: rows must be the signed integer view of the logits");
        if (rows.shape(1) > 1 && rows.stride(1) != 1)
          throw UsageError("apply_bitmask_bits: rows must be contiguous along the vocabulary");
        size_t nrows = rows.shape(0);
        std::vector<size_t> idx;
        if (indices.empty()) {
          if (mask.shape(0) != nrows)
            throw UsageError("bitmask has " + std::to_string(mask.shape(0)) + " rows for " + std::to_string(nrows) +
                             " logits rows; pass indices=");
          for (size_t i = 0; i < nrows; ++i) idx.push_back(i);
        } else {
          if (indices.size() != mask.shape(0))
            throw UsageError(std::to_string(indices.size()) + " indices for " + std::to_string(mask.shape(0)) +
                             " bitmask rows");
          for (int64_t i : indices) {
            int64_t j = i < 0 ? i + static_cast<int64_t>(nrows) : i;
            if (j < 0 || j >= static_cast<int64_t>(nrows))
              throw nb::index_error((std::string("index ") + std::to_string(i) + " is out of range for " +
                                     std::to_string(nrows) + " logits rows")
                                        .c_str());
            idx.push_back(static_cast<size_t>(j));
          }
        }
        switch (rows.dtype().bits) {
          case 16:
            apply_rows<int16_t>(rows, ninf, mask, idx, kernel);
            break;
          case 32:
            apply_rows<int32_t>(rows, ninf, mask, idx, kernel);
            break;
          case 64:
            apply_rows<int64_t>(rows, ninf, mask, idx, kernel);
            break;
          default:
            throw UsageError("apply_bitmask_bits: rows must be int16, int32 or int64");
        }
      },
      nb::arg("rows").noconvert(), nb::arg("ninf"), nb::arg("bitmask"), nb::arg("indices"), nb::arg("kernel") = "auto",
      "Set disallowed columns of the integer view ``rows`` to ``ninf`` (the bit pattern of -inf), in place.");
}
