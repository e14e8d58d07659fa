"""Continuous batching in `stencil serve`: the batched KV cache against one sequence at a time
(the oracle: the same model run alone), and concurrent requests sharing forward passes."""
from __future__ import annotations

import asyncio
import inspect
import json

import pytest

from generation_model import default_model
from server_fixture import assert_idle_soon, start_server

torch = pytest.importorskip("torch")


def _alone(lm, prompt, cont):
    """Next-token logits after the prompt and after each continuation token, the sequence alone."""
    from transformers import DynamicCache
    cache, rows = DynamicCache(), []
    params = inspect.signature(lm.model.forward).parameters
    cache_arg = "cache" if "cache" in params else "past_key_values"  # renamed in transformers 5
    with torch.inference_mode():
        for ids in [prompt] + [[t] for t in cont]:
            out = lm.model(input_ids=torch.tensor([ids]), use_cache=True, **{cache_arg: cache})
            rows.append(out.logits[0, -1].float())
    return rows


@pytest.mark.parametrize("length_step", [1, 64])
def test_kv_batch_rows_equal_sequences_alone(length_step):
    """Also with the attended slots rounded up as on a GPU (``length_step`` 64): the mask hides them."""
    from stencil.server.kv_batch import ACCELERATOR_LENGTH_STEP, KVBatch
    lm = default_model()
    prompts = [lm.encode_prompt(p) for p in ("Name a color.", "Tell a long story about a dragon and tea.", "Hi")]
    conts = [[100, 200, 300, 400], [11, 12, 13, 14], [7, 8, 9, 10]]
    ref = [_alone(lm, p, c) for p, c in zip(prompts, conts)]
    b = KVBatch(lm.model)
    assert b.length_step == 1 and ACCELERATOR_LENGTH_STEP == 64   # a CPU attends to exact lengths
    b.length_step = length_step

    def close(got, want):
        assert (got - want).abs().max().item() < 1e-3
    with torch.inference_mode():
        b.add(prompts[0][:-1])                      # rows join between steps, with different lengths
        close(b.step([[prompts[0][-1]]])[0], ref[0][0])
        b.add(prompts[1][:-1])
        got = b.step([[conts[0][0]], [prompts[1][-1]]])
        close(got[0], ref[0][1]), close(got[1], ref[1][0])
        b.add(prompts[2][:-1])
        got = b.step([conts[0][1:3], [conts[1][0]], [prompts[2][-1]]])  # a row fed two tokens at once
        close(got[0], ref[0][3]), close(got[1], ref[1][1]), close(got[2], ref[2][0])
        b.keep([1, 2])                              # the first row leaves
        got = b.step([[conts[1][1]], [conts[2][0]]])
        close(got[0], ref[1][2]), close(got[1], ref[2][1])
        assert b.plan[3] % length_step == 0 and (length_step == 1) == (b.plan[3] == b.length)
        longest = b.length
        b.keep([1])                                 # columns only the left row used are cut
        assert b.length < longest and b.mask.shape == (1, b.length)
        close(b.step([[conts[2][1]]])[0], ref[2][2])


def test_kv_batch_one_token_prompt_joins_a_running_batch():
    from stencil.server.kv_batch import KVBatch
    lm = default_model()
    p = lm.encode_prompt("Name a color.")
    bos = p[:1]
    ref_p, ref_b = _alone(lm, p, [5]), _alone(lm, bos, [6])
    b = KVBatch(lm.model)
    with torch.inference_mode():
        b.add(p[:-1])
        b.step([[p[-1]]])
        b.add([])                                   # a prompt of one token: nothing to prefill
        got = b.step([[5], bos])
        assert (got[0] - ref_p[1]).abs().max().item() < 1e-3
        assert (got[1] - ref_b[0]).abs().max().item() < 1e-3


@pytest.fixture(scope="module")
def server():
    url, stop = start_server(max_batch=8)
    yield url
    stop()


def test_concurrent_requests_share_forward_passes(server):
    """Eight requests that wait together for the batch run together: the batch's eight slots are
    first held by long streams, the eight requests queue behind them, then the streams are
    dropped. (Sent at once to an idle server, the requests may reach it spread over many passes on
    a loaded machine, each running part of its way alone.)"""
    openai = pytest.importorskip("openai")
    jsonschema = pytest.importorskip("jsonschema")
    import httpx
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                               "age": {"type": "integer", "minimum": 0, "maximum": 120}},
              "required": ["name", "age"], "additionalProperties": False}

    async def health_until(ok, what):
        async with httpx.AsyncClient(base_url=server, timeout=30) as h:
            for _ in range(1200):
                state = (await h.get("/health")).json()
                if ok(state):
                    return state
                await asyncio.sleep(0.05)
        pytest.fail(f"the server never had {what}: {state}")

    async def run():
        client = openai.AsyncOpenAI(base_url=server + "/v1", api_key="none", max_retries=0, timeout=300)
        name = (await client.models.list()).data[0].id
        holders = await asyncio.gather(*(client.chat.completions.create(model=name, max_tokens=500, stream=True, messages=[
            {"role": "user", "content": "Tell a very long story."}]) for _ in range(8)))
        await health_until(lambda h: h["running"] == 8, "its 8 slots held")
        asks = [asyncio.ensure_future(client.chat.completions.create(
            model=name, max_tokens=40, messages=[{"role": "user", "content": f"Person number {i} as JSON."}],
            response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": schema, "strict": True}}))
            for i in range(8)]
        before = (await health_until(lambda h: h["waiting"] == 8, "8 requests waiting"))["forward_passes"]
        for stream in holders:
            await stream.close()
        results = await asyncio.gather(*asks)
        return results, (await health_until(lambda h: h["running"] == 0, "no row left"))["forward_passes"] - before

    results, passes = asyncio.run(run())
    tokens = 0
    for r in results:
        assert r.choices[0].finish_reason == "stop", r.choices[0].message.content
        jsonschema.validate(json.loads(r.choices[0].message.content), schema)
        tokens += r.usage.completion_tokens
    # one at a time, every generated token but the forced ones would take a pass of its own;
    # together, the passes are about those of the longest answer (plus the holders' last ones)
    print(f"{passes} forward passes for {tokens} tokens of 8 requests")
    assert 0 < passes < tokens / 2, (passes, tokens)


def test_cancelled_stream_frees_its_slot(server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server + "/v1", api_key="none", max_retries=0, timeout=120)
    name = client.models.list().data[0].id
    for _ in range(12):  # more dropped streams than slots: each must leave the batch
        stream = client.chat.completions.create(model=name, max_tokens=500, stream=True,
                                                messages=[{"role": "user", "content": "Tell a very long story."}])
        next(iter(stream))
        stream.close()
    assert_idle_soon(server)
    r = client.chat.completions.create(model=name, max_tokens=4, messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content


def test_top_p_near_zero_is_greedy(server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server + "/v1", api_key="none", max_retries=0, timeout=120)
    kw = dict(model=client.models.list().data[0].id, max_tokens=12,
              messages=[{"role": "user", "content": "Name three animals."}])
    greedy = client.chat.completions.create(temperature=0, **kw).choices[0].message.content
    for seed in range(3):  # at temperature 1.5 without top_p these would wander off the argmax
        r = client.chat.completions.create(temperature=1.5, top_p=1e-9, seed=seed, **kw)
        assert r.choices[0].message.content == greedy
    with pytest.raises(openai.BadRequestError, match="top_p"):
        client.chat.completions.create(top_p=1.5, **kw)


def test_stream_with_n_choices(server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server + "/v1", api_key="none", max_retries=0, timeout=120)
    kw = dict(model=client.models.list().data[0].id, max_tokens=10, temperature=0,
              messages=[{"role": "user", "content": "Name a fruit."}],
              extra_body={"structured_outputs": {"regex": "[a-z]{3,8}"}})
    full = client.chat.completions.create(**kw).choices[0].message.content
    texts, finished = {0: "", 1: ""}, set()
    for c in client.chat.completions.create(stream=True, n=2, **kw):
        for ch in c.choices:
            texts[ch.index] += ch.delta.content or ""
            if ch.finish_reason:
                finished.add(ch.index)
    assert texts == {0: full, 1: full} and finished == {0, 1}


def test_output_ends_valid_within_max_tokens(server):
    """Budget-aware masks in the batch: unbounded strings, a small budget, still valid JSON; a
    budget below the shortest output is a 400 naming it."""
    openai = pytest.importorskip("openai")
    jsonschema = pytest.importorskip("jsonschema")
    client = openai.OpenAI(base_url=server + "/v1", api_key="none", max_retries=0, timeout=120)
    schema = {"type": "object", "properties": {"story": {"type": "string"}, "moral": {"type": "string"}},
              "required": ["story", "moral"], "additionalProperties": False}
    rf = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema, "strict": True}}
    kw = dict(model=client.models.list().data[0].id, response_format=rf,
              messages=[{"role": "user", "content": "Tell a long story with a moral, as JSON."}])
    r = client.chat.completions.create(max_tokens=24, **kw)
    assert r.usage.completion_tokens <= 24
    jsonschema.validate(json.loads(r.choices[0].message.content), schema)
    with pytest.raises(openai.BadRequestError, match="shortest output"):
        client.chat.completions.create(max_tokens=3, **kw)


def test_ignore_eos_runs_rows_to_max_tokens(server):
    """vLLM's ignore_eos: the row never samples EOS (a grammar's end still ends it), and /health's
    step timing counts each decode step with its rows."""
    openai = pytest.importorskip("openai")
    import re

    import httpx
    client = openai.OpenAI(base_url=server + "/v1", api_key="none", max_retries=0, timeout=120)
    kw = dict(model=client.models.list().data[0].id, max_tokens=40, temperature=0,
              messages=[{"role": "user", "content": "Answer with one word: what color is the sky?"}])
    short = client.chat.completions.create(**kw)
    assert short.usage.completion_tokens < 40 and short.choices[0].finish_reason == "stop"  # EOS, by itself
    before = httpx.get(server + "/health").json()
    full = client.chat.completions.create(extra_body={"ignore_eos": True}, **kw)
    after = httpx.get(server + "/health").json()
    assert full.usage.completion_tokens == 40 and full.choices[0].finish_reason == "length"
    assert full.choices[0].message.content.startswith(short.choices[0].message.content)
    # one request alone, no forced tokens: a forward pass per token, one row each
    assert after["forward_passes"] - before["forward_passes"] == 40
    assert after["step_rows"] - before["step_rows"] == 40 and after["step_seconds"] > before["step_seconds"]
    # a regex that may end after any letter runs to max_tokens as well
    r = client.chat.completions.create(extra_body={"ignore_eos": True, "structured_outputs": {"regex": "[a-z ]+"}},
                                       **kw)
    assert r.usage.completion_tokens == 40 and re.fullmatch("[a-z ]+", r.choices[0].message.content)
    r = client.chat.completions.create(extra_body={"ignore_eos": True, "structured_outputs": {"choice": ["blue", "red"]}},
                                       **kw)
    assert r.choices[0].message.content in ("blue", "red") and r.choices[0].finish_reason == "stop"
    with pytest.raises(openai.BadRequestError, match="ignore_eos must be true or false"):
        client.chat.completions.create(extra_body={"ignore_eos": "yes"}, **kw)


def test_a_process_that_exits_right_after_create_app_ends_cleanly():
    """The engine's thread starts with forward passes (the ragged model's calibration): a process
    ending while it is inside torch used to abort (SIGABRT, 'terminate called without an active
    exception', the daemon thread ended by the interpreter's finalization). The engine is closed
    and waited for at exit instead."""
    import os
    import subprocess
    import sys
    code = ("from stencil.runtime.models import load_model\n"
            "from stencil.server.app import create_app\n"
            "app = create_app(load_model(None, device='cpu', quiet=True))\n"
            "print('created', flush=True)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONFAULTHANDLER="0"))
    assert "created" in r.stdout, r.stderr[-2000:]
    assert r.returncode == 0 and "terminate called" not in r.stderr, (r.returncode, r.stderr[-2000:])
