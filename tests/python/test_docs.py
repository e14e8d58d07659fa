"""The documents a user reads first: BENCHMARKS.md stays short (each benchmark's method, command and
latest figures; the full history in docs/benchmarks-history.md) and its links lead somewhere:
every relative link names a file that exists and, with a ``#fragment``, a heading of that file
(GitHub's anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 300


def anchors(markdown: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    fence = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"#{1,6} (.*)", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_anchors_follow_githubs_rules():
    md = "# A b\n## Speculative decoding (issue 25)\n## `stencil serve` under load\n## A b\n```\n# not\n```"
    assert anchors(md) == {"a-b", "speculative-decoding-issue-25", "stencil-serve-under-load", "a-b-1"}


def test_benchmarks_md_is_short():
    lines = (ROOT / "BENCHMARKS.md").read_text().count("\n")
    assert lines <= MAX_LINES, f"BENCHMARKS.md has {lines} lines: move detail to docs/benchmarks-history.md"


@pytest.mark.parametrize("doc", ["BENCHMARKS.md", "README.md"])
def test_relative_links_lead_somewhere(doc):
    text = (ROOT / doc).read_text()
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue   # (http:, https:, mailto:)
        path, _, fragment = target.partition("#")
        file = (ROOT / doc).parent / path if path else ROOT / doc
        if not file.exists():
            broken.append(f"{target}: no file")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file.read_text()):
            broken.append(f"{target}: no heading")
    assert not broken, broken
