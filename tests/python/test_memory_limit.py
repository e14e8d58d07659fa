"""One memory limit for the whole process (issue 24, F3): every compiled grammar's lazy lexer and
mask cache and every tokenizer's shared mask cache count against one limit, and past it the least
recently used grammars drop their lazy state. Each scenario runs in a fresh Python process (this
file run as a script), so that the counters and the RSS are its own and not the test session's.

The grammars are ``[ab]*a[ab]{n}c`` under DeepSeek's tokenizer: walking random a/b tokens visits
up to 2**n lexer states, each with a mask entry of 16 KiB (129,280 ids), so a few thousand steps
take hundreds of MB without a limit. Their masks have a plain oracle: any token of a's and b's,
and a token ``u + "c"`` (u of a's and b's) exactly where the text plus u ends with ``a`` and n
more letters.
"""
from __future__ import annotations

import gc
import json
import pathlib
import random
import subprocess
import sys
import threading

import numpy as np
import pytest

import stencil
from conftest import child_env
from stencil.bitmask import bitmask_to_bool
from stencil.testing import compiler_stats

HERE = pathlib.Path(__file__).parent
MB = 1 << 20


def _probe(*args: object) -> dict:
    # the probe imports the tests' tokenizer zoo, which imports tests.support (child_env)
    done = subprocess.run([sys.executable, __file__, *map(str, args)], capture_output=True, text=True,
                          timeout=240, cwd=HERE, env=child_env())
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- what the probes run (in their own process) ---------------------------------------------------

def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


class Walk:
    """DeepSeek's tokens of a, b and c, and the oracle of ``[ab]*a[ab]{n}c`` masks."""

    def __init__(self):
        import tokenizers_zoo
        self.tok = tokenizers_zoo.get("deepseek").info
        self.abc = {}
        for i in range(self.tok.num_tokens):
            b = self.tok.token_bytes(i)
            if b and set(b) <= set(b"abc") and not self.tok.is_special(i):
                self.abc[i] = b.decode()
        self.ab = sorted(i for i, s in self.abc.items() if "c" not in s)

    def allowed(self, text: str, n: int) -> set:
        out = set(self.ab)
        for i, s in self.abc.items():
            u = s[:-1]
            if s.endswith("c") and "c" not in u:
                whole = text + u
                if len(whole) > n and whole[-n - 1] == "a":
                    out.add(i)
        return out

    def check(self, bitmask: np.ndarray, row: int, text: str, n: int) -> None:
        got = set(np.flatnonzero(bitmask_to_bool(bitmask, self.tok.vocab_size)[row]).tolist())
        want = self.allowed(text, n)
        assert got == want, (n, text[-40:], sorted(got ^ want)[:10])


def probe_accounting() -> dict:
    w = Walk()
    before = stencil.memory_usage()
    compiler = stencil.GrammarCompiler(w.tok)
    grammars = [compiler.compile_regex("[ab]*a[ab]{%d}c" % n) for n in (9, 10)]
    matchers = [stencil.Matcher(g) for g in grammars]
    bm = stencil.allocate_token_bitmask(1, w.tok.vocab_size)
    rng = random.Random(3)
    for _ in range(300):
        for m in matchers:
            m.fill_next_token_bitmask(bm, 0)
            assert m.accept_token(rng.choice(w.ab))
    del m
    after = stencil.memory_usage()
    sum_grammars = sum(g.memory_bytes for g in grammars)
    shared = grammars[0].vocabulary.shared_mask_bytes
    del matchers, grammars, compiler
    gc.collect()
    return {"before": before, "after": after, "sum_grammars": sum_grammars, "shared": shared,
            "gone": stencil.memory_usage()}


def _walk_fresh(w: Walk, n: int, steps: int, seed: int) -> tuple:
    g = stencil.GrammarCompiler(w.tok).compile_regex("[ab]*a[ab]{%d}c" % n)
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, w.tok.vocab_size)
    rng = random.Random(seed)
    text = ""
    for _ in range(steps):
        m.fill_next_token_bitmask(bm, 0)
        t = rng.choice(w.ab)
        assert m.accept_token(t)
        text += w.abc[t]
    return g, m, text


def probe_pinned() -> dict:
    """A grammar evicted while its matcher is idle: the matcher's dropped epoch counts until the
    matcher moves (it then replays its tokens into the fresh one) and is freed then; meanwhile
    another grammar works under the limit as if the dropped epoch were not there."""
    w = Walk()
    g, m, text = _walk_fresh(w, 12, 3000, 8)
    grown = g.memory_bytes
    stencil.set_memory_limit(4 << 20)   # evicts at once
    held = stencil.memory_usage()
    dropped_to = g.memory_bytes
    other = _walk_fresh(w, 10, 1500, 9)[0].num_lexer_renewals
    bm = stencil.allocate_token_bitmask(1, w.tok.vocab_size)
    stencil.set_memory_limit(None)
    m.fill_next_token_bitmask(bm, 0)     # moves to the fresh epoch
    w.check(bm, 0, text, 12)
    moved = stencil.memory_usage()
    now = g.memory_bytes
    del g, m
    stencil.set_memory_limit(4 << 20)
    alone = _walk_fresh(w, 10, 1500, 9)[0].num_lexer_renewals
    return {"grown": grown, "dropped_to": dropped_to, "held": held, "moved": moved, "now": now,
            "other": other, "alone": alone}


def _walk_one(w: Walk, compiler, n: int, steps: int, rng: random.Random) -> dict:
    g = compiler.compile_regex("[ab]*a[ab]{%d}c" % n)
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, w.tok.vocab_size)
    text, tokens, worst, worst_grammar, worst_rss = "", [], 0, 0, 0
    for step in range(steps):
        m.fill_next_token_bitmask(bm, 0)
        if step % 250 == 0:
            w.check(bm, 0, text, n)
        t = rng.choice(w.ab)
        assert m.accept_token(t)
        text += w.abc[t]
        tokens.append(t)
        if step % 20 == 0:  # right after a step returns
            worst = max(worst, stencil.memory_usage()["total"])
            worst_grammar = max(worst_grammar, g.memory_bytes)
            worst_rss = max(worst_rss, _rss())
    return {"grammar": g, "tokens": tokens, "worst": worst, "worst_grammar": worst_grammar, "worst_rss": worst_rss}


def _replay_against_fresh(w: Walk, g, n: int, tokens: list) -> None:
    """A new matcher of an evicted grammar, and one of a fresh compile, on the same tokens."""
    again = stencil.Matcher(g)
    fresh = stencil.Matcher(stencil.GrammarCompiler(w.tok).compile_regex("[ab]*a[ab]{%d}c" % n))
    bm = stencil.allocate_token_bitmask(2, w.tok.vocab_size)
    text = ""
    for i, t in enumerate(tokens):
        if i % 100 == 0:
            again.fill_next_token_bitmask(bm, 0)
            fresh.fill_next_token_bitmask(bm, 1)
            assert np.array_equal(bm[0], bm[1]), i
            w.check(bm, 0, text, n)
        assert again.accept_token(t) and fresh.accept_token(t)
        text += w.abc[t]


def probe_bound(limit_mb: int, steps: int) -> dict:
    w = Walk()
    compiler = stencil.GrammarCompiler(w.tok)
    # The tokenizer's own tables (trie, plain-text slice) are built on first use and belong to no
    # memory limit: build them before the RSS baseline.
    warm = stencil.Matcher(compiler.compile_regex("[ab]+"))
    warm.fill_next_token_bitmask(stencil.allocate_token_bitmask(1, w.tok.vocab_size), 0)
    del warm
    gc.collect()
    if limit_mb:
        stencil.set_memory_limit(limit_mb * MB)
    rss0 = _rss()
    rng = random.Random(11)
    walks = {n: _walk_one(w, compiler, n, steps, rng) for n in (18, 16, 14, 12)}
    first = walks[18]
    first_bytes_after = first["grammar"].memory_bytes
    _replay_against_fresh(w, first["grammar"], 18, first["tokens"][:1500])
    return {"limit": stencil.memory_usage()["limit"], "usage": stencil.memory_usage(),
            "worst": max(x["worst"] for x in walks.values()),
            "worst_grammar": max(x["worst_grammar"] for x in walks.values()),
            "rss_growth": max(x["worst_rss"] for x in walks.values()) - rss0,
            "first_bytes_after": first_bytes_after, "cached": compiler_stats(compiler).cached_grammars}


def probe_threads(limit_mb: int, rounds: int) -> dict:
    """Two matchers of each of four grammars filled in parallel while the memory limit evicts, and a
    thread that moves the limit down and up and reads the counters meanwhile."""
    w = Walk()
    stencil.set_memory_limit(limit_mb * MB)
    compiler = stencil.GrammarCompiler(w.tok)
    ns = [17, 17, 15, 15, 13, 13, 11, 11]
    grammars = {n: compiler.compile_regex("[ab]*a[ab]{%d}c" % n) for n in set(ns)}
    matchers = [stencil.Matcher(grammars[n]) for n in ns]
    texts = [""] * len(ns)
    bm = stencil.allocate_token_bitmask(len(ns), w.tok.vocab_size)
    rng = random.Random(5)
    stop = threading.Event()

    def churn():
        k = 0
        while not stop.is_set():
            stencil.set_memory_limit((limit_mb // 2 if k % 2 else limit_mb) * MB)
            stencil.memory_usage()
            k += 1
            stop.wait(0.002)

    other = threading.Thread(target=churn)
    other.start()
    try:
        for r in range(rounds):
            stencil.fill_next_token_bitmasks(matchers, bm, num_threads=4)
            if r % 25 == 0:
                for i, n in enumerate(ns):
                    w.check(bm, i, texts[i], n)
            for i, m in enumerate(matchers):
                t = rng.choice(w.ab)
                assert m.accept_token(t)
                texts[i] += w.abc[t]
    finally:
        stop.set()
        other.join()
    return {"usage": stencil.memory_usage(), "renewals": sum(g.num_lexer_renewals for g in grammars.values())}


# --- a grammar whose size is not in its states: an enum of many numbers ---------------------------

def _heap_in_use() -> int:
    """glibc's bytes in use (mallinfo2: uordblks and mmapped blocks), what is live on the heap."""
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in
                    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


def probe_enum(limit_mb: int, values: int) -> dict:
    """A 20k-value enum: its lexer has a dozen states, but the grammar's expressions, their
    derivatives and the completion tables hold far more than the states do."""
    import tokenizers_zoo
    tok = tokenizers_zoo.get("deepseek").info
    compiler = stencil.GrammarCompiler(tok, compile_timeout=60)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    warm = stencil.Matcher(compiler.compile_regex("[0-9]+"))
    warm.fill_next_token_bitmask(bm, 0)
    del warm
    compiler.clear_cache()
    gc.collect()
    stencil.set_memory_limit(limit_mb * MB)
    heap0 = _heap_in_use()
    phases = []

    def phase(name):
        gc.collect()
        phases.append({"phase": name, "growth": _heap_in_use() - heap0, "total": stencil.memory_usage()["total"]})

    g = compiler.compile_json_schema({"enum": list(range(100_000, 100_000 + values))}, whitespace="compact",
                                     number_spelling="plain")
    phase("compiled")
    m = stencil.Matcher(g)
    cost = m.min_completion_tokens()
    phase("min_completion_tokens")
    for digit in "112345":  # a value, a digit at a time, each checked against the mask
        m.fill_next_token_bitmask(bm, 0)
        assert bitmask_to_bool(bm, tok.vocab_size)[0][tok.token_id(digit.encode())]
        assert m.accept_string(digit)
    phase("walked")
    assert m.is_accepting()
    return {"phases": phases, "cost": cost, "usage": stencil.memory_usage()}


def probe_one_call(limit_mb: int, values: int) -> dict:
    """One call that alone builds more than half the limit (a large enum's shortest completion):
    it fails with BudgetError from inside, the matcher as it was; with room it goes on."""
    import tokenizers_zoo
    tok = tokenizers_zoo.get("deepseek").info
    compiler = stencil.GrammarCompiler(tok, compile_timeout=60)
    g = compiler.compile_json_schema({"enum": list(range(100_000, 100_000 + values))}, whitespace="compact",
                                     number_spelling="plain")
    stencil.set_memory_limit(limit_mb * MB)
    m = stencil.Matcher(g)
    out = {"error": None}
    try:
        out["cost"] = m.min_completion_tokens()
    except stencil.BudgetError as e:
        out["error"] = str(e)
    out["after_error"] = stencil.memory_usage()
    stencil.set_memory_limit(1 << 30)
    out["cost_with_room"] = m.min_completion_tokens()
    out["accepts"] = m.accept_string("100007") and m.is_accepting()
    del m
    gc.collect()
    stencil.set_memory_limit(limit_mb * MB)
    stencil.memory.reclaim()
    out["back"] = stencil.memory_usage()
    return out


def probe_calls_at_once(limit_mb: int, threads: int) -> dict:
    """Calls in flight together, each building tens of MB (first budget-aware masks of distinct
    patterns with large automata): the counted total, sampled while they run, stays near the
    limit, because what a call builds is charged as it grows and a call fails once the process
    stays over the limit by half."""
    import tokenizers_zoo
    tok = tokenizers_zoo.get("deepseek").info
    compiler = stencil.GrammarCompiler(tok, compile_timeout=60)
    grammars = [compiler.compile_regex("[ab]*a[ab]{%d}c" % (23 + k % 3) + "x" * k) for k in range(threads)]
    stencil.set_memory_limit(limit_mb * MB)
    peak, stop, outcomes = [0], threading.Event(), []

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], stencil.memory_usage()["total"])
            stop.wait(0.005)

    def run(g):
        bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
        m = stencil.Matcher(g)
        try:
            m.fill_next_token_bitmask(bm, 0, remaining_tokens=40)
            outcomes.append("ok")
        except stencil.BudgetError as e:
            outcomes.append("limit" if "memory limit" in str(e) else str(e))

    sampler = threading.Thread(target=sample)
    sampler.start()
    workers = [threading.Thread(target=run, args=(g,)) for g in grammars]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    sampler.join()
    stencil.memory.reclaim()
    return {"peak": peak[0], "outcomes": outcomes, "after": stencil.memory_usage()}


# --- the tests --------------------------------------------------------------------------------------

def test_one_call_needing_more_than_half_the_limit_fails_inside_it():
    r = _probe("one_call", 96, 40000)
    # before, the call went on to about 110 MB of lexer state (the grammar itself: 44 MB)
    assert r["error"] and "min_completion_tokens built" in r["error"], r
    assert "more than half the process memory limit of 96 MB" in r["error"]
    # the grammar starts afresh; the matcher keeps the epoch it failed in until its next call
    assert r["after_error"]["retired"] > 32 * MB and r["after_error"]["evictions"] >= 1
    assert r["cost_with_room"] == 2 and r["accepts"]   # the matcher was left as it was
    assert r["back"]["total"] <= 96 * MB and r["back"]["retired"] == 0


def test_calls_in_flight_together_stay_near_the_limit():
    r = _probe("at_once", 32, 4)
    # each call may build up to half the limit; together they stop at 1.5x the limit (plus one
    # charging step per call and the grammars' own bytes) instead of adding up
    assert r["peak"] <= 32 * MB * 3 // 2 + 8 * MB, (r["peak"] / MB, r)
    assert set(r["outcomes"]) <= {"ok", "limit"}, r["outcomes"]
    assert r["after"]["total"] <= 32 * MB


def test_usage_counts_what_grammars_and_shared_caches_hold():
    r = _probe("accounting")
    before, after, gone = r["before"], r["after"], r["gone"]
    assert before["total"] == 0 and before["grammars"] == 0
    # (hundreds of entries; most keep their inner words sparse: a few hundred bytes each)
    assert after["grammars"] == 2 and after["masks"] > 100_000 and after["lexers"] > 0
    # memory_usage() measures the lexers first: the kinds add up, and they are exactly what the
    # grammars and the shared cache report (no dropped epoch is alive here)
    assert after["total"] == after["lexers"] + after["masks"] + after["shared_masks"] + after["grammar_ir"]
    assert 0 < after["grammar_ir"] < 1 * MB  # two small regexes' rules and expressions
    assert after["lexers"] + after["masks"] == r["sum_grammars"]
    assert after["shared_masks"] == r["shared"] > 0
    assert after["evictions"] == 0 and after["retired"] == 0
    # the grammars gone, their bytes leave the count; the tokenizer's shared masks stay
    assert gone["grammars"] == 0 and gone["lexers"] == gone["masks"] == gone["grammar_ir"] == 0
    assert gone["shared_masks"] == r["shared"]


# (the lexers hold most of these grammars' bytes: their mask entries are sparse, a few hundred bytes)
@pytest.mark.parametrize("limit_mb", [16, 8])
def test_small_limit_bounds_count_and_rss_and_masks_stay_exact(limit_mb):
    r = _probe("bound", limit_mb, 3000 if limit_mb == 16 else 1500)
    limit = limit_mb * MB
    assert r["limit"] == limit
    # Right after a matcher call returns, the counted total is at most the limit; memory_usage()
    # adds the lexer states built since the lexer was last measured (fewer than 1,024, a few
    # hundred bytes each here): 1 MiB covers them.
    assert r["worst"] <= limit + 1 * MB, (r["worst"] / MB, r)
    assert r["worst_grammar"] <= limit
    assert r["usage"]["evictions"] >= 2 and r["usage"]["total"] <= limit + 1 * MB
    # RSS: the limit, plus what the memory limit does not count (malloc's overhead and fragmentation,
    # hash tables' slack, the matchers' histories, the bitmasks): 32 MiB
    assert r["rss_growth"] <= limit + 32 * MB, r["rss_growth"] / MB
    # the compiler still caches the evicted grammars, small now
    assert r["cached"] == 5 and r["first_bytes_after"] < 1 * MB


def test_a_dropped_epoch_counts_until_its_matcher_moves():
    r = _probe("pinned")
    assert r["grown"] > 4.5 * MB and r["dropped_to"] < 256 << 10  # (over the limit set: evicted at once)
    assert r["held"]["evictions"] == 1
    # the idle matcher still holds the dropped lexer and masks: they still count (the masks as
    # they were, the lexer as last measured), over the limit of 4 MiB
    assert r["held"]["masks"] > 0 and r["held"]["retired"] > r["held"]["limit"]
    # another grammar is dropped as often as with no dropped epoch held (it would be at every
    # step if the memory limit tried to free what it cannot)
    assert r["other"] <= 2 * r["alone"] + 2, r
    # it moved: the dropped epoch is gone, what counts is what the grammar holds now
    assert r["moved"]["retired"] == 0
    assert r["moved"]["lexers"] + r["moved"]["masks"] == r["now"] < r["grown"]


def test_evictions_while_threads_fill_masks():
    r = _probe("threads", 24, 300)
    assert r["usage"]["evictions"] > 0 and r["renewals"] > 0, r


@pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(__import__("os"), "confstr")
                    or "glibc" not in (__import__("os").confstr("CS_GNU_LIBC_VERSION") or ""),
                    reason="reads glibc's mallinfo2")
def test_a_large_enum_counts_what_it_holds_and_stays_bounded():
    r = _probe("enum", 64, 20000)
    limit = 64 * MB
    assert r["cost"] >= 1 and r["usage"]["grammar_ir"] > 4 * MB
    for p in r["phases"]:
        # The count follows the live heap (mallinfo2) within 1.5x either way: the grammar itself,
        # the derivatives of its 20k alternatives and the lexer's maps all count (before, a third
        # of it did: 34 MB counted for 258 MB live).
        assert p["growth"] / 1.5 <= p["total"] <= p["growth"] * 1.5, p
        # The live heap: the limit, plus what one call builds before the memory limit looks again (the
        # derivative cache, capped at a quarter of the limit, and the states and expressions of
        # the call), plus the matcher, the bitmask and malloc's slack: half the limit in all.
        assert p["growth"] <= limit + limit // 2, (p["growth"] / MB, p)


def test_set_memory_limit_checks_its_argument():
    for bad in ("1GB", 1.5e9, True, [1]):
        with pytest.raises(TypeError, match="limit"):
            stencil.set_memory_limit(bad)
    for bad in (-1, 0, 1000, 1 << 64):
        with pytest.raises(ValueError, match="limit"):
            stencil.set_memory_limit(bad)
    previous = stencil.set_memory_limit(3 << 30)
    try:
        assert stencil.memory_usage()["limit"] == 3 << 30
    finally:
        assert stencil.set_memory_limit(previous) == 3 << 30
    assert stencil.set_memory_limit(None) == previous
    assert stencil.memory_usage()["limit"] == stencil.memory.DEFAULT_MEMORY_LIMIT


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    kind, args = sys.argv[1], [int(a) for a in sys.argv[2:]]
    result = {"accounting": probe_accounting, "bound": probe_bound, "threads": probe_threads,
              "pinned": probe_pinned, "enum": probe_enum, "one_call": probe_one_call,
              "at_once": probe_calls_at_once}[kind](*args)
    print(json.dumps(result, default=lambda o: None))
