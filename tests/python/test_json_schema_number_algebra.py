"""Number constraints under ``not``/``allOf``/``anyOf``/``oneOf``, brute force (issue 40): random
combinations of bounds (inclusive and exclusive), ``type: integer``, ``multipleOf`` and ``const``
are compiled and every spelling of many values (plain, trailing zeros, fractions, exponents in both
cases and signs, negative zero) is fed to the engine and judged by ``json_oracle.Validator``
(jsonschema with numbers read as Decimal, integers by value), which imports nothing of stencil.

The engine must never accept an invalid text, and must accept every valid one except where the
documented subset leaves it out: beside ``multipleOf`` (anywhere in the schema), a non-zero number
written with an exponent may be refused. After each prefix the engine takes, its mask must not be
empty (no dead end). The mask oracle found ``not: {type: integer}`` accepting ``1.5e1`` (15) and
``minimum: 5, not: {type: integer, maximum: 10}`` refusing ``1.25e1`` (12.5).
"""
from __future__ import annotations

import json
import random
from decimal import Decimal as D

import jsonschema
import numpy as np
import pytest

import stencil
from json_oracle import Validator

EOS = 256
BOUNDS = [D("-2.5"), D(-1), D(0), D("0.5"), D(1), D(2), D("3.5"), D(5), D(7), D(10), D("10.5"), D(12)]
DIVISORS = [D("0.5"), D(2), D(3), D("0.25"), D("1.5")]


def _values() -> list[D]:
    out = {D(i) for i in range(-4, 16)} | {D(k) / 4 for k in range(-12, 56)} | {D(k) / 10 for k in range(-5, 30)}
    out |= {D(20), D(100), D(-15), D("12.25"), D("0.125"), D("10.01"), D("4.999")}
    return sorted(out)


def _plain(v: D) -> str:
    s = format(v.normalize(), "f") if v else "0"
    return s[:-2] if s.endswith(".0") else s


def spellings(v: D) -> list[str]:
    """Spellings of ``v``: plain, with trailing zeros, with exponents (mantissas shifted both
    ways, ``E``, ``+``), and for zero its negative forms."""
    p = _plain(v)
    out = [p, p + ("0" if "." in p else ".0"), p + ("00" if "." in p else ".00")]
    for e in (-2, -1, 1, 2):
        m = _plain(v.scaleb(-e))
        out += [f"{m}e{e}", f"{m}E{'+' if e > 0 else ''}{e}"]
    if not v:
        out += ["-0", "-0.0", "-0e1", "0e-2", "0.0E+3", "-0.00e-1"]
    return out


TEXTS = sorted({t for v in _values() for t in spellings(v)})


def _atom(rng: random.Random) -> dict:
    kind = rng.choice(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "integer", "multipleOf",
                       "const", "range"])
    if kind == "integer":
        return {"type": "integer"}
    if kind == "multipleOf":
        return {"multipleOf": rng.choice(DIVISORS)}
    if kind == "const":
        return {"const": rng.choice(BOUNDS)}
    if kind == "range":
        lo, hi = sorted(rng.sample(BOUNDS, 2))
        return {rng.choice(["minimum", "exclusiveMinimum"]): lo, rng.choice(["maximum", "exclusiveMaximum"]): hi}
    return {kind: rng.choice(BOUNDS)}


def _schema(rng: random.Random, depth: int) -> dict:
    if depth == 0 or rng.random() < 0.3:
        s = _atom(rng)
        if rng.random() < 0.3:
            s = {**_atom(rng), **s}
        return s
    op = rng.choice(["not", "allOf", "anyOf", "oneOf", "beside"])
    if op == "not":
        return {"not": _schema(rng, depth - 1)}
    if op == "beside":   # keywords of one object beside a negated or composed subschema
        return {**_atom(rng), rng.choice(["not", "allOf"]): (_schema(rng, depth - 1) if rng.random() < 0.5
                                                             else [_schema(rng, depth - 1)])}
    return {op: [_schema(rng, depth - 1) for _ in range(rng.choice([2, 2, 3]))]}


def _fix(s):
    """``not`` takes a schema, ``allOf`` a list (the generator's ``beside`` may swap them)."""
    if isinstance(s, dict):
        out = {k: _fix(v) for k, v in s.items()}
        if isinstance(out.get("not"), list):
            out["not"] = out["not"][0]
        if isinstance(out.get("allOf"), dict):
            out["allOf"] = [out["allOf"]]
        return out
    return [_fix(x) for x in s] if isinstance(s, list) else s


def schemas(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [{"type": "number", "allOf": [_fix(_schema(rng, rng.choice([1, 2, 3])))]} for _ in range(n)]


def _jsonable(s):
    """Decimals as JSON numbers (ints where integral, so that ``type: integer`` bounds read alike)."""
    return json.loads(json.dumps(s, default=lambda d: int(d) if d == d.to_integral_value() else float(d)))


_VOCAB = stencil.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b"<eos>"], eos_token_ids=EOS)


def _judge(validator, text: str) -> bool:
    return validator.is_valid(json.loads(text, parse_float=D))


def _check(schema: dict, compiler, judge=Validator) -> list:
    """The texts the engine gets wrong, and the prefixes after which its mask is empty (``judge``:
    the validator class, json_oracle's by default)."""
    doc = json.loads(json.dumps(_jsonable(schema)), parse_float=D)
    validator = judge(doc)
    subset = "multipleOf" in json.dumps(_jsonable(schema))
    try:
        g = compiler.compile_json_schema(_jsonable(schema))
    except stencil.GrammarError as e:   # no value at all: then no text may be valid
        assert "no JSON value satisfies" in str(e)
        return [("refused", t) for t in TEXTS if _judge(validator, t)]
    bm = stencil.allocate_token_bitmask(1, EOS + 1)
    wrong, seen = [], set()
    for text in TEXTS:
        m = stencil.Matcher(g)
        taken = 0
        for b in text.encode():
            if not m.accept_token(b):
                break
            taken += 1
            if text[:taken] not in seen:
                seen.add(text[:taken])
                m.fill_next_token_bitmask(bm, 0)
                if not bm.any():
                    wrong.append(("dead end", text[:taken]))
        accepted = taken == len(text) and m.is_accepting()
        valid = _judge(validator, text)
        if accepted and not valid:
            wrong.append(("accepted", text))
        elif valid and not accepted:
            exempt = subset and "e" in text.lower() and D(text) != 0
            if not exempt:
                wrong.append(("refused", text))
    return wrong


@pytest.fixture(scope="module")
def byte_compiler():
    return stencil.GrammarCompiler(_VOCAB)


def test_spellings_cover_the_forms():
    assert {"15e-1", "0.15E+1", "0.15e1", "-0", "-0e1", "0e-2", "1.50", "150E-2"} <= set(TEXTS)
    assert all(D(t) == v for v in _values() for t in spellings(v))


@pytest.mark.parametrize("schema", [
    {"not": {"type": "integer"}},
    {"type": "number", "minimum": 5, "not": {"type": "integer", "maximum": 10}},
    {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 10}, {"type": "number", "minimum": 5, "maximum": 20}]},
    {"type": "number", "not": {"anyOf": [{"type": "integer"}, {"maximum": 3}]}},
    {"type": "number", "maximum": 1, "not": {"type": "integer"}},
    {"type": "number", "minimum": 2, "maximum": 2, "not": {"type": "integer"}},
    {"type": "number", "exclusiveMinimum": 2, "maximum": 3, "not": {"type": "integer"}},
    {"type": "number", "not": {"multipleOf": 3}},
    {"type": "number", "not": {"type": "integer", "multipleOf": 2}},
    {"type": "number", "anyOf": [{"multipleOf": 3}, {"not": {"type": "integer"}}]},
    {"type": "number", "not": {"const": 2}},
    {"type": "number", "not": {"enum": [2, 2.5]}},
], ids=lambda s: json.dumps(s))
def test_known_shapes(byte_compiler, schema):
    assert _check(schema, byte_compiler) == []


@pytest.mark.parametrize("seed", range(8))
def test_random_combinations_against_decimal_semantics(byte_compiler, seed):
    bad = {}
    for schema in schemas(40, seed):
        wrong = _check(schema, byte_compiler)
        if wrong:
            bad[json.dumps(_jsonable(schema))] = wrong[:4]
    assert bad == {}


def test_draft4_integers_are_spelled_plain_under_not(byte_compiler):
    # draft 4: an integer is written without fraction or exponent, so 1e1 and 2.0 are not integers
    g = byte_compiler.compile_json_schema({"$schema": "http://json-schema.org/draft-04/schema#",
                                           "type": "number", "minimum": 5, "not": {"type": "integer"}})
    for text, want in [("1e1", True), ("10.0", True), ("10", False), ("5.5", True), ("4e0", False), ("55e-1", True),
                       ("5", False), ("500e-2", True)]:
        m = stencil.Matcher(g)
        assert (m.accept_string(text) and m.is_accepting()) == want, text
    bm = stencil.allocate_token_bitmask(1, EOS + 1)
    m = stencil.Matcher(g)
    m.accept_string("10")
    m.fill_next_token_bitmask(bm, 0)
    allowed = np.unpackbits(bm[0].view(np.uint8), bitorder="little")[:EOS + 1]
    assert allowed[ord(".")] and allowed[ord("e")] and not allowed[EOS]


_D4 = "http://json-schema.org/draft-04/schema#"


@pytest.mark.parametrize("schema", [
    {"$schema": _D4, "oneOf": [{"type": "integer", "enum": [2, 3]}, {"type": "integer", "enum": [3, 5]}]},
    {"$schema": _D4, "oneOf": [{"type": "integer", "enum": [2]}, {"type": "number", "enum": [2, 5]}]},
    {"$schema": _D4, "oneOf": [{"enum": [2, 2.5]}, {"type": "integer", "minimum": 2, "maximum": 2}]},
    {"$schema": _D4, "type": "integer", "oneOf": [{"enum": [2, 7]}, {"enum": [7, 10]}]},
    {"$schema": _D4, "oneOf": [{"type": "integer", "enum": [2, 3]}, {"type": "integer", "enum": [3]},
                               {"enum": [3, 2.5]}]},
    {"oneOf": [{"type": "integer", "enum": [2, 3]}, {"type": "number", "enum": [3, 5]}]},
], ids=lambda s: json.dumps(s))
def test_one_of_constants_keep_draft4_integers(byte_compiler, schema):
    # oneOf over constants counted each value's branches and rebuilt the values as bare numbers,
    # so draft 4's integer 2 (not 2.0) came back as 2.0 too: judged by jsonschema's draft 4 (an
    # integer there is a Python int: json's numbers with a fraction or exponent are Decimals)
    judge = jsonschema.Draft4Validator if "$schema" in schema else Validator
    assert _check(schema, byte_compiler, judge) == []


def test_draft4_non_integer_constants_are_values(byte_compiler):
    # draft 4's not-integer 2 is 2.0: the constants of a formula were read by value, so that
    # {enum: [2], not: {type: integer}} held no value, its objects were disjoint from those of
    # {enum: [2]}, and oneOf let {"a": 2.0} through as the second branch's alone
    schema = {"$schema": _D4, "oneOf": [
        {"type": "object", "properties": {"a": {"enum": [2], "not": {"type": "integer"}}}, "required": ["a"]},
        {"type": "object", "properties": {"a": {"enum": [2, 3]}}, "required": ["a"]}]}
    g = byte_compiler.compile_json_schema(schema, whitespace="compact")
    for text in ['{"a":2}', '{"a":2.0}', '{"a":20e-1}', '{"a":3}', '{"a":3.0}']:
        m = stencil.Matcher(g)
        want = jsonschema.Draft4Validator(schema).is_valid(json.loads(text, parse_float=D))
        assert (m.accept_string(text) and m.is_accepting()) == want, text


@pytest.mark.parametrize("lo,hi", [(10 ** 30, None), (None, -10 ** 300), (10 ** 6, 2 * 10 ** 6), (999_999, None),
                                   (10 ** 30, 10 ** 30 + 1)])
def test_fractions_far_from_zero(byte_compiler, lo, hi):
    # Far from zero a fractional number is long, and the core's search for a completion of the
    # complemented integer recognizer gave up past 10^25 (a BudgetError at compile time): there
    # the fractions are written without exponent; never an integer, whatever its spelling
    schema = {"type": "number", "not": {"type": "integer"}, **({} if lo is None else {"minimum": lo}),
              **({} if hi is None else {"maximum": hi})}
    g = byte_compiler.compile_json_schema(schema)
    near = lo if lo is not None else hi
    sign = "-" if near < 0 else ""
    digits = str(abs(near))
    assert _judge(Validator(schema), f"{sign}{digits}.5")
    m = stencil.Matcher(g)
    assert m.accept_string(f"{sign}{digits}.5") and m.is_accepting()
    for text in [f"{sign}{digits}", f"{sign}{digits}.0", f"{sign}{digits[0]}.5e{len(digits) - 1}", f"{sign}1e{len(digits) - 1}",
                 "0.5", "1.5"]:
        m = stencil.Matcher(g)
        assert not (m.accept_string(text) and m.is_accepting()), text
    rng = random.Random(str(schema))
    bm = stencil.allocate_token_bitmask(1, EOS + 1)
    for _ in range(20):   # walks that follow the masks end valid, and never meet an empty mask
        m, text = stencil.Matcher(g), ""
        for _ in range(len(digits) + 8):
            m.fill_next_token_bitmask(bm, 0)
            allowed = np.nonzero(np.unpackbits(bm[0].view(np.uint8), bitorder="little")[:EOS + 1])[0]
            assert len(allowed), text
            if EOS in allowed and (rng.random() < 0.3 or len(allowed) == 1):
                assert _judge(Validator(schema), text), text
                break
            t = int(rng.choice([a for a in allowed if a != EOS]))
            assert m.accept_token(t)
            text += chr(t)
