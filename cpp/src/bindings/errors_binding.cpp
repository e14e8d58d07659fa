#include <nanobind/nanobind.h>

#include "bindings/bindings.h"
#include "stencil/errors.h"
#include "support/deadline.h"

namespace nb = nanobind;

void bind_errors(nb::module_& m) {
  static nb::object grammar_error = nb::exception<stencil::GrammarError>(m, "GrammarError", PyExc_ValueError);
  static nb::object budget_error = nb::exception<stencil::BudgetError>(m, "BudgetError", grammar_error.ptr());
  nb::exception<stencil::CompileTimeout>(m, "CompileTimeout", budget_error.ptr());
  m.def("set_compile_deadline", &stencil::deadline::set, nb::arg("seconds"),
        "Limit the current thread's compile work to `seconds` from now (<= 0: no limit).");
  nb::exception<stencil::UsageError>(m, "UsageError", PyExc_ValueError);
  nb::exception<stencil::ConcurrentUseError>(m, "ConcurrentUseError", PyExc_RuntimeError);
}
