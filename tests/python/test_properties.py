"""Property-based tests (hypothesis): random regexes, GBNF grammars, JSON Schemas and Matcher call
sequences, each checked against an oracle that shares no code with the engine: Python's `regex`
module (partial matching tells viable prefixes), the character-level Earley recognizer of
grammar_oracle.py, and `jsonschema`.

The example counts are small so that `make test` stays fast; STENCIL_PROPERTY_EXAMPLES=2000 (or
`make test-properties`) runs them long.
"""
from __future__ import annotations

import json
import os

import jsonschema
import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import stencil
from grammar_oracle import CharEarley, accepts_text, matcher_verdict
from stencil.bitmask import bitmask_to_bool
from oracle_grammars import dead_rules
from oracle_grammars import parse_gbnf as read_gbnf   # the oracle's own GBNF parser

import hypothesis_jsonschema   # a dev dependency: missing, it fails the file, not skips it

EXAMPLES = int(os.environ.get("STENCIL_PROPERTY_EXAMPLES", "40"))
# filter_too_much stays on: if most generated grammars were refused (assume), hypothesis fails
PROFILE = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 40,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

ALPHABET = "abc"


def char_vocab(extra=()):
    toks = [c.encode() for c in ALPHABET] + [t.encode() for t in extra] + [b"<eos>"]
    return toks, stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1])


TOKS, TOK = char_vocab(["ab", "ba", "abc", "cc", "bca"])
COMPILER = stencil.GrammarCompiler(TOK, compile_timeout=None)


# -- regexes ------------------------------------------------------------------------------------

_leaves = st.sampled_from(["a", "b", "c", "ab", "[ab]", "[^a]", "[a-c]", "(?:b|ca)", "\\w", "x"])


def _combine(children):
    one = children.map(lambda e: f"(?:{e})")
    quant = st.tuples(one, st.sampled_from(["*", "+", "?", "{0,2}", "{1,3}", "{2}", "{2,}"])).map("".join)
    concat = st.lists(children, min_size=2, max_size=3).map("".join)
    alt = st.lists(children, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")")
    return st.one_of(quant, concat, alt)


REGEXES = st.recursive(_leaves, _combine, max_leaves=8)


def regex_verdict(pattern: str, text: str) -> tuple[int, bool]:
    for k in range(len(text) + 1):
        if regex.fullmatch(pattern, text[:k], partial=True) is None:
            return k - 1, False
    return len(text), regex.fullmatch(pattern, text) is not None


@PROFILE
@given(pattern=REGEXES, texts=st.lists(st.text(ALPHABET, max_size=8), min_size=1, max_size=6))
def test_regex_matches_python_regex(pattern, texts):
    g = COMPILER.compile_regex(pattern)
    for text in texts + [""]:
        assert matcher_verdict(g, text) == regex_verdict(pattern, text), (pattern, text)


@PROFILE
@given(pattern=REGEXES, text=st.text(ALPHABET, max_size=10))
def test_regex_masks_equal_the_partial_match_oracle(pattern, text):
    g = COMPILER.compile_regex(pattern)
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, TOK.vocab_size)
    for k in range(len(text) + 1):
        prefix = text[:k]
        if regex.fullmatch(pattern, prefix, partial=True) is None:
            break
        m.fill_next_token_bitmask(bm, 0)
        got = bitmask_to_bool(bm, TOK.vocab_size)[0]
        for i, t in enumerate(TOKS[:-1]):
            assert got[i] == (regex.fullmatch(pattern, prefix + t.decode(), partial=True) is not None), \
                (pattern, prefix, t)
        assert got[-1] == (regex.fullmatch(pattern, prefix) is not None)   # EOS
        if k < len(text):
            assert m.accept_string(text[k]) == (regex.fullmatch(pattern, text[:k + 1], partial=True) is not None)


# -- GBNF grammars ------------------------------------------------------------------------------

_ATOMS = ['"a"', '"b"', '"ab"', '"ba"', '"c"', '[ab]', '[a-c]', '"abc"', '[^a]']


@st.composite
def gbnf_grammars(draw):
    n = draw(st.integers(1, 3))

    def expr(depth):
        if depth > 1 or draw(st.booleans()):
            e = f"r{draw(st.integers(1, n - 1))}" if n > 1 and draw(st.integers(0, 3)) == 0 \
                else draw(st.sampled_from(_ATOMS))
        else:
            sep = draw(st.sampled_from([" ", " | "]))
            e = "(" + sep.join(expr(depth + 1) for _ in range(draw(st.integers(2, 3)))) + ")"
        return e + draw(st.sampled_from(["", "", "*", "+", "?", "{1,2}"]))

    lines = []
    for i in range(n):
        alts = [" ".join(expr(0) for _ in range(draw(st.integers(1, 3)))) for _ in range(draw(st.integers(1, 2)))]
        lines.append(f"{'root' if i == 0 else f'r{i}'} ::= " + " | ".join(alts))
    return "\n".join(lines)


@PROFILE
@given(text=gbnf_grammars(), inputs=st.lists(st.text(ALPHABET, max_size=7), min_size=1, max_size=8))
def test_gbnf_matches_the_character_earley_oracle(text, inputs):
    ours = read_gbnf(text)
    dead = dead_rules(ours)
    try:
        g = COMPILER.compile_gbnf(text, unused="ignore")
    except stencil.GrammarError as e:
        # refused exactly when a reachable rule can never finish (the oracle decides that)
        assert dead, (text, str(e))
        assume(False)
    assert not dead, (text, "accepted, though these rules can never finish:", dead)
    oracle = CharEarley(ours)
    for s in inputs + [""]:
        assert matcher_verdict(g, s) == oracle.run(list(s)), (text, s)


# -- JSON Schema --------------------------------------------------------------------------------

_scalars = st.sampled_from([
    {"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {"type": "null"}, {"type": "number"},
    {"type": "string", "maxLength": 3}, {"type": "string", "minLength": 2}, {"type": "string", "pattern": "^[ab]+$"},
    {"type": "integer", "minimum": -3, "maximum": 40}, {"type": "integer", "exclusiveMinimum": 5},
    {"enum": ["x", 1, None]}, {"const": "k"}, {"type": "string", "format": "date"},
])


def _schema_combine(children):
    props = st.dictionaries(st.sampled_from(["a", "b", "c d", "é"]), children, max_size=3)
    obj = st.builds(lambda p, req, add: {"type": "object", "properties": p, "required": sorted(req & set(p)),
                                         "additionalProperties": add},
                    props, st.sets(st.sampled_from(["a", "b", "c d", "é"])), st.booleans())
    arr = st.builds(lambda it, lo, extra: {"type": "array", "items": it, "minItems": lo, "maxItems": lo + extra},
                    children, st.integers(0, 2), st.integers(0, 3))
    any_of = st.lists(children, min_size=2, max_size=3).map(lambda xs: {"anyOf": xs})
    return st.one_of(obj, arr, any_of)


SCHEMAS = st.recursive(_scalars, _schema_combine, max_leaves=6)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-50, 50) | st.text("abcé", max_size=4) | st.sampled_from(["x", "k", "ab"]),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(["a", "b", "c d", "é", "z"]), kids,
                                                               max_size=3),
    max_leaves=8)


@PROFILE
@given(schema=SCHEMAS, data=st.data())
def test_json_schema_accepts_exactly_the_valid_documents(schema, data):
    compiled = COMPILER_UTF8.compile_json_schema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    instances = [data.draw(hypothesis_jsonschema.from_schema(schema)) for _ in range(3)]
    for inst in instances:
        assert accepts_text(compiled, json.dumps(inst, ensure_ascii=False)), (schema, inst)
    for _ in range(6):
        value = data.draw(JSON_VALUES)
        text = json.dumps(value, ensure_ascii=False)
        assert accepts_text(compiled, text) == validator.is_valid(value), (schema, text)


_UTF8_TOKS = [bytes([c]) for c in range(32, 127)] + ["é".encode(), b"<eos>"]
COMPILER_UTF8 = stencil.GrammarCompiler(
    stencil.TokenizerInfo.from_vocab(_UTF8_TOKS, eos_token_ids=[len(_UTF8_TOKS) - 1]), compile_timeout=None)


# -- Matcher API call sequences -----------------------------------------------------------------

MACHINE_PATTERN = "(?:ab|a[bc]*d)*(?:c{1,3}|bd)e?"
MACHINE_TOKS = [b"a", b"b", b"c", b"d", b"e", b"ab", b"bc", b"cd", b"abd", b"ccc", b"de", b"x", b"<eos>"]
MACHINE_TOK = stencil.TokenizerInfo.from_vocab(MACHINE_TOKS, eos_token_ids=[len(MACHINE_TOKS) - 1])
MACHINE_GRAMMAR = stencil.GrammarCompiler(MACHINE_TOK).compile_regex(MACHINE_PATTERN)
EOS = len(MACHINE_TOKS) - 1


def _viable(text: str) -> bool:
    return regex.fullmatch(MACHINE_PATTERN, text, partial=True) is not None


def _complete(text: str) -> bool:
    return regex.fullmatch(MACHINE_PATTERN, text) is not None


class MatcherMachine(RuleBasedStateMachine):
    """The Matcher against a model: the list of accepted tokens and whether EOS ended it."""

    def __init__(self):
        super().__init__()
        self.m = stencil.Matcher(MACHINE_GRAMMAR, max_rollback=-1)
        self.tokens: list[int] = []
        self.ended = False
        self.bm = stencil.allocate_token_bitmask(1, MACHINE_TOK.vocab_size)

    def text(self, tokens=None) -> str:
        return b"".join(MACHINE_TOKS[t] for t in (self.tokens if tokens is None else tokens)).decode()

    def allowed(self, t: int) -> bool:
        if self.ended:
            return False
        if t == EOS:
            return _complete(self.text())
        return _viable(self.text() + MACHINE_TOKS[t].decode())

    @rule(t=st.integers(0, len(MACHINE_TOKS) - 1))
    def accept(self, t):
        if self.ended:
            with pytest.raises(ValueError, match="terminated"):
                self.m.accept_token(t)
            return
        expected = self.allowed(t)
        assert self.m.accept_token(t) == expected
        if expected:
            self.tokens.append(t)
            self.ended = t == EOS

    @rule(n=st.integers(0, 6))
    def rollback(self, n):
        if n > len(self.tokens):
            with pytest.raises(ValueError):
                self.m.rollback(n)
            return
        self.m.rollback(n)
        del self.tokens[len(self.tokens) - n:]
        self.ended = bool(self.tokens) and self.tokens[-1] == EOS

    @rule()
    def fill(self):
        self.m.fill_next_token_bitmask(self.bm, 0)
        got = bitmask_to_bool(self.bm, MACHINE_TOK.vocab_size)[0]
        # after EOS the mask keeps EOS alone (a finished row of a batch pads with it)
        expected = [t == EOS if self.ended else self.allowed(t) for t in range(len(MACHINE_TOKS))]
        assert got.tolist() == expected, self.text()

    @rule(draft=st.lists(st.integers(0, len(MACHINE_TOKS) - 1), max_size=5))
    def validate(self, draft):
        if self.ended:
            return
        n = 0
        tokens, ended = list(self.tokens), False
        for t in draft:
            if ended:
                break
            ok = _complete(self.text(tokens)) if t == EOS else _viable(self.text(tokens) + MACHINE_TOKS[t].decode())
            if not ok:
                break
            tokens.append(t)
            ended = t == EOS
            n += 1
        assert self.m.validate_tokens(draft) == n
        assert self.m.num_accepted_tokens == len(self.tokens)   # unchanged

    @precondition(lambda self: not self.ended)
    @rule()
    def forced(self):
        for t in self.m.forced_tokens():
            assert [u for u in range(len(MACHINE_TOKS)) if self.allowed(u)] == [t]
            self.tokens.append(t)
            self.m.accept_token(t)
            self.ended = t == EOS
            if self.ended:
                break

    @rule()
    def fork_agrees(self):
        f = self.m.fork()
        bm = stencil.allocate_token_bitmask(2, MACHINE_TOK.vocab_size)
        stencil.fill_next_token_bitmasks([self.m, f], bm)
        assert np.array_equal(bm[0], bm[1])
        assert f.num_accepted_tokens == len(self.tokens)

    @rule()
    def reset(self):
        self.m.reset()
        self.tokens, self.ended = [], False

    @invariant()
    def state_agrees(self):
        assert self.m.num_accepted_tokens == len(self.tokens)
        assert self.m.is_terminated() == self.ended
        assert self.m.is_accepting() == (self.ended or _complete(self.text()))


MatcherMachine.TestCase.settings = settings(max_examples=max(EXAMPLES // 2, 10), stateful_step_count=30,
                                            deadline=None, derandomize=EXAMPLES <= 40)
test_matcher_api_sequences = MatcherMachine.TestCase

