"""What the ``stencil`` commands share: the bad-input error and the ``--device`` / ``--dtype`` options.

``stencil.cli`` (``generate``) and ``stencil.server.main`` (``serve``) both import it, so neither
imports the other.

Example::

    p = argparse.ArgumentParser()
    add_device_arguments(p)
    device, dtype = device_options(p.parse_args(["--device", "cpu"]))   # ("cpu", "float32")
"""
from __future__ import annotations

__all__ = ["CliError", "add_device_arguments", "device_options"]


class CliError(Exception):
    """Bad input: printed as ``stencil: message`` with exit status 2."""


def add_device_arguments(p) -> None:
    """``--device`` and ``--dtype``, shared by ``generate`` and ``serve``."""
    from stencil.runtime.models import DEVICES, DTYPES
    p.add_argument("--device", choices=DEVICES, default="auto",
                   help="where the model runs; auto: cuda when torch.cuda.is_available(), else cpu (default auto)")
    p.add_argument("--dtype", choices=DTYPES, default="auto",
                   help="the weights' dtype; auto: float32 on the CPU, bfloat16 on CUDA where the GPU has it, "
                        "else float16 (default auto)")


def device_options(args) -> tuple[str, str]:
    """(device, dtype) that ``--device`` and ``--dtype`` resolve to; CliError naming the option
    (cuda without CUDA, an unknown value) before anything loads."""
    from stencil.runtime.models import ModelError, resolve_device, resolve_dtype
    try:
        device = resolve_device(args.device)
    except ModelError as e:
        raise CliError(f"--device {args.device}: {e}") from None
    try:
        return device, resolve_dtype(args.dtype, device)
    except ModelError as e:
        raise CliError(f"--dtype {args.dtype}: {e}") from None
