"""Budget masks where a ceiling holds for the shorter tokens only (InnerCosts, stage 1b).

A counted string far from its bound fits its pattern's ceiling after any token of a few bytes, but
a long token can spend the room the bound leaves: ``x*(aa|€){2}`` in at most 30 characters costs
five bytes after 26 x's (``aaaa"``), six after 27 (``aa€"``) and seven after 28 (``€€"``: two
characters of three bytes, the only ending that fits), more than any state a shorter token
reaches needs (at most ``€a`` after ``\xe2``... ``a€"``), and none ends it after 29. The oracle shares no code with the engine: the valid bodies are listed
(``x{n}`` and two of ``aa``, ``€`` within the length), and the fewest tokens from a text to a valid one is the
fewest vocabulary tokens that spell a valid text's rest exactly (a shortest path over its bytes).
"""
from __future__ import annotations

import numpy as np
import pytest

import stencil

MAX_CHARS = 30
SCHEMA = {"type": "string", "pattern": "^x*(aa|\u20ac){2}$", "maxLength": MAX_CHARS}
LONG = [b"x" * n for n in (16, 20, 24, 26, 27, 28, 29)]   # tokens of 16 bytes or more: stage 1b's table
VOCAB = [b"<eos>"] + [bytes([b]) for b in range(256)] + LONG
EOS = 0


def valid_texts() -> set:
    """Every valid JSON text of the schema (plain spelling: the body as it is, quoted)."""
    euro = "\u20ac".encode()
    endings = [(a + b, 4 if a == b == b"aa" else 3 if b"aa" in (a, b) else 2) for a in (b"aa", euro) for b in (b"aa", euro)]
    out = set()
    for n in range(MAX_CHARS + 1):
        for body, chars in endings:
            if n + chars <= MAX_CHARS:
                out.add(b'"' + b"x" * n + body + b'"')
    return out


def fewest(rest: bytes, tokens: list) -> float:
    """The fewest tokens whose bytes are exactly `rest` (inf: none)."""
    best = [0.0] + [float("inf")] * len(rest)
    for i in range(1, len(rest) + 1):
        for t in tokens:
            if len(t) <= i and rest[i - len(t):i] == t:
                best[i] = min(best[i], best[i - len(t)] + 1)
    return best[len(rest)]


def true_min(text: bytes, texts: set, tokens: list) -> float:
    return min((fewest(v[len(text):], tokens) for v in texts if v.startswith(text)), default=float("inf"))


@pytest.fixture(scope="module")
def grammar():
    info = stencil.TokenizerInfo.from_vocab(VOCAB, eos_token_ids=EOS)
    return stencil.GrammarCompiler(info).compile_json_schema(SCHEMA, string_spelling="plain")


@pytest.mark.parametrize("xs", [0, 1, 2])
def test_long_tokens_are_costed_apart_from_the_shorter_ones_ceiling(grammar, xs):
    """After `"` and a few x's, under budgets from the fewest tokens up: every token the
    mask keeps leaves a valid text within the tokens left, and a long token is kept exactly where
    it does (the oracle's fewest tokens, here the bound's too: single bytes spell every ending)."""
    texts, tokens = valid_texts(), VOCAB[1:]
    prefix = b'"' + b"x" * xs
    bm = stencil.allocate_token_bitmask(1, len(VOCAB))
    kept_long = refused_long = 0
    least = int(true_min(prefix, texts, tokens))  # (below it, the cheapest tokens stay: not tested here)
    for budget in range(least, least + 6):
        m = stencil.Matcher(grammar)
        assert m.accept_string(prefix.decode())
        m.fill_next_token_bitmask(bm, 0, remaining_tokens=budget)
        words = np.asarray(bm)[0].view(np.uint32)
        allowed = [t for t in range(1, len(VOCAB)) if (int(words[t >> 5]) >> (t & 31)) & 1]
        for t in allowed:  # kept: a valid text within the tokens left after it
            assert true_min(prefix + VOCAB[t], texts, tokens) <= budget - 1, (prefix, budget, VOCAB[t])
        for n, t in enumerate(LONG):
            fits = true_min(prefix + t, texts, tokens) <= budget - 1
            assert (len(VOCAB) - len(LONG) + n in allowed) == fits, (prefix, budget, t)
            kept_long += fits
            refused_long += not fits
    assert kept_long and refused_long  # the budgets kept some long tokens and refused others
