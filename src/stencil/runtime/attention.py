"""Attention kernels that pay no setup per shape, for the decoding passes on an accelerator.

torch's cuDNN attention, which ``scaled_dot_product_attention`` prefers on recent NVIDIA GPUs,
builds a graph for each new shape it meets. Decoding meets one at nearly every pass: the attended
length grows by a token a step, drafts change a pass's width, a new prompt has its own length.
On an H200 (SmolLM2-135M's shape, bfloat16, 4 rows) a step over new lengths cost 98 ms against 29
once they were known, and steps with drafts of new widths 116 against 41; with cuDNN's kernel
excluded, 30 against 26 and 34 against 38 (flash, memory-efficient and math kernels pay no such
setup). So the passes run with it excluded; on a CPU nothing changes.
"""
from __future__ import annotations

import contextlib
from typing import Any, ContextManager

_NOTHING = contextlib.nullcontext()


def shape_stable_attention(device: Any) -> ContextManager:
    """A context for one forward pass on ``device`` (a ``torch.device`` or its name) in which
    ``scaled_dot_product_attention`` does not use cuDNN's kernel (CUDA only; a no-op elsewhere,
    or where this torch has no such choice). torch's backend switches are process-wide: a pass on
    another thread inside the context runs without cuDNN's kernel too (same results, up to rounding).

    Example::

        with shape_stable_attention(model.device):
            out = model(input_ids=ids, past_key_values=cache, use_cache=True)
    """
    if getattr(device, "type", str(device).split(":")[0]) != "cuda":
        return _NOTHING
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        keep = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
        SDPBackend.CUDNN_ATTENTION  # noqa: B018 (older torch: no cuDNN kernel to exclude)
    except (ImportError, AttributeError):
        return _NOTHING
    return sdpa_kernel(keep)
