"""Applying bitmasks to torch logits, imported only when torch is used.

CPU tensors share their memory with numpy and go through the numpy kernel of
``stencil.bitmask`` (on an integer view, so bfloat16 works too): the CPU result is the same code
whatever the array library. Tensors on another device (CUDA) use device-side torch ops that never
copy the logits to the host: the bitmask is unpacked on the device with shifts and applied with
``masked_fill_``. ``apply_token_bitmask_torch_ops`` is that device path; it runs on CPU tensors
too, which is how it is tested against the numpy kernel.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from stencil.bitmask import apply_bitmask_bits

__all__ = ["apply_token_bitmask_inplace_torch", "apply_token_bitmask_torch_ops"]

#: float dtype -> integer dtype of the same width, and -inf's bit pattern in it
_INT_VIEW = {
    torch.float16: (torch.int16, -1024),          # 0xFC00
    torch.bfloat16: (torch.int16, -128),          # 0xFF80
    torch.float32: (torch.int32, -8388608),       # 0xFF800000
    torch.float64: (torch.int64, -4503599627370496),  # 0xFFF0000000000000
}


def apply_token_bitmask_inplace_torch(logits: torch.Tensor, bitmask, indices: Sequence[int] | None = None) -> None:
    """``stencil.apply_token_bitmask_inplace`` for torch tensors (see there)."""
    if logits.dtype not in _INT_VIEW:
        raise TypeError(f"logits must be float16, bfloat16, float32 or float64, got {logits.dtype}")
    if logits.dim() not in (1, 2):
        raise ValueError(f"logits must be [vocab] or [batch, vocab], got shape {tuple(logits.shape)}")
    if logits.device.type != "cpu":
        return apply_token_bitmask_torch_ops(logits, bitmask, indices)
    if isinstance(bitmask, torch.Tensor):
        bitmask = bitmask.detach().cpu().numpy()
    rows = logits.detach()
    if rows.dim() == 1:
        rows = rows.unsqueeze(0)
    itype, ninf = _INT_VIEW[logits.dtype]
    if rows.stride(-1) == 1:
        apply_bitmask_bits(rows.view(itype).numpy(), np.array(ninf).astype(_NP[itype])[()], bitmask, indices)
    else:  # a strided view: work on a contiguous copy and write it back
        tmp = rows.contiguous()
        apply_bitmask_bits(tmp.view(itype).numpy(), np.array(ninf).astype(_NP[itype])[()], bitmask, indices)
        rows.copy_(tmp)


_NP = {torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64}


def apply_token_bitmask_torch_ops(logits: torch.Tensor, bitmask, indices: Sequence[int] | None = None) -> None:
    """The device path: unpack on the tensor's device with shifts, then ``masked_fill_``."""
    if not isinstance(bitmask, torch.Tensor):
        bitmask = torch.from_numpy(np.ascontiguousarray(bitmask))
    bitmask = bitmask.to(device=logits.device, dtype=torch.int32, non_blocking=True)
    if bitmask.dim() == 1:
        bitmask = bitmask.unsqueeze(0)
    rows = logits.unsqueeze(0) if logits.dim() == 1 else logits
    vocab = rows.shape[-1]
    covered = min(vocab, bitmask.shape[-1] * 32)
    shifts = torch.arange(32, device=logits.device, dtype=torch.int32)
    allowed = ((bitmask.unsqueeze(-1) >> shifts) & 1).bool().reshape(bitmask.shape[0], -1)[:, :covered]
    if covered < vocab:
        pad = torch.zeros(allowed.shape[0], vocab - covered, dtype=torch.bool, device=logits.device)
        allowed = torch.cat([allowed, pad], dim=-1)
    if indices is None:
        if allowed.shape[0] != rows.shape[0]:
            raise ValueError(f"bitmask has {allowed.shape[0]} rows for {rows.shape[0]} logits rows; pass indices=")
        rows.masked_fill_(~allowed, float("-inf"))
        return
    idx = torch.as_tensor([int(i) for i in indices], dtype=torch.long, device=logits.device)
    if idx.shape[0] != allowed.shape[0]:
        raise ValueError(f"{idx.shape[0]} indices for {allowed.shape[0]} bitmask rows")
    rows[idx] = rows[idx].masked_fill(~allowed, float("-inf"))
