"""A Triton kernel applying a token bitmask to logits on the GPU, imported only for device tensors.

Triton is optional (``pip install 'stencil-llm[gpu]'``): without it, or for a layout the kernel does not
take, ``stencil.apply_token_bitmask_inplace`` keeps using the torch-ops path of
``stencil.kernels.torch``. The results are the same bits (tests/python/test_bitmask_triton.py
runs the kernel on CPU tensors through Triton's interpreter, ``TRITON_INTERPRET=1``).

One program handles one bitmask row and ``32 * WORDS`` logits. It loads its packed words (one
vector load), then:

- every word all ones: nothing is written, the logits are not touched;
- every word zero: the whole block is stored as -inf, unmasked but for the vocabulary's end, so
  the stores are full-width vector stores; the logits are never read;
- mixed: the block's logits are read and all stored back, -inf where a bit is clear, with whole
  vector loads and stores. Storing -inf under a per-logit mask instead (``MIXED_READ = False``)
  reads nothing but writes partial sectors: on an H100 it took 1.5x (float32) to 3x (bfloat16)
  longer at batch 512 (``python -m benchmarks.gpu --sweep``). A row named twice in
  ``indices`` keeps the masked stores, since two programs reading and storing it would race.

Logits columns past the bitmask's width are disallowed (the words there read as zero) and bits
past the logits' width are ignored, as in the numpy kernel. ``indices[k]`` names the logits row
of bitmask row ``k`` (negative indices count from the end), as in
``stencil.apply_token_bitmask_inplace``.
"""
from __future__ import annotations

import operator
from typing import Sequence

import numpy as np
import torch

from stencil._version import pip_install

try:
    import triton
    import triton.language as tl
except ImportError:  # optional: the torch-ops path is used instead
    triton = None

__all__ = ["apply_token_bitmask_triton", "triton_available", "TRITON_DTYPES"]

#: logits dtypes the kernel takes (float64 stays on the torch-ops path)
TRITON_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

#: bitmask words per program: 1,024 logits, 8 per thread at 4 warps
WORDS = 32
#: warps per program
WARPS = 4
#: blocks with allowed and disallowed logits: read them and store every logit (True), or store
#: -inf under a per-logit mask (False)
MIXED_READ = True


def triton_available() -> bool:
    """Whether triton imported, so that ``apply_token_bitmask_triton`` can run."""
    return triton is not None


if triton is not None:
    @triton.jit
    def _apply_bitmask_kernel(logits_ptr, logits_stride, mask_ptr, mask_stride, mask_words, rows_ptr, vocab,
                              HAS_ROWS: tl.constexpr, WORDS: tl.constexpr, MIXED_READ: tl.constexpr):
        k = tl.program_id(0)
        if HAS_ROWS:
            row = tl.load(rows_ptr + k).to(tl.int64)
        else:
            row = k.to(tl.int64)
        words = tl.program_id(1) * WORDS + tl.arange(0, WORDS)
        live = words * 32 < vocab  # words that hold at least one logit
        w = tl.load(mask_ptr + k.to(tl.int64) * mask_stride + words, mask=words < mask_words, other=0)
        if tl.sum((live & (w != -1)).to(tl.int32), axis=0) > 0:  # else all allowed: no write
            cols = words[:, None] * 32 + tl.arange(0, 32)[None, :]
            dst = logits_ptr + row * logits_stride + cols
            inside = cols < vocab
            if tl.sum((live & (w != 0)).to(tl.int32), axis=0) == 0:
                tl.store(dst, float("-inf"), mask=inside)
            else:
                bit = (w[:, None] >> tl.arange(0, 32)[None, :]) & 1
                if MIXED_READ:  # whole-vector loads and stores: no partial writes
                    x = tl.load(dst, mask=inside)
                    tl.store(dst, tl.where(bit == 0, float("-inf"), x), mask=inside)
                else:
                    tl.store(dst, float("-inf"), mask=inside & (bit == 0))


def apply_token_bitmask_triton(logits: torch.Tensor, bitmask, indices: Sequence[int] | None = None) -> None:
    """``stencil.apply_token_bitmask_inplace`` by the Triton kernel (see there for the arguments).

    ``logits``: a float32, float16 or bfloat16 tensor ``[vocab]`` or ``[batch, vocab]``, contiguous
    along the vocabulary; ``bitmask``: int32 (numpy or torch, copied to the logits' device when it
    is elsewhere; ``PinnedBitmask`` makes that copy asynchronous). On CUDA tensors
    ``apply_token_bitmask_inplace`` calls this itself when triton is installed::

        bm = torch.tensor([[0b101, 0]], dtype=torch.int32, device="cuda")
        logits = torch.zeros(1, 40, device="cuda")
        apply_token_bitmask_triton(logits, bm)     # logits[0, [0, 2]] stay 0, the rest -inf
    """
    if triton is None:
        raise RuntimeError(f"apply_token_bitmask_triton needs triton ({pip_install('gpu')})")
    rows = _check_logits(logits)
    mask = _device_mask(bitmask, logits.device)
    mixed_read = MIXED_READ
    if indices is None:
        if mask.shape[0] != rows.shape[0]:
            raise ValueError(f"bitmask has {mask.shape[0]} rows for {rows.shape[0]} logits rows; pass indices=")
        targets = mask  # unused by the kernel (HAS_ROWS is off); any pointer will do
    else:
        targets, repeats = _row_indices(indices, mask.shape[0], rows.shape[0], logits.device)
        # a row named twice gets both masks: two programs reading and storing it would race
        mixed_read = mixed_read and not repeats
    vocab = rows.shape[1]
    if mask.shape[0] == 0 or vocab == 0:
        return
    grid = (mask.shape[0], -(-vocab // (32 * WORDS)))  # triton.cdiv costs microseconds here
    _apply_bitmask_kernel[grid](rows, rows.stride(0), mask, mask.stride(0), mask.shape[1], targets, vocab,
                                HAS_ROWS=indices is not None, WORDS=WORDS,
                                MIXED_READ=mixed_read, num_warps=WARPS)


def _check_logits(logits) -> torch.Tensor:
    """``logits`` as ``[batch, vocab]`` rows contiguous along the vocabulary, or a clear error."""
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch tensor, got {type(logits).__name__}")
    if logits.dtype not in TRITON_DTYPES:
        raise TypeError(f"logits must be float32, float16 or bfloat16 for the Triton kernel, got {logits.dtype}")
    if logits.dim() not in (1, 2):
        raise ValueError(f"logits must be [vocab] or [batch, vocab], got shape {tuple(logits.shape)}")
    rows = logits.unsqueeze(0) if logits.dim() == 1 else logits
    if rows.shape[1] > 1 and rows.stride(1) != 1:
        raise ValueError("logits must be contiguous along the vocabulary for the Triton kernel")
    return rows


def _device_mask(bitmask, device: torch.device) -> torch.Tensor:
    """The bitmask as a ``[rows, words]`` int32 tensor on ``device`` with unit word stride."""
    if not isinstance(bitmask, torch.Tensor):
        arr = np.asarray(bitmask)
        if arr.dtype.kind not in "iu" or arr.dtype.itemsize != 4:
            raise ValueError(f"bitmask must be a [batch, words] int32 array, got {arr.dtype} with shape {arr.shape}")
        bitmask = torch.from_numpy(np.ascontiguousarray(arr).view(np.int32))
    elif bitmask.dtype != torch.int32:
        if bitmask.element_size() != 4 or bitmask.dtype.is_floating_point:
            raise ValueError(f"bitmask must be a [batch, words] int32 tensor, got {bitmask.dtype}")
        bitmask = bitmask.view(torch.int32)
    if bitmask.dim() == 1:
        bitmask = bitmask.unsqueeze(0)
    if bitmask.dim() != 2:
        raise ValueError(f"bitmask must be [batch, words] or [words], got shape {tuple(bitmask.shape)}")
    if bitmask.device != device:
        bitmask = bitmask.to(device, non_blocking=True)
    if bitmask.shape[1] > 1 and bitmask.stride(1) != 1:
        bitmask = bitmask.contiguous()
    return bitmask


def _row_indices(indices, nmask: int, nrows: int, device: torch.device) -> tuple[torch.Tensor, bool]:
    """``indices`` checked on the host (an index out of range must never reach the kernel, which
    would write outside the logits) and sent to ``device`` as int32; and whether a row repeats."""
    if isinstance(indices, torch.Tensor):
        indices = indices.tolist()
    if isinstance(indices, (str, bytes)):
        raise TypeError(f"indices must be a list of int, got {type(indices).__name__}")
    idx = []
    for i in indices:
        try:
            i = operator.index(i)
        except TypeError:
            raise TypeError(f"indices must be a list of int, got {type(i).__name__}") from None
        j = i + nrows if i < 0 else i
        if not 0 <= j < nrows:
            raise IndexError(f"index {i} is out of range for {nrows} logits rows")
        idx.append(j)
    if len(idx) != nmask:
        raise ValueError(f"{len(idx)} indices for {nmask} bitmask rows")
    return torch.tensor(idx, dtype=torch.int32).to(device, non_blocking=True), len(set(idx)) < len(idx)
