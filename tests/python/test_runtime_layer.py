"""``stencil`` is the library, ``stencil.runtime`` the generation runtime on top of it (issue 42).

The runtime's names left ``stencil.__all__``; the old names (``stencil.generate``,
``stencil.models``, ...) still resolve for one release, to the very same objects, with a
DeprecationWarning (which pyproject's pytest filter turns into an error anywhere else).
"""
import importlib
import os
import subprocess
import sys

import pytest

import stencil
import stencil.runtime

OLD_NAMES = ("generate", "GenerationResult", "SpeculationOptions", "ThinkOptions", "default_model_path",
             "tokenizer_info_for", "ModelError", "stream_partial")
OLD_MODULES = ("models", "sampling", "speculative", "draft_plan", "think", "healing", "aligned", "opportunistic",
               "stops")


def test_the_runtime_exports_what_stencil_exported():
    for name in OLD_NAMES:
        assert name in stencil.runtime.__all__ and hasattr(stencil.runtime, name)
    assert stencil.runtime.generate.__module__ == "stencil.runtime.generate"
    assert issubclass(stencil.runtime.ModelError, stencil.StencilError)


def test_stencil_exports_no_runtime_name():
    assert set(OLD_NAMES) & set(stencil.__all__) == set()
    homes = {name: getattr(getattr(stencil, name), "__module__", "") or "" for name in stencil.__all__}
    assert [n for n, home in homes.items() if home.startswith("stencil.runtime")] == []


@pytest.mark.parametrize("name", OLD_NAMES)
def test_an_old_name_warns_and_is_the_runtime_object(name):
    with pytest.warns(DeprecationWarning, match=rf"stencil\.{name} moved to stencil\.runtime\.{name}"):
        old = getattr(stencil, name)
    assert old is getattr(stencil.runtime, name)


@pytest.mark.parametrize("name", OLD_MODULES)
def test_an_old_module_path_warns_and_is_the_runtime_module(name, monkeypatch):
    monkeypatch.delitem(sys.modules, f"stencil.{name}", raising=False)   # a first import, as a user's
    monkeypatch.delitem(vars(stencil), name, raising=False)
    new = importlib.import_module(f"stencil.runtime.{name}")
    with pytest.warns(DeprecationWarning, match=rf"stencil\.{name} moved to stencil\.runtime\.{name}"):
        assert importlib.import_module(f"stencil.{name}") is new
    monkeypatch.delitem(vars(stencil), name, raising=False)
    with pytest.warns(DeprecationWarning, match=rf"stencil\.{name} moved"):
        assert getattr(stencil, name) is new          # stencil.models without an import of its own


def test_the_old_stream_module_is_the_runtime_one(monkeypatch):
    import stencil.partial
    monkeypatch.delitem(sys.modules, "stencil.partial.stream", raising=False)
    monkeypatch.delitem(vars(stencil.partial), "stream", raising=False)
    with pytest.warns(DeprecationWarning, match=r"stencil\.partial\.stream moved to stencil\.runtime\.stream"):
        from stencil.partial.stream import stream_partial
    assert stream_partial is stencil.runtime.stream_partial


def test_other_names_are_still_missing():
    with pytest.raises(AttributeError, match="no attribute 'generat'"):
        stencil.generat  # noqa: B018


def test_importing_stencil_loads_no_runtime_module():
    code = ("import sys, stencil; print(stencil.__file__); "
            "print(sorted(m for m in sys.modules if m.startswith('stencil.runtime')))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    flags = ["-S"] if sys.flags.no_site else []   # (as this interpreter runs: the same stencil)
    out = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split("\n")[:2] == [stencil.__file__, "[]"]
