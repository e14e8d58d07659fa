#include <nanobind/nanobind.h>

#include "bindings/bindings.h"
#include "stencil/errors.h"
#include "support/deadline.h"

namespace nb = nanobind;

// A Python base pair (StencilError, builtin): nanobind's exception passes its base to
// PyErr_NewException, which takes a tuple of bases.
static nb::object bases(const nb::object& root, PyObject* builtin) {
  return nb::make_tuple(root, nb::handle(builtin));
}

void bind_errors(nb::module_& m) {
  // Base classes first: nanobind tries the translators last registered first.
  static nb::object root = nb::exception<stencil::StencilError>(m, "StencilError", PyExc_Exception);
  static nb::object grammar_error =
      nb::exception<stencil::GrammarError>(m, "GrammarError", bases(root, PyExc_ValueError));
  static nb::object budget_error = nb::exception<stencil::BudgetError>(m, "BudgetError", grammar_error.ptr());
  static nb::object time_limit = nb::exception<stencil::TimeLimitExceeded>(m, "TimeLimitExceeded", budget_error.ptr());
  nb::exception<stencil::CompileTimeout>(m, "CompileTimeout", time_limit.ptr());
  m.def("set_compile_deadline", &stencil::deadline::set, nb::arg("seconds"),
        "Limit the current thread's compile work to `seconds` from now (<= 0: no limit).");
  nb::exception<stencil::UsageError>(m, "UsageError", bases(root, PyExc_ValueError));
  nb::exception<stencil::ConcurrentUseError>(m, "ConcurrentUseError", bases(root, PyExc_RuntimeError));
}
