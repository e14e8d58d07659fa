"""Fixtures shared by the test files: the real DeepSeek tokenizer from the zoo, a compiler for it,
a small printable-ASCII tokenizer (for limits, where a real vocabulary only adds time), and the
default model. A test file that needs another setup defines a fixture of the same name, which
takes precedence over these. Converted GGUF models are cached in a folder of the test session,
not in the user's cache. :func:`child_env` is the environment of a child Python process that imports
test helpers."""
from __future__ import annotations

import os
import pathlib
import shutil

import pytest

#: Under pytest-xdist (``make test`` runs a worker per core), each worker's torch gets its share of
#: the cores: OpenMP's threads of two workers contending for two cores made a generation test 12x
#: slower. Set before torch loads; server children inherit it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _share = (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ["OMP_NUM_THREADS"] = str(max(1, _share))

import stencil  # noqa: E402
from ci_skips import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401,E402  (hooks: skips fail under CI)
from generation_model import default_model  # noqa: E402
from tokenizers_zoo import get  # noqa: E402

#: the repository root: tests.support (which the tokenizer zoo imports) is importable from there
ROOT = pathlib.Path(__file__).resolve().parents[2]


def child_env(**extra: str) -> dict:
    """os.environ for a child Python process that may import the tokenizer zoo or tests.support:
    pytest's ``pythonpath`` (pyproject.toml) reaches only this process, so the repository root
    goes on the child's PYTHONPATH. ``extra`` adds variables. Example::

        subprocess.run([sys.executable, "probe.py"], env=child_env(PYTHONUNBUFFERED="1"), cwd=HERE)
    """
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path, **extra)


@pytest.fixture(scope="session", autouse=True)
def model_cache_dir(tmp_path_factory):
    """The converted-model cache of this session (``$STENCIL_CACHE_DIR``, which subprocesses
    inherit): the first load of the default model converts it, later ones read the folder. Removed
    at the end (a converted model is 540 MB)."""
    from stencil.runtime.models import CACHE_DIR_ENV
    folder = tmp_path_factory.mktemp("model-cache")
    old = os.environ.get(CACHE_DIR_ENV)
    os.environ[CACHE_DIR_ENV] = str(folder)
    yield str(folder)
    if old is None:
        os.environ.pop(CACHE_DIR_ENV, None)
    else:
        os.environ[CACHE_DIR_ENV] = old
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def deepseek():
    """The zoo entry of DeepSeek's tokenizer (``.info`` is its stencil.TokenizerInfo)."""
    return get("deepseek")


@pytest.fixture(scope="module")
def compiler(deepseek):
    """A GrammarCompiler for DeepSeek; one per test file, so caches do not carry between files."""
    return stencil.GrammarCompiler(deepseek.info)


@pytest.fixture(scope="module")
def env(deepseek, compiler):
    """(zoo entry, compiler, a one-row bitmask) for DeepSeek: what the grammar tests feed text
    through (grammar_oracle.accepts)."""
    return deepseek, compiler, stencil.allocate_token_bitmask(1, deepseek.info.vocab_size)


@pytest.fixture(scope="session")
def ascii_tokenizer():
    """One token per printable ASCII character, then ``<eos>``."""
    toks = [bytes([c]) for c in range(32, 127)] + [b"<eos>"]
    return stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1])


@pytest.fixture(scope="session")
def lm():
    """The default model (SmolLM2-135M-Instruct), or a skip without the generation extras."""
    return default_model()
