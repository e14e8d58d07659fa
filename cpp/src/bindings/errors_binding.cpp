#include <nanobind/nanobind.h>

#include "bindings/bindings.h"
#include "stencil/errors.h"

namespace nb = nanobind;

void bind_errors(nb::module_& m) {
  static nb::object grammar_error = nb::exception<stencil::GrammarError>(m, "GrammarError", PyExc_ValueError);
  nb::exception<stencil::BudgetError>(m, "BudgetError", grammar_error.ptr());
  nb::exception<stencil::UsageError>(m, "UsageError", PyExc_ValueError);
  nb::exception<stencil::ConcurrentUseError>(m, "ConcurrentUseError", PyExc_RuntimeError);
}
