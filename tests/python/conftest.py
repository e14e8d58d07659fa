"""Fixtures shared by the test files: the real DeepSeek tokenizer from the zoo, a compiler for it,
a small printable-ASCII tokenizer (for limits, where a real vocabulary only adds time), and the
default model. A test file that needs another setup defines a fixture of the same name, which
takes precedence over these."""
from __future__ import annotations

import pytest

import stencil
from generation_model import default_model
from tokenizers_zoo import get


@pytest.fixture(scope="session")
def deepseek():
    """The zoo entry of DeepSeek's tokenizer (``.info`` is its stencil.TokenizerInfo)."""
    return get("deepseek")


@pytest.fixture(scope="module")
def compiler(deepseek):
    """A GrammarCompiler for DeepSeek; one per test file, so caches do not carry between files."""
    return stencil.GrammarCompiler(deepseek.info)


@pytest.fixture(scope="session")
def ascii_tokenizer():
    """One token per printable ASCII character, then ``<eos>``."""
    toks = [bytes([c]) for c in range(32, 127)] + [b"<eos>"]
    return stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1])


@pytest.fixture(scope="session")
def lm():
    """The default model (SmolLM2-135M-Instruct), or a skip without the generation extras."""
    return default_model()
