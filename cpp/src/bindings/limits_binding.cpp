// The default limits, defined once: in the core's structs (CompileLimits, BuilderLimits). The
// bindings' keyword defaults read them, and _core.DEFAULT_LIMITS (read-only) hands the same
// numbers to Python (GrammarCompiler's defaults, the front-ends' repetition limit).
#include <nanobind/nanobind.h>

#include "bindings/bindings.h"
#include "stencil/compiled_grammar.h"
#include "stencil/grammar.h"

namespace nb = nanobind;
using namespace stencil;

void bind_limits(nb::module_& m) {
  const CompileLimits compile;
  const BuilderLimits builder;
  nb::dict d;
  d["max_lexer_states"] = compile.lexer.max_states;
  d["lexer_fuel"] = compile.lexer.fuel;
  d["mask_cache_bytes"] = compile.mask_cache_bytes;
  d["lexer_memory_bytes"] = compile.lexer_memory_bytes;
  d["max_exprs"] = builder.max_exprs;
  d["max_repeat"] = builder.max_repeat;
  d["max_rules"] = builder.max_rules;
  m.attr("DEFAULT_LIMITS") = nb::module_::import_("types").attr("MappingProxyType")(d);
}
