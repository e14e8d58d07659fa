"""Number constraints checked against exact decimal arithmetic on random number texts (signs,
leading zeros in fractions, exponents), whole schemas compiled with the DeepSeek tokenizer and fed
as text. Ranges compare every spelling exactly (exponent forms included); multipleOf accepts
exponent forms only for zero."""
from __future__ import annotations

import random
from decimal import Decimal as D

import pytest
from call_counts import python_calls

import stencil
from stencil.grammar.json.schema import json_schema_grammar


def _texts():
    rnd = random.Random(7)
    out = ["0", "-0", "-0.0", "0.00", "1e2", "0e5", "-0e-3", "1.0", "10", "12.5", "12.50", "100", "1E+2",
           "2.5e1", "1e-05", "7", "-7", "6.999", "7.001", "14", "0.01", "0.015", "3.0e0"]
    for _ in range(700):
        s = rnd.choice(["", "-"])
        k = rnd.random()
        i = str(rnd.randint(0, 30)) if k < 0.4 else (str(rnd.randint(0, 3000)) if k < 0.7 else "0")
        if rnd.random() < 0.5:
            i += "." + "".join(rnd.choice("0123456789") for _ in range(rnd.randint(1, 4)))
        if rnd.random() < 0.15:
            i += rnd.choice("eE") + rnd.choice(["", "+", "-"]) + str(rnd.randint(0, 3))
        out.append(s + i)
    return out


TEXTS = _texts()


def _mantissa(t):
    return D(t.lower().split("e")[0])


def _has_exp(t):
    return "e" in t.lower()


def _in_range(v, lo, lo_x, hi, hi_x):
    return (lo is None or (v > lo if lo_x else v >= lo)) and (hi is None or (v < hi if hi_x else v <= hi))


def _expected_range(t, lo, lo_x, hi, hi_x, integer):
    """Exact: the value in range (and integral for integer), whatever the spelling (-0 equals 0)."""
    v = D(t)
    if integer and v != v.to_integral_value():
        return False
    return _in_range(v, lo, lo_x, hi, hi_x)


def _accepts(compiled, text):
    m = stencil.Matcher(compiled)
    return m.accept_string(text) and m.is_accepting()


RANGES = [
    (D("0.5"), False, D(12), False), (D(-3), True, D("2.25"), True), (None, False, D(0), True),
    (D(0), False, None, False), (D(0), True, None, False), (D("-12.5"), False, D("-0.05"), False),
    (D(10), False, D(10), False), (None, False, D(-7), False), (D(-7), False, None, False),
]


@pytest.mark.parametrize("lo,lo_x,hi,hi_x", RANGES)
@pytest.mark.parametrize("integer", [False, True])
def test_ranges_match_decimal_arithmetic(compiler, lo, lo_x, hi, hi_x, integer):
    schema = {"type": "integer" if integer else "number"}
    if lo is not None:
        schema["exclusiveMinimum" if lo_x else "minimum"] = float(lo) if lo != lo.to_integral_value() else int(lo)
    if hi is not None:
        schema["exclusiveMaximum" if hi_x else "maximum"] = float(hi) if hi != hi.to_integral_value() else int(hi)
    g = compiler.compile_grammar(json_schema_grammar(schema))
    bad = [t for t in TEXTS if _accepts(g, t) != _expected_range(t, lo, lo_x, hi, hi_x, integer)]
    assert bad == []


@pytest.mark.parametrize("d", ["0.01", "2", "7", "2.5", "1.5", "0.25", "8", "3", "25", "0.5", "1",
                               "3.5", "11", "13", "64", "125", "1000", "1024", "2048", "0.125"])
def test_multiple_of_matches_decimal_arithmetic(compiler, d):
    g = compiler.compile_grammar(json_schema_grammar({"type": "number", "multipleOf": float(d) if "." in d else int(d)}))
    dd = D(d)

    def expected(t):
        if _has_exp(t):
            return _mantissa(t) == 0
        q = D(t) / dd
        return q == q.to_integral_value()
    rnd = random.Random(d)
    near = [f"{sign}{dd * k + off}" for k in (1, 2, 7, 13, 977, 123457) for off in (0, 1, D("0.5"))
            for sign in ("", "-")] + [f"{dd * rnd.randint(1, 10**9)}" for _ in range(40)]
    bad = [t for t in TEXTS + near if _accepts(g, t) != expected(t)]
    assert bad == []


def test_multiple_of_beside_a_range_past_the_residue_limit_is_an_error():
    # alone, any multipleOf up to 19 significant digits compiles (test_json_schema_multiple_of.py)
    json_schema_grammar({"type": "integer", "multipleOf": 37})
    with pytest.raises(stencil.GrammarError, match="multipleOf 7919 beside a range"):
        json_schema_grammar({"type": "integer", "multipleOf": 7919, "minimum": 1})


@pytest.mark.parametrize("key", ["multipleOf", "minimum", "exclusiveMaximum"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_bound_that_is_not_finite_is_an_error_naming_it(key, value):
    # Python's json.loads reads NaN and Infinity; a multipleOf of either crashed the reader
    # (decimal.InvalidOperation, TypeError)
    with pytest.raises(stencil.GrammarError, match=f"{key} at .*: must be a finite number"):
        json_schema_grammar({"type": "number", key: value})


def test_draft4_integer_has_no_fraction(compiler):
    g4 = compiler.compile_grammar(json_schema_grammar(
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}))
    g = compiler.compile_grammar(json_schema_grammar({"type": "integer"}))
    assert _accepts(g4, "12") and not _accepts(g4, "12.0") and not _accepts(g4, "1e2")
    assert _accepts(g, "12") and _accepts(g, "12.0") and _accepts(g, "1e2") and not _accepts(g, "12.5")


def test_draft4_boolean_exclusive_bounds(compiler):
    g = compiler.compile_grammar(json_schema_grammar(
        {"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 1, "exclusiveMinimum": True,
         "maximum": 3, "exclusiveMaximum": False}))
    assert [t for t in ("1", "1.0001", "3", "3.0001") if _accepts(g, t)] == ["1.0001", "3"]


def test_const_number_matches_every_spelling_of_the_value(compiler):
    g = compiler.compile_grammar(json_schema_grammar({"const": 2}))
    assert _accepts(g, "2") and _accepts(g, "2.0") and _accepts(g, "2.000")
    assert not _accepts(g, "2.0001") and not _accepts(g, "-2") and not _accepts(g, '"2"')


@pytest.mark.parametrize("schema,text", [
    ({"enum": [9007199254740990]}, "9007199254740990"),
    ({"const": 12345678901234568.0}, "12345678901234568.0"),
    ({"type": "integer", "minimum": 10**17, "maximum": 10**17 + 5}, "100000000000000003"),
    ({"type": "number", "exclusiveMinimum": 123456789012345678, "maximum": 123456789012345679}, "123456789012345678.5"),
    ({"type": "number", "minimum": 5}, "50e-1"),
    ({"type": "number", "minimum": 1e308}, "1.5e308"),
    ({"type": "integer", "minimum": 10, "maximum": 100}, "1.5e1"),
    ({"type": "number", "exclusiveMaximum": -0.5}, "-5001e-4"),
])
def test_masks_under_big_bounds_agree_with_accepting_each_token(schema, text):
    # Both bounds of a range, or a constant's two sides, are bounded repetitions in one
    # intersection: relaxing them for the walk once let through prefixes that no value completes.
    toks = [str(d).encode() for d in range(10)] + [b"90", b"007", b"12", b"1.", b".", b".0", b"5", b"e1", b"-",
                                                   b" ", b"<eos>"]
    toks = list(dict.fromkeys(toks))
    tok = stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1])
    g = stencil.GrammarCompiler(tok).compile_json_schema(schema)
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    for ch in text:
        m.fill_next_token_bitmask(bm, 0)
        for t in range(tok.vocab_size):
            allowed = bool((int(bm[0, t >> 5]) >> (t & 31)) & 1)
            assert allowed == m.fork().accept_token(t), (schema, text, ch, toks[t])
        assert m.accept_string(ch)
    assert m.is_accepting()


@pytest.mark.parametrize("schema,good,bad", [
    ({"type": "number", "minimum": 5}, ["1e1", "5e0", "0.5e1", "50e-1", "5", "5.0", "1E+1"], ["4.9e0", "1e-1", "-5e0", "49e-1"]),
    ({"type": "number", "minimum": 1e308}, ["1e308", "1.5e308", "10e307", "1e400"], ["9.9e307", "1e307", "1"]),
    ({"type": "integer", "minimum": 1, "maximum": 20}, ["1.5e1", "2e1", "10.0", "0.1e2", "100e-1"], ["1.55e1", "2.1e1", "0", "5e-1"]),
    ({"type": "integer"}, ["1.5e1", "-1.5e1", "1e2", "120e-1"], ["1.5e0", "125e-1", "0.5"]),
    ({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}, ["5e-1", "1e-9", "0.5"],
     ["1e0", "0e5", "-1e-9", "10e-1"]),
])
def test_exponent_forms_under_bounds_are_exact(compiler, schema, good, bad):
    g = compiler.compile_grammar(json_schema_grammar(schema))
    assert [t for t in good if not _accepts(g, t)] == []
    assert [t for t in bad if _accepts(g, t)] == []


def test_draft4_integer_bounds_stay_plain(compiler):
    g = compiler.compile_grammar(json_schema_grammar(
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "minimum": 5}))
    assert _accepts(g, "12") and not _accepts(g, "1.2e1") and not _accepts(g, "12.0") and not _accepts(g, "4")


def test_range_beside_multiple_of_keeps_the_exponent_rule(compiler):
    g = compiler.compile_grammar(json_schema_grammar({"type": "number", "minimum": 5, "multipleOf": 2}))
    assert _accepts(g, "6") and not _accepts(g, "4") and not _accepts(g, "6e0") and not _accepts(g, "5")


def test_complement_of_a_range_keeps_working(compiler):
    g = compiler.compile_grammar(json_schema_grammar({"type": "number", "not": {"minimum": 5}}))
    assert _accepts(g, "4.5") and not _accepts(g, "5") and not _accepts(g, "7")


def _integral(v):
    return v == v.to_integral_value()


_EXP_TEXTS = ["50e-1", "49e-1", "1e1", "3e0", "4e0", "-1e1", "-10e-1", "0.3e1", "30e-1", "1.5e1", "2e0", "-2.5e0",
              "1.1e1", "0.1e2", "10e-1", "-0e3", "1e-1", "15e-1", "-3e0", "-30E-1", "0.99999e1"]


@pytest.mark.parametrize("schema,want", [
    ({"type": "number", "not": {"minimum": 5}}, lambda v: v < 5),
    ({"type": "number", "maximum": 10, "not": {"minimum": 5}}, lambda v: v < 5),
    ({"type": "integer", "not": {"maximum": 3}}, lambda v: v > 3 and _integral(v)),
    ({"oneOf": [{"type": "number", "minimum": 0}, {"type": "number", "maximum": 10}]}, lambda v: v < 0 or v > 10),
    ({"type": "number", "anyOf": [{"maximum": -1}, {"minimum": 1, "exclusiveMaximum": 2}]},
     lambda v: v <= -1 or 1 <= v < 2),
    ({"type": "number", "if": {"minimum": 3}, "then": {"type": "integer"}, "else": {"exclusiveMaximum": -2}},
     lambda v: (v >= 3 and _integral(v)) or v < -2),
])
def test_complements_and_unions_of_ranges_are_exact(compiler, schema, want):
    # Each alternative is one exact number range: `not: {minimum: 5}` once accepted 50e-1 (= 5).
    g = compiler.compile_grammar(json_schema_grammar(schema))
    bad = [t for t in TEXTS + _EXP_TEXTS if _accepts(g, t) != want(D(t))]
    assert bad == []


def test_plain_number_spelling_is_the_plain_subset(compiler):
    """number_spelling="plain" (what the CLI generates with): no exponent, integers without a
    fraction, exact on those forms; every text it accepts is valid."""
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 5},
                                               "x": {"type": "number", "exclusiveMinimum": 0.5, "not": {"minimum": 3}}}}
    g = compiler.compile_grammar(json_schema_grammar(schema, number_spelling="plain"))
    ok = ['{"n": 2}', '{"n": 5}', '{"x": 0.51}', '{"x": 2.999}', '{"x": 1}']
    no = ['{"n": 2.0}', '{"n": 2000e-3}', '{"n": 6}', '{"x": 0.5}', '{"x": 3}', '{"x": 1e0}', '{"x": 3.0}']
    assert [t for t in ok if not _accepts(g, t)] == []
    assert [t for t in no if _accepts(g, t)] == []
    m = stencil.Matcher(g)
    assert m.accept_string('{"n": 2') and not m.accept_string("0")   # 20... stays closed
    with pytest.raises(stencil.GrammarError, match="number_spelling"):
        json_schema_grammar(schema, number_spelling="short")


@pytest.mark.parametrize("sign", [1, -1])
def test_regex_ranges_keep_every_digit_of_long_bounds(compiler, sign):
    # beside multipleOf the range is the regex forms, built from the bound's digits: abs() and
    # negation of a Decimal round to the context's 28 digits, so 10^30 + 1 was read as 10^30
    lo, hi = sorted([sign * (10 ** 30 + 1), sign * (10 ** 30 + 3)])
    g = compiler.compile_grammar(json_schema_grammar({"type": "number", "minimum": lo, "maximum": hi,
                                                      "multipleOf": 1}))
    assert [v for v in range(lo - 2, hi + 3) if _accepts(g, str(v))] == list(range(lo, hi + 1))


def test_plain_spelling_keeps_one_integer_without_a_fraction(compiler):
    # a range of one integer is still integer-typed: number_spelling="plain" writes it without a
    # fraction (the union of ranges once widened it to every kind of number: 3.0 came back)
    for schema in ({"type": "integer", "minimum": 3, "maximum": 3}, {"type": "integer", "enum": [3, 4]},
                   {"type": "integer", "minimum": 2.5, "maximum": 3.5}):
        g = compiler.compile_grammar(json_schema_grammar(schema, number_spelling="plain"))
        assert _accepts(g, "3") and not _accepts(g, "3.0"), schema


_D4 = "http://json-schema.org/draft-04/schema#"
_PLAIN_INTEGERS = [
    {"type": "integer", "minimum": 2, "maximum": 2}, {"type": "integer", "minimum": 1, "maximum": 5},
    {"type": "integer", "minimum": 1.5, "maximum": 2.5}, {"type": "integer", "exclusiveMinimum": 1, "maximum": 2},
    {"type": "integer", "minimum": 2}, {"type": "integer", "enum": [2]}, {"type": "integer", "enum": [2, 3]},
    {"type": "integer", "enum": [2, 2.5]}, {"type": "integer", "const": 2}, {"type": "integer", "const": 2.0},
    {"type": "integer", "minimum": 2, "maximum": 2, "multipleOf": 2},
    {"anyOf": [{"type": "integer", "const": 2}, {"type": "integer", "const": 3}]},
    {"oneOf": [{"type": "integer", "const": 2}, {"type": "integer", "const": 3}]},
    {"oneOf": [{"type": "integer", "enum": [2, 4]}, {"type": "number", "enum": [3, 4]}]},
    {"type": "integer", "oneOf": [{"const": 2}, {"const": 3}]},
    {"type": "integer", "anyOf": [{"const": 2}, {"minimum": 5}]},
    {"oneOf": [{"type": "integer", "minimum": 2, "maximum": 2}, {"type": "integer", "minimum": 5}]},
    {"type": "integer", "minimum": 2, "maximum": 2, "not": {"const": 3}},
    {"$schema": _D4, "type": "integer", "enum": [2]},
    {"$schema": _D4, "oneOf": [{"type": "integer", "enum": [2]}, {"type": "integer", "enum": [3]}]},
]


@pytest.fixture(scope="module")
def byte_compiler():
    info = stencil.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b"<eos>"], eos_token_ids=[256])
    return stencil.GrammarCompiler(info)


@pytest.mark.parametrize("schema", _PLAIN_INTEGERS)
def test_plain_spelling_writes_every_integer_typed_shape_without_fraction_or_exponent(byte_compiler, schema):
    # number_spelling="plain" writes integers without a fraction: after "2" of an integer-typed
    # point range, enum or const, alone or in anyOf/oneOf, the mask refuses "." (2.0 is its value
    # in another spelling) and the exponent; c613306's union of ranges widened a range of one
    # integer to every kind of number, and oneOf's constants forgot that they were integers
    g = byte_compiler.compile_json_schema(schema, whitespace="compact", number_spelling="plain")
    m = stencil.Matcher(g)
    assert m.accept_string("2"), schema
    bm = stencil.allocate_token_bitmask(1, 257)
    m.fill_next_token_bitmask(bm, 0)
    allowed = {t for t in range(257) if (int(bm[0, t >> 5]) >> (t & 31)) & 1}
    assert not allowed & {ord("."), ord("e"), ord("E")}, (schema, sorted(chr(t) for t in allowed if t < 256))
    assert 256 in allowed and m.is_accepting(), schema
    for text in ("2.0", "2e0", "20e-1", "0.2e1"):
        assert not _accepts(g, text), (schema, text)


def test_one_of_over_large_integer_enums_reads_in_linear_time():
    # the values of an And (type integer beside an enum) were filtered by evaluating the whole And
    # per value, a walk of the enum each: two enums of 5,000 integers under oneOf took 4 s. Four
    # times the values: ~4x the calls when linear, ~14x under that quadratic filter.
    def calls(n: int) -> int:
        schema = {"oneOf": [{"type": "integer", "enum": list(range(n))},
                            {"type": "integer", "enum": list(range(n * 4 // 5, n * 9 // 5))}]}
        return python_calls(lambda: json_schema_grammar(schema, number_spelling="plain"))
    small, large = calls(500), calls(2000)
    assert large < 6 * small, (small, large)


def _spellings(v: D, rnd: random.Random) -> list[str]:
    """Texts of the value v: the point moved and an exponent moving it back, zeros added."""
    out = []
    for shift in range(-3, 4):
        m = format(v.scaleb(-shift), "f")
        if rnd.random() < 0.3:
            m += "0" if "." in m else ".0"
        out.append(m if shift == 0 else m + rnd.choice("eE") + ("+" if shift > 0 and rnd.random() < 0.5 else "") + str(shift))
    return out


@pytest.mark.parametrize("schema", [
    {"enum": [100, 101, 200, 204, 226, 404, 500, 2, 20]},
    {"type": "integer", "enum": [0, -5, 12, 1200, 3, 30, 300]},
    {"type": "number", "enum": [0.5, 1, 1.5, -2.25, 0.001, 1e3]},
    {"enum": [1, 2.5, "x", None, -0.75], "minimum": 0},
    {"type": "integer", "enum": [1, 2.5, 3.0, 40]},          # 2.5 is no integer
    {"anyOf": [{"enum": [1, 2, 3]}, {"enum": [3, 4, 50]}], "not": {"const": 2}},
    # draft 4: an integer is written without fraction or exponent (the values as plain text)
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "enum": [0, 100, 101, 2.5, 200, -3]},
    {"$schema": "http://json-schema.org/draft-04/schema#", "enum": [0, 100, 2.5, 1e3]},
])
def test_number_enums_match_their_values_in_every_spelling(compiler, schema):
    # an enum of numbers is one number-set expression in the core: every spelling of each value
    # (2e1, 20.0, 0.2E+2 for 20), nothing else, against jsonschema-free decimal arithmetic
    import json

    import jsonschema
    g = compiler.compile_json_schema(schema)
    validator = jsonschema.validators.validator_for(schema)(schema)
    rnd = random.Random(11)
    values = {D(str(x)) for x in (schema.get("enum") or []) if isinstance(x, (int, float))}
    texts = list(TEXTS)
    for v in sorted(values | {D(1), D(3), D(50), D(4), D(2), D("1.5")}):
        texts += _spellings(v, rnd) + _spellings(-v, rnd)
    seen = 0
    for t in texts:
        want = validator.is_valid(json.loads(t))   # (1.0 and 1e2 read as floats: draft 4 tells them apart)
        seen += want
        assert _accepts(g, t) == want, (schema, t)
    assert seen >= 10
