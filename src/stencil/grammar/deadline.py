"""A wall-clock limit on one compilation (``GrammarCompiler(compile_timeout=...)``).

The compiler sets it around each ``compile_*`` call; the front-ends' loops that can grow with
the input (schema products, rule emission, grammar parsing) call :func:`check_deadline`, and the
core checks the same limit in its derivative loops. Past the limit a ``CompileTimeout`` (a
``TimeLimitExceeded``, so a ``LimitError``; no ``GrammarError``) ends the compilation cleanly:
nothing half-built is cached, and the compiler goes on serving. Matching has a limit of its own,
per matcher call (``Matcher(g, time_limit=...)``); should both be in force on a thread, the
earlier one wins.

Example::

    with compile_deadline(2.0, "compile_json_schema"):
        grammar = json_schema_grammar(schema)   # CompileTimeout after 2 s of work
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from stencil import _core

__all__ = ["compile_deadline", "check_deadline", "CompileTimeout"]

CompileTimeout = _core.CompileTimeout


class _Limit(threading.local):
    # a class default, not getattr(local, "limit", None): a missing attribute raises and catches
    # an AttributeError (0.3 us), and check_deadline runs some 250 times per schema
    limit: tuple | None = None


_local = _Limit()


@contextmanager
def compile_deadline(seconds: float | None, what: str):
    """Limit the work inside the block to ``seconds`` (None or 0: no limit). An enclosing limit
    stays in force: a nested compile never extends it."""
    outer = _local.limit
    if outer is not None or not seconds:
        yield
        return
    _local.limit = (time.monotonic() + seconds, seconds, what)
    _core.set_compile_deadline(seconds)
    try:
        yield
    finally:
        _local.limit = None
        _core.set_compile_deadline(0)


def check_deadline() -> None:
    """Raise ``CompileTimeout`` when the current thread's compilation is past its limit."""
    limit = _local.limit
    if limit is not None and time.monotonic() > limit[0]:
        raise CompileTimeout(f"{limit[2]}: compilation exceeded its time limit of {limit[1]:g} s "
                             f"(GrammarCompiler(compile_timeout=...) sets it)")
