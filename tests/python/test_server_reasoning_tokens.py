"""Reasoning tokens in usage (``server.reasoning``): where an output's reasoning ends (a ``<think>``
block, one the prompt opened, Harmony's analysis message) and how many of its tokens hold some of
it, against a brute-force count over real tokenizations."""
from __future__ import annotations

import itertools
import random

import pytest

from stencil.server.reasoning import reasoning_end, reasoning_tokens
from tokenizers_zoo import get


@pytest.mark.parametrize("text,reasoning,fmt,end", [
    ("<think>\nplan\n</think>\n\n{}", True, "generic", len("<think>\nplan\n</think>")),
    ("{}", True, "generic", None),                                  # asked, not written
    ("plan</think>{}", "opened", "generic", len("plan</think>")),
    ("plan still going", "opened", "generic", len("plan still going")),
    ("<think>no end", True, "generic", len("<think>no end")),
    ("<think>x</think>", False, "generic", None),
    ("<|channel|>analysis<|message|>why<|end|><|start|>assistant<|channel|>final<|message|>ok<|return|>", False,
     "harmony", len("<|channel|>analysis<|message|>why<|end|>")),
    ("<|channel|>final<|message|>ok<|return|>", False, "harmony", None),
])
def test_where_the_reasoning_ends(text, reasoning, fmt, end):
    assert reasoning_end(text, reasoning, fmt) == end


def test_the_count_is_the_tokens_that_hold_reasoning_bytes():
    entry = get("cl100k")
    rng = random.Random(0)
    words = ["<think>", "</think>", "plan", " é", "日本", "\n", "{", '"a"', ":", "1", "}", " ", "ok"]
    for _ in range(200):
        text = "".join(rng.choice(words) for _ in range(rng.randint(0, 14)))
        ids = entry.encode_batch([text])[0]
        pieces = [entry.info.token_bytes(t) for t in ids]
        ends = list(itertools.accumulate(len(p) for p in pieces))
        skipped = rng.choice([0, 0, len(pieces[0])]) if pieces else 0
        shown = b"".join(pieces)[skipped:].decode("utf-8", "replace")
        if "\ufffd" in shown:
            continue
        end = reasoning_end(shown, "opened", "generic")
        edge = skipped + len(shown[:end].encode())
        brute = sum(1 for k in range(len(pieces)) if (ends[k] - len(pieces[k])) < edge)
        assert reasoning_tokens(shown, ends, skipped, end) == brute, (text, shown, end)
    assert reasoning_tokens("abc", [1, 2, 3], 0, None) == 0 and reasoning_tokens("", [], 0, 0) == 0
