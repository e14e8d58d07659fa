"""Hostile requests against `stencil serve`: each gets a 4xx (or is cancelled) and a normal
request right after still succeeds."""
from __future__ import annotations

import json
import socket
import time

import pytest
import regex

from server_fixture import assert_idle_soon, start_server

httpx = pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def base_url():
    url, stop = start_server()
    yield url
    stop()


def _chat(url, body, timeout=120):
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=timeout)


def _schema_request(schema):
    return {"messages": [{"role": "user", "content": "JSON please"}], "max_tokens": 4,
            "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}}


def _still_serves(url):
    r = _chat(url, {"messages": [{"role": "user", "content": "Is the sky blue?"}], "max_tokens": 4,
                    "structured_outputs": {"choice": ["yes", "no"]}})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] in ("yes", "no")


def _assert_400(r):
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    err = r.json()["error"]
    assert err["message"] and err["type"] == "invalid_request_error"
    return err["message"]


def test_five_megabyte_schema(base_url):
    props = {f"p{i}_" + "x" * 40: {"type": "string", "pattern": "[a-z]{3}" + "b" * 20} for i in range(60_000)}
    schema = {"type": "object", "properties": props, "required": list(props)}
    assert len(json.dumps(schema)) > 5_000_000
    r = _chat(base_url, _schema_request(schema))
    assert r.status_code in (200, 400, 413), r.status_code
    if r.status_code == 200:
        # 60,000 required members cannot close in 4 tokens: cut at the budget, a prefix of the schema's text
        choice = r.json()["choices"][0]
        assert choice["finish_reason"] == "length", choice
        # (the pattern is unanchored: any string value that holds it)
        assert regex.fullmatch(r'\{"p0_x{40}":".*', choice["message"]["content"], regex.S, partial=True), choice
    else:
        _assert_400(r)
    _still_serves(base_url)


def test_deep_nesting(base_url):
    # built as text: json.dumps itself cannot nest 10,000 deep
    schema = '{"type": "array", "items": ' * 10_000 + '{"type": "string"}' + "}" * 10_000
    body = json.dumps(_schema_request({})).replace('"schema": {}', '"schema": ' + schema)
    r = httpx.post(base_url + "/v1/chat/completions", content=body, headers={"content-type": "application/json"},
                   timeout=120)
    _assert_400(r)
    _still_serves(base_url)


def test_ref_cycle(base_url):
    schema = {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    _assert_400(_chat(base_url, _schema_request(schema)))
    _still_serves(base_url)


def test_pathological_pattern(base_url):
    r = _chat(base_url, {"messages": [{"role": "user", "content": "x"}], "max_tokens": 4,
                         "structured_outputs": {"regex": "(a|b)*a(a|b){40}"}})
    assert r.status_code in (200, 400), r.text[:300]
    if r.status_code == 400:
        _assert_400(r)
    else:  # the constraint held: what came is a prefix of the pattern's language
        text = r.json()["choices"][0]["message"]["content"]
        assert text and regex.fullmatch("(a|b)*a(a|b){40}", text, partial=True), text
    _still_serves(base_url)


def test_body_not_json(base_url):
    r = httpx.post(base_url + "/v1/chat/completions", content=b"{not json", timeout=30,
                   headers={"content-type": "application/json"})
    assert "JSON" in _assert_400(r)
    _still_serves(base_url)


def test_dropped_requests(base_url):
    host, port = base_url.rsplit("/", 1)[1].split(":")
    body = json.dumps({"messages": [{"role": "user", "content": "Write a long story."}], "max_tokens": 200,
                       "stream": True}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    for i in range(100):
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(head + body)
            if i % 10 == 0:
                s.recv(64)  # some wait for the stream to start, then leave
    assert_idle_soon(base_url)
    _still_serves(base_url)


def test_compile_timeout_answers_400_not_a_hang():
    """create_app(compile_timeout=...): a schema whose front-end work takes seconds (20,000
    patterned properties) is refused with a 400 naming the timeout, soon; the server goes on."""
    url, stop = start_server(compile_timeout=0.5)
    try:
        props = {f"p{i}": {"type": "string", "pattern": f"^x{i}[a-z]*$", "maxLength": 20} for i in range(20_000)}
        t0 = time.monotonic()
        r = _chat(url, _schema_request({"type": "object", "properties": props}))
        msg = _assert_400(r)
        assert r.json()["error"]["code"] == "grammar_too_expensive" and "0.5 s" in msg, msg
        assert time.monotonic() - t0 < 30  # a guard against a hang, not a speed figure
        _still_serves(url)
    finally:
        stop()
