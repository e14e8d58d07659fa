"""What every engine adapter provides, and the helpers they share.

An adapter is built once per worker process (tokenizer conversion is slow and excluded from the
figures), then, for each schema, ``compile(schema)`` returns a :class:`Session`: the compiled
grammar and a matcher ready for its first mask. The time ``compile`` takes is the TTFM.

A session exposes plain callables rather than methods so that the timed loop calls the engine's
own bound functions with no adapter frame in between where the engine allows it:

    session.reset()                  # back to the start state (may rebind fill/accept)
    session.fill()                   # write the next-token mask into session.row
    session.fill(remaining)          # the same under a token budget, where session.budget is set
    session.accept(token) -> bool    # advance by one token
    session.row                      # the mask row: int32 words, bit t % 32 of word t // 32

Example::

    engine = make_engine("llguidance", tokenizer_name, info)
    session = engine.compile({"type": "integer"})
    session.reset(); session.fill()
    allowed = mask_bit(session.words, token)
"""
from __future__ import annotations

import importlib.metadata
from typing import Any, Callable

import numpy as np


class CompileError(Exception):
    """The engine refused the schema (unsupported keyword, invalid schema, resource limit)."""


class Session:
    """One compiled schema and its matcher; see the module docstring for the protocol."""

    def __init__(self, row: np.ndarray, fill: Callable[..., Any], accept: Callable[[int], bool],
                 reset: Callable[[], Any], budget: tuple[int | None, int] | None = None):
        self.row = row
        # (fixed, slack): fill takes the tokens that may still be generated, this one included:
        # ``fixed`` when set, else the instance's tokens left + ``slack``. None: fill takes nothing.
        self.budget = budget
        # A memoryview reads a word as a Python int in tens of nanoseconds, several times faster
        # than indexing the numpy array, so the bit test barely shows in the timings.
        self.words = memoryview(row)
        self.fill = fill
        self.accept = accept
        self.reset = reset


def mask_bit(words: memoryview, token: int) -> bool:
    """Whether ``token``'s bit is set in a mask row read through a memoryview of int32 words."""
    return bool((words[token >> 5] >> (token & 31)) & 1)


def mask_row(vocab_size: int) -> np.ndarray:
    """A C-contiguous int32 row wide enough for ``vocab_size`` tokens."""
    return np.zeros((vocab_size + 31) // 32, dtype=np.int32)


def package_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
