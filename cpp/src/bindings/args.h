// Arguments checked by hand. nanobind answers a value its casters refuse (None, a float, 2**64, a
// lone surrogate, a read-only array) with a dump of the function's signature, which does not say
// which argument is wrong nor why; these take the raw object and name the argument instead.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

namespace stencil::bindings {

// The slow path of int_arg: numpy and other integers (__index__), and the errors.
int64_t int_arg_slow(nanobind::handle h, const char* name, const char* expected, int64_t index);

// An int argument: `name must be <expected>, got <type or value>` otherwise (TypeError for a
// non-integer, ValueError for one beyond int64); `index` >= 0 names an item, name[index]. A
// plain int pays one type check.
inline int64_t int_arg(nanobind::handle h, const char* name, const char* expected, int64_t index = -1) {
  if (PyLong_CheckExact(h.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (!overflow) return v;
  }
  return int_arg_slow(h, name, expected, index);
}

// The UTF-8 bytes of a str argument (TypeError for another type, ValueError for a lone
// surrogate, naming where it is). `other` says what to call for the other type.
std::string_view text_arg(nanobind::handle h, const char* name, const char* other);

// A bitmask argument as an array, never converted (a converted copy would be written instead of
// the caller's array): TypeError or ValueError saying why it cannot be used (not an array,
// read-only, big-endian, not in CPU memory).
nanobind::ndarray<> bitmask_arg(nanobind::handle h);

}  // namespace stencil::bindings
