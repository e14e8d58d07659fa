"""Bitmasks as numpy arrays: allocating, unpacking, and applying them to numpy logits.

A bitmask is an int32 array of shape ``[batch, ceil(vocab_size / 32)]``; bit ``t % 32`` of word
``t // 32`` says whether token ``t`` is allowed. The public entry points are re-exported by
:mod:`stencil.bitmask`.

Example::

    bm = allocate_token_bitmask(1, 40)
    bm[0] = [0b101, 0]                                   # tokens 0 and 2
    apply_token_bitmask_numpy(logits, bm)                # logits: numpy [1, 40]
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from stencil.kernels._bits import INT_VIEW, apply_bitmask_bits

__all__ = ["allocate_token_bitmask", "bitmask_to_bool", "apply_token_bitmask_numpy"]


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A ``[batch_size, ceil(vocab_size / 32)]`` int32 bitmask with every token allowed."""
    if batch_size < 0 or vocab_size <= 0:
        raise ValueError(f"allocate_token_bitmask: need batch_size >= 0 and vocab_size > 0, got {batch_size}, {vocab_size}")
    return np.full((batch_size, (vocab_size + 31) // 32), -1, dtype=np.int32)


def bitmask_to_bool(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """Unpack a bitmask to a ``[batch, vocab_size]`` boolean array."""
    words = np.ascontiguousarray(bitmask, dtype=np.int32)
    bits = np.unpackbits(words.view(np.uint8), axis=-1, bitorder="little").astype(bool)
    return bits[..., :vocab_size]


def apply_token_bitmask_numpy(logits: np.ndarray, bitmask: Any, indices: Sequence[int] | None = None) -> None:
    """``stencil.apply_token_bitmask_inplace`` for numpy logits (see there)."""
    if not isinstance(logits, np.ndarray):
        raise TypeError(f"logits must be a numpy array or a torch tensor, got {type(logits).__name__}")
    if not logits.flags.writeable:
        raise ValueError("logits are read-only (the mask is applied in place)")
    if logits.dtype.name not in INT_VIEW:
        raise TypeError(f"logits must be float16, float32 or float64, got {logits.dtype}")
    if logits.ndim not in (1, 2):
        raise ValueError(f"logits must be [vocab] or [batch, vocab], got shape {logits.shape}")
    rows = logits[None, :] if logits.ndim == 1 else logits
    itype, ninf = INT_VIEW[logits.dtype.name]
    if rows.strides[-1] == rows.itemsize:
        apply_bitmask_bits(rows.view(itype), ninf, bitmask, indices)
    else:  # a strided view: work on a contiguous copy and write it back
        tmp = np.ascontiguousarray(rows)
        apply_bitmask_bits(tmp.view(itype), ninf, bitmask, indices)
        rows[...] = tmp
