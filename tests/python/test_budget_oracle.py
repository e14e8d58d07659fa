"""Budget-aware masks and ``min_completion_tokens()`` against an oracle that shares no code with
the engine (issue 40, T2): test_budget.py's definition tests compare a budget mask with the bound
of a fork, computed from the same cost tables, so an undercount both share passes them.

The oracle: for each schema a small vocabulary (EOS, the single bytes of an alphabet, multi-byte
tokens of ``POOL`` over it: ``"a``, ``aa``, ``ab"``, ``":``, ``},``...), and the set of texts the
tokens reach (at most ``longest`` bytes, each a prefix of ``shape``: a regex every valid document
of the alphabet matches, so it only keeps the enumeration small; ``test_shapes_hold_every_valid_text``
checks it). A text is valid when ``json_oracle.Oracle`` says so (``json`` and ``jsonschema``,
nothing of stencil). The fewest tokens from a text to a valid one is then a shortest path over
those texts, computed backwards from the longest (``Language.dist``); a text the enumeration
cuts off (``longest``) makes a distance past what fits in the bytes left unknown, never wrong
(``Language.within``). For every state along random walks (free and budgeted):

- (a) the bound is an upper bound of the true fewest tokens (README, "Finishing within
  max_tokens": "an upper bound on the tokens a shortest completion needs"), equal to it on single
  bytes (where a real tokenization of a shortest completion is the completion's bytes), and at
  most the completion's bytes with multi-byte tokens;
- (b) under budgets around the true fewest tokens (min - 1 to min + 2), a kept token leaves a
  completion within the tokens left (where the budget is below the bound, within the bound: "the
  tokens nearest to a complete output stay"), EOS is kept exactly at a valid text, and on single
  bytes the kept tokens are exactly those that leave one;
- (c) random walks under the budget mask that start within the budget end with a text the oracle
  finds valid, within the budget.

The shapes are test_budget.py's: strings counted in characters (``LENGTH_PATTERNS``, ``MINMAX``, a
long minLength), counted and unanchored patterns (a hex id, ``\\d{3}-\\d{2}``, a run of letters),
an enum, numbers (a minimum, a range, multipleOf of integers and decimals), an object whose tokens
cross its keys and values, and a key pattern.
"""
from __future__ import annotations

import functools
import json
import random

import numpy as np
import pytest
import regex

import stencil
from json_oracle import Oracle

EOS = 0

POOL = ('"a', 'a"', "aa", "ab", "ba", "bb", "aaa", 'ab"', 'aa"', '"ab', "aab", '"1', "12", "11", "111", '1"', "1.",
        ".1", "-1", "1-", "-a", "a-", "0x", "x0", "ff", "f0", "0f", "00", "1e", "e1", "05", "50", "5.", ".5",
        "-0", "10", '{"', '":', '":"', '","', ',"', '"}', "a,", ":1", "1,", "1}", "11}", '1,"', '"n":', "aa,")

NUMBER = r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?"
# name: (schema, alphabet, shape, longest): the tokens (besides EOS) are the alphabet's single
# bytes, and the POOL tokens over it
CASES = {
    # test_budget.LENGTH_PATTERNS: lengths beside patterns, a complement beside them
    "maxpat": ({"type": "string", "maxLength": 6, "pattern": "^\\d+(\\.\\d+)?-?.*$"}, '"1.-a', r'"[^"]{0,6}"', 8),
    "minmaxpat": ({"type": "string", "minLength": 3, "maxLength": 7, "pattern": "^[ab]+c?$"}, '"abcx',
                  r'"[abc]{0,7}"', 9),
    "notpat": ({"type": "string", "maxLength": 8, "pattern": "^[ab]*$", "not": {"pattern": "ba"}}, '"abc',
               r'"[ab]{0,8}"', 10),
    # a count of 16 or more beside a complement (the text a marker closes, as Qwen3-Coder's raw
    # parameters): no token ends it where none ends it with the count lifted
    # (LexemeSearch::ends_in_one_token); the valid texts are b*a*
    "notlong": ({"type": "string", "minLength": 17, "maxLength": 22, "not": {"pattern": "ab"}}, '"ab',
                r'"b{0,22}a{0,22}"', 24),
    # test_budget.MINMAX and a long minLength: a count in characters alone (the coin problem)
    "minmax": ({"type": "string", "minLength": 7, "maxLength": 9}, '"ab', r'"[ab]{0,9}"', 11),
    "minlen": ({"type": "string", "minLength": 12, "maxLength": 40}, '"a', r'"a{0,40}"', 42),
    # (the same with multi-byte tokens of characters only: tokens that also hold a quote, which the
    # coin problem leaves out, make the true fewest tokens smaller than the bound, and hide an
    # undercount of the counted characters)
    "minmax_inner": ({"type": "string", "minLength": 7, "maxLength": 9}, '"ab', r'"[ab]{0,9}"', 11),
    "minlen_inner": ({"type": "string", "minLength": 12, "maxLength": 40}, '"a', r'"a{0,40}"', 42),
    # counted and unanchored patterns, a long run of one class, an enum
    "hex": ({"type": "string", "pattern": "^0x[0-9a-f]{8}$"}, '"0xaf', r'"0x[0-9a-f]{0,8}"', 12),
    "ref": ({"type": "string", "pattern": "\\d{3}-\\d{2}"}, '"1-a', r'"[^"]*"', 10),
    "run": ({"type": "string", "pattern": "[a-z0-9]{9}"}, '"a-', r'"[^"]*"', 13),
    "enum": ({"enum": ["aaba", "ab", "bbbb", "abab"]}, '"ab', r'"[ab]{0,4}"', 6),
    # numbers (NUMBER: JSON's syntax): a minimum, a range, multipleOf of an integer and of a decimal
    # (no exponent beside it, but at zero)
    "minimum": ({"type": "integer", "minimum": 0}, "-015.e", NUMBER, 6),
    "range": ({"type": "number", "minimum": 1.5, "maximum": 1000}, "-015.e", NUMBER, 6),
    "multiple": ({"type": "integer", "minimum": -15, "maximum": 120, "multipleOf": 7}, "-01247.e", NUMBER, 5),
    "multiple_dec": ({"type": "number", "minimum": -2.5, "exclusiveMaximum": 10, "multipleOf": 0.5}, "-0125.e",
                     NUMBER, 5),
    # an object (definition order) whose tokens cross its punctuation: a counted string, a number
    "object": ({"type": "object", "properties": {"a": {"type": "string", "minLength": 2, "maxLength": 3},
                                                 "n": {"type": "integer", "minimum": 0, "maximum": 99}},
                "required": ["a", "n"], "additionalProperties": False}, '{}":,an1',
               r'\{"a":"[^"]{0,3}","n":1{1,2}\}', 18),
    # a key pattern: keys of any characters, but those holding two digits
    "key_pattern": ({"type": "object", "minProperties": 1, "additionalProperties": False,
                     "patternProperties": {"[0-9]{2}": {"type": "integer"}}}, '{}":,1', r'\{"[^"]{0,4}":1+\}', 10),
}


def case_tokens(name: str, single_bytes: bool) -> list[bytes]:
    alphabet = CASES[name][1]
    inner = name.endswith("_inner")   # no multi-byte token with a quote
    multi = [t for t in POOL if set(t) <= set(alphabet) and not (inner and '"' in t)]
    return [t.encode() for t in list(alphabet) + ([] if single_bytes else multi)]


class Language:
    """The texts a vocabulary reaches within a case's shape and length, and their distances."""

    def __init__(self, name: str, tokens: list[bytes]):
        schema, _, shape, self.longest = CASES[name]
        self.oracle = Oracle(schema, plain_strings=True)
        self.tokens = tokens
        self.widest = max(len(t) for t in tokens)
        rx = regex.compile(shape)
        seen = {b""}
        frontier = [b""]
        while frontier:
            nxt = []
            for text in frontier:
                for t in tokens:
                    u = text + t
                    if u not in seen and len(u) <= self.longest and rx.fullmatch(u.decode(), partial=True):
                        seen.add(u)
                        nxt.append(u)
            frontier = nxt
        self.valid = {u for u in seen if rx.fullmatch(u.decode()) and self.oracle(u)}
        self.dist = self._distances(seen, tokens)
        singles = [t for t in tokens if len(t) == 1]
        self.byte_dist = self._distances(seen, singles)

    def _distances(self, texts: set, tokens: list[bytes]) -> dict:
        dist: dict = {}
        for u in sorted(texts, key=len, reverse=True):
            if u in self.valid:
                dist[u] = 0
            else:
                after = [dist[u + t] for t in tokens if u + t in dist]
                if after:
                    dist[u] = 1 + min(after)
        return dist

    def within(self, text: bytes, budget: int) -> bool | None:
        """Whether some `budget` tokens or fewer make text valid; None where the enumeration's
        length cuts off what could tell."""
        if budget < 0:
            return False
        if self.dist.get(text, budget + 1) <= budget:
            return True
        if len(text) + budget * self.widest <= self.longest:
            return False
        return None

    def true_min(self, text: bytes) -> int | None:
        """The fewest tokens to a valid text, where the enumeration decides it."""
        d = self.dist.get(text)
        return d if d is not None and self.within(text, d - 1) is False else None


@functools.cache
def setup(name: str, single_bytes: bool):
    tokens = case_tokens(name, single_bytes)
    tok = stencil.TokenizerInfo.from_vocab([b"<eos>", *tokens], eos_token_ids=EOS)
    grammar = stencil.GrammarCompiler(tok).compile_json_schema(CASES[name][0], whitespace="compact",
                                                               string_spelling="plain")
    return tok, grammar, Language(name, tokens)


def allowed(m: stencil.Matcher, bm: np.ndarray, k: int | None = None) -> list[int]:
    m.fill_next_token_bitmask(bm, 0, remaining_tokens=k)
    bits = np.unpackbits(bm[0].view(np.uint8), bitorder="little")
    return [int(i) for i in np.nonzero(bits)[0]]


def states(g, tok, bm, rng: random.Random, walks: int, length: int):
    """(matcher, text) after random allowed tokens: half of the walks free, half within a budget of
    the bound plus a few tokens (so that many states lie near a complete output)."""
    for w in range(walks):
        m = stencil.Matcher(g)
        text = b""
        k = m.min_completion_tokens() + rng.randrange(4) if w % 2 else None
        for used in range(length):
            yield m, text
            if k is not None and used >= k:
                break
            ids = [t for t in allowed(m, bm, None if k is None else k - used) if t != EOS]
            if not ids:
                break
            t = rng.choice(ids)
            assert m.accept_token(t)
            text += tok.token_bytes(t)


NAMES = list(CASES)


@pytest.mark.parametrize("single_bytes", [True, False], ids=["bytes", "multi"])
@pytest.mark.parametrize("name", NAMES)
def test_bound_and_budget_masks_against_the_oracle(name, single_bytes):
    """(a) and (b) of the module docstring at every state of 16 random walks (a state whose bound
    is None must have no completion in the vocabulary: a number only other digits finish)."""
    tok, g, lang = setup(name, single_bytes)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    rng = random.Random(f"{name}-{single_bytes}")
    seen = {"states": 0, "exact": 0, "refused": 0, "kept": 0, "none": 0}
    for m, text in states(g, tok, bm, rng, walks=16, length=30):
        bound = m.min_completion_tokens()
        if bound is None:   # no completion in this vocabulary (a number only other digits finish)
            assert text not in lang.dist, (text, "no bound, but", lang.dist[text], "tokens finish it")
            seen["none"] += 1
            continue
        # (a) an upper bound of the true fewest tokens, exact on single bytes
        assert lang.within(text, bound) is not False, (text, "bound", bound, "below the fewest tokens")
        if single_bytes:
            assert lang.within(text, bound - 1) is not True, (text, "bound", bound, "above the fewest tokens")
        else:
            assert bound <= lang.byte_dist.get(text, bound), (text, "bound", bound, "above a completion's bytes")
        true_min = lang.true_min(text)
        if true_min is None:
            continue
        seen["states"] += 1
        seen["exact"] += bound == true_min
        # (b) budgets around the true fewest tokens
        full = [t for t in allowed(m, bm) if t != EOS]
        for k in range(max(true_min - 1, 1), true_min + 3):
            got = set(allowed(m, bm, k))
            assert (EOS in got) == (text in lang.valid), (text, k, "EOS")
            assert got or not full, (text, k, "a budget emptied the mask")
            for t in full:
                after = text + tok.token_bytes(t)
                fits = lang.within(after, k - 1)
                if t in got:
                    seen["kept"] += 1
                    assert lang.within(after, max(k, bound) - 1) is not False, (
                        text, tok.token_bytes(t), k, "kept, but no completion fits")
                else:
                    seen["refused"] += 1
                if single_bytes and k >= true_min and fits is not None:
                    assert (t in got) == fits, (text, tok.token_bytes(t), k, "fits" if fits else "does not fit")
                elif single_bytes and k < true_min:
                    nearest = (lang.within(after, true_min - 1), lang.within(after, true_min - 2))
                    if None not in nearest:
                        assert (t in got) == (nearest == (True, False)), (text, tok.token_bytes(t), k,
                                                                          "the nearest tokens stay")
    assert seen["states"] >= 20 and seen["kept"] > 0, seen
    if single_bytes:
        assert seen["exact"] == seen["states"], seen


@pytest.mark.parametrize("slack", [0, 1, 3])
@pytest.mark.parametrize("name", NAMES)
def test_budgeted_walks_end_valid_for_the_oracle(name, slack):
    """Uniformly random tokens of the multi-byte vocabulary under the budget mask, EOS when drawn:
    each walk ends, by the last token of its budget, with a text the oracle finds valid."""
    tok, g, lang = setup(name, False)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    rng = random.Random(f"{name}-{slack}")
    for _ in range(20):
        m = stencil.Matcher(g)
        k = m.min_completion_tokens() + slack
        text = b""
        for used in range(k):
            ids = allowed(m, bm, k - used)
            assert ids, text
            t = rng.choice(ids)
            if t == EOS:
                break
            assert m.accept_token(t)
            text += tok.token_bytes(t)
        assert lang.oracle(text), (text, "budget", k)


@pytest.mark.parametrize("name", NAMES)
def test_shapes_hold_every_valid_text(name):
    """The shapes only bound the enumeration: the valid texts near the enumerated ones (one
    character of the alphabet put in, taken out or changed, twice over) match the shape too."""
    schema, alphabet, shape, longest = CASES[name]
    oracle = Oracle(schema, plain_strings=True)
    rx = regex.compile(shape)
    lang = setup(name, True)[2]
    assert lang.valid and all(rx.fullmatch(t.decode()) for t in lang.valid)
    rng = random.Random(name)
    texts = sorted(t.decode() for t in lang.valid)
    near = 0
    for _ in range(3000):
        text = rng.choice(texts)
        for _ in range(2):
            i = rng.randrange(len(text) + 1)
            cut = i + rng.choice([0, 1])   # (0: a character put in; 1: changed, or taken out)
            text = text[:i] + rng.choice(["", *alphabet]) + text[cut:]
        if len(text) <= longest and oracle(text.encode()):
            near += 1
            assert rx.fullmatch(text), text
    assert near >= 50, near


def test_oracle_known_distances():
    """Distances worked out by hand: minLength 12 from the opening quote in single bytes is 12
    characters and the closing quote; with tokens of up to three characters ('"a' and 'aa"' among
    them) it is '"a', three 'aaa', 'aa"'."""
    lang = setup("minlen", True)[2]
    assert lang.dist[b'"'] == 13 and lang.dist[b""] == 14 and lang.dist[b'"' + b"a" * 12] == 1
    lang = setup("minlen", False)[2]
    assert lang.dist[b""] == 5 and lang.dist[b'"' + b"a" * 12] == 1 and lang.dist[b'"' + b"a" * 11] == 1
    assert lang.true_min(b'"' + b"a" * 40) == 1 and b'"' + b"a" * 41 not in lang.dist
    assert json.loads(sorted(lang.valid, key=len)[0]) == "a" * 12


@pytest.mark.parametrize("run,lo,hi", [(8, 120, 120), (3, 40, 40), (8, 100, 110), (5, 0, 60)])
def test_long_counted_strings_against_runs(run, lo, hi):
    """A string of lo to hi characters over a vocabulary of every single byte and runs of 'a' (2 to
    `run` of them): from n characters, the fewest tokens are ceil(max(lo - n, 0) / run) runs and
    the closing quote, worked out here by hand. Under budgets from that minus one to ten over it,
    the mask keeps exactly the runs that leave a completion within the tokens left. The budget lets a lexeme's
    inner tokens through at once where a ceiling over all of them fits (for counted characters,
    the coin problem's most over the counts: LexemeCeiling::state_ceiling); long counts and wide
    budgets are where a ceiling too low would pass, unseen by the small oracle cases above."""
    toks = [b"<eos>"] + [bytes([b]) for b in range(256)] + [b"a" * n for n in range(2, run + 1)]
    tok = stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=EOS)
    g = stencil.GrammarCompiler(tok).compile_json_schema({"type": "string", "minLength": lo, "maxLength": hi},
                                                         whitespace="compact", string_spelling="plain")
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    runs = {toks.index(b"a" * n): n for n in range(1, run + 1)}

    def fewest(n):  # from n characters written after the opening quote
        return -(-max(lo - n, 0) // run) + 1

    rng = random.Random(f"{run}-{lo}-{hi}")
    checked = 0
    for _ in range(3):
        m = stencil.Matcher(g)
        assert m.accept_token(toks.index(b'"'))
        n = 0
        while n < hi:
            assert m.min_completion_tokens() == fewest(n), n
            for k in range(fewest(n) - 1, fewest(n) + 11):
                kept = [t for t in allowed(m, bm, k) if t in runs]
                assert all(n + runs[t] <= hi for t in kept), (n, k)
                if k >= fewest(n):  # exactly the runs that fit (below the bound, the nearest stay)
                    fit = [t for t, r in runs.items() if n + r <= hi and fewest(n + r) <= k - 1]
                    assert sorted(kept) == sorted(fit), (n, k, [runs[t] for t in kept], [runs[t] for t in fit])
                    checked += len(kept)
            step = rng.choice([r for r in range(1, run + 1) if n + r <= hi])
            assert m.accept_token(toks.index(b"a" * step))
            n += step
    assert checked > 100
