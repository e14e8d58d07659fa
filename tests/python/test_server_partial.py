"""`stencil serve`'s partial results (issue 45, stencil's extension ``stream_options:
{"include_partial": true}``), read over real HTTP by a client that never parses the answer's text:
the object comes from the ``partial`` fields alone, of chat chunks and of Responses events. The test
itself joins the text deltas and parses them, only to check that every partial agrees with the
final value (``partial_checks``), the last one being it."""
from __future__ import annotations

import json

import pytest

from stencil.partial import PartialResult
from partial_checks import contradictions
from server_fixture import start_server

CITY = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 24},
    "country": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                                 "code": {"type": "string", "pattern": "^[A-Z]{2}$"}},
                "required": ["name", "code"], "additionalProperties": False},
    "population": {"type": "integer", "minimum": 0},
    "districts": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 2}},
    "required": ["name", "country", "population", "districts"], "additionalProperties": False}
FORMAT = {"type": "json_schema", "json_schema": {"name": "city", "schema": CITY}}
PROMPT = "Describe Paris as JSON: its name, its country, its population and two districts."


@pytest.fixture(scope="module")
def url():
    url, stop = start_server()
    yield url
    stop()


def _sse(url: str, path: str, body: dict):
    """The data objects of a streamed answer (the ``[DONE]`` line left out)."""
    import httpx
    with httpx.stream("POST", url + path, json=body, timeout=300) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                yield json.loads(line[len("data: "):])


def _result(p: dict) -> PartialResult:
    """A streamed ``partial`` as the library's PartialResult (paths back to tuples)."""
    return PartialResult(p["value"], tuple(tuple(x) for x in p["complete_paths"]),
                         None if p["open_path"] is None else tuple(p["open_path"]),
                         tuple(tuple(x) for x in p["missing_required"]))


def _check(partials: list[dict], text: str) -> None:
    snaps = [_result(p) for p in partials]
    final = json.loads(text)   # (the test's own check; the client above read partials only)
    assert contradictions(snaps, final) == []
    assert snaps[-1].complete and snaps[-1].value == final
    assert len(snaps) > 10 and any(isinstance(s.open_path, tuple) and len(s.open_path) == 2 for s in snaps)
    assert snaps[0].missing_required and not snaps[-1].missing_required   # the required keys came, one by one
    print(f"\n{len(snaps)} partials, 0 contradictions; final {final}")


def test_chat_stream_carries_partials(url):
    body = {"messages": [{"role": "user", "content": PROMPT}], "response_format": FORMAT, "max_tokens": 90,
            "temperature": 0, "stream": True, "stream_options": {"include_partial": True}}
    partials, text = [], ""
    for chunk in _sse(url, "/v1/chat/completions", body):
        choice = chunk["choices"][0]
        if "partial" in choice:
            partials.append(choice["partial"])      # all the client reads
        text += choice["delta"].get("content") or ""
    assert partials[-1]["open_path"] is None and partials[-1]["value"]["country"]["code"].isupper()
    _check(partials, text)


def test_responses_stream_carries_partials(url):
    body = {"input": PROMPT, "max_output_tokens": 90, "temperature": 0, "stream": True,
            "text": {"format": {"type": "json_schema", "name": "city", "schema": CITY}},
            "stream_options": {"include_partial": True}}
    partials, text = [], ""
    for ev in _sse(url, "/v1/responses", body):
        if ev["type"] in ("response.output_text.delta", "response.output_text.done"):
            partials.append(ev["partial"])
        if ev["type"] == "response.output_text.delta":
            text += ev["delta"]
    _check(partials, text)


def test_partials_are_opt_in_and_for_json_answers_only(url):
    import httpx
    msgs = [{"role": "user", "content": "A number?"}]
    plain = {"messages": msgs, "max_tokens": 6, "stream": True, "response_format": {"type": "json_object"}}
    assert all("partial" not in c["choices"][0] for c in _sse(url, "/v1/chat/completions", plain) if c["choices"])
    bad = [dict(plain, stream_options={"include_partial": True}, response_format=None,
                structured_outputs={"regex": "[0-9]+"}),
           dict(plain, stream=False, stream_options={"include_partial": True}),
           {"input": "A number?", "stream": True, "stream_options": {"include_partial": True}}]
    for body, path in zip(bad, ("/v1/chat/completions", "/v1/chat/completions", "/v1/responses")):
        r = httpx.post(url + path, json={k: v for k, v in body.items() if v is not None}, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["param"].startswith("stream_options"), r.text
