"""Aligned sampling in `stencil serve` (``"sampling": "aligned"``, ``"particles"``: stencil
extensions on /v1/chat/completions and /v1/completions), through real HTTP requests: valid
choices, the same choice for the same seed (streamed or not), the particles counted in /health,
and a 400 for what it does not combine with."""
from __future__ import annotations

import json
import re

import pytest

from server_fixture import start_server

httpx = pytest.importorskip("httpx")

REGEX = "(true|false|yes|no|maybe)"
CHAT = {"messages": [{"role": "user", "content": "Is water wet?"}], "structured_outputs": {"regex": REGEX},
        "max_tokens": 4, "temperature": 1.0, "seed": 3, "sampling": "aligned", "particles": 8}


@pytest.fixture(scope="module")
def base_url():
    url, stop = start_server()
    yield url
    stop()


def post(base_url: str, path: str, body: dict) -> httpx.Response:
    return httpx.post(base_url + path, json=body, timeout=120)


def test_aligned_chat_choices_are_valid_and_seeded(base_url):
    before = httpx.get(base_url + "/health", timeout=30).json()["aligned"]
    r = post(base_url, "/v1/chat/completions", dict(CHAT, n=2))
    assert r.status_code == 200, r.text
    texts = [c["message"]["content"] for c in r.json()["choices"]]
    assert all(re.fullmatch(REGEX, t) for t in texts), texts
    assert {c["finish_reason"] for c in r.json()["choices"]} == {"stop"}
    again = post(base_url, "/v1/chat/completions", dict(CHAT, n=2)).json()
    assert [c["message"]["content"] for c in again["choices"]] == texts   # the seeds decide
    after = httpx.get(base_url + "/health", timeout=30).json()["aligned"]
    assert after["jobs"] == before["jobs"] + 4
    assert after["rows"] - before["rows"] >= 4 * 2   # at least two particle rows per choice (a word, then EOS)


def test_aligned_streams_the_same_text(base_url):
    whole = post(base_url, "/v1/chat/completions", CHAT).json()["choices"][0]["message"]["content"]
    pieces = []
    with httpx.stream("POST", base_url + "/v1/chat/completions", json=dict(CHAT, stream=True), timeout=120) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                pieces.append(json.loads(line[6:])["choices"][0]["delta"].get("content") or "")
    assert "".join(pieces) == whole


def test_aligned_completions(base_url):
    body = {"prompt": "Is water wet? Answer:", "structured_outputs": {"regex": REGEX}, "max_tokens": 4,
            "temperature": 0.8, "seed": 1, "sampling": "aligned"}
    r = post(base_url, "/v1/completions", body)
    assert r.status_code == 200, r.text
    assert re.fullmatch(REGEX, r.json()["choices"][0]["text"])


@pytest.mark.parametrize("change, words", [
    ({"temperature": 0.0}, "temperature: 0"),
    ({"top_p": 0.5, "min_p": 0.1}, "top_p, min_p"),
    ({"logprobs": True}, "logprobs"),
    ({"speculate": True}, "speculate: true"),
    ({"structured_outputs": None}, "needs a constraint"),
    ({"sampling": "plain"}, "particles needs sampling"),
    ({"sampling": "smc"}, "sampling"),
    ({"particles": 0}, "particles"),
])
def test_aligned_refusals(base_url, change, words):
    body = {k: v for k, v in dict(CHAT, **change).items() if v is not None}
    r = post(base_url, "/v1/chat/completions", body)
    assert r.status_code == 400, r.text
    assert words in r.json()["error"]["message"], r.json()
