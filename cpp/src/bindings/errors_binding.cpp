#include <nanobind/nanobind.h>

#include "bindings/bindings.h"
#include "stencil/errors.h"
#include "support/deadline.h"

namespace nb = nanobind;

// A Python base pair (StencilError, builtin): nanobind's exception passes its base to
// PyErr_NewException, which takes a tuple of bases.
static nb::object bases(const nb::object& root, PyObject* builtin) { return nb::make_tuple(root, nb::handle(builtin)); }

void bind_errors(nb::module_& m) {
  // Base classes first: nanobind tries the translators last registered first.
  static nb::object root = nb::exception<stencil::StencilError>(m, "StencilError", PyExc_Exception);
  static nb::object grammar_error =
      nb::exception<stencil::GrammarError>(m, "GrammarError", bases(root, PyExc_ValueError));
  // LimitError: a time, work or memory limit ran out. Not a GrammarError (the input may be fine;
  // the limit decided), but still a ValueError: callers that turned a ValueError into "this
  // constraint cannot be used" (integrations, the server's 400s, benchmark engines) keep doing so.
  // No C++ exception is thrown as a plain stencil::LimitError (errors.h), so it is made as
  // nanobind makes one, without a translator.
  static nb::object limit_error = nb::steal(PyErr_NewExceptionWithDoc(
      "stencil._core.LimitError", "A time, work or memory limit ran out (BudgetError, TimeLimitExceeded).",
      bases(root, PyExc_ValueError).ptr(), nullptr));
  m.attr("LimitError") = limit_error;
  // BudgetError: a work or memory limit; TimeLimitExceeded: a wall-clock one, its sibling.
  nb::exception<stencil::BudgetError>(m, "BudgetError", limit_error.ptr());
  static nb::object time_limit = nb::exception<stencil::TimeLimitExceeded>(m, "TimeLimitExceeded", limit_error.ptr());
  nb::exception<stencil::CompileTimeout>(m, "CompileTimeout", time_limit.ptr());
  m.def("set_compile_deadline", &stencil::deadline::set, nb::arg("seconds"),
        "Limit the current thread's compile work to `seconds` from now (<= 0: no limit).");
  nb::exception<stencil::UsageError>(m, "UsageError", bases(root, PyExc_ValueError));
  nb::exception<stencil::ConcurrentUseError>(m, "ConcurrentUseError", bases(root, PyExc_RuntimeError));
}
