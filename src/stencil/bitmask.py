"""Token bitmasks: allocation, batch filling and applying them to logits.

A bitmask is an int32 array of shape ``[batch, ceil(vocab_size / 32)]``; bit ``t % 32`` of word
``t // 32`` says whether token ``t`` is allowed (the layout vLLM and XGrammar use).

Example::

    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    matcher.fill_next_token_bitmask(bm, 0)
    stencil.apply_token_bitmask_inplace(logits, bm)
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from stencil import _core

__all__ = ["allocate_token_bitmask", "fill_next_token_bitmasks", "apply_token_bitmask_inplace",
           "bitmask_to_bool"]


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A ``[batch_size, ceil(vocab_size / 32)]`` int32 bitmask with every token allowed."""
    if batch_size < 0 or vocab_size <= 0:
        raise ValueError(f"allocate_token_bitmask: need batch_size >= 0 and vocab_size > 0, got {batch_size}, {vocab_size}")
    return np.full((batch_size, (vocab_size + 31) // 32), -1, dtype=np.int32)


def fill_next_token_bitmasks(matchers: Sequence[_core.Matcher], bitmask, indices: Sequence[int] | None = None,
                             num_threads: int | None = None) -> None:
    """Fill row ``indices[i]`` (default ``i``) of ``bitmask`` for each matcher, in parallel.

    The GIL is released while masks are computed; ``num_threads`` defaults to the CPU count.
    """
    matchers = list(matchers)
    if num_threads is None:
        num_threads = min(len(matchers), os.cpu_count() or 1)
    if num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    _core.fill_next_token_bitmasks(matchers, _as_numpy_mask(bitmask), [] if indices is None else [int(i) for i in indices],
                                   int(num_threads))


def _as_numpy_mask(bitmask):
    if isinstance(bitmask, np.ndarray):
        if bitmask.dtype != np.int32 or bitmask.ndim != 2:
            raise ValueError(f"bitmask must be a 2-D int32 array, got {bitmask.dtype} with shape {bitmask.shape}")
        return bitmask
    return bitmask  # torch CPU tensors pass through nanobind's DLPack support


def bitmask_to_bool(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """Unpack a bitmask to a ``[batch, vocab_size]`` boolean array."""
    words = np.ascontiguousarray(bitmask, dtype=np.int32)
    bits = np.unpackbits(words.view(np.uint8), axis=-1, bitorder="little").astype(bool)
    return bits[..., :vocab_size]


def apply_token_bitmask_inplace(logits, bitmask, indices: Sequence[int] | None = None) -> None:
    """Set the logits of disallowed tokens to -inf, in place.

    ``logits`` is ``[batch, vocab]`` (or ``[vocab]``), numpy or torch; ``bitmask`` has one row per
    logits row, or ``indices`` picks the logits rows that row ``i`` of the bitmask applies to.
    Logits columns beyond the bitmask's width are disallowed; bitmask bits beyond the logits'
    width are ignored.
    """
    if type(logits).__module__.startswith("torch"):
        from stencil.bitmask_torch import apply_token_bitmask_inplace_torch
        return apply_token_bitmask_inplace_torch(logits, bitmask, indices)
    if not isinstance(logits, np.ndarray):
        raise TypeError(f"logits must be a numpy array or a torch tensor, got {type(logits).__name__}")
    squeeze = logits.ndim == 1
    rows = logits[None, :] if squeeze else logits
    mask = np.asarray(bitmask)
    if mask.ndim == 1:
        mask = mask[None, :]
    vocab = rows.shape[-1]
    allowed = bitmask_to_bool(mask, min(vocab, mask.shape[-1] * 32))
    if allowed.shape[-1] < vocab:
        allowed = np.concatenate([allowed, np.zeros((allowed.shape[0], vocab - allowed.shape[-1]), bool)], axis=-1)
    if indices is None:
        if allowed.shape[0] != rows.shape[0]:
            raise ValueError(f"bitmask has {allowed.shape[0]} rows for {rows.shape[0]} logits rows; pass indices=")
        rows[~allowed] = -np.inf
    else:
        idx = np.asarray(list(indices), dtype=np.int64)
        if idx.shape[0] != allowed.shape[0]:
            raise ValueError(f"{idx.shape[0]} indices for {allowed.shape[0]} bitmask rows")
        sub = rows[idx]
        sub[~allowed] = -np.inf
        rows[idx] = sub
