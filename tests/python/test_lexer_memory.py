"""The lazy lexer is a cache with bounded memory: a pattern whose automaton is huge
([ab]*a[ab]{k}: 2**k states) renews its lexer and masks when they pass their limit, and matchers
move over by replaying their tokens, with masks exact before and after, rollback and forks
intact."""
from __future__ import annotations

import itertools
import random
import re

import numpy as np

import stencil
from stencil.bitmask import bitmask_to_bool

K = 12
PATTERN = f"[ab]*a[ab]{{{K}}}c"


def vocab():
    toks = [b"a", b"b", b"c"]
    for n in (2, 3):
        toks += [bytes(p) for p in itertools.product(b"ab", repeat=n)]
    toks += [b"ac", b"bc", b"abc", b"<eos>"]
    return toks


def oracle_mask(prefix: str, toks: list[bytes]) -> np.ndarray:
    """Token t is allowed after prefix (a and b only) iff prefix + t starts a string of PATTERN."""
    out = np.zeros(len(toks), bool)
    for i, t in enumerate(toks):
        s = t.decode()
        if s == "<eos>":
            continue
        if "c" not in s:
            out[i] = True   # more a's and b's can always still end with a, 12 more and c
        elif s.endswith("c") and "c" not in s[:-1]:
            out[i] = re.fullmatch(f"[ab]*a[ab]{{{K}}}", prefix + s[:-1]) is not None
    return out


def test_lexer_renews_and_masks_stay_exact():
    toks = vocab()
    tok = stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1])
    compiler = stencil.GrammarCompiler(tok, lexer_memory_bytes=200 << 10)
    g = compiler.compile_regex(PATTERN)
    m = stencil.Matcher(g, max_rollback=-1)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    rng = random.Random(7)
    ab = [i for i, t in enumerate(toks) if set(t) <= set(b"ab")]
    pieces, fork, fork_text, peak = [], None, "", 0
    for step in range(2500):
        text = "".join(pieces)
        m.fill_next_token_bitmask(bm, 0)
        if step % 11 == 0:
            got = bitmask_to_bool(bm, tok.vocab_size)[0]
            assert np.array_equal(got, oracle_mask(text, toks)), (step, text[-20:])
        t = rng.choice(ab)
        assert m.accept_token(t)
        pieces.append(toks[t].decode())
        peak = max(peak, g.memory_bytes)
        if step == 100:
            fork, fork_text = m.fork(), "".join(pieces)
    assert g.num_lexer_renewals >= 3
    # memory stays near the limit (the lexer's 200 KB plus the masks of one epoch), where one
    # epoch of 2,500 steps would take several MB
    assert peak < 3 << 20, peak
    # rollback across renewals: the matcher replayed its whole history
    m.rollback(300)
    m.fill_next_token_bitmask(bm, 0)
    assert np.array_equal(bitmask_to_bool(bm, tok.vocab_size)[0], oracle_mask("".join(pieces[:-300]), toks))
    m2 = stencil.Matcher(g)
    # a fork from before the renewals moves over at its next call and goes on correctly
    fork.fill_next_token_bitmask(bm, 0)
    assert np.array_equal(bitmask_to_bool(bm, tok.vocab_size)[0], oracle_mask(fork_text, toks))
    tail = "a" + "b" * K
    assert fork.accept_string(tail + "c") and fork.is_accepting()
    assert m2.accept_string("bba" + "a" * K + "c") and m2.is_accepting()


def test_rollback_after_renewal_restores_the_exact_state():
    toks = vocab()
    tok = stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1])
    g = stencil.GrammarCompiler(tok, lexer_memory_bytes=100 << 10).compile_regex(PATTERN)
    m = stencil.Matcher(g, max_rollback=-1)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    rng = random.Random(11)
    ab = [i for i, t in enumerate(toks) if set(t) <= set(b"ab")]
    accepted = []
    while g.num_lexer_renewals < 2:
        m.fill_next_token_bitmask(bm, 0)
        t = rng.choice(ab)
        assert m.accept_token(t)
        accepted.append(t)
    m.rollback(len(accepted) // 2)
    kept = "".join(toks[t].decode() for t in accepted[:len(accepted) - len(accepted) // 2])
    m.fill_next_token_bitmask(bm, 0)
    assert np.array_equal(bitmask_to_bool(bm, tok.vocab_size)[0], oracle_mask(kept, toks))
    assert m.num_accepted_tokens == len(accepted) - len(accepted) // 2
