"""Matcher(time_limit=...): every call that can do grammar work (the lazy lexer states, mask
entries, Earley rows and completion costs that compile_* leaves for first use) runs under a
wall-clock limit; past it the call raises TimeLimitExceeded and leaves the matcher as it was.

The hostile grammar is an allOf of ``^(.{p})*$`` for the primes 2..53: it compiles at once, and
its first mask works for about 10 s (then runs out of lexer fuel). Wall-clock asserts are guards
(a 0.2-0.3 s limit must end the call long before the 10 s the work would take), not speed figures.
"""
from __future__ import annotations

import functools
import math
import random
import time

import numpy as np
import pytest

import stencil
from stencil.grammar.deadline import compile_deadline

PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53)
PRIMES_SCHEMA = {"type": "string", "allOf": [{"pattern": "^(.{%d})*$" % p} for p in PRIMES]}
GUARD_S = 5.0  # far under the ~10 s the primes work takes, far over the limits used


@pytest.fixture
def primes(deepseek):
    """The hostile grammar, compiled afresh for each test (its lexer's work is shared by every
    matcher of one compiled grammar, and its fuel is over the grammar's life)."""
    return stencil.GrammarCompiler(deepseek.info).compile_json_schema(PRIMES_SCHEMA)


def bitmask(tok, rows=1):
    return stencil.allocate_token_bitmask(rows, tok.vocab_size)


def raise_time(exc, fn):
    """Seconds until fn raised exc (it must)."""
    t0 = time.perf_counter()
    with pytest.raises(exc):
        fn()
    return time.perf_counter() - t0


def raises_in_time(call, fn, limit):
    """fn raises TimeLimitExceeded naming `call` and `limit`, well before the work would end."""
    t0 = time.perf_counter()
    with pytest.raises(stencil.TimeLimitExceeded) as err:
        fn()
    assert time.perf_counter() - t0 < GUARD_S
    assert str(err.value) == f"{call} exceeded the matcher's time limit of {limit:g} s (Matcher(time_limit=...))"


# ------------------------------------------------------------------------------- the hostile grammar

def test_first_fill_of_the_primes_schema_stops_at_the_limit(deepseek, primes):
    m = stencil.Matcher(primes, time_limit=0.3)
    bm = bitmask(deepseek.info)
    raises_in_time("fill_next_token_bitmask", lambda: m.fill_next_token_bitmask(bm, 0), 0.3)
    raises_in_time("fill_next_token_bitmask", lambda: m.fill_next_token_bitmask(bm, 0, remaining_tokens=8), 0.3)
    # the matcher is where it was, and stays usable
    assert m.num_accepted_tokens == 0 and not m.is_accepting()
    assert m.accept_string('"')
    assert m.num_accepted_tokens == 1


def test_a_limit_of_0_2_s_ends_the_call_within_seconds(deepseek, primes):
    m = stencil.Matcher(primes, time_limit=0.2)
    bm = bitmask(deepseek.info)
    assert raise_time(stencil.TimeLimitExceeded, lambda: m.fill_next_token_bitmask(bm, 0)) < GUARD_S


def test_every_call_that_works_on_the_grammar_is_limited(deepseek, primes):
    m = stencil.Matcher(primes, max_rollback=2, time_limit=0.3)
    assert m.accept_string('"')  # inside the string, where each byte needs the huge derivatives
    token_a = next(t for t in range(deepseek.info.num_tokens) if deepseek.info.token_bytes(t) == b"a")
    # The shortest completion: the empty string's closing quote, one token, read off the
    # expressions' shortest words (ExprStore::shortest_candidate, checked by one derivative)
    # where the breadth-first searches ran into their derivative work limit and knew no bound.
    # Should the time limit come first, it names the call.
    t0 = time.perf_counter()
    try:
        assert m.min_completion_tokens() == 1
    except stencil.TimeLimitExceeded as e:
        assert str(e).startswith("min_completion_tokens exceeded the matcher's time limit of 0.3 s")
    assert time.perf_counter() - t0 < GUARD_S
    raises_in_time("accept_token", lambda: m.accept_token(token_a), 0.3)
    raises_in_time("accept_string", lambda: m.accept_string("ab"), 0.3)
    raises_in_time("accept_bytes", lambda: m.accept_bytes(b"ab"), 0.3)
    raises_in_time("validate_tokens", lambda: m.validate_tokens([token_a]), 0.3)
    raises_in_time("forced_bytes", m.forced_bytes, 0.3)
    raises_in_time("forced_tokens", m.forced_tokens, 0.3)
    # a refused call is not half-applied: one step (the quote), nothing after it
    assert m.num_accepted_tokens == 1 and not m.is_terminated()
    m.rollback(1)
    assert m.num_accepted_tokens == 0


def test_a_batch_fill_raises_but_fills_the_other_rows(deepseek, primes, compiler):
    tok = deepseek.info
    ok = stencil.Matcher(compiler.compile_json_schema({"type": "integer"}), max_rollback=4)
    slow = stencil.Matcher(primes, time_limit=0.3)
    bm = bitmask(tok, 2)
    t0 = time.perf_counter()
    with pytest.raises(stencil.TimeLimitExceeded, match="^fill_next_token_bitmasks exceeded the matcher's time"):
        stencil.fill_next_token_bitmasks([ok, slow], bm)
    assert time.perf_counter() - t0 < GUARD_S
    # the ordinary matcher's row is its mask, and both matchers go on
    alone = bitmask(tok)
    ok.fill_next_token_bitmask(alone, 0)
    assert np.array_equal(bm[0], alone[0])
    seven = next(t for t in range(tok.num_tokens) if tok.token_bytes(t) == b"7")
    assert ok.accept_token(seven) and ok.num_accepted_tokens == 1
    assert slow.num_accepted_tokens == 0 and slow.accept_string('"')
    with pytest.raises(stencil.TimeLimitExceeded):
        stencil.fill_next_token_bitmasks([slow], bm, [1])


def test_a_batch_fill_returns_each_rows_error(deepseek, primes, compiler):
    """return_errors: the slow row's TimeLimitExceeded comes back in its own slot (the same error
    class and message the single-row call raises), the other rows' slots are None and their
    masks are theirs; a usage error of the call itself still raises."""
    tok = deepseek.info
    ms = [stencil.Matcher(compiler.compile_json_schema({"type": "integer"})),
          stencil.Matcher(primes, time_limit=0.3),
          stencil.Matcher(compiler.compile_regex("[a-c]+x"))]
    bm = bitmask(tok, 3)
    errors = stencil.fill_next_token_bitmasks(ms, bm, remaining_tokens=[8, 8, None], return_errors=True)
    assert [type(e) for e in errors] == [type(None), stencil.TimeLimitExceeded, type(None)]
    assert str(errors[1]).startswith("fill_next_token_bitmasks exceeded the matcher's time")
    for i in (0, 2):
        alone = bitmask(tok)
        ms[i].fill_next_token_bitmask(alone, 0, remaining_tokens=8 if i == 0 else None)
        assert np.array_equal(bm[i], alone[0])
    assert stencil.fill_next_token_bitmasks([ms[0], ms[2]], bm, return_errors=True) == [None, None]
    with pytest.raises(ValueError, match="same bitmask row"):
        stencil.fill_next_token_bitmasks(ms[:2], bm, indices=[1, 1], return_errors=True)


def test_an_async_batch_fill_runs_beside_python_and_returns_each_rows_error(deepseek, primes, compiler):
    """fill_next_token_bitmasks_async: Python runs while the core fills (the slow row's 0.3 s
    limit is still running when it returns), the matchers are busy until wait(), and wait()
    gives the rows' errors as return_errors does; the rows are the synchronous call's."""
    tok = deepseek.info
    ok = stencil.Matcher(compiler.compile_json_schema({"type": "integer"}))
    slow = stencil.Matcher(primes, time_limit=0.3)
    bm = bitmask(tok, 2)
    t0 = time.perf_counter()
    pending = stencil.fill_next_token_bitmasks_async([ok, slow], bm, remaining_tokens=[6, None])
    started = time.perf_counter() - t0
    assert started < 0.2 and not pending.done and pending.seconds == 0.0
    with pytest.raises(stencil.ConcurrentUseError):
        ok.accept_string("1")
    errors = pending.wait()
    assert [type(e) for e in errors] == [type(None), stencil.TimeLimitExceeded]
    assert pending.done and 0.2 < pending.seconds < GUARD_S
    assert [type(e) for e in pending.wait()] == [type(None), stencil.TimeLimitExceeded]  # again: the same
    alone = bitmask(tok)
    ok.fill_next_token_bitmask(alone, 0, remaining_tokens=6)
    assert np.array_equal(bm[0], alone[0]) and ok.accept_string("1")


def test_an_async_batch_fill_dropped_unwaited_waits_for_itself(compiler, deepseek):
    """A PendingFill dropped without wait() finishes first (it holds its matchers and bitmask),
    and bad arguments are refused before anything starts."""
    tok = deepseek.info
    ms = [stencil.Matcher(compiler.compile_regex("[a-z]+")) for _ in range(3)]
    bm = bitmask(tok, 3)
    stencil.fill_next_token_bitmasks_async(ms, bm)  # dropped at once
    del bm
    assert all(m.accept_string("ab") for m in ms)  # free again
    with pytest.raises(ValueError, match="same matcher"):
        stencil.fill_next_token_bitmasks_async([ms[0], ms[0]], bitmask(tok, 2))
    with pytest.raises(TypeError, match=r"matchers\[1\] is NoneType"):
        stencil.fill_next_token_bitmasks_async([ms[0], None], bitmask(tok, 2))
    with pytest.raises(TypeError, match="int32"):
        stencil.fill_next_token_bitmasks_async(ms, np.zeros((3, 10), np.int64))
    assert ms[0].accept_string("c")


# ------------------------------------------------------------------------------- exact after a timeout

def point_ranges(n):
    """An alternation of n one-value number ranges (how enums of numbers compiled before number
    sets): its first mask derives every value at each byte, about 0.5 s on 2 cores for 20,000."""
    b = stencil.GrammarBuilder()
    e = b.re_or([b.re_number_range(str(v), False, str(v), False) for v in range(0, 7 * n, 7)])
    start = b.rule("start")
    b.add_alternative(start, [b.lexeme(e, "number")])
    return b.build(start)


def test_after_a_timeout_the_mask_is_the_exact_one(deepseek):
    """A slow first mask (point_ranges) cut short at 0.01 s, then filled without a limit, equals a
    fresh matcher's on a separately compiled grammar."""
    tok = deepseek.info
    g = stencil.GrammarCompiler(tok).compile_grammar(point_ranges(20_000))
    m = stencil.Matcher(g, time_limit=0.01)
    bm = bitmask(tok)
    with pytest.raises(stencil.TimeLimitExceeded):
        m.fill_next_token_bitmask(bm, 0)
    m.time_limit = None
    m.fill_next_token_bitmask(bm, 0)
    ref = bitmask(tok)
    stencil.Matcher(stencil.GrammarCompiler(tok).compile_grammar(point_ranges(20_000))).fill_next_token_bitmask(ref, 0)
    assert np.array_equal(bm, ref)
    # and a larger limit, rather than none, does as well on a fork
    f = m.fork()
    f.time_limit = 30
    f.fill_next_token_bitmask(bm, 0)
    assert np.array_equal(bm, ref)


RICH_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+[0-9]*$", "maxLength": 12},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue", "cyan"]}, "uniqueItems": True},
        "size": {"type": "integer", "minimum": 3, "maximum": 4000},
        "meta": {"type": "object", "additionalProperties": {"type": "number"}, "maxProperties": 3},
    },
    "required": ["name", "tags"],
    "additionalProperties": False,
}


def test_calls_cut_short_anywhere_leave_the_state_exact(deepseek):
    """A random walk where each call first runs under a limit of a few microseconds (cut short
    wherever the clock is read: derivatives, lexer states, Earley rows, trie walks, costs), then
    again without one: every mask, accept and cost equals a reference matcher's that never had a
    limit."""
    tok = deepseek.info
    eos = set(tok.eos_token_ids)
    ref = stencil.Matcher(stencil.GrammarCompiler(tok).compile_json_schema(RICH_SCHEMA))
    m = stencil.Matcher(stencil.GrammarCompiler(tok).compile_json_schema(RICH_SCHEMA))
    rng = random.Random(7)
    bm, want = bitmask(tok), bitmask(tok)
    cut = 0

    def twice(fn):
        nonlocal cut
        before = m.debug_state()  # lexer state, parser rows and items, tokens
        m.time_limit = rng.choice((1e-6, 1e-5, 1e-4))
        try:
            return fn()
        except stencil.TimeLimitExceeded:
            cut += 1
            assert m.debug_state() == before
        finally:
            m.time_limit = None
        return fn()

    for _ in range(40):
        ref.fill_next_token_bitmask(want, 0)
        twice(lambda: m.fill_next_token_bitmask(bm, 0))
        assert np.array_equal(bm, want)
        if rng.random() < 0.3:
            assert twice(lambda: m.fill_next_token_bitmask(bm, 0, remaining_tokens=40)) is None
            ref.fill_next_token_bitmask(want, 0, remaining_tokens=40)
            assert np.array_equal(bm, want)
            assert twice(m.min_completion_tokens) == ref.min_completion_tokens()
        allowed = [t for t in np.flatnonzero(stencil.bitmask.bitmask_to_bool(want, tok.vocab_size)[0]) if t not in eos]
        if not allowed:
            break
        t = int(rng.choice(allowed))
        assert twice(functools.partial(m.accept_token, t)) is True
        assert ref.accept_token(t)
        assert twice(m.is_accepting) == ref.is_accepting()
    assert cut > 0  # the limits did cut calls short


# ------------------------------------------------------------------------------- nesting, forks, arguments

def test_the_earlier_of_a_compile_deadline_and_the_limit_wins(deepseek, primes):
    bm = bitmask(deepseek.info)
    slow = stencil.Matcher(primes, time_limit=30)
    with compile_deadline(0.3, "test"):
        assert raise_time(stencil.CompileTimeout, lambda: slow.fill_next_token_bitmask(bm, 0)) < GUARD_S
    quick = stencil.Matcher(primes, time_limit=0.2)
    with compile_deadline(1.0, "test"):
        raises_in_time("fill_next_token_bitmask", lambda: quick.fill_next_token_bitmask(bm, 0), 0.2)
        # the outer deadline is back after the call: a matcher without a limit stops at it
        free = stencil.Matcher(primes)
        assert raise_time(stencil.CompileTimeout, lambda: free.fill_next_token_bitmask(bm, 0)) < GUARD_S
    # one except catches both; a time limit is a LimitError, not a work limit nor a grammar error
    assert issubclass(stencil.CompileTimeout, stencil.TimeLimitExceeded)
    assert issubclass(stencil.TimeLimitExceeded, stencil.LimitError)
    assert not issubclass(stencil.TimeLimitExceeded, (stencil.BudgetError, stencil.GrammarError))


def test_the_limit_is_a_property_and_forks_keep_it(compiler):
    g = compiler.compile_regex("[0-9]+")
    m = stencil.Matcher(g, 4, time_limit=0.25)
    assert m.time_limit == 0.25 and m.fork().time_limit == 0.25
    m.time_limit = 2
    assert m.time_limit == 2.0
    m.time_limit = None
    assert m.time_limit is None and m.fork().time_limit is None
    assert stencil.Matcher(g).time_limit is None


@pytest.mark.parametrize("bad, error", [
    (0, ValueError), (-1.5, ValueError), (math.nan, ValueError), (math.inf, ValueError),
    ("0.5", TypeError), (True, TypeError), ([1], TypeError),
])
def test_a_bad_time_limit_is_refused_by_name(compiler, bad, error):
    g = compiler.compile_regex("[0-9]+")
    with pytest.raises(error, match="time_limit"):
        stencil.Matcher(g, time_limit=bad)
    m = stencil.Matcher(g, time_limit=1)
    with pytest.raises(error, match="time_limit"):
        m.time_limit = bad
    assert m.time_limit == 1.0
