// The process-wide memory limit (support/memory_limit.h). stencil.memory checks the arguments
// and documents the API; these are the raw calls.
#include <nanobind/nanobind.h>

#include "bindings/bindings.h"
#include "support/memory_limit.h"

namespace nb = nanobind;
using namespace stencil;

static nb::dict usage_dict() {
  MemoryUsage u;
  {
    nb::gil_scoped_release release;  // measuring waits for lexers that other threads are growing
    u = MemoryLimit::get().usage();
  }
  nb::dict d;
  d["total"] = u.total;
  d["limit"] = u.limit;
  d["lexers"] = u.bytes[kLexerMemory];
  d["masks"] = u.bytes[kMaskMemory];
  d["shared_masks"] = u.bytes[kSharedMaskMemory];
  d["grammar_ir"] = u.bytes[kGrammarMemory];
  d["retired"] = u.retired;
  d["grammars"] = u.grammars;
  d["vocabularies"] = u.vocabularies;
  d["evictions"] = u.evictions;
  d["shared_trims"] = u.trims;
  return d;
}

void bind_memory(nb::module_& m) {
  m.def(
      "set_memory_limit",
      [](size_t limit) {
        nb::gil_scoped_release release;
        return MemoryLimit::get().set_limit(limit);
      },
      nb::arg("limit"), "Sets the process-wide memory limit in bytes (0: the default); returns the previous one.");
  m.def("memory_usage", &usage_dict, "The process-wide memory limit's counters, in bytes.");
  m.def(
      "memory_over_limit", [] { return MemoryLimit::get().total() > MemoryLimit::get().limit(); },
      "Whether the counted total is over the limit (as last measured: no lexer is measured).");
  m.attr("DEFAULT_MEMORY_LIMIT") = MemoryLimit::default_limit();
}
