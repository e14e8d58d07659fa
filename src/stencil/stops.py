"""Deprecated: moved to :mod:`stencil.runtime.stops` (issue 42); this name goes in the next release."""
from stencil._moved import alias_module

alias_module(__name__, "stencil.runtime.stops")
