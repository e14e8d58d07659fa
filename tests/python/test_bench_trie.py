"""``python -m benchmarks.trie`` (token trie build time and memory) runs and reports a vocabulary."""
from __future__ import annotations

from benchmarks import trie


def test_bench_trie_command(capsys):
    assert trie.main(["--only", "sentencepiece", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert "mistral sentencepiece v3" in out and "32768" in out and "vocab MB" in out
