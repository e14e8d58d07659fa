"""Applying bitmasks to torch logits, imported only when torch is used.

CPU tensors share their memory with numpy and go through the core's pass of
``stencil.kernels._bits`` (on an integer view, so bfloat16 works too): the CPU result is the same code
whatever the array library. Tensors on another device (CUDA) use device-side torch ops that never
copy the logits to the host: the bitmask is unpacked on the device with shifts and applied with
``masked_fill_``. ``apply_token_bitmask_torch_ops`` is that device path; it runs on CPU tensors
too, which is how it is tested against the numpy kernel. On CUDA, when triton is installed, the
Triton kernel of ``stencil.kernels.triton`` takes its place (float32/float16/bfloat16 logits
contiguous along the vocabulary); the torch ops remain the fallback. ``PinnedBitmask`` keeps a
bitmask in pinned host memory and copies it to the device asynchronously.
"""
from __future__ import annotations

from typing import Sequence

import warnings

import numpy as np
import torch

from stencil.kernels._bits import INT_VIEW, apply_bitmask_bits
from stencil.kernels.numpy import allocate_token_bitmask

__all__ = ["apply_token_bitmask_inplace_torch", "apply_token_bitmask_torch_ops", "PinnedBitmask"]


def apply_token_bitmask_inplace_torch(logits: torch.Tensor, bitmask, indices: Sequence[int] | None = None) -> None:
    """``stencil.apply_token_bitmask_inplace`` for torch tensors (see there)."""
    view = INT_VIEW.get(_dtype_name(logits))
    if view is None:
        raise TypeError(f"logits must be float16, bfloat16, float32 or float64, got {logits.dtype}")
    if logits.dim() not in (1, 2):
        raise ValueError(f"logits must be [vocab] or [batch, vocab], got shape {tuple(logits.shape)}")
    if logits.device.type != "cpu":
        return _apply_on_device(logits, bitmask, indices)
    if isinstance(bitmask, torch.Tensor):
        bitmask = bitmask.detach().cpu().numpy()
    rows = logits.detach()
    if rows.dim() == 1:
        rows = rows.unsqueeze(0)
    itype, ninf = getattr(torch, view[0]), view[1]
    if rows.stride(-1) == 1:
        apply_bitmask_bits(rows.view(itype).numpy(), ninf, bitmask, indices)
    else:  # a strided view: work on a contiguous copy and write it back
        tmp = rows.contiguous()
        apply_bitmask_bits(tmp.view(itype).numpy(), ninf, bitmask, indices)
        rows.copy_(tmp)


def _dtype_name(t: torch.Tensor) -> str:
    """``torch.float32`` -> ``"float32"``: the key of ``INT_VIEW``, shared with numpy."""
    return str(t.dtype).removeprefix("torch.")


#: False once the Triton kernel failed to compile or launch here (warned once): torch ops from then on
_triton_ok = True


def _apply_on_device(logits: torch.Tensor, bitmask, indices) -> None:
    """The Triton kernel on CUDA where it applies, else the torch ops."""
    global _triton_ok
    if _triton_ok and logits.device.type == "cuda" and (logits.shape[-1] < 2 or logits.stride(-1) == 1):
        from stencil.kernels import triton as triton_kernel
        if triton_kernel.triton_available() and logits.dtype in triton_kernel.TRITON_DTYPES:
            try:
                return triton_kernel.apply_token_bitmask_triton(logits, bitmask, indices)
            except (TypeError, ValueError, IndexError):
                raise  # the caller's input: the same error the torch ops would give
            except Exception as e:  # noqa: BLE001 - a Triton that cannot build for this GPU
                _triton_ok = False
                warnings.warn(f"stencil: the Triton bitmask kernel failed ({type(e).__name__}: {e}); "
                              "using torch ops from now on", RuntimeWarning, stacklevel=3)
    return apply_token_bitmask_torch_ops(logits, bitmask, indices)


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


class PinnedBitmask:
    """A reusable ``[max_batch, ceil(vocab_size / 32)]`` bitmask: filled on the host, applied on
    ``device``.

    On CUDA the host buffer lies in pinned (page-locked) memory and ``to_device`` copies its first
    rows into a reused device buffer with ``non_blocking=True``: the copy overlaps with the host's
    work and the kernel that uses it waits for it on the stream. ``host`` waits for the previous
    copy to finish before handing the buffer out for writing. On CPU there is one buffer and no
    copy: ``to_device`` returns a tensor sharing the host array's memory.

    Example::

        pb = PinnedBitmask(64, tok.vocab_size, device="cuda")
        bm = pb.host(len(matchers))                      # numpy int32 [rows, words]
        stencil.fill_next_token_bitmasks(matchers, bm)
        pb.apply(logits)                                 # copy + kernel, logits [rows, vocab] on CUDA
    """

    def __init__(self, max_batch: int, vocab_size: int, device="cpu"):
        self.device = torch.device(device)
        host = allocate_token_bitmask(max_batch, vocab_size)
        self._cuda = self.device.type == "cuda"
        if self._cuda:
            self._host = torch.from_numpy(host).pin_memory()
            self._dev = torch.empty_like(self._host, device=self.device)
            self._copied = torch.cuda.Event()
            self._pending = False
        else:
            self._host = torch.from_numpy(host)
        self._array = self._host.numpy()

    @property
    def shape(self) -> tuple[int, int]:
        rows, cols = self._host.shape
        return rows, cols

    def host(self, rows: int | None = None) -> np.ndarray:
        """The first ``rows`` rows (default all) of the host buffer, as numpy, safe to write: a
        copy to the device still under way is waited for."""
        if self._cuda and self._pending:
            self._copied.synchronize()
            self._pending = False
        return self._array if rows is None else self._array[:self._rows(rows)]

    def to_device(self, rows: int | None = None) -> torch.Tensor:
        """The first ``rows`` rows on the device (on CPU: the host rows themselves, no copy). On
        CUDA the copy is asynchronous on the current stream; the host buffer must not be written
        until ``host`` is called again."""
        n = self.shape[0] if rows is None else self._rows(rows)
        if not self._cuda:
            return self._host[:n]
        dev = self._dev[:n]
        dev.copy_(self._host[:n], non_blocking=True)
        self._copied.record()
        self._pending = True
        return dev

    def apply(self, logits: torch.Tensor, indices: Sequence[int] | None = None) -> None:
        """``apply_token_bitmask_inplace(logits, <the first rows on the device>, indices)``: one row
        per logits row, or one per entry of ``indices``."""
        n = (logits.shape[0] if logits.dim() == 2 else 1) if indices is None else len(indices)
        apply_token_bitmask_inplace_torch(logits, self.to_device(n), indices)

    def _rows(self, rows: int) -> int:
        if not 0 <= rows <= self.shape[0]:
            raise ValueError(f"rows must be in 0..{self.shape[0]} (the buffer's max_batch), got {rows}")
        return rows
