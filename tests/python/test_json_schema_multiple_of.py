"""multipleOf of any size (issue 26): every compile ends within its deadline, and the multiples are
enforced exactly by the core's residue automaton (``GrammarBuilder.re_multiple_of``), built as a
text reaches its states, so 0.123456789 (123,456,789 residues), 1e30 and 1e-30 all compile in
milliseconds. A multipleOf the automaton cannot hold (more than 19 significant digits) is a clear
GrammarError naming the keyword and the value.

Masks are checked against an oracle written here with exact fractions, independent of the core:
on a byte vocabulary every byte is allowed exactly where the text so far plus that byte can still
end as a multiple, and random walks over the DeepSeek tokenizer check every number-character
token of each mask the same way."""
from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import stencil
from stencil.bitmask import bitmask_to_bool

BYTES = [bytes([i]) for i in range(256)] + [b"<eos>"]
EOS = 256
NUM_CHARS = set(b"0123456789.-+eE")

# -- the oracle -------------------------------------------------------------------------------------
_PLAIN = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")
_INT_PREFIX = re.compile(r"-?(0|[1-9][0-9]*)?")
_FRAC_PREFIX = re.compile(r"-?(0|[1-9][0-9]*)\.([0-9]*)")
_ZERO_EXP = re.compile(r"-?0(\.0+)?[eE][+-]?[0-9]*")


class Multiples:
    """Texts of the numbers that are multiples of ``d`` (within [lo, hi] where given; integral
    with ``integer``), written without exponent, or zero with one (the engine's spelling rule)."""

    def __init__(self, d, integer=False, lo=None, hi=None, lo_x=False, hi_x=False):
        self.d = Fraction(Decimal(str(d)))
        self.integer, self.lo, self.hi, self.lo_x, self.hi_x = integer, lo, hi, lo_x, hi_x

    def _value_ok(self, v: Fraction) -> bool:
        if (v / self.d).denominator != 1 or (self.integer and v.denominator != 1):
            return False
        if self.lo is not None and (v < self.lo or (self.lo_x and v == self.lo)):
            return False
        return self.hi is None or (v < self.hi or (not self.hi_x and v == self.hi))

    def complete(self, s: str) -> bool:
        if re.fullmatch(r"-?0(\.0+)?[eE][+-]?[0-9]+", s):
            return self._value_ok(Fraction(0))
        return bool(_PLAIN.fullmatch(s)) and self._value_ok(Fraction(s))

    def viable(self, s: str) -> bool:
        """Some continuation of s (possibly none) is complete: unbounded only (bounds go through
        the byte-level check, where complete() on short extensions suffices)."""
        assert self.lo is None and self.hi is None
        if _ZERO_EXP.fullmatch(s):
            return True
        if _INT_PREFIX.fullmatch(s):
            return True   # 0 is a multiple; a non-zero integer part can always be extended to one
        m = _FRAC_PREFIX.fullmatch(s)
        if not m:
            return False
        i, f = m.group(1), m.group(2)
        base = Fraction(int(i + f), 10 ** len(f))
        if self.integer:   # the value is the integer part, the fraction digits must stay zeros
            return set(f) <= {"0"} and self._value_ok(base)
        q = 0
        while 10 ** q % self.d.denominator:   # d * 10^q is integral: digits past the q-th are zeros
            q += 1
        for k in range(1 if not f else 0, max(q - len(f), 1) + 1):
            # B + Z, Z < 10^k, must be a multiple of a where d * 10^(|f|+k) = a / b (reduced)
            unit = Fraction(1, 10 ** (len(f) + k))
            big_b = int(base / unit)
            a = (self.d / unit).numerator
            if (-big_b) % a < 10 ** k:
                return True
        return False


# -- fixtures and helpers -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def byte_tok():
    return stencil.TokenizerInfo.from_vocab(BYTES, eos_token_ids=[EOS])


@pytest.fixture(scope="module")
def byte_compiler(byte_tok):
    return stencil.GrammarCompiler(byte_tok, compile_timeout=5)


def _allowed(matcher, vocab_size) -> np.ndarray:
    bm = stencil.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bm, 0)
    return bitmask_to_bool(bm, vocab_size)[0]


def _accepts(compiled, text: str) -> bool:
    m = stencil.Matcher(compiled)
    return m.accept_string(text) and m.is_accepting()


# -- every compile ends within its deadline -------------------------------------------------------
DEADLINE_SCHEMAS = [
    {"type": "number", "multipleOf": 1e30, "minimum": 0, "maximum": 1e31},
    {"type": "integer", "multipleOf": 1e30},
    {"type": "number", "multipleOf": 1e30, "exclusiveMinimum": -1e31, "exclusiveMaximum": 1e31},
    {"type": "number", "multipleOf": 1e308, "maximum": 1.7e308},
    {"type": "number", "multipleOf": 1.7976931348623157e308},
    {"type": "number", "multipleOf": 1e-30, "minimum": 0, "maximum": 1},
    {"type": "number", "multipleOf": 5e-324},
    {"type": "number", "multipleOf": 0.123456789},
    {"type": "integer", "multipleOf": 0.123456789, "minimum": -1e20, "exclusiveMaximum": 1e20},
    {"type": "number", "multipleOf": 123456789012345678, "exclusiveMinimum": 0},
    {"type": "number", "multipleOf": 10 ** 40 + 1},
    {"type": "number", "multipleOf": 3 * 10 ** 400},
    {"type": "number", "not": {"multipleOf": 1e30}},
    {"anyOf": [{"multipleOf": 7e25}, {"multipleOf": 1.1e-20}]},
]


def _compile_in_child(schema) -> str:
    code = (
        "import json, sys, stencil\n"
        "info = stencil.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)], eos_token_ids=[0])\n"
        "c = stencil.GrammarCompiler(info, compile_timeout=1)\n"
        "try:\n"
        "    c.compile_json_schema(json.loads(sys.stdin.read()))\n"
        "    print('grammar')\n"
        "except stencil.GrammarError as e:\n"
        "    print('error', e)\n")
    r = subprocess.run([sys.executable, "-c", code], input=json.dumps(schema), capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.parametrize("schema", DEADLINE_SCHEMAS, ids=lambda s: json.dumps(s)[:60])
def test_multiple_of_compiles_end_within_the_deadline(schema):
    # a child process, so a hang fails this test (TimeoutExpired) instead of hanging the suite
    import time
    t = time.monotonic()
    out = _compile_in_child(schema)
    assert time.monotonic() - t < 10   # interpreter start included; the compile itself has 1 s
    assert out == "grammar" or "multipleOf" in out, out


def test_too_many_significant_digits_is_a_clear_error():
    from stencil.grammar.json.schema import json_schema_grammar
    with pytest.raises(stencil.GrammarError, match=r"multipleOf 1\d+: more than 19 significant digits"):
        json_schema_grammar({"type": "number", "multipleOf": 10 ** 40 + 1})


def test_re_multiple_of_refuses_bad_input():
    b = stencil.GrammarBuilder()
    for bad in ("0", "-2", "abc", "1" * 20, "1e30"):
        with pytest.raises(stencil.GrammarError, match="multiple"):
            b.re_multiple_of(bad)


# -- exact values -----------------------------------------------------------------------------------
def test_suite_case_0_123456789_is_enforced(byte_compiler):
    g = byte_compiler.compile_json_schema({"type": "number", "multipleOf": 0.123456789})
    d = Decimal("0.123456789")
    for k in (0, 1, 2, 3607, 3803, 123456789, 10 ** 12 + 7):
        assert _accepts(g, str(d * k)) and _accepts(g, "-" + str(d * k))
    for t in ("0.12345678", "0.1234567891", "1", "1e+308", "0.24691357"):
        assert not _accepts(g, t), t
    gi = byte_compiler.compile_json_schema({"type": "integer", "multipleOf": 0.123456789})
    assert _accepts(gi, "123456789") and _accepts(gi, "246913578.0") and not _accepts(gi, "1e+308")
    assert not _accepts(gi, "0.123456789") and not _accepts(gi, "1000000000")


@pytest.mark.parametrize("schema, yes, no", [
    ({"type": "integer", "multipleOf": 1e30}, ["0", "-0", "1" + "0" * 30, "-7" + "0" * 30, "12" + "0" * 31, "0e7",
                                              "1" + "0" * 30 + ".000"],
     ["1" + "0" * 29, "1" + "0" * 29 + "1" + "0" * 29, "1e30", "10" * 15]),
    ({"type": "number", "multipleOf": 3e30}, ["3" + "0" * 30, "12" + "0" * 30, "-9" + "0" * 30],
     ["1" + "0" * 30, "4" + "0" * 30, "3" + "0" * 29]),
    ({"type": "number", "multipleOf": 1e-30}, ["0." + "0" * 29 + "1", "12.5", "-0." + "0" * 29 + "7"],
     ["0." + "0" * 30 + "1", "1e-30"]),
    ({"type": "number", "multipleOf": 1e30, "minimum": 0, "maximum": 1e31},
     ["0", "1" + "0" * 30, "10" + "0" * 30], ["-1" + "0" * 30, "11" + "0" * 30, "5" + "0" * 29]),
    ({"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 1, "exclusiveMaximum": 3}, ["1.5", "2", "2.50"],
     ["1", "3", "1.25", "3.5"]),
])
def test_large_and_tiny_multiples_are_exact(byte_compiler, schema, yes, no):
    g = byte_compiler.compile_json_schema(schema)
    assert [t for t in yes if not _accepts(g, t)] == []
    assert [t for t in no if _accepts(g, t)] == []


# -- masks: exactly the prefixes of valid numbers ---------------------------------------------------
MASK_CASES = [
    (Multiples("0.123456789"), {"type": "number", "multipleOf": 0.123456789}),
    (Multiples("0.123456789", integer=True), {"type": "integer", "multipleOf": 0.123456789}),
    (Multiples("1e-30"), {"type": "number", "multipleOf": 1e-30}),
    (Multiples("7"), {"type": "number", "multipleOf": 7}),
    (Multiples("37"), {"type": "integer", "multipleOf": 37}),
    (Multiples("2.5"), {"type": "number", "multipleOf": 2.5}),
    (Multiples("1e20"), {"type": "number", "multipleOf": 1e20}),
    (Multiples("3e25"), {"type": "number", "multipleOf": 3e25}),
]


def _byte_walk(compiler, tok, oracle, schema, rnd, steps=40):
    g = compiler.compile_json_schema(schema)
    m = stencil.Matcher(g)
    text = ""
    for _ in range(steps):
        mask = _allowed(m, tok.vocab_size)
        for c in sorted(NUM_CHARS):
            assert mask[c] == oracle.viable(text + chr(c)), (schema, text + chr(c), bool(mask[c]))
        assert mask[EOS] == oracle.complete(text), (schema, text)
        choices = [c for c in NUM_CHARS if mask[c]]
        if not choices:
            break
        # lean towards digits, so walks reach long integer and fraction parts
        c = rnd.choice([x for x in choices if chr(x).isdigit()] or choices) if rnd.random() < 0.85 else rnd.choice(choices)
        assert m.accept_token(c)
        text += chr(c)


@pytest.mark.parametrize("oracle, schema", MASK_CASES, ids=lambda x: json.dumps(x)[:50] if isinstance(x, dict) else "")
def test_byte_masks_allow_exactly_the_viable_prefixes(byte_compiler, byte_tok, oracle, schema):
    rnd = random.Random(json.dumps(schema))
    for _ in range(6):
        _byte_walk(byte_compiler, byte_tok, oracle, schema, rnd)


def test_byte_masks_with_bounds_allow_exactly_the_viable_prefixes(byte_compiler, byte_tok):
    # bounded: the language is finite, so viable(t) is "some complete text of at most 8 more bytes"
    schema = {"type": "number", "multipleOf": 0.75, "exclusiveMinimum": -3, "maximum": 4.5}
    oracle = Multiples("0.75", lo=Fraction(-3), lo_x=True, hi=Fraction(9, 2))
    lang = set()
    for k in range(-3, 7):
        v = Fraction(3, 4) * k
        for text in _spellings(v):
            if oracle.complete(text):
                lang.add(text)
    prefixes = {t[:i] for t in lang for i in range(len(t) + 1)}
    g = byte_compiler.compile_json_schema(schema)
    for p in sorted(prefixes):
        m = stencil.Matcher(g)
        assert m.accept_string(p) or p == "", p
        mask = _allowed(m, byte_tok.vocab_size)
        for c in sorted(NUM_CHARS):
            nxt = p + chr(c)
            ok = nxt in prefixes or _ZERO_EXP.fullmatch(nxt) is not None or _longer_trailing_zeros(nxt, lang)
            assert mask[c] == ok, (p, chr(c))


def _spellings(v: Fraction):
    s = "-" if v < 0 else ""
    v = abs(v)
    i, f = divmod(v, 1)
    frac = str(Decimal(f.numerator) / Decimal(f.denominator))[2:] if f else ""
    base = s + str(i) + ("." + frac if frac else "")
    yield base
    yield base + ("" if frac else ".") + "00"
    if v == 0:   # -0 is zero
        yield "-0"


def _longer_trailing_zeros(t: str, lang: set) -> bool:
    # "1.5000..." and "2.000..." extend a valid text with fraction zeros: viable at any length
    base = t.rstrip("0")
    return "." in t and t.endswith("0") and (base in lang or (base.endswith(".") and base[:-1] in lang))


def test_token_walks_allow_exactly_the_viable_prefixes(compiler, deepseek):
    vocab = [deepseek.info.token_bytes(i) if hasattr(deepseek.info, "token_bytes") else None
             for i in range(deepseek.info.vocab_size)]
    num_tokens = [i for i, t in enumerate(vocab) if t and set(t) <= NUM_CHARS]
    rnd = random.Random(26)
    for oracle, schema in MASK_CASES[:4]:
        g = compiler.compile_json_schema(schema)
        for _ in range(3):
            m, text = stencil.Matcher(g), ""
            for _ in range(12):
                mask = _allowed(m, deepseek.info.vocab_size)
                bad = [vocab[i] for i in num_tokens if mask[i] != oracle.viable(text + vocab[i].decode())]
                assert bad == [], (schema, text, bad[:5])
                ok = [i for i in num_tokens if mask[i]]
                if not ok:
                    break
                t = rnd.choice(ok)
                assert m.accept_token(t)
                text += vocab[t].decode()
