"""No input crashes the process: pathological regexes, malformed IR and serialized grammars,
out-of-range token ids and misuse of the Matcher all give clear errors, within work limits."""
from __future__ import annotations

import time

import numpy as np
import pytest

import stencil
from stencil import GrammarError
from corrupt_blobs import exercise_corrupted
from tokenizers_zoo import get


@pytest.fixture(scope="module")
def deepseek():
    entry = get("deepseek")
    return entry, stencil.GrammarCompiler(entry.info)


def small_vocab():
    toks = [bytes([c]) for c in range(32, 127)] + [b"ab", b"aab", b"xx", b"<eos>"]
    return stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1], special_token_ids=[len(toks) - 1])


def run_text(compiled, encode, text):
    m = stencil.Matcher(compiled)
    bm = stencil.allocate_token_bitmask(1, compiled.vocabulary.vocab_size)
    for t in encode(text):
        m.fill_next_token_bitmask(bm, 0)
        assert (int(bm[0, t >> 5]) >> (t & 31)) & 1
        assert m.accept_token(t)
    return m


@pytest.mark.parametrize("pattern,text", [
    (r"(a|aa)*b", "a" * 40 + "b"),
    (r"(x+x+)+y", "x" * 40 + "y"),
    (r"[\s\S]{0,100000}", "any text at all\n" * 4),
    (r".{0,10000}", "abc" * 50),
    ("(" * 500 + "a" + ")" * 500, "a"),
    (r"(a{0,100}){0,100}b", "a" * 300 + "b"),
    ("|".join(f"word{i}x" for i in range(50000)), "word4242x"),
])
def test_pathological_regexes_compile_fast_and_match(deepseek, pattern, text):
    entry, compiler = deepseek
    t0 = time.thread_time()
    g = compiler.compile_regex(pattern)
    # A guard against blow-ups (exponential work never finishes), not a speed figure: CPU time,
    # which the other processes of a loaded machine do not stretch; speed is the benchmarks' job.
    assert time.thread_time() - t0 < 60
    m = run_text(g, lambda s: entry.hf.encode(s, add_special_tokens=False).ids, text)
    assert m.is_accepting()


def test_lexer_state_limit_is_an_error_not_a_hang():
    tok = small_vocab()
    compiler = stencil.GrammarCompiler(tok, max_lexer_states=50)
    # Counting a's up to 1000 needs a new lexer state per step.
    g = compiler.compile_regex(r"a{0,1000}b")
    m = stencil.Matcher(g)
    with pytest.raises(stencil.BudgetError, match="lexer state limit"):
        for _ in range(200):
            m.accept_string("a")


def test_derivative_fuel_is_an_error_not_a_hang():
    tok = small_vocab()
    compiler = stencil.GrammarCompiler(tok, lexer_fuel=1000)
    g = compiler.compile_regex("|".join(f"w{i}" for i in range(3000)))
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    with pytest.raises(stencil.BudgetError, match="work limit"):
        m.fill_next_token_bitmask(bm, 0)


def test_builder_rejects_malformed_ir():
    b = stencil.GrammarBuilder()
    with pytest.raises(GrammarError, match="unknown regular expression"):
        b.re_concat([123456])
    with pytest.raises(GrammarError, match="unknown grammar symbol"):
        b.add_alternative(b.rule("s"), [99999])
    with pytest.raises(GrammarError, match="repetition"):
        b.re_repeat(b.re_literal("a"), 5, 2)
    with pytest.raises(GrammarError, match="U\\+10FFFF"):
        b.re_char_ranges([(0, 0x110000)], False)
    with pytest.raises(GrammarError, match="byte range"):
        b.re_byte_ranges([(0, 300)])
    s = b.rule("s")
    b.add_alternative(s, [b.rule("undefined_rule")])
    with pytest.raises(GrammarError, match="undefined_rule"):
        b.build(s)
    b2 = stencil.GrammarBuilder()
    s2 = b2.rule("s")
    b2.add_alternative(s2, [b2.literal("x"), s2])  # no base case: empty language
    with pytest.raises(GrammarError, match="empty"):
        b2.build(s2)
    with pytest.raises(GrammarError, match="must be a rule"):
        b2.build(b2.literal("x"))


def test_serialized_grammar_round_trip_and_corruption():
    b = stencil.GrammarBuilder()
    s = b.rule("s")
    b.ignore(b.re_char_ranges([(32, 32)], False))
    b.add_alternative(s, [b.literal("a"), b.lexeme(b.re_and([b.re_repeat(b.re_char_ranges([(97, 122)], False), 1, -1),
                                                           b.re_not(b.re_literal("bad"))]))])
    g = b.build(s)
    data = g.serialize()
    g2 = stencil.Grammar.deserialize(data)
    assert g2.serialize() == data and g2.hash() == g.hash()
    assert str(g2) == str(g)
    # the language survives, not only the bytes (a field both directions dropped would pass the
    # checks above): %ignore, re_and and re_not still act
    tok = small_vocab()
    c2 = stencil.GrammarCompiler(tok).compile_grammar(g2)
    for text, ok in (("a abc", True), ("aabc", True), ("a xyz", True), ("a bad", False), ("a ba", True), ("a", False)):
        m = stencil.Matcher(c2)
        assert (m.accept_string(text) and m.is_accepting()) == ok, text
    for bad in (b"", b"junk", data[:-3], data[:4] + b"\x09\x00\x00\x00" + data[8:], data + b"x"):
        with pytest.raises(GrammarError, match="serialized grammar"):
            stencil.Grammar.deserialize(bad)
    # Random corruption never crashes, in deserialize nor in using what it accepts (a child process)
    accepted, used = exercise_corrupted(data, seed=0, rounds=300)
    assert used > 0, (accepted, used)


def test_token_ids_and_misuse():
    tok = small_vocab()
    g = stencil.GrammarCompiler(tok).compile_regex("ab")
    m = stencil.Matcher(g, max_rollback=2)
    eos = tok.eos_token_ids[0]
    for bad in (-1, tok.vocab_size, 10**12):
        with pytest.raises(ValueError, match="out of range"):
            m.accept_token(bad)
    with pytest.raises(ValueError, match="out of range"):
        m.validate_tokens([0, tok.vocab_size])
    assert not m.accept_token(eos)  # not complete yet
    assert m.accept_string("ab") and m.accept_token(eos) and m.is_terminated()
    with pytest.raises(ValueError, match="terminated"):
        m.accept_token(0)
    with pytest.raises(ValueError, match="max_rollback"):
        m.rollback(3)
    m.rollback(1)
    assert not m.is_terminated() and m.is_accepting()
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    with pytest.raises(ValueError, match="row index"):
        m.fill_next_token_bitmask(bm, 1)
    with pytest.raises(ValueError, match="words"):
        m.fill_next_token_bitmask(np.zeros((1, 1), np.int32), 0)
    with pytest.raises(ValueError, match="twice"):
        stencil.fill_next_token_bitmasks([m, m], stencil.allocate_token_bitmask(2, tok.vocab_size))
    with pytest.raises(TypeError):
        stencil.GrammarCompiler("not a tokenizer")


def test_rollback_counts_are_checked():
    tok = small_vocab()
    g = stencil.GrammarCompiler(tok).compile_regex("a+")
    m = stencil.Matcher(g, max_rollback=-1)
    with pytest.raises(ValueError, match="only 0 tokens"):
        m.rollback(1)
    with pytest.raises(ValueError, match=">= 0"):
        m.rollback(-1)


def test_special_tokens_only_where_named():
    toks = [bytes([c]) for c in range(97, 123)] + [b"<think>", b"</think>", b"<eos>"]
    think, end_think, eos = len(toks) - 3, len(toks) - 2, len(toks) - 1
    tok = stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[eos], special_token_ids=[think, end_think, eos])
    b = stencil.GrammarBuilder()
    s = b.rule("s")
    word = b.lexeme(b.re_repeat(b.re_char_ranges([(97, 122)], False), 1, -1))
    b.add_alternative(s, [b.special_token([think]), word, b.special_token([end_think]), word])
    g = stencil.GrammarCompiler(tok).compile_grammar(b.build(s))
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)

    def allowed():
        m.fill_next_token_bitmask(bm, 0)
        return set(np.nonzero(stencil.bitmask.bitmask_to_bool(bm, tok.vocab_size)[0])[0].tolist())

    assert allowed() == {think}
    assert not m.accept_token(end_think) and m.accept_token(think)
    assert allowed() == set(range(26))
    assert m.accept_string("abc")
    assert allowed() == set(range(26)) | {end_think}
    assert m.accept_token(end_think) and m.accept_string("z")
    assert allowed() == set(range(26)) | {eos}


def test_ignored_lexemes_never_follow_themselves(deepseek):
    """As in a longest-match lexer, a run of one ignored lexeme is one lexeme: a bounded one
    bounds the run. Different ignored lexemes still alternate (whitespace, comment, whitespace)."""
    b = stencil.GrammarBuilder()
    space = b.re_char_ranges([(32, 32)], False)
    b.ignore(b.re_repeat(space, 1, 3), "WS")
    b.ignore(b.re_concat([b.re_literal("#"), b.re_repeat(b.re_char_ranges([(97, 122)], False), 0, -1),
                          b.re_literal(";")]), "COMMENT")
    s = b.rule("s")
    b.add_alternative(s, [b.literal("a"), b.literal("b")])
    entry, compiler = deepseek
    info = entry.info
    g = compiler.compile_grammar(b.build(s))

    def accepts(text):
        m = stencil.Matcher(g)
        return m.accept_string(text) and m.is_accepting()

    assert accepts("ab") and accepts("a   b") and accepts("a #x;b") and accepts("a  #xy;   #z; b")
    assert not accepts("a    b") and not accepts("a " + " " * 20 + "b")   # 4+ spaces: one WS is at most 3
    m = stencil.Matcher(g)
    assert m.accept_string("a   ")
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(bm, 0)
    space_id = [t for t in range(info.vocab_size) if info.token_bytes(t) == b" "][0]
    assert not (int(bm[0, space_id >> 5]) >> (space_id & 31)) & 1     # the mask agrees
    assert m.accept_string("#q; b") and m.is_accepting()
