"""`python -m benchmarks.compile_gc`: compiles in a process holding what `stencil serve` loads,
with the collector as is, with that frozen and paused as the library compiles; the run prints
the three modes over the same schemas."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("fastapi")


def test_compile_gc_runs_three_modes_over_generated_schemas(capsys):
    import gc

    from benchmarks.compile_gc import main
    assert main(["--count", "12", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "12 schemas (generated, seed 0)" in out
    rows = {line.split("|")[1].strip(): line.split("|") for line in out.splitlines() if line.startswith("| ")}
    assert all(rows[m][2].strip() == "12" for m in ("as is", "frozen", "paused")), out
    assert "frozen / as is:" in out and "paused / as is:" in out
    assert gc.get_freeze_count() == 0   # the run leaves the collector as it found it
