"""Shared setup of the atheris fuzz targets (one per front-end, one for the Matcher API).

A finding is a crash of the process or an exception other than the documented ones: bad input
must end in GrammarError / ValueError (UsageError) or TypeError, within the compile deadline.
Run them all with `make fuzz` (FUZZ_SECONDS per target, 600 by default).
"""
from __future__ import annotations

import random
import sys

import atheris

import stencil

#: what bad input may raise: everything else is a finding
EXPECTED = (stencil.GrammarError, ValueError, TypeError)

# Every byte is a token (as in byte-level BPE), so any text of any grammar can be spelled and an
# empty mask before the end is a real dead end; a few longer tokens cross lexeme boundaries.
_TOKS = [bytes([c]) for c in range(256)] + ["é".encode(), "日".encode(), b'{"', b'":', b'",', b"ab", b"<eos>"]
TOKENIZER = stencil.TokenizerInfo.from_vocab(_TOKS, eos_token_ids=[len(_TOKS) - 1])
COMPILER = stencil.GrammarCompiler(TOKENIZER, compile_timeout=2.0, max_lexer_states=20_000, cache_size=8)


def walk(compiled, seed: int, steps: int = 40) -> None:
    """Drive a matcher through allowed tokens picked at random, checking the mask's promises:
    every allowed token is accepted, and EOS is allowed exactly when the matcher accepts."""
    rng = random.Random(seed)
    m = stencil.Matcher(compiled, max_rollback=4)
    bm = stencil.allocate_token_bitmask(1, TOKENIZER.vocab_size)
    for _ in range(steps):
        m.fill_next_token_bitmask(bm, 0)
        allowed = [t for t in range(TOKENIZER.vocab_size) if (int(bm[0, t >> 5]) >> (t & 31)) & 1]
        eos = TOKENIZER.eos_token_ids[0]
        assert (eos in allowed) == m.is_accepting(), "EOS in the mask disagrees with is_accepting()"
        if not allowed:
            raise AssertionError("empty mask: the grammar led into a dead end")
        t = rng.choice(allowed)
        assert m.accept_token(t), f"token {t} was in the mask but refused"
        if m.is_terminated():
            return
        if rng.random() < 0.1 and m.num_accepted_tokens:
            m.rollback(1)


def compile_and_walk(compile_text, data: bytes) -> None:
    """The front-end targets: byte 0 seeds the walk, the rest is the grammar text."""
    seed = data[0] if data else 0
    try:
        compiled = compile_text(data[1:].decode("utf-8", "replace"), seed)
    except EXPECTED:
        return
    walk(compiled, seed)


def fuzz(test_one_input) -> None:
    """Run a target. stencil's modules come through the editable install's finder, which
    instrument_imports() does not see: every loaded function is instrumented instead."""
    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
