"""The core's number-range expression (``GrammarBuilder.re_number_range``) against exact decimal
arithmetic: it accepts exactly the JSON number texts whose value lies in range (exponent forms
included, compared exactly), and every prefix it allows can still be completed."""
from __future__ import annotations

import re
from decimal import Decimal as D

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stencil
from stencil.testing import vocab_stats
from tokenizers_zoo import get

_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


@pytest.fixture(scope="module")
def compiler():
    return stencil.GrammarCompiler(get("deepseek").info)


def _grammar(lo, lo_x, hi, hi_x, integer):
    b = stencil.GrammarBuilder()
    e = b.re_number_range(None if lo is None else str(lo), lo_x, None if hi is None else str(hi), hi_x, integer)
    start = b.rule("start")
    b.add_alternative(start, [b.lexeme(e, "number")])
    return b.build(start)


def _in_range(text, lo, lo_x, hi, hi_x, integer) -> bool:
    if not _NUMBER.fullmatch(text):
        return False
    v = D(text)
    if integer and v != v.to_integral_value():
        return False
    return (lo is None or (v > lo if lo_x else v >= lo)) and (hi is None or (v < hi if hi_x else v <= hi))


def _accepts(g, text) -> bool:
    m = stencil.Matcher(g)
    return m.accept_string(text) and m.is_accepting()


def _allows(g, prefix) -> bool:
    return stencil.Matcher(g).accept_string(prefix)


# -- fixed cases from the issue -------------------------------------------------------------------
@pytest.mark.parametrize("text,ok", [("1e1", True), ("5e0", True), ("0.5e1", True), ("50e-1", True), ("5", True),
                                     ("4.9e0", False), ("1e-1", False), ("49e-1", False), ("-5", False),
                                     ("0.0000005e7", True), ("0.0000004999e7", False), ("5E+0", True)])
def test_minimum_5(compiler, text, ok):
    g = compiler.compile_grammar(_grammar(D(5), False, None, False, False))
    assert _accepts(g, text) == ok


@pytest.mark.parametrize("text,ok", [("1e308", True), ("1.5e308", True), ("10e307", True), ("1e309", True),
                                     ("9.99e307", False), ("1e307", False), ("0.1e309", True), ("-1e308", False)])
def test_minimum_1e308(compiler, text, ok):
    g = compiler.compile_grammar(_grammar(D("1e308"), False, None, False, False))
    assert _accepts(g, text) == ok


def test_mantissa_digits_against_exponent(compiler):
    # 123456e-5 (1.23) < 5 <= 1234567e-5 (12.3): no finite automaton tells these apart.
    g = compiler.compile_grammar(_grammar(D(5), False, None, False, False))
    assert not _accepts(g, "123456e-5") and _accepts(g, "1234567e-5")
    assert _allows(g, "123456e-") and _allows(g, "1e-") is False


def test_integer_values_in_any_spelling(compiler):
    g = compiler.compile_grammar(_grammar(D(10), False, D(100), False, True))
    for text in ("10", "1e1", "1.5e1", "100.0", "0.1e3", "1000e-1", "15.00"):
        assert _accepts(g, text), text
    for text in ("9", "1.05e1", "101", "1e3", "15.5", "1001e-1"):
        assert not _accepts(g, text), text


def test_exponent_saturation_stays_exact(compiler):
    g = compiler.compile_grammar(_grammar(D(5), False, None, False, False))
    assert _accepts(g, "1e" + "9" * 40) and not _accepts(g, "1e-" + "9" * 40)
    assert _accepts(g, "1e" + "0" * 40 + "1") and not _accepts(g, "1e" + "0" * 40)
    h = compiler.compile_grammar(_grammar(None, False, D(5), False, False))
    assert _accepts(h, "1e-" + "9" * 40) and not _accepts(h, "1e" + "9" * 40)


def test_empty_and_point_ranges(compiler):
    with pytest.raises(stencil.GrammarError):
        _grammar(D(3), False, D(2), False, False)  # an empty language: no lexeme left
    g = compiler.compile_grammar(_grammar(D("0.25"), False, D("0.25"), False, False))
    assert _accepts(g, "0.25") and _accepts(g, "25e-2") and _accepts(g, "0.0025e2") and _accepts(g, "0.250")
    assert not _accepts(g, "0.26") and not _allows(g, "-") and not _allows(g, "0.3") and not _allows(g, "3")


@pytest.mark.parametrize("lo,hi,integer,what", [
    ("abc", None, False, "lower bound"), (None, "1e99999999999999", False, "upper bound"),
    ("1.5", None, True, "integral"), ("1e", None, False, "lower bound"), ("NaN", None, False, "lower bound")])
def test_bad_bounds_are_grammar_errors(lo, hi, integer, what):
    b = stencil.GrammarBuilder()
    with pytest.raises(stencil.GrammarError, match=what):
        b.re_number_range(lo, False, hi, False, integer)


def test_serialized_grammar_round_trips(compiler):
    g = _grammar(D("-2.5"), True, D("1e3"), False, False)
    again = stencil.Grammar.deserialize(g.serialize())
    assert again.serialize() == g.serialize()
    c = compiler.compile_grammar(again)
    assert _accepts(c, "-2.4e0") and not _accepts(c, "-25e-1") and _accepts(c, "1e3") and not _accepts(c, "1.1e3")


def test_digits_past_the_bounds_share_states(compiler):
    # Under maximum 254, "123" and "199" continue alike: one lexer state, so one mask walk. Without
    # the collapse every digit string is a state of its own (over 100 here).
    g = compiler.compile_grammar(_grammar(D(1), False, D(254), False, True))
    for n in range(100, 200):
        assert stencil.Matcher(g).accept_string(str(n))
    assert g.num_lexer_states < 30
    h = compiler.compile_grammar(_grammar(D("0.5"), False, D(12), False, False))
    for n in range(300, 400):
        assert stencil.Matcher(h).accept_string(f"3.{n}")
    assert h.num_lexer_states < 30


def test_masks_agree_with_accepting_each_token(compiler):
    """With a real tokenizer: a number token is allowed exactly when accepting it succeeds, at
    each step of spellings that need the exact comparison."""
    tok = get("deepseek").info
    number_bytes = set(b"0123456789.eE+-")
    cands = [t for t in range(tok.vocab_size) if (bs := tok.token_bytes(t)) and set(bs) <= number_bytes]
    assert len(cands) > 50
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    for key, text in [((D(5), False, None, False, False), "50e-1"), ((D("1e308"), False, None, False, False), "1.5e308"),
                      ((D(10), False, D(100), False, True), "1.5e1")]:
        g = compiler.compile_grammar(_grammar(*key))
        m = stencil.Matcher(g)
        for ch in text:
            m.fill_next_token_bitmask(bm, 0)
            for t in cands:
                allowed = bool((int(bm[0, t >> 5]) >> (t & 31)) & 1)
                assert allowed == m.fork().accept_token(t), (key, text, ch, tok.token_bytes(t))
            assert m.accept_string(ch)
        assert m.is_accepting()


def test_corrupted_serialized_number_states_never_crash():
    """Nor in using the grammars it accepts: compiled, masks filled, tokens accepted (a child process)."""
    from corrupt_blobs import exercise_corrupted
    data = _grammar(D("-2.5"), True, D("1e3"), False, False).serialize()
    accepted, used = exercise_corrupted(data, seed=3, rounds=400)
    assert used > 0, (accepted, used)


def _set_grammar(values, minus_zero=True):
    b = stencil.GrammarBuilder()
    start = b.rule("start")
    b.add_alternative(start, [b.lexeme(b.re_number_set(values, minus_zero), "number")])
    return b.build(start)


def test_number_sets_survive_serialization_and_corruption(compiler):
    """A number set's states (the values each can still reach, the exponents past an e) read back
    as they were written, and corrupted ones never crash (a child process)."""
    from corrupt_blobs import exercise_corrupted
    g = _set_grammar(["-2.5", "0", "1e3", "120", "12", "0.001"], minus_zero=False)
    back = stencil.Grammar.deserialize(g.serialize())
    texts = ["-2.5", "-25e-1", "0", "-0", "1000", "1E3", "0.12e3", "12", "1.2e1", "0.001", "1e-3", "3", "-12", "1e4"]
    for t in texts:
        got = [(m := stencil.Matcher(compiler.compile_grammar(x))).accept_string(t) and m.is_accepting() for x in (g, back)]
        want = t not in ("-0", "3", "-12", "1e4")
        assert got == [want, want], (t, got)
    accepted, used = exercise_corrupted(g.serialize(), seed=5, rounds=400)
    assert used > 0, (accepted, used)


def test_number_set_values_are_checked():
    b = stencil.GrammarBuilder()
    with pytest.raises(stencil.GrammarError, match="value '1x'"):
        b.re_number_set(["1", "1x"])


# -- properties against exact decimal arithmetic -------------------------------------------------
_digits = st.text("0123456789", min_size=1, max_size=3)


@st.composite
def _bound(draw):
    if draw(st.integers(0, 5)) == 0:
        return None
    m = D(draw(st.sampled_from(["", "-"])) + draw(_digits))
    return m.scaleb(draw(st.integers(-4, 4)))


@st.composite
def _number_text(draw, near=None):
    """A JSON number text; with ``near``, one that spells a value close to it in some scale."""
    sign = draw(st.sampled_from(["", "-"]))
    if near is not None and draw(st.booleans()):
        k = draw(st.integers(-6, 6))
        m = abs(near).scaleb(-k)
        m += draw(st.sampled_from([D(0), D(0), D("1e-3"), D("-1e-3"), D(1), D(-1)])) * m
        mant = format(abs(m), "f")
        if "." in mant and draw(st.booleans()):
            mant = mant.rstrip("0").rstrip(".") or "0"
        sign = "-" if near < 0 else sign
        return f"{sign}{mant}e{k}" if k or draw(st.booleans()) else sign + mant
    ip = draw(st.sampled_from(["0", "1", "5", "10", "25", "100", "12345"]))
    text = sign + ip
    if draw(st.booleans()):
        text += "." + draw(st.text("0123456789", min_size=1, max_size=4))
    if draw(st.booleans()):
        text += draw(st.sampled_from(["e", "E"])) + draw(st.sampled_from(["", "+", "-"])) + \
            draw(st.sampled_from(["0", "1", "2", "3", "5", "05", "10", "12"]))
    return text


_COMPILED: dict = {}


def _compiled(compiler, key):
    if key not in _COMPILED:
        try:
            _COMPILED[key] = compiler.compile_grammar(_grammar(*key))
        except stencil.GrammarError as err:
            assert "empty" in str(err)
            _COMPILED[key] = None
    return _COMPILED[key]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), lo=_bound(), hi=_bound(), lo_x=st.booleans(), hi_x=st.booleans(), integer=st.booleans())
def test_accepts_exactly_the_numbers_in_range(compiler, data, lo, hi, lo_x, hi_x, integer):
    if integer:
        # integer ranges take inclusive integral bounds (the JSON Schema front-end rounds them)
        lo = None if lo is None else lo.to_integral_value(rounding="ROUND_CEILING")
        hi = None if hi is None else hi.to_integral_value(rounding="ROUND_FLOOR")
        lo_x = hi_x = False
    g = _compiled(compiler, (lo, lo_x, hi, hi_x, integer))
    texts = data.draw(st.lists(st.one_of(_number_text(), _number_text(near=lo if lo is not None else hi or D(1)),
                                         _number_text(near=hi if hi is not None else D(7))), min_size=20, max_size=20))
    for text in texts:
        want = _in_range(text, lo, lo_x, hi, hi_x, integer)
        got = g is not None and _accepts(g, text)
        assert got == want, (text, lo, lo_x, hi, hi_x, integer)


_ALPHABET = "0125.-+e"


def _completion(g, prefix, lo, lo_x, hi, hi_x, integer, depth):
    """A completion of `prefix` in range, searched depth-first through the bytes the matcher
    allows (iterative deepening, a node limit per depth), or None."""
    def dfs(m, text, left, nodes):
        if _in_range(text, lo, lo_x, hi, hi_x, integer):
            return text
        if left == 0 or nodes[0] <= 0:
            return None
        for c in "0123456789e-+.":
            f = m.fork()
            nodes[0] -= 1
            if f.accept_string(c):
                found = dfs(f, text + c, left - 1, nodes)
                if found is not None:
                    return found
        return None
    m = stencil.Matcher(g)
    assert m.accept_string(prefix)
    for d in range(depth + 1):
        found = dfs(m, prefix, d, [3000])
        if found is not None:
            return found
    return None


@pytest.mark.parametrize("lo,lo_x,hi,hi_x,integer", [
    (D(5), False, None, False, False), (D("0.25"), False, D("0.25"), False, False),
    (D("-2.5"), True, D("1.2"), True, False), (D(10), False, D(120), False, True),
    (None, False, D("-0.05"), False, False), (D(0), True, D(2), False, False), (D(-20), False, D(-10), False, True)])
def test_every_allowed_prefix_completes(compiler, lo, lo_x, hi, hi_x, integer):
    """Liveness: every prefix of up to 4 bytes that the matcher allows completes (found by a
    search over allowed bytes, confirmed by decimal arithmetic); a prefix it rejects completes in
    none of the short continuations (a brute force)."""
    g = compiler.compile_grammar(_grammar(lo, lo_x, hi, hi_x, integer))
    level, checked = [""], 0
    for _ in range(4):
        nxt = []
        for p in level:
            for c in _ALPHABET:
                q = p + c
                if _allows(g, q):
                    assert _completion(g, q, lo, lo_x, hi, hi_x, integer, 6) is not None, q
                    nxt.append(q)
                    checked += 1
                else:
                    for tail in ("", *_ALPHABET, *(a + b for a in _ALPHABET for b in _ALPHABET)):
                        assert not _in_range(q + tail, lo, lo_x, hi, hi_x, integer), (q, tail)
        level = nxt
    assert checked > 20


_BYTE_TOKS = [bytes([c]) for c in range(256)] + [b"e-", b"0.", b"00", b"<eos>"]
_BYTE_TOK = stencil.TokenizerInfo.from_vocab(_BYTE_TOKS, eos_token_ids=[len(_BYTE_TOKS) - 1])


@settings(max_examples=60, deadline=None)
@given(lo=_bound(), hi=_bound(), lo_x=st.booleans(), hi_x=st.booleans(), integer=st.booleans(),
       seed=st.integers(0, 2 ** 32 - 1))
def test_random_walks_through_the_mask_never_dead_end(lo, hi, lo_x, hi_x, integer, seed):
    """Fuzz-style: walk the mask at random (every byte a token). The mask is never empty before
    the end, every allowed token is accepted, and EOS is allowed exactly when the text so far is
    a number in range by decimal arithmetic."""
    import random
    if integer:
        lo = None if lo is None else lo.to_integral_value(rounding="ROUND_CEILING")
        hi = None if hi is None else hi.to_integral_value(rounding="ROUND_FLOOR")
        lo_x = hi_x = False
    try:
        g = stencil.GrammarCompiler(_BYTE_TOK).compile_grammar(_grammar(lo, lo_x, hi, hi_x, integer))
    except stencil.GrammarError as err:   # an empty range
        assert "empty" in str(err)
        return
    rng = random.Random(seed)
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, _BYTE_TOK.vocab_size)
    eos, text = _BYTE_TOK.eos_token_ids[0], b""
    for _ in range(24):
        m.fill_next_token_bitmask(bm, 0)
        allowed = [t for t in range(_BYTE_TOK.vocab_size) if (int(bm[0, t >> 5]) >> (t & 31)) & 1]
        assert (eos in allowed) == _in_range(text.decode(), lo, lo_x, hi, hi_x, integer), text
        assert allowed, f"dead end after {text!r}"
        if eos in allowed and rng.random() < 0.3:
            break
        t = rng.choice([t for t in allowed if t != eos] or allowed)
        if t == eos:
            break
        assert m.accept_token(t)
        text += _BYTE_TOKS[t]


def test_shared_mask_cache_across_grammars_equals_cold_masks():
    """Number states key the vocabulary-wide mask cache by their encoded form: a second grammar
    with the same range reuses masks the first one stored, and they equal freshly walked ones."""
    import numpy as np
    entry = get("deepseek")
    warm_info = stencil.TokenizerInfo.from_huggingface(entry.hf)
    schemas = [{"type": "object", "properties": {"n": {"type": "number", "minimum": 5}}, "required": ["n"]},
               {"type": "array", "items": {"type": "number", "minimum": 5}}]
    texts = ['{"n": 50e-1}', '[1e1, 0.5e1, 12345e-3]']

    def masks(info, schema, text):
        g = stencil.GrammarCompiler(info).compile_json_schema(schema)
        m, out = stencil.Matcher(g), []
        bm = stencil.allocate_token_bitmask(1, info.vocab_size)
        for t in entry.hf.encode(text, add_special_tokens=False).ids:
            m.fill_next_token_bitmask(bm, 0)
            out.append(bm[0].copy())
            assert m.accept_token(t)
        return out
    for schema, text in zip(schemas, texts):
        warm = masks(warm_info, schema, text)
        cold = masks(stencil.TokenizerInfo.from_huggingface(entry.hf), schema, text)
        assert all(np.array_equal(a, b) for a, b in zip(warm, cold))
    assert vocab_stats(warm_info).shared_mask_entries > 0
