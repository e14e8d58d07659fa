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
           "bitmask_to_bool", "apply_bitmask_bits"]


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
        from stencil.bitmask_torch import apply_token_bitmask_inplace_torch
        return apply_token_bitmask_inplace_torch(logits, bitmask, indices)
    if not isinstance(logits, np.ndarray):
        raise TypeError(f"logits must be a numpy array or a torch tensor, got {type(logits).__name__}")
    if logits.dtype not in _INT_VIEW:
        raise TypeError(f"logits must be float16, float32 or float64, got {logits.dtype}")
    if logits.ndim not in (1, 2):
        raise ValueError(f"logits must be [vocab] or [batch, vocab], got shape {logits.shape}")
    rows = logits[None, :] if logits.ndim == 1 else logits
    itype = _INT_VIEW[logits.dtype]
    ninf = np.array(-np.inf, logits.dtype).view(itype)[()]
    if rows.strides[-1] == rows.itemsize:
        apply_bitmask_bits(rows.view(itype), ninf, bitmask, indices)
    else:  # a strided view: work on a contiguous copy and write it back
        tmp = np.ascontiguousarray(rows)
        apply_bitmask_bits(tmp.view(itype), ninf, bitmask, indices)
        rows[...] = tmp


#: float dtype -> the integer dtype of the same width, whose view the kernels work on
_INT_VIEW = {np.dtype(np.float16): np.int16, np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}

#: a row with at most this fraction of its words holding an allowed (or a disallowed) token takes a sparse path
_SPARSE = 0.125


def _check_mask(bitmask, nrows: int, indices) -> tuple[np.ndarray, list[int]]:
    mask = np.asarray(bitmask)
    if mask.ndim == 1:
        mask = mask[None, :]
    if mask.ndim != 2 or mask.dtype.kind not in "iu" or mask.dtype.itemsize != 4:
        raise ValueError(f"bitmask must be a [batch, words] int32 array, got {mask.dtype} with shape {mask.shape}")
    if indices is None:
        if mask.shape[0] != nrows:
            raise ValueError(f"bitmask has {mask.shape[0]} rows for {nrows} logits rows; pass indices=")
        return mask, list(range(nrows))
    idx = [int(i) for i in indices]
    if len(idx) != mask.shape[0]:
        raise ValueError(f"{len(idx)} indices for {mask.shape[0]} bitmask rows")
    for i in idx:
        if not -nrows <= i < nrows:
            raise IndexError(f"index {i} is out of range for {nrows} logits rows")
    return mask, idx


def _set_bits(words: np.ndarray, nz: np.ndarray) -> np.ndarray:
    """Positions of the set bits of little-endian 32-bit ``words``, given its nonzero words."""
    bits = np.unpackbits(words[nz].astype("<i4", copy=False).view(np.uint8), bitorder="little")
    pos = np.flatnonzero(bits)
    return nz[pos >> 5] * 32 + (pos & 31)


def apply_bitmask_bits(rows: np.ndarray, ninf, bitmask, indices: Sequence[int] | None = None) -> None:
    """The kernel behind ``apply_token_bitmask_inplace``: ``rows`` is the ``[batch, vocab]``
    integer view of float logits, ``ninf`` the bit pattern of -inf in that view.

    Working on bits keeps allowed values exact and avoids float comparisons. Per row it picks the
    cheapest of three vectorized strategies by the number of allowed tokens: few allowed (save
    them, fill the row with -inf, put them back), few disallowed (scatter -inf to them), or a
    branch-free select over the whole row (x ^ ((x ^ -inf) & keep)).
    """
    mask, idx = _check_mask(bitmask, rows.shape[0], indices)
    vocab = rows.shape[1]
    covered = min(vocab, mask.shape[1] * 32)
    nwords = (covered + 31) // 32
    tail = covered % 32
    sparse = max(1, int(_SPARSE * nwords))
    for r, i in enumerate(idx):
        row = rows[i]
        if covered < vocab:
            row[covered:] = ninf
        if covered == 0:
            continue
        words = mask[r, :nwords]
        if tail:  # bits past the logits' width are not tokens here: clear them, and count them as set
            words = words.copy()
            keep_tail = np.int32(np.uint32((1 << tail) - 1).view(np.int32))
            drop_tail = ~keep_tail
            words[-1] &= keep_tail
        head = row[:covered]
        nz = np.flatnonzero(words)
        if nz.size == 0:
            head.fill(ninf)
            continue
        if nz.size <= sparse:  # few words with allowed tokens: save them, fill, restore
            keep = _set_bits(words, nz)
            saved = head[keep]
            head.fill(ninf)
            head[keep] = saved
            continue
        inv = ~words
        if tail:
            inv[-1] &= ~drop_tail
        nz_inv = np.flatnonzero(inv)
        if nz_inv.size == 0:
            continue  # everything allowed
        if nz_inv.size <= sparse:  # few words with disallowed tokens: scatter -inf to them
            head[_set_bits(inv, nz_inv)] = ninf
            continue
        bits = np.unpackbits(words.astype("<i4", copy=False).view(np.uint8), count=covered, bitorder="little")
        drop = bits.view(np.int8).astype(head.dtype)
        drop -= 1                                    # 0 where allowed, all ones where not
        diff = np.bitwise_xor(head, ninf)
        diff &= drop
        head ^= diff
