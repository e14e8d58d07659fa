"""The cheap disjointness test of two patterns (regex_positions) is sound: checked against Python's
own matching of every string over a small alphabet, on random anchored and unanchored patterns."""
from __future__ import annotations

import itertools
import random
import re

import pytest

from stencil.grammar.json.schema.lang.strings import pattern_node
from stencil.grammar.regex.positions import positions, surely_disjoint

ALPHABET = "abc:"
STRINGS = ["".join(p) for n in range(7) for p in itertools.product(ALPHABET, repeat=n)]


def _atom(rng):
    return rng.choice(["a", "b", "c", ":", "[ab]", "[^a]", ".", "(a|bc)", "(ab|c:)", "()"])


def _piece(rng, depth):
    if depth > 0 and rng.random() < 0.25:
        inner = "".join(_piece(rng, depth - 1) for _ in range(rng.randint(1, 3)))
        alt = "".join(_piece(rng, depth - 1) for _ in range(rng.randint(0, 2)))
        item = f"({inner}|{alt})" if rng.random() < 0.5 else f"({inner})"
    else:
        item = _atom(rng)
    return item + rng.choice(["", "", "", "?", "*", "+", "{2}", "{0,2}", "{1,3}", "{0}"])


def _pattern(rng):
    body = "".join(_piece(rng, 2) for _ in range(rng.randint(1, 4)))
    return rng.choice(["^", "^", ""]) + body + rng.choice(["$", "$", ""])


def test_disjoint_only_when_no_string_matches_both():
    rng = random.Random(5)
    claimed = 0
    for _ in range(400):
        p, q = _pattern(rng), _pattern(rng)
        if not surely_disjoint(pattern_node(p), pattern_node(q)):
            continue
        claimed += 1
        rp, rq = re.compile(p), re.compile(q)
        both = next((s for s in STRINGS if rp.search(s) and rq.search(s)), None)
        assert both is None, f"{p!r} and {q!r} both match {both!r}"
    assert claimed > 30   # not only trivial verdicts: a tenth of random pairs, each checked


@pytest.mark.parametrize("p,q", [
    ("^name:(en|nl|pt)$", "^displayName:(en|nl|pt)$"),                  # first code point
    ("^contacts:([0-3]{1}):surName$", "^contacts:([0-3]{1}):givenName$"),  # a code point near the end
    ("^[a-z]{3}$", "^[a-z]{4}$"),                                        # lengths
    ("^ab[0-9]+$", "^ab[a-z]+$"),                                        # a class after a fixed prefix
    ("^x", "^(?:y|z)"),
    ("^a[]", "^a"),                                                      # an empty language
])
def test_pairs_told_apart(p, q):
    assert surely_disjoint(pattern_node(p), pattern_node(q))
    assert surely_disjoint(pattern_node(q), pattern_node(p))


@pytest.mark.parametrize("p,q", [
    ("a", "b"),                    # unanchored: "ab" matches both
    ("^a", "b$"),                  # "ab"
    ("^a+$", "^a{3}$"),            # "aaa"
    ("^(ab|a)c$", "^a[bc]"),       # "abc", "ac"
    ("^.{40}x.{40}$", "^.{40}y.{40}$"),  # the difference lies past the positions followed
])
def test_pairs_left_to_the_core(p, q):
    assert not surely_disjoint(pattern_node(p), pattern_node(q))


def test_positions_of_a_fixed_pattern():
    sets, fixed = positions(pattern_node("^a[0-9]b$"))
    assert fixed and sets == (((97, 97),), ((48, 57),), ((98, 98),))
    sets, fixed = positions(pattern_node("^a[0-9]+b$"), from_end=True)
    assert not fixed and sets == (((98, 98),), ((48, 57),))
