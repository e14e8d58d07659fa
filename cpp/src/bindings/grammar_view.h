// A read-only Python view of a built Grammar (its rules, lexemes and checks), so that Python
// analyses read the one IR instead of keeping a second one.
#pragma once
#include <nanobind/nanobind.h>

#include "grammar/ir.h"

void bind_grammar_view(nanobind::class_<stencil::Grammar>& cls);
