"""`python -m benchmarks.compile_gc`: compiles in a process holding what `stencil serve` loads,
with the collector as is and with that frozen; the run prints both modes over the same schemas."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("fastapi")


def test_compile_gc_runs_both_modes_over_generated_schemas(capsys):
    import gc

    from benchmarks.compile_gc import main
    assert main(["--count", "12", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "12 schemas (generated, seed 0)" in out
    rows = [line for line in out.splitlines() if line.startswith("| as is |") or line.startswith("| frozen |")]
    assert len(rows) == 2 and all(row.split("|")[2].strip() == "12" for row in rows), out
    assert "frozen / as is:" in out
    assert gc.get_freeze_count() == 0   # the run leaves the collector as it found it
