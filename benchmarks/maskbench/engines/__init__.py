"""Engine adapters for the MaskBench harness, one module per engine.

``ENGINES`` names them; ``make_engine(name, tokenizer_name, info, encode)`` builds one (slow: it
converts the tokenizer), ``available(name)`` says whether its package is installed without
importing it. A name ``package.module:Class`` names an adapter class outside this package (an
engine not listed here, or a wrapper used by the harness's tests); it is built as
``Class(tokenizer_name, info, encode)``. A stencil engine's name may end in ``@DIR``: the same
engine run from another build of stencil (DIR holds a ``stencil`` package, e.g. an unpacked wheel
of an earlier commit), so that two builds are compared in one run (``stencil,stencil@/tmp/old``).

Example::

    from tests.support.tokenizers import load_tokenizer
    info, encode = load_tokenizer("deepseek")
    engine = make_engine("stencil", "deepseek", info, encode)
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys

from benchmarks.maskbench.engines.base import CompileError, Session, mask_bit

# name -> (module of the adapter, class, importable package it needs, pip name)
ENGINES = {
    "stencil": ("stencil_engine", "StencilEngine", "stencil", "stencil"),
    # stencil's budget-aware masks (``remaining_tokens``): the tokens left in the instance + 32
    # (a budget near the end, as a generation capped by max_tokens has), and 4,096 (one that
    # never binds). Their TBM is the cost a server pays per row and step.
    "stencil-budget": ("stencil_engine", "StencilBudgetEngine", "stencil", "stencil"),
    "stencil-budget4096": ("stencil_engine", "StencilBudgetEngine", "stencil", "stencil"),
    "llguidance": ("llguidance_engine", "LLGuidanceEngine", "llguidance", "llguidance"),
    "xgrammar": ("xgrammar_engine", "XGrammarEngine", "xgrammar", "xgrammar"),
    "outlines": ("outlines_engine", "OutlinesEngine", "outlines_core", "outlines-core"),
}

__all__ = ["ENGINES", "available", "make_engine", "pip_name", "split_build", "use_build", "CompileError", "Session",
           "mask_bit"]


def split_build(name: str) -> tuple[str, str | None]:
    """(engine, build folder or None): ``"stencil-budget@/tmp/old"`` -> ``("stencil-budget", "/tmp/old")``."""
    base, at, folder = name.partition("@")
    return base, (folder if at else None)


def use_build(folder: str) -> None:
    """Import stencil from ``folder`` in this process from now on (a worker calls it before anything
    imports stencil): the editable install's import redirect is set aside."""
    if "stencil" in sys.modules:
        raise RuntimeError(f"stencil is imported already; cannot switch to the build in {folder}")
    if not os.path.isdir(os.path.join(folder, "stencil")):
        raise ValueError(f"{folder} holds no stencil package (an unpacked wheel has one)")
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "ScikitBuildRedirectingFinder"]
    sys.path.insert(0, folder)


def available(name: str) -> bool:
    """Whether the package engine ``name`` needs is installed (not imported)."""
    name, folder = split_build(name)
    if folder is not None:
        return name.startswith("stencil") and name in ENGINES and os.path.isdir(os.path.join(folder, "stencil"))
    if ":" in name:
        module = name.split(":", 1)[0]
        try:
            return importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            return False
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    try:
        return importlib.util.find_spec(ENGINES[name][2]) is not None
    except (ImportError, ValueError):
        return False


def pip_name(name: str) -> str:
    name = split_build(name)[0]
    return ENGINES[name][3] if name in ENGINES else name.split(":", 1)[0]


def make_engine(name: str, tokenizer_name: str, info, encode=None):
    """Build the adapter of engine ``name`` for a tokenizer of ``tests.support.tokenizers`` (a name with
    ``@DIR``: see use_build, which the caller ran before importing stencil)."""
    full, (name, folder) = name, split_build(name)
    if folder is not None:
        import stencil
        if not os.path.abspath(stencil.__file__).startswith(os.path.abspath(folder) + os.sep):
            raise RuntimeError(f"{full}: stencil was imported from {stencil.__file__} (use_build first)")
        engine = make_engine(name, tokenizer_name, info, encode)
        engine.name, engine.version = full, f"{engine.version} from {folder}"
        return engine
    if ":" in name:
        module, cls = name.split(":", 1)
        return getattr(importlib.import_module(module), cls)(tokenizer_name, info, encode)
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    module, cls, _, _ = ENGINES[name]
    mod = importlib.import_module(f"benchmarks.maskbench.engines.{module}")
    if name == "stencil":
        return getattr(mod, cls)(tokenizer_name, info)
    if name.startswith("stencil-budget"):
        return getattr(mod, cls)(tokenizer_name, info, fixed=int(name[len("stencil-budget"):] or 0) or None)
    return getattr(mod, cls)(tokenizer_name, info, encode)
