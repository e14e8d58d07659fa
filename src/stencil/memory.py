"""One memory limit for the whole process.

What stencil builds lazily while masks are filled (each compiled grammar's lexer automaton, its
derivative cache and completion tables, its mask cache, and each tokenizer's cache of inner masks
shared between grammars) is counted against one process-wide limit, with the compiled grammars
themselves. When the total passes it, the least recently used grammars drop their lazy
state and the shared caches their least recently used masks, down to three quarters of the limit;
a grammar rebuilds what it needs on demand, and a matcher of a dropped grammar replays its tokens
at its next call (masks stay exact). The default limit is the smaller of 2 GiB and a quarter of
the physical memory (at least 256 MiB).

Example::

    import stencil
    stencil.set_memory_limit(512 << 20)       # 512 MiB for every grammar together
    usage = stencil.memory_usage()
    print(usage["total"], usage["limit"], usage["evictions"])
"""
from __future__ import annotations

import os
import threading
import time
from typing import Callable

from stencil import _core

#: The default limit of this machine, in bytes.
DEFAULT_MEMORY_LIMIT: int = _core.DEFAULT_MEMORY_LIMIT
#: The smallest limit set_memory_limit takes: below it one mask of a large vocabulary's grammar
#: would not stay cached.
MIN_MEMORY_LIMIT = 1 << 20


def set_memory_limit(limit: int | None) -> int:
    """Sets the process-wide memory limit in bytes (None: the default) and returns the previous one.

    A limit below the current usage evicts at once. Each grammar's own caps (``mask_cache_bytes``,
    ``lexer_memory_bytes``) apply up to this limit, a tokenizer's shared mask cache up to a quarter
    of it.

    Example::

        previous = stencil.set_memory_limit(256 << 20)
        ...
        stencil.set_memory_limit(previous)
    """
    if limit is None:
        return _core.set_memory_limit(0)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"set_memory_limit: limit must be an int number of bytes or None, got {type(limit).__name__}")
    if limit < MIN_MEMORY_LIMIT:
        raise ValueError(f"set_memory_limit: limit must be at least {MIN_MEMORY_LIMIT} bytes (1 MiB), got {limit}")
    if limit >= 1 << 63:
        raise ValueError(f"set_memory_limit: limit must be below 2**63 bytes, got {limit}")
    return _core.set_memory_limit(limit)


def memory_usage() -> dict[str, int]:
    """The process-wide memory limit's counters.

    Keys: ``total`` (bytes counted), ``limit``, ``lexers``, ``masks``, ``shared_masks`` and
    ``grammar_ir`` (bytes by kind; they add up to ``total``; ``grammar_ir`` is the compiled
    grammars' rules and expressions, freed only with them: the limit never evicts it, a
    ``GrammarCompiler``'s cache drops its least recently used grammars while the total is over
    the limit), ``retired`` (the part of ``lexers`` and ``masks`` in
    dropped lazy state that a matcher still holds: freed at that matcher's next call or when it is
    deleted), ``grammars`` and ``vocabularies`` (caches tracked), ``evictions`` (grammars whose
    lazy state the limit dropped) and ``shared_trims`` (times a shared mask cache was trimmed).
    ``lexers`` + ``masks`` - ``retired`` is the sum of the grammars' ``memory_bytes``, and
    ``shared_masks`` that of the tokenizers' ``shared_mask_bytes``. An inner mask held both by a
    grammar and by its tokenizer's shared cache counts in ``masks`` and in ``shared_masks``, so
    ``total`` errs on the high side.

    The limit binds what an eviction can drop (``total`` - ``retired``): right after a matcher
    call returns it is at most the limit, give or take the lexer states built since the lexer was
    last measured (it is measured every 1,024 new states; memory_usage() measures them all).

    Example::

        u = stencil.memory_usage()
        assert u["total"] == u["lexers"] + u["masks"] + u["shared_masks"] + u["grammar_ir"]
    """
    return dict(_core.memory_usage())


def resident_bytes(pid: int | None = None) -> int:
    """The resident memory (RSS) of process ``pid`` (default: this one) now, in bytes; 0 where
    /proc cannot tell (not Linux, a process gone).

    Example::

        before = stencil.memory.resident_bytes()
    """
    try:
        with open(f"/proc/{'self' if pid is None else pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def reclaim() -> None:
    """Run the memory limit's eviction now if the process is over its limit, and hand freed heap pages
    back to the OS soon after. The limit is enforced as matchers step; call this when work ends
    (a request done or refused) so that what its grammars built goes back under the limit without
    waiting for another grammar's next step."""
    _core.set_memory_limit(_core.memory_usage()["limit"])  # re-applying the limit enforces it
    _TRIMMER.request()


class _Trimmer:
    """glibc keeps freed blocks in its free lists (RSS unchanged) until ``malloc_trim``: a request's
    front-end objects (a 40,000-value enum's schema, its regex) and its grammar's evicted tables
    left a server 130 MB above what it held. The trim walks the heap and blocks other threads'
    allocations meanwhile, so it runs on a thread of its own, at most once a second."""

    def __init__(self) -> None:
        self._trim: Callable[[int], int] | None = None
        try:
            import ctypes
            self._trim = ctypes.CDLL(None).malloc_trim  # glibc only; elsewhere nothing to do
        except (OSError, AttributeError):
            pass
        self._wanted = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def request(self) -> None:
        if self._trim is None:
            return
        self._wanted.set()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, args=(self._trim,), name="stencil-trim",
                                                daemon=True)
                self._thread.start()

    def _run(self, trim: Callable[[int], int]) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            trim(0)
            time.sleep(1.0)


_TRIMMER = _Trimmer()
