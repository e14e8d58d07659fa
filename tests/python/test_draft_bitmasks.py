"""stencil.fill_draft_bitmasks: the masks of every position of speculative drafts in one call.

The oracle is a fresh matcher per row, fed the prefix and the draft tokens before that row, whose
mask ``fill_next_token_bitmask`` writes under the budget less those tokens. Drafts are the true
continuation of valid outputs with random tokens put in (which the grammar refuses), end tokens,
tight budgets (which refuse tokens the grammar allows) and terminated matchers; the matchers'
states are unchanged after each call.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import stencil

SCHEMAS = [
    ({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"},
                                       "tags": {"type": "array", "items": {"enum": ["a", "bb", "ccc"]}, "maxItems": 3}},
      "required": ["name", "age"], "additionalProperties": False},
     [{"name": "Ada Lovelace", "age": 36, "tags": ["a", "ccc"]}, {"name": "Bo", "age": -4}]),
    ({"enum": ["red", "green", "blue"]}, ["green", "red"]),
    ({"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 5}, [[1.5, 2, -3e4], [0, 0]]),
]


def _mask(m: stencil.Matcher, vocab: int, budget: int | None) -> np.ndarray:
    row = stencil.allocate_token_bitmask(1, vocab)
    m.fill_next_token_bitmask(row, 0, remaining_tokens=budget)
    if budget == 0 and not row.any():   # a spent budget: the mask without it
        m.fill_next_token_bitmask(row, 0)
    return row[0]


def _allows(row: np.ndarray, t: int) -> bool:
    return bool((int(row[t >> 5]) >> (t & 31)) & 1)


def _expected(grammar, prefix: list[int], draft: list[int], budget: int | None, vocab: int) -> list[np.ndarray]:
    """Each row by a fresh matcher (the oracle), as the docstring of fill_draft_bitmasks says."""
    rows: list[np.ndarray] = []
    full = np.full(stencil.allocate_token_bitmask(1, vocab).shape[1], -1, dtype=np.int32)
    stopped = False   # after a row that refuses its draft token, or a terminated matcher's row
    for j in range(len(draft) + 1):
        if stopped:
            rows.append(full)
            continue
        m = stencil.Matcher(grammar)
        assert m.accept_tokens(prefix + draft[:j]) == len(prefix) + j
        stopped = m.is_terminated()
        rows.append(full if stopped else _mask(m, vocab, None if budget is None else max(0, budget - j)))
        stopped = stopped or (j < len(draft) and not _allows(rows[-1], draft[j]))
    return rows


def _cases(info, encode, compiler, rng):
    """(grammar, prefix tokens, draft, budget) for random cut points of the instances' tokens."""
    eos = info.eos_token_ids[0]
    out = []
    for schema, instances in SCHEMAS:
        grammar = compiler.compile_json_schema(schema)
        for inst in instances:
            ids = encode(json.dumps(inst)) + [eos]
            for _ in range(6):
                at = int(rng.integers(0, len(ids)))
                draft = list(ids[at:at + int(rng.integers(0, 7))])
                if draft and rng.random() < 0.4:   # a token the grammar (likely) refuses
                    draft[int(rng.integers(0, len(draft)))] = int(rng.integers(0, info.vocab_size))
                budget = rng.choice([None, len(ids) - at + 2, max(0, len(ids) - at - 2), 0])
                out.append((grammar, list(ids[:at]), draft, None if budget is None else int(budget)))
    return out


@pytest.mark.parametrize("num_threads", [1, 3])
def test_rows_equal_fresh_matchers_fed_the_draft(deepseek, compiler, num_threads):
    info, rng = deepseek.info, np.random.default_rng(num_threads)
    cases = _cases(info, lambda t: deepseek.encode_batch([t])[0], compiler, rng)
    assert any(d and not _allows(_expected(g, p, d, b, info.vocab_size)[0], d[0]) for g, p, d, b in cases)
    for start in range(0, len(cases), 7):   # batches of 7 requests
        batch = cases[start:start + 7]
        matchers, firsts, row = [], [], 1
        for grammar, prefix, draft, _ in batch:
            m = stencil.Matcher(grammar, max_rollback=8)
            assert m.accept_tokens(prefix) == len(prefix)
            matchers.append(m)
            firsts.append(row)
            row += len(draft) + 2   # a row left between requests stays untouched
        bm = stencil.allocate_token_bitmask(row, info.vocab_size)
        bm[:] = 0x5A5A5A5A
        before = [(m.num_accepted_tokens, m.is_terminated(), _mask(m, info.vocab_size, None)) for m in matchers]
        refused = stencil.fill_draft_bitmasks(matchers, [c[2] for c in batch], bm, firsts, num_threads=num_threads,
                                              remaining_tokens=[c[3] for c in batch])
        assert refused == [None] * len(batch)
        for (grammar, prefix, draft, budget), first, m, b in zip(batch, firsts, matchers, before):
            for j, want in enumerate(_expected(grammar, prefix, draft, budget, info.vocab_size)):
                np.testing.assert_array_equal(bm[first + j], want, err_msg=f"{prefix} + {draft[:j]}, budget {budget}")
            assert (bm[first + len(draft) + 1] == 0x5A5A5A5A).all()
            assert (m.num_accepted_tokens, m.is_terminated()) == b[:2]
            np.testing.assert_array_equal(_mask(m, info.vocab_size, None), b[2])


def test_terminated_matcher_rows_allow_everything(deepseek, compiler):
    info = deepseek.info
    m = stencil.Matcher(compiler.compile_json_schema({"enum": ["ok"]}), max_rollback=4)
    assert m.accept_tokens(deepseek.encode_batch(['"ok"'])[0] + [info.eos_token_ids[0]]) and m.is_terminated()
    bm = stencil.allocate_token_bitmask(3, info.vocab_size)
    assert stencil.fill_draft_bitmasks([m], [[5, 6]], bm, [0]) == [None]
    assert (bm == -1).all() and m.is_terminated()


def test_bad_requests_are_refused_before_any_work(deepseek, compiler):
    info = deepseek.info
    g = compiler.compile_json_schema({"type": "string"})
    a, b = stencil.Matcher(g, max_rollback=2), stencil.Matcher(g, max_rollback=-1)
    bm = stencil.allocate_token_bitmask(6, info.vocab_size)
    quote = deepseek.encode_batch(['"'])[0]
    with pytest.raises(stencil.UsageError, match="max_rollback=2"):
        stencil.fill_draft_bitmasks([a], [quote * 3], bm, [0])
    with pytest.raises(stencil.UsageError, match="same bitmask row"):
        stencil.fill_draft_bitmasks([a, b], [quote, []], bm, [0, 1])
    with pytest.raises(stencil.UsageError, match="twice"):
        stencil.fill_draft_bitmasks([a, a], [[], []], bm, [0, 1])
    with pytest.raises(stencil.UsageError, match="out of range"):
        stencil.fill_draft_bitmasks([b], [[info.vocab_size]], bm, [0])
    with pytest.raises(stencil.UsageError, match="one entry per matcher"):
        stencil.fill_draft_bitmasks([a, b], [[]], bm, [0, 2])
    with pytest.raises((ValueError, IndexError, stencil.UsageError), match="row"):
        stencil.fill_draft_bitmasks([b], [quote * 2], bm, [4])   # rows 4..6 of 6
    with pytest.raises(TypeError, match="drafts"):
        stencil.fill_draft_bitmasks([b], ["ab"], bm, [0])
    with pytest.raises(TypeError, match="first_rows"):
        stencil.fill_draft_bitmasks([b], [[]], bm, [0.0])
    with pytest.raises(TypeError):
        stencil.fill_draft_bitmasks([b], [[]], bm.astype(np.int64), [0])
    assert a.num_accepted_tokens == b.num_accepted_tokens == 0


@pytest.mark.parametrize("draft", ["xy", "x", "by"])
def test_masks_after_a_rollback_inside_a_key(ascii_tokenizer, draft):
    """Drafts inside a key of any string, rolled back, then another token: the mask after it is a
    fresh matcher's (`"ab` may not close again once "ab" is written, though `"axy` may), whatever
    masks were filled at the draft's positions (the repeat memo must not carry over)."""
    info = ascii_tokenizer
    ids = {bytes([i + 32]): i for i in range(95)}
    enc = lambda s: [ids[bytes([c])] for c in s.encode()]   # noqa: E731
    g = stencil.GrammarCompiler(info).compile_json_schema({"type": "object", "additionalProperties": {"type": "integer"}})
    for then in ("b", "bz", "c"):
        m = stencil.Matcher(g, max_rollback=8)
        assert m.accept_tokens(enc('{"ab": 1, "a')) == 12
        bm = stencil.allocate_token_bitmask(len(draft) + 1, info.vocab_size)
        stencil.fill_draft_bitmasks([m], [enc(draft)], bm, [0])
        assert m.accept_tokens(enc(then)) == len(then)
        got = stencil.allocate_token_bitmask(1, info.vocab_size)
        m.fill_next_token_bitmask(got, 0)
        fresh = stencil.Matcher(g)
        assert fresh.accept_tokens(enc('{"ab": 1, "a' + then)) == 12 + len(then)
        np.testing.assert_array_equal(got[0], _mask(fresh, info.vocab_size, None), err_msg=f"{draft} then {then}")
        assert _allows(got[0], ids[b'"']) == (then != "b")
