"""Misuse of the Matcher and bitmask API gets a clear error, never a crash, a silent copy or a
corrupted state: wrong bitmask arrays, junk in a batch, one matcher shared by two threads."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import stencil
from stencil.bitmask import bitmask_to_bool
from tokenizers_zoo import get


def small_tok():
    toks = [bytes([c]) for c in range(32, 127)] + [b"ab", b"<eos>"]
    return stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1])


@pytest.fixture(scope="module")
def small():
    tok = small_tok()
    return tok, stencil.GrammarCompiler(tok).compile_regex("[a-c]+x")


def test_batch_with_none_is_a_type_error_not_a_crash():
    # In a child process: before the fix this was a segmentation fault that would end the suite.
    code = textwrap.dedent("""
        import stencil
        toks = [bytes([c]) for c in range(32, 127)] + [b"<eos>"]
        tok = stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1])
        m = stencil.Matcher(stencil.GrammarCompiler(tok).compile_regex("[a-c]+"))
        bm = stencil.allocate_token_bitmask(3, tok.vocab_size)
        for batch in ([m, None], [None], [m, "matcher"], [m, 3]):
            try:
                stencil.fill_next_token_bitmasks(batch, bm)
            except TypeError as e:
                print("TypeError:", e)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines == ["TypeError: matchers[1] is NoneType, not a stencil.Matcher",
                     "TypeError: matchers[0] is NoneType, not a stencil.Matcher",
                     "TypeError: matchers[1] is str, not a stencil.Matcher",
                     "TypeError: matchers[1] is int, not a stencil.Matcher"]


def _bad_numpy_masks(words):
    yield "int64", np.zeros((1, words), np.int64), TypeError, "int32"
    yield "uint32", np.zeros((1, words), np.uint32), TypeError, "int32"
    yield "float32", np.zeros((1, words), np.float32), TypeError, "int32"
    yield "fortran", np.asfortranarray(np.zeros((2, words), np.int32)), ValueError, "C-contiguous"
    yield "strided", np.zeros((1, 2 * words), np.int32)[:, ::2], ValueError, "C-contiguous"
    yield "every other row", np.zeros((4, words), np.int32)[::2], ValueError, "C-contiguous"
    yield "1-D", np.zeros(words, np.int32), ValueError, "2-D"


@pytest.mark.parametrize("case", range(7))
def test_wrong_numpy_bitmasks_are_refused_not_copied(small, case):
    tok, g = small
    words = (tok.vocab_size + 31) // 32
    name, arr, error, needle = list(_bad_numpy_masks(words))[case]
    m = stencil.Matcher(g)
    with pytest.raises(error, match=needle):
        m.fill_next_token_bitmask(arr, 0)
    with pytest.raises(error, match=needle):
        stencil.fill_next_token_bitmasks([m], arr)
    assert not np.asarray(arr).any(), name  # nothing written anywhere


def test_wrong_torch_bitmasks_are_refused_and_right_ones_written(small):
    torch = pytest.importorskip("torch")
    tok, g = small
    words = (tok.vocab_size + 31) // 32
    m = stencil.Matcher(g)
    for bad, error in ((torch.zeros((1, words), dtype=torch.int64), TypeError),
                       (torch.zeros((1, words), dtype=torch.float32), TypeError),
                       (torch.zeros((words, 2), dtype=torch.int32).t(), ValueError)):
        with pytest.raises(error):
            m.fill_next_token_bitmask(bad, 0)
        assert not bad.any()
    good = torch.zeros((2, words), dtype=torch.int32)
    m.fill_next_token_bitmask(good, 1)
    allowed = np.flatnonzero(bitmask_to_bool(good.numpy(), tok.vocab_size)[1])
    assert sorted(tok.token_bytes(int(t)) for t in allowed) == [b"a", b"ab", b"b", b"c"]
    assert not good[0].any()


def test_batch_rows_must_be_distinct_and_in_range(small):
    tok, g = small
    a, b = stencil.Matcher(g), stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(2, tok.vocab_size)
    with pytest.raises(ValueError, match="same bitmask row"):
        stencil.fill_next_token_bitmasks([a, b], bm, indices=[1, 1])
    with pytest.raises(ValueError, match="out of range"):
        stencil.fill_next_token_bitmasks([a, b], bm, indices=[0, 2])
    with pytest.raises(ValueError, match="twice"):
        stencil.fill_next_token_bitmasks([a, a], bm)


def test_max_rollback_minus_one_is_unlimited_and_below_is_an_error(small):
    tok, g = small
    m = stencil.Matcher(g, max_rollback=-1)
    ids = [tok.token_bytes(i) for i in range(tok.vocab_size)].index
    text = [ids(b"a"), ids(b"b")] * 50
    assert m.accept_tokens(text) == 100
    m.rollback(100)
    assert m.num_accepted_tokens == 0
    assert m.accept_tokens(text + [ids(b"x")]) == 101 and m.is_accepting()
    with pytest.raises(ValueError, match="max_rollback"):
        stencil.Matcher(g, max_rollback=-2)
    with pytest.raises(TypeError):
        stencil.Matcher(g, max_rollback="all")
    bounded = stencil.Matcher(g, max_rollback=3)
    bounded.accept_tokens(text[:10])
    with pytest.raises(ValueError, match="exceeds max_rollback=3"):
        bounded.rollback(4)


def test_empty_vocabulary_is_an_error():
    with pytest.raises(stencil.GrammarError, match="no tokens"):
        stencil.TokenizerInfo.from_vocab([])


@pytest.fixture(scope="module")
def deepseek_json():
    entry = get("deepseek")
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z ]+$"},
                                               "tags": {"type": "array", "items": {"type": "string"}}}}
    return entry, stencil.GrammarCompiler(entry.info).compile_json_schema(schema)


def test_one_matcher_shared_by_two_threads_is_refused_not_corrupted(deepseek_json):
    entry, g = deepseek_json
    text = '{"name": "ada lovelace", "tags": ["a", "bc", "def"]}'
    ids = entry.hf.encode(text, add_special_tokens=False).ids
    m = stencil.Matcher(g, max_rollback=-1)
    bm = stencil.allocate_token_bitmask(1, entry.info.vocab_size)
    stop = threading.Event()
    fill_errors: list[BaseException] = []

    def filler():
        while not stop.is_set():
            try:
                m.fill_next_token_bitmask(bm, 0)  # releases the GIL while it walks
            except stencil.ConcurrentUseError:
                pass
            except BaseException as e:  # anything else is a failure of the contract
                fill_errors.append(e)
                return
            time.sleep(0.0002)  # leave the matcher free now and then, so both threads get through

    t = threading.Thread(target=filler)
    t.start()
    refused = accepted = 0
    # the loop ends as soon as both threads got through often enough (well under a second idle);
    # the deadline only bounds a race that never happens, so it is generous for a loaded machine
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and (refused < 20 or accepted < len(ids) + 5):
            k = m.num_accepted_tokens
            try:
                ok = m.accept_token(ids[k]) if k < len(ids) else (m.rollback(k) or True)
                accepted += bool(ok)
                assert ok
            except stencil.ConcurrentUseError as e:
                assert "another thread" in str(e)
                refused += 1
                assert m.num_accepted_tokens == k  # a refused call changed nothing
    finally:
        stop.set()
        t.join()
    assert not fill_errors, fill_errors
    assert refused > 0  # the race was really exercised
    # The state is intact: finish the text from wherever it stands and it is accepted.
    m.rollback(m.num_accepted_tokens)
    assert m.accept_tokens(ids) == len(ids) and m.is_accepting()


def test_separate_matchers_on_one_grammar_in_threads_agree_with_one_thread(deepseek_json):
    entry, g = deepseek_json
    texts = ['{"name": "x", "tags": []}', '{"name": "grace hopper", "tags": ["p", "q r"]}',
             '{"name": "a b c", "tags": ["' + "z" * 40 + '"]}', '{}']
    encoded = [entry.hf.encode(t, add_special_tokens=False).ids for t in texts]
    V = entry.info.vocab_size

    def masks_of(ids):
        m = stencil.Matcher(g)
        bm = stencil.allocate_token_bitmask(1, V)
        out = []
        for t in ids:
            m.fill_next_token_bitmask(bm, 0)
            out.append(bm[0].copy())
            assert m.accept_token(t)
        return out

    expected = [masks_of(ids) for ids in encoded]
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def worker(k):
        try:
            for _ in range(3):
                got = masks_of(encoded[k % len(encoded)])
                assert all(np.array_equal(a, b) for a, b in zip(got, expected[k % len(encoded)]))
            results[k] = got
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 8
    # and the batch call over the same matchers' states gives the same rows
    ms = [stencil.Matcher(g) for _ in encoded]
    bm = stencil.allocate_token_bitmask(len(ms), V)
    stencil.fill_next_token_bitmasks(ms, bm)
    for row, exp in zip(bm, expected):
        assert np.array_equal(row, exp[0])
