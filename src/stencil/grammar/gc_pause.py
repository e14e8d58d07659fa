"""Python's cyclic garbage collector held off while a grammar compiles.

A front-end allocates tens of thousands of small objects for a large schema (normal forms, key
formulas, rules), and every 700 allocations the collector walks the young ones; every tenth
of those passes the older ones too, and now and then everything the process holds. None of that
frees anything a compile made: its objects are released by reference counting when it ends, and
what forms cycles waits for the next collection after it. What the pause saves depends on the
process: in one that holds a tokenizer and little else (a script; MaskBench's worker, ~47,000
objects tracked), where the compiles' allocations trigger full collections, the tuning half's
124 schemas that compile in over 2.5 ms took 5-15% less time; in ``stencil serve``'s process
(~456,000 objects, frozen or not), where full collections are rare, none was measured
(``benchmarks.compile_gc``: 1.00x).

The pause is process-wide, as the collector is: compiles on several threads share one, and the
collector runs again when the last of them ends, unless it was off before the first began.

Example::

    with gc_paused():
        grammar = json_schema_grammar(schema)
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["gc_paused"]

_lock = threading.Lock()
_depth = 0           # compiles inside a pause, over all threads
_resume = False      # whether the first of them found the collector on


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off cyclic garbage collection inside the block (see the module's docstring)."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
