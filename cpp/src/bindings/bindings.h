#pragma once
#include <nanobind/nanobind.h>

void bind_errors(nanobind::module_& m);
void bind_vocabulary(nanobind::module_& m);
void bind_grammar(nanobind::module_& m);
void bind_matcher(nanobind::module_& m);
void bind_batch(nanobind::module_& m);
void bind_logits(nanobind::module_& m);
void bind_limits(nanobind::module_& m);
void bind_memory(nanobind::module_& m);
