#pragma once
#include <nanobind/nanobind.h>

void bind_errors(nanobind::module_& m);
void bind_vocabulary(nanobind::module_& m);
