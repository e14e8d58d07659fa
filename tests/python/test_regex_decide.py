"""Language questions decided by the core (stencil.grammar.regex.decide): whether two regexes
share a word, and whether a greedy lexer could run past the end of a lexeme. Checked against a
brute-force search over short words with Python's re, on answers a conservative automaton got
wrong (wide bounded repetitions), on UTF-8 lead bytes, and in batches (one scratch build answers
many questions; one the core cannot finish within its work limit answers yes, alone)."""
import itertools
import re

import pytest

from stencil.grammar.deadline import CompileTimeout, compile_deadline
from stencil.grammar.regex import parse_regex
from stencil.grammar.regex.decide import can_run_into, can_run_into_all, intersects, intersects_all, lead_bytes

PATTERNS = ["a", "ab", "a+", "a*b", "(ab)+", "[ab]{2}", "b|ab", "a{2,3}", "(a|b)*c", "c", "ba*", "[abc]", "a?c"]
FOLLOWS = ["a", "b", "c", "ac"]
MAX_LEN = 4


def _words(n: int):
    for k in range(n + 1):
        for t in itertools.product("abc", repeat=k):
            yield "".join(t)


WORDS = list(_words(MAX_LEN))


def _runs_into(x: str, follow: str, y: str) -> bool:
    """Some non-empty w of x, c of follow, s: w·c·s in y (short words only)."""
    xs = [w for w in WORDS if w and re.fullmatch(x, w)]
    return any(re.fullmatch(y, w + c + s) for w in xs for c in follow for s in WORDS)


def _shares(x: str, y: str) -> bool:
    return any(w and re.fullmatch(x, w) and re.fullmatch(y, w) for w in WORDS)


@pytest.mark.parametrize("x", PATTERNS)
def test_can_run_into_matches_brute_force(x):
    for y, follow in itertools.product(PATTERNS, FOLLOWS):
        ranges = tuple((ord(c), ord(c)) for c in follow)
        assert can_run_into(parse_regex(x), ranges, parse_regex(y)) == _runs_into(x, follow, y), (x, follow, y)


@pytest.mark.parametrize("x", PATTERNS)
def test_intersects_matches_brute_force(x):
    for y in PATTERNS:
        assert intersects(parse_regex(x), parse_regex(y)) == _shares(x, y), (x, y)


def test_wide_repetitions_are_decided_exactly():
    """The core answers these exactly; the Python automaton this replaces widened counts over
    24 to "or more" and said yes to both (then the GBNF front-end split lexemes for nothing)."""
    b = ((ord("b"), ord("b")),)
    assert not can_run_into(parse_regex("a{30}"), b, parse_regex("a{31}b"))
    assert can_run_into(parse_regex("a{30}"), b, parse_regex("a{30}bc"))
    assert not intersects(parse_regex("a{30}"), parse_regex("a{31,40}"))
    assert intersects(parse_regex("a{30,}"), parse_regex("a{31,40}"))


def test_lead_bytes():
    """A character that may follow counts by its first UTF-8 byte: é (C3 A9) keeps è (C3 A8) alive."""
    assert lead_bytes([(0x61, 0x62), (0xE9, 0xE9), (0x20AC, 0x20AC), (0x1F600, 0x1F600)]) == \
        [(0x61, 0x62), (0xC3, 0xC3), (0xE2, 0xE2), (0xF0, 0xF0)]
    assert lead_bytes([(0, 0x10FFFF)]) == [(0, 0x7F), (0xC2, 0xDF), (0xE0, 0xEF), (0xF0, 0xF4)]
    e_acute = ((0xE9, 0xE9),)
    assert can_run_into(parse_regex("a"), e_acute, parse_regex("aè"))
    assert can_run_into(parse_regex("a+"), e_acute, parse_regex("a+è"))
    assert not can_run_into(parse_regex("a+"), e_acute, parse_regex("a+€"))
    assert not can_run_into(parse_regex("a"), (), parse_regex("a+"))


def test_batches_answer_like_brute_force():
    """All questions in one build: equal expressions ((x, y) and (y, x), a pattern parsed twice)
    share one probe lexeme, and each question still gets its own answer."""
    pairs = [(x, y) for x in PATTERNS for y in PATTERNS]
    assert intersects_all([(parse_regex(x), parse_regex(y)) for x, y in pairs]) == [_shares(x, y) for x, y in pairs]
    triples = [(x, f, y) for x in PATTERNS for y in PATTERNS for f in FOLLOWS[1:3]]
    asked = [(parse_regex(x), tuple((ord(c), ord(c)) for c in f), parse_regex(y)) for x, f, y in triples]
    assert can_run_into_all(asked) == [_runs_into(x, f, y) for x, f, y in triples]


def test_a_question_past_the_work_limit_answers_yes_alone():
    """Proving [ab]*a[ab]{20} and [ab]*b[ab]{20} disjoint needs about 2^21 states, past the core's
    work limit: that question answers yes (the safe side), the others in its batch exactly."""
    hard = (parse_regex("[ab]*a[ab]{20}"), parse_regex("[ab]*b[ab]{20}"))
    assert intersects_all([(parse_regex("a+"), parse_regex("a")), hard, (parse_regex("a"), parse_regex("b+"))]) \
        == [True, True, False]


def test_the_compile_deadline_ends_the_questions():
    """CompileTimeout is a LimitError, but not a work limit (no BudgetError): it ends the compilation instead of
    turning every question into a yes."""
    hard = (parse_regex("[ab]*a[ab]{20}"), parse_regex("[ab]*b[ab]{20}"))
    with pytest.raises(CompileTimeout), compile_deadline(0.2, "test"):
        intersects_all([hard, hard, (parse_regex("a"), parse_regex("b+"))])
