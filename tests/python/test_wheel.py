"""The wheel the build backend makes (`make wheel`) installs into a fresh virtual environment with
numpy alone, and works there: `stencil --version`, `import stencil` from the installed files (not
the source tree), a compile and a mask, and a clear message for the commands whose extras are not
installed. The wheel is built with the build tools of this environment, reusing the CMake tree of
the editable install (build/), so it costs seconds when the core is up to date."""
from __future__ import annotations

import glob
import importlib.util
import os
import subprocess
import sys
import textwrap
from importlib import metadata

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SMOKE = textwrap.dedent("""
    import os, sys
    import numpy as np
    import stencil
    assert os.path.realpath(stencil.__file__).startswith(os.path.realpath(sys.prefix)), stencil.__file__
    tok = stencil.TokenizerInfo.from_vocab([bytes([c]) for c in range(256)] + [b"<eos>"], eos_token_ids=[256])
    g = stencil.GrammarCompiler(tok).compile_regex(r"[0-9]{4}")
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    m.fill_next_token_bitmask(bm, 0)
    allowed = [t for t in range(tok.vocab_size) if (int(bm[0, t // 32]) >> (t % 32)) & 1]
    assert allowed == list(range(ord("0"), ord("9") + 1)), allowed
    assert all(m.accept_token(ord(c)) for c in "2026") and m.is_accepting()
    print(stencil.__version__)
""")


def _run(cmd, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, env=env, **kw)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> str:
    """A wheel built now from this tree (the test checks the build, so a failed build fails)."""
    missing = [m for m in ("scikit_build_core", "nanobind") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"building a wheel needs the build backend in this environment ({', '.join(missing)} "
                    "missing); `make install` installs it")
    out = tmp_path_factory.mktemp("dist")
    p = _run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation", "-w", str(out)])
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    wheels = glob.glob(str(out / "stencil_llm-*.whl"))
    assert len(wheels) == 1, os.listdir(out)
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> str:
    """A fresh venv (no pip of its own: this environment's pip installs into it) with the wheel and
    numpy, nothing else."""
    folder = tmp_path_factory.mktemp("venv")
    p = _run([sys.executable, "-m", "venv", "--without-pip", str(folder)])
    assert p.returncode == 0, p.stderr
    py = os.path.join(folder, "bin", "python")
    pip = [sys.executable, "-m", "pip", "--python", py, "install", "--no-deps"]
    p = _run([*pip, wheel])
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    p = _run([*pip, "numpy"])
    if p.returncode != 0:  # the one download (pip's cache usually has it)
        pytest.skip(f"numpy could not be installed into the fresh venv (no package index?): {p.stderr[-500:]}")
    return str(folder)


def test_wheel_metadata(wheel):
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("stencil/_core.") and n.endswith(".so") for n in names)
    assert {"stencil/_core.pyi", "stencil/py.typed", "stencil/cli.py"} <= set(names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith(("tests/", "cpp/")) for n in names)
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Name: stencil-llm" in meta and "License-Expression: MIT" in meta
    assert f"Version: {metadata.version('stencil-llm')}" in meta


def test_installed_wheel_runs_in_a_fresh_venv(venv, tmp_path):
    version = metadata.version("stencil-llm")
    exe = os.path.join(venv, "bin", "stencil")
    p = _run([exe, "--version"], cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.strip() == f"stencil {version} (stencil-llm)", p.stdout + p.stderr
    p = _run([os.path.join(venv, "bin", "python"), "-c", SMOKE], cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.strip() == version, p.stdout + p.stderr
    p = _run([exe, "check", os.path.join(ROOT, "examples", "person.schema.json")], cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("OK"), p.stdout + p.stderr


def test_commands_without_their_extras_say_what_to_install(venv, tmp_path):
    exe = os.path.join(venv, "bin", "stencil")
    for argv, extra in ((["serve"], "server"), (["generate", "--regex", "a"], "hf")):
        p = _run([exe, *argv], cwd=tmp_path)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert f"pip install 'stencil-llm[{extra}]'" in p.stderr, p.stderr
