"""The corpus run (benchmarks.corpus): real workers on real MaskBench files (tests/data), and its counts."""
from __future__ import annotations

import pytest

from data_paths import MASKBENCH as DATA
from benchmarks import corpus


def test_corpus_run_prints_zero_counts(tmp_path, capsys):
    code = corpus.main([DATA, "--limit", "2", "--output", str(tmp_path), "--time-limit", "120"])
    out = capsys.readouterr().out
    assert code == 0
    assert "crashes / hangs / invalid accepted: 0 / 0 / 0" in out
    assert "schemas 2," in out
    # --summary reads the same folder back
    assert corpus.main(["--summary", str(tmp_path)]) == 0
    assert "schemas 2," in capsys.readouterr().out


def test_counts_and_failure():
    recs = [{"engine": "stencil", "status": "passing", "invalid_accepted": 0, "valid_rejected": 0},
            {"engine": "stencil", "status": "crash"},
            {"engine": "stencil", "status": "invalidation_error", "invalid_accepted": 2, "valid_rejected": 1},
            {"engine": "llguidance", "status": "timeout"}]
    c = corpus.summarize(recs)
    assert c["schemas"] == 3 and c["crashes"] == 1 and c["hangs (timeouts)"] == 0
    assert c["invalid accepted"] == 2 and c["valid rejected"] == 1
    assert corpus.verdict(c).startswith("crashes / hangs / invalid accepted: 1 / 0 / 2")
    assert corpus.failed(c)
    assert not corpus.failed(corpus.summarize(recs[:1]))


def test_other_engines_are_refused():
    with pytest.raises(SystemExit):
        corpus.main([DATA, "--engines", "llguidance"])
