"""compile_choice: the output is exactly one of the given strings, checked token by token with
the DeepSeek tokenizer (masks at every step); 50,000 choices compile quickly and stay exact."""
from __future__ import annotations

import random
import string
import time

import pytest

import stencil
from grammar_oracle import encode_segments, feed


def _accepts(entry, bitmask, g, text: str) -> bool:
    ids = encode_segments(entry, [text])
    n, ok = feed(stencil.Matcher(g), ids, bitmask, entry.info.eos_token_ids[0])
    return n == len(ids) and ok


def test_small_choice(env):
    entry, compiler, bitmask = env
    choices = ["yes", "no", "maybe", "yes please", "ja, naturlich", "\u00e9t\u00e9 \U0001F600", ""]
    g = compiler.compile_choice(choices)
    for c in choices:
        assert _accepts(entry, bitmask, g, c), c
    for bad in ["ye", "yes ", "nope", "Yes", "maybe?", "\u00e9t\u00e9", "yes pleas"]:
        assert not _accepts(entry, bitmask, g, bad), bad
    m = stencil.Matcher(g)
    assert m.is_accepting()                 # "" is a choice
    assert m.accept_string("yes") and m.is_accepting()
    assert m.accept_string(" please") and m.is_accepting()
    assert not m.accept_string("!")


def test_prefix_choices_and_forcing(env):
    _, compiler, _ = env
    g = compiler.compile_choice(["application/json", "application/xml"])
    m = stencil.Matcher(g)
    assert m.forced_bytes() == b"application/"   # the shared prefix is forced


def test_fifty_thousand_choices(env):
    entry, compiler, bitmask = env
    rng = random.Random(3)
    alphabet = string.ascii_lowercase + " -_"
    choices = list({"".join(rng.choice(alphabet) for _ in range(rng.randint(3, 24))) for _ in range(50_000)})
    t = time.thread_time()   # CPU time: a loaded machine stretches wall time, not the work
    g = compiler.compile_choice(choices)
    m = stencil.Matcher(g)
    m.fill_next_token_bitmask(bitmask, 0)
    elapsed = time.thread_time() - t
    print(f"{len(choices)} choices: compile and first mask {elapsed:.2f} s of CPU")
    assert elapsed < 30
    present = set(choices)
    for c in rng.sample(choices, 40):
        assert _accepts(entry, bitmask, g, c), c
    tried = 0
    while tried < 40:
        c = rng.choice(choices)
        bad = c[:-1] if rng.random() < 0.5 else c + rng.choice(alphabet)
        if bad in present:
            continue
        tried += 1
        assert not _accepts(entry, bitmask, g, bad), bad


def test_choice_errors(env):
    _, compiler, _ = env
    with pytest.raises(stencil.GrammarError, match="at least one choice"):
        compiler.compile_choice([])
    with pytest.raises(TypeError, match="choice #1"):
        compiler.compile_choice(["a", 3])
    with pytest.raises(stencil.GrammarError, match="lone surrogate"):
        compiler.compile_choice(["a", "\ud800"])
