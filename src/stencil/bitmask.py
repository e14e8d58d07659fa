"""Token bitmasks: allocation, batch filling and applying them to logits.

A bitmask is an int32 array of shape ``[batch, ceil(vocab_size / 32)]``; bit ``t % 32`` of word
``t // 32`` says whether token ``t`` is allowed (the layout vLLM and XGrammar use).

This module is the public door; the kernels behind it are in :mod:`stencil.kernels` (numpy, torch,
Triton), loaded for the array library of the logits they are given.

Example::

    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    matcher.fill_next_token_bitmask(bm, 0)
    stencil.apply_token_bitmask_inplace(logits, bm)
"""
from __future__ import annotations

import operator
import os
from collections.abc import Iterable
from typing import Any, Sequence

import numpy as np

from stencil import _core
from stencil.kernels._bits import apply_bitmask_bits
from stencil.kernels.numpy import allocate_token_bitmask, apply_token_bitmask_numpy, bitmask_to_bool

__all__ = ["allocate_token_bitmask", "fill_next_token_bitmasks", "fill_draft_bitmasks", "apply_token_bitmask_inplace",
           "bitmask_to_bool", "apply_bitmask_bits"]


def fill_next_token_bitmasks(matchers: Sequence[_core.Matcher], bitmask: Any, indices: Sequence[int] | None = None,
                             num_threads: int | None = None,
                             remaining_tokens: int | Sequence[int | None] | None = None,
                             return_errors: bool = False) -> list[Exception | None] | None:
    """Fill row ``indices[i]`` (default ``i``) of ``bitmask`` for each matcher, in parallel.

    ``remaining_tokens``: each matcher's token budget, as in ``Matcher.fill_next_token_bitmask``
    (one int for all, one entry per matcher, or None: no budget).

    The GIL is released while masks are computed; ``num_threads`` defaults to the CPU count.
    ``bitmask`` must be a C-contiguous int32 array (numpy or torch CPU) of at least
    ``len(matchers)`` rows; anything else is a ``TypeError`` or ``ValueError``, as is an entry
    of ``matchers`` that is not a Matcher, or a matcher named twice.

    Each matcher works under its own ``time_limit`` (``Matcher(g, time_limit=...)``). Should a
    matcher raise (``TimeLimitExceeded``, a ``LimitError``), every other row is still filled, the
    first error is raised after all are done, and the matcher that raised is as it was before the
    call (its row is then undefined)::

        try:
            stencil.fill_next_token_bitmasks([m_ok, m_slow], bitmask)
        except stencil.TimeLimitExceeded:
            ...   # bitmask[0] is m_ok's mask; m_slow may be retried or dropped

    With ``return_errors=True`` nothing is raised for a matcher's error: the call returns one entry
    per matcher, None or the exception it raised, so that a server can fail those rows alone::

        errors = stencil.fill_next_token_bitmasks(matchers, bitmask, return_errors=True)
        failed = [i for i, e in enumerate(errors) if e is not None]
    """
    matchers, rows, num_threads, remaining = _batch_args(matchers, indices, num_threads, remaining_tokens)
    return _core.fill_next_token_bitmasks(matchers, bitmask, rows, num_threads, remaining, bool(return_errors))


def fill_next_token_bitmasks_async(matchers: Sequence[_core.Matcher], bitmask: Any, indices: Sequence[int] | None = None,
                                   num_threads: int | None = None,
                                   remaining_tokens: int | Sequence[int | None] | None = None) -> _core.PendingFill:
    """Start ``fill_next_token_bitmasks`` on a thread of the core and return at once.

    The arguments are those of ``fill_next_token_bitmasks`` (checked before it starts). The
    returned ``PendingFill``'s ``wait()`` waits for the fill and returns one entry per matcher:
    None, or the exception that matcher raised (its row undefined). Until then the matchers are
    busy (calling one raises) and the bitmask must not be read. The fill needs no GIL, so
    Python code, such as launching a forward pass on a GPU, runs beside it at full speed::

        pending = stencil.fill_next_token_bitmasks_async(matchers, bitmask, remaining_tokens=left)
        logits = model(...)                  # the masks are filled meanwhile
        errors = pending.wait()              # [None, ...]: every row is its matcher's mask
    """
    matchers, rows, num_threads, remaining = _batch_args(matchers, indices, num_threads, remaining_tokens)
    return _core.fill_next_token_bitmasks_async(matchers, bitmask, rows, num_threads, remaining)


def fill_draft_bitmasks(matchers: Sequence[_core.Matcher], drafts: Sequence[Sequence[int]], bitmask: Any,
                        first_rows: Sequence[int], num_threads: int | None = None,
                        remaining_tokens: Sequence[int | None] | None = None) -> list[int | None]:
    """The masks a speculative step verifies with, for a batch, in one call: for each matcher and
    its draft (token ids the drafter proposed), the mask before each draft token and the mask
    after the whole draft, in rows ``first_rows[i]`` to ``first_rows[i] + len(drafts[i])``. Each
    matcher is advanced through its draft and rolled back after: its state is unchanged. (A loop
    of ``fill_next_token_bitmask`` and ``accept_token`` calls does the same, with a Python round
    trip per position; here the requests run in parallel on ``num_threads`` threads, the GIL
    released.)

    ``remaining_tokens``: each matcher's token budget before its draft (None: none); the row
    after j draft tokens has j tokens less. Where a row does not allow its draft token (the
    grammar or the budget refuses it), verification stops there, so the rows after it allow
    every token; the rows of a matcher that a draft token terminates (an end token) allow every
    token too. Returns, per matcher, None, or the position of a draft token that its row allowed
    but the matcher refused (not expected; the rows after it repeat that row).

    Drafts may not be longer than the matchers' ``max_rollback``; rows must be in the bitmask and
    not shared. An error (``TimeLimitExceeded``) is raised after all requests are done, and every
    matcher is rolled back. Example::

        bm = stencil.allocate_token_bitmask(len(drafts[0]) + len(drafts[1]) + 2, tok.vocab_size)
        stencil.fill_draft_bitmasks([m0, m1], drafts, bm, [0, len(drafts[0]) + 1])
        # bm[j] is m0's mask after drafts[0][:j]; m0 and m1 are as they were
    """
    # (the core checks each draft and its token ids)
    drafts = list(_items(drafts, "drafts", "list of int"))
    rows = list(_items(first_rows, "first_rows", "int"))
    if not all(type(r) is int for r in rows):
        rows = [_int(r, f"first_rows[{i}]") for i, r in enumerate(rows)]
    matchers, _, num_threads, remaining = _batch_args(matchers, None, num_threads, remaining_tokens)
    return _core.fill_draft_bitmasks(matchers, drafts, bitmask, rows, num_threads, remaining)


def _batch_args(matchers: Any, indices: Any, num_threads: Any,
                remaining_tokens: Any) -> tuple[list[Any], list[int], int, list[int | None]]:
    """The batch calls' arguments as the core takes them, or the error naming the wrong one."""
    if isinstance(matchers, _core.Matcher) or not isinstance(matchers, Iterable):
        raise TypeError(f"matchers must be a list of stencil.Matcher, got {type(matchers).__name__}")
    matchers = list(matchers)
    if num_threads is None:
        num_threads = min(len(matchers), os.cpu_count() or 1)
    num_threads = _int(num_threads, "num_threads")
    if num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    # The core checks the bitmask (a C-contiguous int32 numpy array or torch CPU tensor, never
    # copied) and that every entry of matchers is a Matcher.
    remaining: list[int | None]
    if remaining_tokens is None:
        remaining = []
    elif isinstance(remaining_tokens, (int, np.integer)):
        remaining = [_int(remaining_tokens, "remaining_tokens")] * len(matchers)
    else:
        remaining = list(_items(remaining_tokens, "remaining_tokens", "int or None"))
        if not all(r is None or type(r) is int for r in remaining):   # (a server's step: plain ints)
            remaining = [None if r is None else _int(r, f"remaining_tokens[{i}]") for i, r in enumerate(remaining)]
    rows = [] if indices is None else list(_items(indices, "indices", "int"))
    if not all(type(i) is int for i in rows):
        rows = [_int(i, f"indices[{k}]") for k, i in enumerate(rows)]
    return matchers, rows, num_threads, remaining


def _int(v: Any, name: str) -> int:
    """``v`` as an int (numpy integers too); TypeError naming the argument otherwise (a float
    would be truncated silently by int())."""
    if isinstance(v, bool):
        raise TypeError(f"{name} must be an int, got bool")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(v).__name__}") from None


def _items(v: Any, name: str, what: str) -> Any:
    if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
        raise TypeError(f"{name} must be a list of {what}, got {type(v).__name__}")
    return v


def apply_token_bitmask_inplace(logits: Any, bitmask: Any, indices: Sequence[int] | None = None) -> None:
    """Set the logits of disallowed tokens to -inf, in place.

    ``logits`` is ``[batch, vocab]`` (or ``[vocab]``), a numpy array or a torch tensor (CPU or
    CUDA) of float16, bfloat16 (torch), float32 or float64. ``bitmask`` (numpy or torch int32) has
    one row per logits row, or ``indices`` names the logits row that each bitmask row applies to.
    Logits columns beyond the bitmask's width are disallowed (a model's padded vocabulary);
    bitmask bits beyond the logits' width are ignored. Allowed logits keep their exact bits.

    Example::

        >>> import numpy as np
        >>> logits = np.zeros((1, 40), np.float32)
        >>> bm = np.array([[0b101, 0]], np.int32)            # tokens 0 and 2
        >>> apply_token_bitmask_inplace(logits, bm)
        >>> np.flatnonzero(np.isfinite(logits[0])).tolist()
        [0, 2]
    """
    if type(logits).__module__.startswith("torch"):
        from stencil.kernels.torch import apply_token_bitmask_inplace_torch
        return apply_token_bitmask_inplace_torch(logits, bitmask, indices)
    return apply_token_bitmask_numpy(logits, bitmask, indices)
