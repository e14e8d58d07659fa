"""One request cannot hurt another in `stencil serve`: each bad request runs beside ordinary ones;
the ordinary ones all finish with valid output, the bad one gets a 4xx that names its cause (or,
for requests that used to break the batch and are now served, valid output too)."""
from __future__ import annotations

import asyncio
import json

import pytest

from server_fixture import start_server

httpx = pytest.importorskip("httpx")
jsonschema = pytest.importorskip("jsonschema")

PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53)
#: a string whose length is a multiple of every prime to 53: its lexer work reaches its limit
MOD_STRING = {"type": "string", "allOf": [{"pattern": "^(.{%d})*$" % p} for p in PRIMES]}
#: the same string behind a cheap start: compiles and warms up fast, then its mask inside the
#: string costs seconds, in the middle of a running batch
LATE_MOD = {"type": "object", "properties": {"a": {"type": "integer"}, "b": MOD_STRING}, "required": ["a", "b"],
            "additionalProperties": False}
#: the dead end of the review: a key start that can only end as a duplicate
FEW_KEYS = {"type": "object", "propertyNames": {"enum": ["a", "b"]}, "additionalProperties": {"type": "integer"},
            "minProperties": 2}
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 99}},
          "required": ["name", "age"], "additionalProperties": False}


@pytest.fixture(scope="module")
def base_url():
    url, stop = start_server(max_batch=16)
    yield url
    stop()


def _schema(schema, **extra):
    return {"messages": [{"role": "user", "content": "Answer in JSON."}], "max_tokens": 48,
            "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}, **extra}


def _victims():
    """Ordinary requests of each kind: free text, a JSON schema, a choice."""
    return [({"messages": [{"role": "user", "content": "Write a long story about a cat."}], "max_tokens": 24}, None),
            (_schema(PERSON, temperature=0.8, seed=3), PERSON),
            ({"messages": [{"role": "user", "content": "Is the sky blue?"}], "max_tokens": 4,
              "structured_outputs": {"choice": ["yes", "no"]}}, ["yes", "no"])]


def _check_victim(r: httpx.Response, expect) -> None:
    assert r.status_code == 200, (r.status_code, r.text[:300])
    for ch in r.json()["choices"]:
        text = ch["message"]["content"]
        if isinstance(expect, dict):
            jsonschema.validate(json.loads(text), expect)
        elif isinstance(expect, list):
            assert text in expect
        else:
            assert ch["finish_reason"] in ("stop", "length") and text


async def _beside_victims(url: str, bad: dict | bytes, delay: float = 0.3):
    """Send the victims, then ``bad`` while they run; return the bad request's response."""
    async with httpx.AsyncClient(base_url=url, timeout=300) as c:
        async def send_bad():
            await asyncio.sleep(delay)
            if isinstance(bad, bytes):
                return await c.post("/v1/chat/completions", content=bad, headers={"content-type": "application/json"})
            return await c.post("/v1/chat/completions", json=bad)
        victims = _victims()
        *rs, bad_r = await asyncio.gather(*(c.post("/v1/chat/completions", json=b) for b, _ in victims), send_bad())
    for r, (_, expect) in zip(rs, victims):
        _check_victim(r, expect)
    return bad_r


def _error(r: httpx.Response, status: int) -> dict:
    assert r.status_code == status, (r.status_code, r.text[:300])
    return r.json()["error"]


def test_grammar_too_expensive_mid_batch_fails_alone():
    # the row fails inside the running batch (its first masks were cheap): a 400 naming the cause.
    # (Its own server, whose compile timeout leaves room for the warm-up: LATE_MOD's shortest
    # completion is given up on after 5-6 s of bounded search, at the default timeout's edge.)
    from stencil.server import ServerLimits
    url, stop = start_server(max_batch=16, limits=ServerLimits(compile_timeout=30.0))
    try:
        r = asyncio.run(_beside_victims(url, _schema(LATE_MOD)))
        err = _error(r, 400)
        assert err["code"] == "grammar_too_expensive" and "too expensive" in err["message"], err
        health = httpx.get(url + "/health").json()
        assert health["failed_rows"] >= 1 and health["running"] == 0
    finally:
        stop()


def test_grammar_too_expensive_at_first_mask_is_a_400(base_url):
    r = asyncio.run(_beside_victims(base_url, _schema(MOD_STRING)))
    err = _error(r, 400)
    assert "too expensive" in err["message"] or "limit" in err["message"], err


def test_duplicate_key_dead_end_is_served(base_url):
    # sampled hot, many choices: the keys the model writes must never lead into a dead end
    r = asyncio.run(_beside_victims(base_url, _schema(FEW_KEYS, temperature=2.0, n=8, seed=1, max_tokens=40)))
    assert r.status_code == 200, r.text[:300]
    for ch in r.json()["choices"]:
        # budget-aware masks close the object within max_tokens: a cut row is a failure, not a skip
        assert ch["finish_reason"] == "stop", ch
        jsonschema.validate(json.loads(ch["message"]["content"]), FEW_KEYS)


@pytest.mark.parametrize("field", ["repetition_penalty", "temperature", "top_p"])
def test_nan_parameters_are_refused(base_url, field):
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 16, "temperature": 1.0}
    raw = json.dumps(body)[:-1] + f', "{field}": NaN}}'
    err = _error(asyncio.run(_beside_victims(base_url, raw.encode())), 400)
    assert "NaN" in err["message"], err


@pytest.mark.parametrize("bad, param", [
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}, "messages[0].content[0].text"),
    ({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}],
      "tool_choice": {"type": "function", "function": "f"}}, "tool_choice.function"),
    ({"messages": [{"role": "user", "content": "hi"}], "stream": "no"}, "stream"),
    ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10**30}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "hi"}], "n": 17}, "n"),
    ({"messages": [{"role": "user", "content": "hi"}], "seed": 2**64}, "seed"),
])
def test_malformed_bodies_are_400s_naming_the_field(base_url, bad, param):
    err = _error(asyncio.run(_beside_victims(base_url, bad, delay=0.1)), 400)
    assert err["param"] == param, err


def test_keep_alive_connection_survives_a_bad_request(base_url):
    with httpx.Client(base_url=base_url, timeout=60) as c:
        r = c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]})
        assert r.status_code == 400
        r = c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
        assert r.status_code == 200


def test_body_over_the_limit_is_a_413():
    from stencil.server import ServerLimits
    url, stop = start_server(limits=ServerLimits(max_body_bytes=10_000, max_waiting=1, max_n=2))
    try:
        big = {"messages": [{"role": "user", "content": "x" * 20_000}]}
        assert _error(httpx.post(url + "/v1/chat/completions", json=big, timeout=60), 413)["code"] == \
            "request_too_large"
        assert _error(httpx.post(url + "/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "hi"}], "n": 3}, timeout=60), 400)["param"] == "n"
        asyncio.run(_queue_full(url))
    finally:
        stop()


async def _queue_full(url: str):
    # max_batch 16 rows run, one may wait: a burst past that gets 503s, every other request a 200
    body = {"messages": [{"role": "user", "content": "Write a long story."}], "max_tokens": 12}
    async with httpx.AsyncClient(base_url=url, timeout=300) as c:
        rs = await asyncio.gather(*(c.post("/v1/chat/completions", json=body) for _ in range(40)))
    codes = [r.status_code for r in rs]
    assert set(codes) <= {200, 503} and codes.count(503) >= 1 and codes.count(200) >= 17, codes
    assert all(r.json()["error"]["code"] == "server_busy" for r in rs if r.status_code == 503)
