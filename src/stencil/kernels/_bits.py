"""The bit-level pieces every bitmask kernel shares.

Kernels work on the integer view of float logits: writing -inf's bit pattern keeps allowed
values exact and needs no float comparison. :data:`INT_VIEW` names that view for each float dtype
(by dtype name, so numpy and torch read the same table) and :func:`apply_bitmask_bits` is the
core's pass over such rows.

Example::

    itype, ninf = INT_VIEW[logits.dtype.name]           # ("int32", -8388608) for float32
    apply_bitmask_bits(logits.view(itype), ninf, bitmask)
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from stencil import _core

__all__ = ["INT_VIEW", "apply_bitmask_bits"]

#: float dtype name -> (integer dtype name of the same width, -inf's bit pattern in that view)
INT_VIEW = {
    "float16": ("int16", -1024),                  # 0xFC00
    "bfloat16": ("int16", -128),                  # 0xFF80
    "float32": ("int32", -8388608),               # 0xFF800000
    "float64": ("int64", -4503599627370496),      # 0xFFF0000000000000
}


def apply_bitmask_bits(rows: np.ndarray, ninf: Any, bitmask: Any, indices: Sequence[int] | None = None,
                       kernel: str = "auto") -> None:
    """The kernel behind ``apply_token_bitmask_inplace``: ``rows`` is the ``[batch, vocab]``
    integer view of float logits, ``ninf`` the bit pattern of -inf in that view.

    Working on bits keeps allowed values exact and avoids float comparisons. The core does one
    pass per row with the GIL released: all-ones words are skipped, zero words filled with -inf,
    and the rest written through the word's bits as a store mask (AVX-512) or blended eight
    logits at a time (AVX2, portable). ``kernel`` forces one of ``_core.bitmask_kernels()``.

    Example::

        >>> import numpy as np
        >>> logits = np.zeros((1, 40), np.float32)
        >>> apply_bitmask_bits(logits.view(np.int32), -8388608, np.array([[0b101, 0]], np.int32))
        >>> np.flatnonzero(np.isfinite(logits[0])).tolist()
        [0, 2]
    """
    mask = np.asarray(bitmask)
    if mask.ndim == 1:
        mask = mask[None, :]
    if mask.ndim != 2 or mask.dtype.kind not in "iu" or mask.dtype.itemsize != 4:
        raise ValueError(f"bitmask must be a [batch, words] int32 array, got {mask.dtype} with shape {mask.shape}")
    if mask.dtype != np.int32 or not mask.flags.c_contiguous:
        mask = np.ascontiguousarray(mask).view(np.int32)
    if indices is not None and len(indices) == 0:
        if mask.shape[0]:
            raise ValueError(f"0 indices for {mask.shape[0]} bitmask rows")
        return
    _core.apply_bitmask_bits(rows, int(ninf), mask, [] if indices is None else [int(i) for i in indices], kernel)
