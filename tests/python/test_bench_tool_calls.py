"""The tool-call benchmark (benchmarks/tool_calls.py) runs end to end on a small setting: its
walks read back every call valid, its compile table has figures, bad family names are refused."""
from __future__ import annotations

import json

import pytest

from benchmarks import tool_calls


def test_a_small_run_reads_every_call_back(tmp_path, capsys):
    out = tmp_path / "tools.json"
    code = tool_calls.main(["--families", "qwen-coder,mistral", "--sizes", "1,3", "--walks", "6", "--repeats", "1",
                            "--budget", "120", "--output", str(out)])
    assert code == 0, capsys.readouterr().err
    figures = json.loads(out.read_text())["families"]
    for fmt in ("qwen-coder", "mistral"):
        walks = figures[fmt]["walks"]
        assert walks["outputs"] == walks["ended"] == walks["streamed_equal"] == 6
        assert walks["calls"] >= 3 and walks["valid"] == walks["calls"]   # the required half calls
        for n in ("1", "3"):
            assert figures[fmt]["compile"][n]["stencil"]["cold_ms"] > 0
    assert "| qwen-coder | 3 |" in capsys.readouterr().out


def test_unknown_families_are_refused():
    with pytest.raises(SystemExit):
        tool_calls.main(["--families", "gemma"])


def test_tool_sets_are_valid_named_functions():
    tools = tool_calls.tool_set(20, seed=3)
    names = [t["function"]["name"] for t in tools]
    assert len(set(names)) == 20 and all(n.replace("_", "").isalnum() for n in names)
    assert tools == tool_calls.tool_set(20, seed=3)
