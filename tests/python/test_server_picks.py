"""Opportunistic masks in `stencil serve` (``server.picks``): a row checks the model's pick with
``Matcher.accept_token(t, remaining_tokens=k)`` and its mask is filled only where the grammar
refuses it. Greedy outputs equal those of a server that fills every mask (``full_masks=True``),
alone and with speculation; /health reports masks per generated token under 1 against about 1;
sampled rows (rejection sampling, then the mask), rows with top-p (always the mask) and rows with
``ignore_eos`` stay valid."""
from __future__ import annotations

import asyncio
import re

import pytest

from tests.support.serve_schemas import SCHEMAS   # short objects: a person, a product, a point, three colors
from server_fixture import start_server

httpx = pytest.importorskip("httpx")
pytest.importorskip("torch")


@pytest.fixture(scope="module")
def servers():
    picks, stop_picks = start_server(max_batch=8, speculate=True)
    full, stop_full = start_server(max_batch=8, speculate=True, full_masks=True)
    yield picks, full
    stop_picks()
    stop_full()


def _bodies(**extra) -> list[dict]:
    return [{"messages": [{"role": "user", "content": prompt}], "max_tokens": 40, "temperature": 0,
             "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}, **extra}
            for prompt, schema in SCHEMAS]


def _post_all(url: str, bodies: list[dict]) -> list[dict]:
    async def run():
        async with httpx.AsyncClient(base_url=url, timeout=600) as c:
            rs = await asyncio.gather(*(c.post("/v1/chat/completions", json=b) for b in bodies))
        for r in rs:
            assert r.status_code == 200, r.text[:300]
        return [r.json() for r in rs]
    return asyncio.run(run())


def _masks(url: str) -> dict:
    return httpx.get(url + "/health").json()["masks"]


def _texts(answers: list[dict]) -> list[str]:
    return [a["choices"][0]["message"]["content"] for a in answers]


@pytest.mark.parametrize("speculate", [False, True])
def test_greedy_equals_full_masks_with_fewer_masks(servers, speculate):
    picks, full = servers
    bodies = _bodies(speculate=speculate)
    before = _masks(picks), _masks(full)
    got, want = _post_all(picks, bodies), _post_all(full, bodies)
    after = _masks(picks), _masks(full)
    assert _texts(got) == _texts(want)
    (filled, tokens), (full_filled, full_tokens) = ((a["filled"] - b["filled"], a["tokens"] - b["tokens"])
                                                    for a, b in zip(after, before))
    assert tokens == full_tokens == sum(a["usage"]["completion_tokens"] for a in got)
    assert filled / tokens < 0.5 < full_filled / full_tokens, (filled, full_filled, tokens)
    assert after[0]["opportunistic"] and not after[1]["opportunistic"]
    assert after[0]["per_token"] < 1 and after[0]["checked"] > before[0]["checked"]


def test_sampled_top_p_and_ignore_eos_rows_stay_valid(servers):
    import json

    import jsonschema
    picks, _ = servers
    bodies = _bodies(temperature=1.0, seed=3, speculate=False) + _bodies(temperature=0.8, top_p=0.8, seed=4)
    regex = "[a-z ]+"
    bodies.append({"messages": [{"role": "user", "content": "Write about the sea."}], "max_tokens": 12,
                   "temperature": 0, "ignore_eos": True, "structured_outputs": {"regex": regex}})
    answers = _post_all(picks, bodies)
    for (_, schema), a in zip(SCHEMAS + SCHEMAS, answers[:-1]):
        choice = a["choices"][0]
        assert choice["finish_reason"] == "stop", choice   # budget-aware: closed within max_tokens
        jsonschema.validate(json.loads(choice["message"]["content"]), schema)
    last = answers[-1]
    assert re.fullmatch(regex, _texts([last])[0]) and last["usage"]["completion_tokens"] == 12
