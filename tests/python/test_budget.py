"""Budget-aware masks (issue 18, part 1): ``fill_next_token_bitmask(..., remaining_tokens=k)``.

A token t is allowed under a budget of k tokens exactly when ``min_completion_tokens()`` after t
is at most k - 1, and that bound must be (a) exact on a vocabulary of single bytes (it equals the
fewest tokens to a complete output, found by a breadth-first search over the matcher with forks),
(b) an upper bound on the real fewest tokens with multi-byte tokens, and (c) enough to finish:
every random walk that starts within its budget ends with a complete output. Where the budget
does not bind, the mask is the unbudgeted one bit for bit. Real tokenizers (SmolLM2's, cl100k)
on JSON Schemas check (c) and the identity at scale: test_budget_real_vocabularies.py.
"""
from __future__ import annotations

import os
import random
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import stencil  # noqa: E402
from budget_helpers import EOS, byte_vocab  # noqa: E402

from tests.support.tight_walks import allowed  # noqa: E402

LISTS = r"""
start: list
list: "[" [item ("," item)*] "]"
item: NUM | list
NUM: /[0-9]+/
"""
PARENS = r"""
start: "(" start* ")" | "x"
%ignore " "
"""
# Special tokens between words: their costs come from the budget apart from the trie's tokens,
# with the mask walk's costs (WORDS) and with the whole-trie walk's (a lexeme with a token limit).
WORDS = r"""
start: WORD (<|sep|> WORD)* <|end|>
WORD: /[a-c]+/
"""
LIMITED_WORDS = r"""
start: w (<|sep|> w)* <|end|>
w[max_tokens=3]: /[a-c]+/
"""
SCHEMA = {"type": "object", "properties": {
    "a": {"type": "integer"},
    "b": {"type": "array", "items": {"enum": ["x", "yy"]}, "minItems": 2, "maxItems": 3}},
    "required": ["a", "b"]}


MULTI = (b"[1", b"],", b"]]", b"[[", b",1", b"12", b"ab", b"cab", b"dd", b"(x", b"x)", b"))", b"( ",
         b'{"a":', b'"b":["', b'x","', b'yy"]}', b'"]}', b",0", b"al", b"pha", b"gamma")


# Strings with a length beside a pattern (intersections: the lexeme ceiling is bounded by the
# length's longest word, the pattern's own bounds tell nothing), and a complement beside them.
# (Each prefix the plain mask allows can still end within the length: see
# test_plain_mask_refuses_a_prefix_the_length_cannot_finish for one that cannot.)
LENGTH_PATTERNS = {
    "maxpat": {"type": "string", "maxLength": 6, "pattern": "^\\d+(\\.\\d+)?-?.*$"},
    "minmaxpat": {"type": "string", "minLength": 3, "maxLength": 7, "pattern": "^[ab]+c?$"},
    "notpat": {"type": "string", "maxLength": 8, "pattern": "^[ab]*$", "not": {"pattern": "ba"}},
}
# A length alone: each count's bound is a coin problem over the tokens' character counts
# (LexemeSearch::text_to_end), no search. (Walked only: every byte is a string character, which
# makes the searching oracles above slow; an undercount leaves walks incomplete.)
MINMAX = {"type": "string", "minLength": 7, "maxLength": 9}
NAMES = ["lists", "regex", "parens", "schema", "choice", "words", "limited_words", *LENGTH_PATTERNS]


def grammars(tok):
    c = stencil.GrammarCompiler(tok)
    return {
        **{k: c.compile_json_schema(v, string_spelling="plain") for k, v in LENGTH_PATTERNS.items()},
        "lists": c.compile_lark(LISTS),
        "regex": c.compile_regex(r"(ab|c)*d{2,3}"),
        "parens": c.compile_lark(PARENS),
        "words": c.compile_lark(WORDS),
        "limited_words": c.compile_lark(LIMITED_WORDS),
        "schema": c.compile_json_schema(SCHEMA, whitespace="compact"),
        "choice": c.compile_choice(["alpha", "be", "gamma"]),
        "minmax": c.compile_json_schema(MINMAX, string_spelling="plain"),
    }


def can_finish(m: stencil.Matcher, bm: np.ndarray, depth: int) -> bool:
    """Whether some `depth` tokens or fewer make the output complete: depth-first over the tokens
    the (unbudgeted, exact) mask allows, with accept and rollback (m has unlimited rollback)."""
    if m.is_accepting():
        return True
    if depth == 0:
        return False
    for t in allowed(m, bm):
        if t == EOS:
            continue
        assert m.accept_token(t)
        ok = can_finish(m, bm, depth - 1)
        m.rollback(1)
        if ok:
            return True
    return False


def oracle_min(m: stencil.Matcher, bm: np.ndarray, cap: int) -> int | None:
    """The fewest tokens that make the output complete (None: more than cap)."""
    return next((d for d in range(cap + 1) if can_finish(m, bm, d)), None)


def random_prefixes(g, tok, bm, rng, walks: int, length: int):
    """Matchers after random allowed (non-EOS) tokens: the states the checks start from. Half
    of the walks are free, half keep within a budget of the bound plus a few tokens, so that
    many states lie close to a complete output (where the oracle can search)."""
    out = []
    for w in range(walks):
        m = stencil.Matcher(g, max_rollback=-1)
        k = m.min_completion_tokens() + rng.randrange(4) if w % 2 else None
        for used in range(rng.randrange(length)):
            if k is not None and used >= k:
                break
            ids = [t for t in allowed(m, bm, None if k is None else k - used) if t != EOS]
            if not ids:
                break
            assert m.accept_token(rng.choice(ids))
            out.append(m.fork())
    return out


@pytest.mark.parametrize("name", NAMES)
def test_bound_is_exact_on_single_bytes(name):
    """With one token per byte the bound is the true fewest tokens to a complete output."""
    tok = byte_vocab()
    g = grammars(tok)[name]
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    rng = random.Random(len(name))
    checked = 0
    for m in random_prefixes(g, tok, bm, rng, walks=25, length=30):
        bound = m.min_completion_tokens()
        assert bound is not None
        if bound > 4:
            continue  # beyond what the oracle's search explores quickly
        assert oracle_min(m, bm, 5) == bound, m.debug_state()
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("name", NAMES)
def test_masks_follow_the_bound_and_refuse_only_what_cannot_fit(name):
    """For budgets around the bound: the budgeted mask is the unbudgeted one minus exactly the
    tokens whose bound after them exceeds k - 1; with single bytes, each refused token really
    cannot finish in k - 1 tokens (oracle) and each allowed one really can."""
    tok = byte_vocab()
    g = grammars(tok)[name]
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    rng = random.Random(7 + len(name))
    refused_checked = 0
    for m in random_prefixes(g, tok, bm, rng, walks=12, length=25):
        d = m.min_completion_tokens()
        full = allowed(m, bm)
        after = {}
        for t in full:
            if t != EOS:
                y = m.fork()
                assert y.accept_token(t)
                after[t] = y
        for k in sorted({max(d, 1), d + 1, d + 2, d + 4}):
            got = allowed(m, bm, k)
            want = [t for t in full if t == EOS or after[t].min_completion_tokens() <= k - 1]
            assert got == want, (k, m.debug_state())
            # Within its budget a state keeps a token: EOS when complete, else a byte on the way.
            assert [t for t in got if t != EOS or d == 0], "a state within its budget must keep a token"
            if k > 4:
                continue
            sample = rng.sample(sorted(after), min(len(after), 6))
            for t in sample:
                if t in got:
                    assert can_finish(after[t], bm, k - 1), (t, k)
                else:
                    assert not can_finish(after[t], bm, k - 1), (t, k)
                    refused_checked += 1
    if name != "choice":  # its walks reach few states that refuse a token near the end
        assert refused_checked > 0


@pytest.mark.parametrize("name", NAMES)
def test_bound_is_an_upper_bound_with_multibyte_tokens(name):
    tok = byte_vocab(MULTI)
    g = grammars(tok)[name]
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    rng = random.Random(11 + len(name))
    checked = 0
    for m in random_prefixes(g, tok, bm, rng, walks=20, length=25):
        bound = m.min_completion_tokens()
        if bound > 4:
            continue
        real = oracle_min(m, bm, bound)
        assert real is not None and real <= bound, (real, bound, m.debug_state())
        checked += 1
    assert checked >= 5, checked   # the bound > 4 states left out, enough were checked


@pytest.mark.parametrize("slack", [0, 1, 3])
@pytest.mark.parametrize("name", [*NAMES, "minmax"])
def test_random_walks_within_budget_end_complete(name, slack):
    """Uniformly random tokens under the budget mask, EOS when drawn: every walk ends complete
    by the last token of its budget."""
    tok = byte_vocab(MULTI)
    g = grammars(tok)[name]
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    rng = random.Random(slack * 101 + len(name))
    for _ in range(30):
        m = stencil.Matcher(g)
        k = m.min_completion_tokens() + slack
        for used in range(k):
            ids = allowed(m, bm, k - used)
            assert ids, m.debug_state()
            t = rng.choice(ids)
            if t == EOS:
                break
            assert m.accept_token(t)
        assert m.is_accepting(), m.debug_state()


def test_large_budget_gives_the_unbudgeted_mask():
    tok = byte_vocab(MULTI)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    bm2 = stencil.allocate_token_bitmask(1, tok.vocab_size)
    for name, g in grammars(tok).items():
        for m in random_prefixes(g, tok, bm, random.Random(3), walks=10, length=30):
            m.fill_next_token_bitmask(bm, 0)
            m.fill_next_token_bitmask(bm2, 0, remaining_tokens=m.min_completion_tokens() + 64)
            assert (bm == bm2).all(), name


def test_budget_zero_and_terminated():
    tok = byte_vocab()
    g = grammars(tok)["choice"]
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    m = stencil.Matcher(g)
    assert m.min_completion_tokens() == 2  # "be"
    assert allowed(m, bm, 0) == []
    assert allowed(m, bm, 2) == [ord("b")]  # "alpha" and "gamma" no longer fit
    assert m.accept_string("be")
    assert m.min_completion_tokens() == 0
    assert allowed(m, bm, 0) == [EOS] and allowed(m, bm, 1) == [EOS]
    assert m.accept_token(EOS)
    assert m.min_completion_tokens() == 0 and allowed(m, bm, 1) == [EOS]


def test_accept_within_a_budget_checks_one_token_as_the_mask_would():
    """``accept_token(t, remaining_tokens=k)``: t taken exactly when the mask under k has it; a
    refusal leaves the matcher as it was (no rollback needed: max_rollback 0); at 0 only EOS."""
    tok = byte_vocab(MULTI)
    g = stencil.GrammarCompiler(tok).compile_lark(LISTS)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    m = stencil.Matcher(g)
    assert m.accept_token(ord("["), 100)
    checked = refused = 0
    for k in range(1, 6):
        got = set(allowed(m, bm, k))
        for t in range(tok.vocab_size):
            y = m.fork()
            before = y.debug_state()
            ok = y.accept_token(t, k)
            assert ok == (t in got), (tok.token_bytes(t), k)
            if not ok:
                assert y.debug_state() == before and y.num_accepted_tokens == 1
                refused += t in set(allowed(m, bm))
            checked += 1
    assert checked == 5 * tok.vocab_size and refused > 0
    assert not m.fork().accept_token(ord("]"), 0)   # the output is not complete: nothing fits
    assert m.accept_token(ord("]"), 1) and not m.fork().accept_token(ord("1"), 0)
    assert m.accept_token(EOS, 0) and m.is_terminated()


def test_bad_budgets_are_errors():
    tok = byte_vocab()
    m = stencil.Matcher(grammars(tok)["choice"])
    bm = stencil.allocate_token_bitmask(2, tok.vocab_size)
    with pytest.raises(ValueError, match="remaining_tokens must be >= 0"):
        m.fill_next_token_bitmask(bm, 0, remaining_tokens=-1)
    with pytest.raises(TypeError):
        m.fill_next_token_bitmask(bm, 0, remaining_tokens="3")
    with pytest.raises(ValueError, match="remaining_tokens must be >= 0"):
        m.accept_token(ord("a"), remaining_tokens=-1)
    with pytest.raises(ValueError, match="remaining_tokens has 1 entries for 2 matchers"):
        stencil.fill_next_token_bitmasks([m, m.fork()], bm, remaining_tokens=[3])


def test_batch_fill_applies_each_budget():
    tok = byte_vocab()
    g = grammars(tok)["choice"]
    ms = [stencil.Matcher(g) for _ in range(3)]
    bm = stencil.allocate_token_bitmask(3, tok.vocab_size)
    stencil.fill_next_token_bitmasks(ms, bm, remaining_tokens=[2, 5, None])
    one = stencil.allocate_token_bitmask(1, tok.vocab_size)
    for i, k in enumerate([2, 5, None]):
        ms[i].fill_next_token_bitmask(one, 0, remaining_tokens=k)
        assert (bm[i] == one[0]).all()
    assert not (bm[0] == bm[2]).all()  # the tight budget refused "a" and "g"
    stencil.fill_next_token_bitmasks(ms, bm, remaining_tokens=5)
    assert (bm[1] == bm[2]).all()


def test_bound_counts_real_tokens():
    """Tokens, not bytes: `alpha` is one token of the vocabulary, so the shortest output of the
    choice costs 1 token where single bytes cost 2 (`be`); without the token it costs 2."""
    tok = stencil.TokenizerInfo.from_vocab([b"<eos>", b"alpha", b"b", b"e", b"a"], eos_token_ids=0)
    m = stencil.Matcher(stencil.GrammarCompiler(tok).compile_choice(["alpha", "be"]))
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    assert m.min_completion_tokens() == 1
    assert allowed(m, bm, 1) == [1] and allowed(m, bm, 2) == [1, 2] and allowed(m, bm) == [1, 2, 4]
    tok = stencil.TokenizerInfo.from_vocab([b"<eos>", b"b", b"e", b"a", b"l", b"p", b"h"], eos_token_ids=0)
    assert stencil.Matcher(stencil.GrammarCompiler(tok).compile_choice(["alpha", "be"])).min_completion_tokens() == 2


def test_no_tokenization_of_a_completion_is_none():
    """A vocabulary that cannot spell any completion from here: no bound is claimed (None), and a
    budget never empties a mask the grammar allows (when no token fits, the cheapest stay; here
    none has a known cost, so all of them)."""
    tok = stencil.TokenizerInfo.from_vocab([b"<eos>", b"ab", b"bc"], eos_token_ids=0)
    m = stencil.Matcher(stencil.GrammarCompiler(tok).compile_regex("abc"))
    assert m.min_completion_tokens() is None
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    assert allowed(m, bm) == [1] and allowed(m, bm, 10) == [1]


@pytest.mark.parametrize("string", [
    {"format": "email"}, {"format": "uri"}, {"pattern": "^[a-z]+@[a-z]+\\.[a-z]{2,}$"},
    {"pattern": "^[A-Z][a-z]+( [A-Z][a-z]+)*$"}, {"format": "date-time"},
])
def test_a_loose_length_beside_a_pattern_costs_what_the_pattern_alone_does(string):
    """A maxLength far above the shortest value does not change the fewest tokens: a length can
    only remove values, so the bound cannot be below the pattern's alone, and the pattern's own
    shortest value fits the length. Each count of the length is a lexer state of its own, too many
    to search token by token (the bound fell back to a path in single bytes: 5 tokens for an
    e-mail of at most 1,024 characters against 3, and tens of milliseconds)."""
    import tokenizers_zoo
    compiler = stencil.GrammarCompiler(tokenizers_zoo.get("cl100k").info)
    alone = stencil.Matcher(compiler.compile_json_schema({"type": "string", **string})).min_completion_tokens()
    assert alone is not None and alone >= 2
    for length in (300, 1024):
        bounded = {"type": "string", **string, "maxLength": length}
        assert stencil.Matcher(compiler.compile_json_schema(bounded)).min_completion_tokens() == alone, length
    # a minLength that the shortest value falls short of costs more (the lifted path does not fit)
    longer = {"type": "string", **string, "minLength": 12, "maxLength": 1024}
    bound = stencil.Matcher(compiler.compile_json_schema(longer)).min_completion_tokens()
    assert bound is not None and bound >= alone


# The same grammars as Python regexes: the oracle below reads them with the `regex` module alone
# (partial matching), nothing of the engine's masks (issue 29, E5: the checks above explore with
# the engine's own unbudgeted mask, so they test the budget relative to it).
REGEX_ORACLES = {"regex": r"(ab|c)*d{2,3}", "choice": r"alpha|be|gamma"}


def regex_min(rx, text: str, cap: int) -> int | None:
    """The fewest single-byte tokens after ``text`` that make a full match (None: more than cap)."""
    frontier = {text}
    for depth in range(cap + 1):
        if any(rx.fullmatch(s) for s in frontier):
            return depth
        frontier = {s + chr(b) for s in frontier for b in range(128) if rx.fullmatch(s + chr(b), partial=True)}
    return None


@pytest.mark.parametrize("name", sorted(REGEX_ORACLES))
def test_masks_and_bound_equal_an_independent_regex_oracle(name):
    """On random walks over single bytes: the mask is exactly the bytes the regex can continue
    with (EOS where it is complete), the bound is the regex's fewest bytes to a match, and the
    budgeted mask keeps exactly the bytes after which the regex can still match in k - 1."""
    regex = pytest.importorskip("regex")
    rx = regex.compile(REGEX_ORACLES[name])
    tok = byte_vocab()
    g = grammars(tok)[name]
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    rng = random.Random(29)
    for _ in range(15):
        m, text = stencil.Matcher(g), ""
        for _ in range(rng.randrange(1, 12)):
            viable = [b for b in range(128) if rx.fullmatch(text + chr(b), partial=True)]
            end = [EOS] if rx.fullmatch(text) else []
            assert allowed(m, bm) == viable + end, text
            need = regex_min(rx, text, 8)
            assert m.min_completion_tokens() == need, text
            for k in sorted({max(need, 1), need + 1, need + 2}):
                fits = [b for b in viable if regex_min(rx, text + chr(b), k - 1) is not None]
                assert allowed(m, bm, k) == fits + end, (text, k)
            if not viable:
                break
            b = rng.choice(viable)
            assert m.accept_token(b)
            text += chr(b)
