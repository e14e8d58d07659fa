#include "bindings/args.h"

namespace nb = nanobind;

namespace stencil::bindings {

static std::string type_of(nb::handle h) { return nb::type_name(h.type()).c_str(); }

int64_t int_arg_slow(nb::handle h, const char* name, const char* expected, int64_t index) {
  const std::string item = index >= 0 ? "[" + std::to_string(index) + "]" : "";
  const std::string want = std::string(name) + item + " must be " + expected + ", got ";
  // bool is an int to Python, but True as a token id or a count is a mistake
  if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr())) throw nb::type_error((want + type_of(h)).c_str());
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  if (!i.is_valid()) nb::raise_python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow) throw nb::value_error((want + nb::repr(i).c_str()).c_str());
  return v;
}

std::string_view text_arg(nb::handle h, const char* name, const char* other) {
  if (!PyUnicode_Check(h.ptr()))
    throw nb::type_error((std::string(name) + " must be a str (" + other + "), got " + type_of(h)).c_str());
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(h.ptr(), &size);
  if (data != nullptr) return {data, static_cast<size_t>(size)};
  PyErr_Clear();
  const Py_ssize_t n = PyUnicode_GetLength(h.ptr());
  for (Py_ssize_t k = 0; k < n; ++k) {
    const Py_UCS4 c = PyUnicode_ReadChar(h.ptr(), k);
    if (c >= 0xD800 && c <= 0xDFFF) {
      char buf[96];
      snprintf(buf, sizeof buf, " holds a lone surrogate U+%04X at index %zd, which cannot be encoded as UTF-8",
               static_cast<unsigned>(c), static_cast<ssize_t>(k));
      throw nb::value_error((std::string(name) + buf).c_str());
    }
  }
  throw nb::value_error((std::string(name) + " cannot be encoded as UTF-8").c_str());
}

// Why an object nanobind would not take as an array cannot be a bitmask (the slow path only).
[[noreturn]] static void refuse_bitmask(nb::handle h) {
  const std::string what =
      "the bitmask must be a C-contiguous int32 numpy array or torch CPU tensor "
      "(stencil.allocate_token_bitmask)";
  if (nb::hasattr(h, "device") && nb::hasattr(nb::getattr(h, "device"), "type")) {
    std::string dev = nb::str(nb::getattr(nb::getattr(h, "device"), "type")).c_str();
    if (dev != "cpu")
      throw nb::type_error(("the bitmask must be in CPU memory (fill it on the CPU, then copy it to the device), "
                            "got a tensor on " +
                            dev)
                               .c_str());
  }
  if (nb::hasattr(h, "flags") && nb::hasattr(nb::getattr(h, "flags"), "writeable") &&
      !nb::cast<bool>(nb::getattr(nb::getattr(h, "flags"), "writeable")))
    throw nb::value_error("the bitmask is read-only (stencil writes the mask into it)");
  if (nb::hasattr(h, "dtype") && nb::hasattr(nb::getattr(h, "dtype"), "byteorder") &&
      std::string(nb::str(nb::getattr(nb::getattr(h, "dtype"), "byteorder")).c_str()) == ">")
    throw nb::type_error(
        ("the bitmask must be little-endian int32, got " + std::string(nb::str(nb::getattr(h, "dtype")).c_str()))
            .c_str());
  throw nb::type_error((what + ", got " + type_of(h)).c_str());
}

nb::ndarray<> bitmask_arg(nb::handle h) {
  nb::ndarray<> out;
  if (!nb::try_cast(h, out, /*convert=*/false)) refuse_bitmask(h);
  return out;
}

}  // namespace stencil::bindings
