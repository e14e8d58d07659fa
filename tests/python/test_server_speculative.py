"""Speculative decoding in `stencil serve` (on by default; ``--no-speculate`` turns it off): a real
server over the default model, real HTTP clients. Greedy outputs equal those of the same requests
with ``"speculate": false``, for concurrent extraction requests with different schemas, rows joining
and leaving mid-batch with drafts of different lengths, and streamed requests; the batched cache
rolls rejected drafts back exactly, and a pass where rows are fed different numbers of tokens
(``KVBatch.step_rows``, each row paying for its own) computes what the padded pass computes. A row
whose drafts keep failing stops drafting (``DraftLength``). When drafts pay is
``test_draft_plan``'s: here every pass costs the same, so that rows draft on any machine."""
from __future__ import annotations

import asyncio
import json

import pytest

from generation_model import default_model
from server_fixture import start_server
from tests.support.extraction_cases import extraction_cases

torch = pytest.importorskip("torch")
httpx = pytest.importorskip("httpx")
jsonschema = pytest.importorskip("jsonschema")

CASES = extraction_cases(5, seed=5)


@pytest.fixture(autouse=True)
def drafts_always_cheap(monkeypatch):
    """Every pass costs the same (``StepCost``), so that rows draft whatever this machine's passes
    cost: these tests check what drafts do, not when they pay (``test_draft_plan`` does)."""
    from stencil.runtime.draft_plan import StepCost
    monkeypatch.setattr(StepCost, "seconds", lambda self, tokens, upto, rows=1: [1.0] * (upto - tokens + 1))
    monkeypatch.setattr(StepCost, "stale", lambda self: False)


@pytest.fixture(scope="module")
def base_url():
    url, stop = start_server(max_batch=8, speculate=True)
    yield url
    stop()


def _body(case, **extra) -> dict:
    return {"messages": [{"role": "user", "content": case.prompt}], "max_tokens": 120, "temperature": 0,
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": case.schema}}, **extra}


async def _post_all(url: str, bodies: list[dict], delays: list[float] | None = None) -> list[dict]:
    """The bodies sent together (each after its delay), their answers in order."""
    async with httpx.AsyncClient(base_url=url, timeout=600) as c:
        async def one(body, delay):
            await asyncio.sleep(delay)
            r = await c.post("/v1/chat/completions", json=body)
            assert r.status_code == 200, r.text[:300]
            return r.json()
        return await asyncio.gather(*(one(b, d) for b, d in zip(bodies, delays or [0.0] * len(bodies))))


def _text(answer: dict) -> str:
    return answer["choices"][0]["message"]["content"]


def _health(url: str) -> dict:
    return httpx.get(url + "/health").json()["speculation"]


def test_greedy_equals_plain_for_concurrent_extractions(base_url):
    before = _health(base_url)
    cases = CASES[:4]  # four concurrent rows, each with its own schema
    spec = asyncio.run(_post_all(base_url, [_body(c) for c in cases]))
    plain = asyncio.run(_post_all(base_url, [_body(c, speculate=False) for c in cases]))
    after = _health(base_url)
    for case, s, p in zip(cases, spec, plain):
        assert _text(s) == _text(p), case.name
        assert s["choices"][0]["finish_reason"] == p["choices"][0]["finish_reason"] == "stop"
        jsonschema.validate(json.loads(_text(s)), case.schema)
        assert s["usage"]["completion_tokens"] == p["usage"]["completion_tokens"]
        details = s["usage"]["completion_tokens_details"]
        assert details["accepted_prediction_tokens"] > 0, details
        assert "completion_tokens_details" not in p["usage"]  # the plain rows did not draft
    steps, tokens = (after[k] - before[k] for k in ("row_steps", "tokens"))
    assert after["on"] and tokens / steps > 1.5, (tokens, steps)


def test_streamed_deltas_equal_the_text(base_url):
    body = _body(CASES[4])
    whole = _text(asyncio.run(_post_all(base_url, [body]))[0])
    pieces = []
    with httpx.stream("POST", base_url + "/v1/chat/completions", json=dict(body, stream=True), timeout=600) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                for ch in json.loads(line[6:])["choices"]:
                    pieces.append(ch["delta"].get("content") or "")
    assert "".join(pieces) == whole
    assert len([p for p in pieces if p]) > 1


def test_sampled_rows_stay_valid(base_url):
    bodies = [_body(c, temperature=0.9, seed=i) for i, c in enumerate(CASES[:3])]
    for case, a in zip(CASES, asyncio.run(_post_all(base_url, bodies))):
        for ch in a["choices"]:
            # budget-aware masks close the JSON within max_tokens, drafts or not: never cut
            assert ch["finish_reason"] == "stop", ch
            jsonschema.validate(json.loads(ch["message"]["content"]), case.schema)


def test_bad_speculate_field_is_a_400_naming_it(base_url):
    r = httpx.post(base_url + "/v1/chat/completions", json=_body(CASES[0], speculate="yes"), timeout=60)
    assert r.status_code == 400 and r.json()["error"]["param"] == "speculate", r.text


def test_kv_batch_rollback_equals_the_accepted_sequence():
    """Rows fed drafts of different lengths, rolled back to different prefixes, then fed on: their
    logits are those of the accepted tokens alone (the holes are masked, then compacted away)."""
    from stencil.server.kv_batch import KVBatch
    from test_server_batching import _alone
    lm = default_model()
    prompts = [lm.encode_prompt(p) for p in ("Name a color.", "Tell a long story about a dragon and tea.")]
    keep_tokens = [[100, 200, 300], [11]]
    ref = [_alone(lm, p, c) for p, c in zip(prompts, keep_tokens)]
    b = KVBatch(lm.model)
    with torch.inference_mode():
        for p in prompts:
            b.add(p[:-1])
        # row 0: last prompt token + draft [100, 200, 999, 998] keeps 2; row 1: [11, 997] keeps 1
        got = b.step([[prompts[0][-1], 100, 200, 999, 998], [prompts[1][-1], 11, 997]], keep=5)
        assert got.shape[:2] == (2, 5)
        assert (got[0, 2] - ref[0][2]).abs().max().item() < 1e-3   # before draft token 999
        assert (got[1, 3] - ref[1][1]).abs().max().item() < 1e-3   # row 1's own last two positions
        length = b.length
        b.rollback([2, 1])
        assert b.length == length - 1 and b.positions == [len(prompts[0]) + 2, len(prompts[1]) + 1]
        b.compact()  # the hole goes, and the shorter row's padding
        assert b.length == max(b.positions) and b.mask.sum(1).tolist() == b.positions
        got = b.step([[300], [12]])
        assert (got[0] - ref[0][3]).abs().max().item() < 1e-3
        ref1 = _alone(lm, prompts[1], [11, 12])
        assert (got[1] - ref1[2]).abs().max().item() < 1e-3
        with pytest.raises(ValueError, match="one count per row"):
            b.rollback([1])


def test_cli_options():
    import argparse

    from stencil.server.main import add_arguments, speculation_from
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert speculation_from(p.parse_args([])) is True   # on by default
    assert speculation_from(p.parse_args(["--no-speculate"])) is False
    assert speculation_from(p.parse_args(["--speculate"])) is True
    assert speculation_from(p.parse_args(["--max-draft", "4"])).max_draft == 4
    for bad, msg in ((["--no-speculate", "--max-draft", "4"], "--max-draft needs speculative decoding"),
                     (["--speculate", "--max-draft", "0"], "--max-draft must be >= 1")):
        with pytest.raises(ValueError, match=msg):
            speculation_from(p.parse_args(bad))


def test_tight_budget_ends_valid_as_plain(base_url):
    # budget-aware masks at every drafted position: the output closes within max_tokens, as plain
    schemas = [dict(c.schema, properties=dict(list(c.schema["properties"].items())[:3]),
                    required=list(c.schema["properties"])[:3]) for c in CASES[:2]]
    bodies = [_body(c, max_tokens=24) for c in CASES[:2]]
    for b, schema in zip(bodies, schemas):
        b["response_format"]["json_schema"]["schema"] = schema
    spec = asyncio.run(_post_all(base_url, bodies))
    plain = asyncio.run(_post_all(base_url, [dict(b, speculate=False) for b in bodies]))
    for schema, s, p in zip(schemas, spec, plain):
        assert _text(s) == _text(p) and s["usage"]["completion_tokens"] <= 24
        jsonschema.validate(json.loads(_text(s)), schema)


def test_expensive_grammar_mid_batch_fails_alone(base_url):
    # the step time limit holds while rows draft: the bad row gets its 400, the others finish
    from test_server_isolation import LATE_MOD, _beside_victims, _error, _schema
    err = _error(asyncio.run(_beside_victims(base_url, _schema(LATE_MOD))), 400)
    assert err["code"] == "grammar_too_expensive", err
    assert httpx.get(base_url + "/health").json()["running"] == 0


def test_rows_of_different_drafts_joining_and_leaving(base_url):
    # extraction rows draft long values, schema rows short keys, free text little; rows join at
    # different times and leave at different lengths (max_tokens, a stop string), in shared ragged passes
    free = {"messages": [{"role": "user", "content": "Name three colors, one per line."}], "max_tokens": 24,
            "temperature": 0}
    small = {"messages": [{"role": "user", "content": "A point as JSON."}], "max_tokens": 30, "temperature": 0,
             "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {
                 "type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                 "required": ["x", "y"], "additionalProperties": False}}}}
    bodies = [_body(CASES[0], max_tokens=72), free, _body(CASES[2], max_tokens=60), small, _body(CASES[3], stop=["\","])]
    delays = [0.0, 0.0, 0.4, 0.9, 1.5]
    before = _health(base_url)
    spec = asyncio.run(_post_all(base_url, bodies, delays))
    after = _health(base_url)
    plain = asyncio.run(_post_all(base_url, [dict(b, speculate=False) for b in bodies], delays))
    for s, p in zip(spec, plain):
        assert _text(s) == _text(p)
        assert s["choices"][0]["finish_reason"] == p["choices"][0]["finish_reason"]
        assert s["usage"]["completion_tokens"] == p["usage"]["completion_tokens"]
    assert after["accepted"] > before["accepted"]
    assert '",' not in _text(spec[4])  # the stop string cut the text where plain decoding does


def test_failing_drafts_stop(base_url, monkeypatch):
    """Drafts the model never keeps, where drafting looks free (every pass costs the same, the
    module's fixture): the row's draft length falls to zero (then it drafts one token now and
    then, after a wait that doubles), and its output is the plain one."""
    from stencil.runtime.speculative import Drafter
    real = Drafter.draft
    bad = default_model().tokenizer.encode(" Xylophone", add_special_tokens=False)[0]

    def draft(self, matcher, bitmask, limit, remaining, masks=True):
        if matcher is not None:
            return real(self, matcher, bitmask, limit, remaining, masks=masks)
        return [bad] * min(limit, 4)
    monkeypatch.setattr(Drafter, "draft", draft)
    body = {"messages": [{"role": "user", "content": "Count from one to ten in words, with commas."}],
            "max_tokens": 48, "temperature": 0, "ignore_eos": False}
    before = _health(base_url)
    spec = asyncio.run(_post_all(base_url, [body]))[0]
    after = _health(base_url)
    plain = asyncio.run(_post_all(base_url, [dict(body, speculate=False)]))[0]
    assert _text(spec) == _text(plain)
    tokens = spec["usage"]["completion_tokens"]
    drafted, kept = after["drafted"] - before["drafted"], after["accepted"] - before["accepted"]
    assert tokens > 30 and kept == 0
    assert 8 <= drafted <= 28, drafted   # 4 per step without adapting: 4 * tokens


def test_drafts_made_then_dropped_leave_the_plain_output(base_url, monkeypatch):
    """Drafts that, once made, would not pay (``drafts_pay`` False) are emptied before the pass:
    the matchers walked through them are rolled back, so outputs equal the plain ones, and no
    draft token is counted."""
    from stencil.server import engine
    calls = []

    def never(made, rows, tokens, cost):
        calls.append(sum(k for _, k in made))
        return False
    monkeypatch.setattr(engine, "drafts_pay", never)
    cases = CASES[:2]
    before = _health(base_url)
    spec = asyncio.run(_post_all(base_url, [_body(c) for c in cases]))
    after = _health(base_url)
    plain = asyncio.run(_post_all(base_url, [_body(c, speculate=False) for c in cases]))
    assert sum(calls) > 10, calls   # drafts were made (and dropped)
    for case, s, p in zip(cases, spec, plain):
        assert _text(s) == _text(p), case.name
        jsonschema.validate(json.loads(_text(s)), case.schema)
    probes = after["drafted"] - before["drafted"]   # (only one-token tries after a wait are kept)
    assert probes <= 3 and after["accepted"] - before["accepted"] <= probes


def test_kv_batch_ragged_rows_equal_the_padded_pass():
    """``step_rows``: rows fed 1 to 5 tokens, each keeping some positions' logits, equal the padded
    pass's (linear layers on the real tokens only; attention of the rows fed several in a call of
    their own when they are few, grouped with the others when they are many); the caches they
    leave continue as the padded pass's do."""
    from stencil.server.kv_batch import KVBatch
    lm = default_model()
    prompts = [lm.encode_prompt(p) for p in ("Name a color.", "Tell a long story about a dragon and tea.", "Hi",
                                              "Count to three.", "Say yes.")]
    padded, ragged = KVBatch(lm.model), KVBatch(lm.model)

    def same(feeds, keep, rollback):
        width = max(map(len, feeds))
        want = padded.step(feeds, keep=width)
        got = ragged.step_rows(feeds, keep)
        for i, k in enumerate(keep):
            assert (got.of(i) - want[i, width - k:]).abs().max().item() < 1e-4, i
            assert (got.last[i] - want[i, -1]).abs().max().item() < 1e-4, i
        for b in (padded, ragged):
            b.rollback(rollback)
    with torch.inference_mode():
        for b in (padded, ragged):
            for p in prompts:
                b.add(p[:-1])
        last = [p[-1] for p in prompts]
        same([[last[0]], [last[1], 11, 12], [last[2]], [last[3], 5, 6, 7, 8], [last[4]]], [1, 3, 1, 2, 1],
             [0, 2, 0, 1, 0])   # two rows of five fed several: attended on their own
        same([[3, 4], [5], [6, 7], [8, 9], [10]], [2, 1, 1, 2, 1], [1, 0, 0, 0, 0])   # three: all grouped
        same([[1], [2], [3], [4], [5]], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0])
        with pytest.raises(ValueError, match="1 <= keep"):
            ragged.step_rows([[1], [2], [3], [4], [5]], [2, 1, 1, 1, 1])
