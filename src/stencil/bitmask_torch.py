"""Applying bitmasks to torch logits (CPU and CUDA), imported only when torch is used."""
from __future__ import annotations

from typing import Sequence

import torch


def _unpack(bitmask: torch.Tensor, vocab: int) -> torch.Tensor:
    shifts = torch.arange(32, device=bitmask.device, dtype=torch.int32)
    bits = (bitmask.to(torch.int32).unsqueeze(-1) >> shifts) & 1
    allowed = bits.reshape(bitmask.shape[0], -1).bool()
    if allowed.shape[-1] >= vocab:
        return allowed[:, :vocab]
    pad = torch.zeros(allowed.shape[0], vocab - allowed.shape[-1], dtype=torch.bool, device=allowed.device)
    return torch.cat([allowed, pad], dim=-1)


def apply_token_bitmask_inplace_torch(logits: torch.Tensor, bitmask, indices: Sequence[int] | None = None) -> None:
    if not isinstance(bitmask, torch.Tensor):
        bitmask = torch.from_numpy(bitmask)
    bitmask = bitmask.to(logits.device)
    if bitmask.dim() == 1:
        bitmask = bitmask.unsqueeze(0)
    rows = logits.unsqueeze(0) if logits.dim() == 1 else logits
    allowed = _unpack(bitmask, rows.shape[-1])
    if indices is None:
        if allowed.shape[0] != rows.shape[0]:
            raise ValueError(f"bitmask has {allowed.shape[0]} rows for {rows.shape[0]} logits rows; pass indices=")
        rows.masked_fill_(~allowed, float("-inf"))
    else:
        idx = torch.as_tensor(list(indices), dtype=torch.long, device=logits.device)
        rows[idx] = rows[idx].masked_fill(~allowed, float("-inf"))
