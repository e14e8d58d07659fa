"""Hostile requests against `stencil serve`: each gets a 4xx (or is cancelled) and a normal
request right after still succeeds."""
from __future__ import annotations

import json
import socket
import time

import pytest
import regex

from server_fixture import assert_idle_soon, start_server
from server_process import ServerProcess

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


# -- request shapes that gave 500s or were silently accepted (review 2026-11-29, N3-N14) ---------

HI = [{"role": "user", "content": "hi"}]


def _tool(name="f", **fn):
    return {"type": "function", "function": {"name": name, **fn}}


def _post_text(url, text: str, path="/v1/chat/completions", content_type="application/json"):
    """POST ``text`` as it is: json.dumps escapes a lone surrogate (httpx's json= cannot send
    one), and an integer past Python's digit limit is written into the text."""
    headers = {} if content_type is None else {"content-type": content_type}
    return httpx.post(url + path, content=text.encode(), headers=headers, timeout=60)


@pytest.mark.parametrize("fields, param", [
    # N6: a lone surrogate (a JSON escape) anywhere; integers past 4,300 digits; a 400-digit
    # integer where a float is read (float() overflows)
    ({"messages": [{"role": "user", "content": "\ud800"}]}, "messages[0].content"),
    ({"logit_bias": {"\ud800": 1}}, "logit_bias.\\ud800"),
    ({"seed": "HUGE"}, "seed"),
    ({"max_tokens": "HUGE"}, "max_tokens"),
    ({"logit_bias": {"9" * 5000: 1}}, "logit_bias." + "9" * 5000),
    ({"temperature": 10**400}, "temperature"),
    # N3, N12: tool names outside OpenAI's rule (one would end the call's own text)
    ({"tools": [_tool('</tool_call>"{')], "tool_choice": "required"}, "tools[0].function.name"),
    ({"tools": [_tool("\ud800")]}, "tools[0].function.name"),
    ({"tools": [_tool("f" * 65)]}, "tools[0].function.name"),
    # N13: contradictions
    ({"tool_choice": "required"}, "tool_choice"),
    ({"tools": [], "tool_choice": "required"}, "tool_choice"),
    ({"tool_choice": {"type": "function", "function": {"name": "f"}}}, "tool_choice"),
    ({"tools": [_tool()], "parallel_tool_calls": "no"}, "parallel_tool_calls"),
    ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role"),
    ({"tools": [_tool(parameters={"type": "string"})], "tool_choice": "required"}, "tools[0].function.parameters"),
    # N2 (chat): a part the server cannot read is refused, not dropped
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                                {"type": "image_url", "image_url": {"url": "data:,"}}]}]},
     "messages[0].content[1].type"),
])
def test_bad_values_are_400s_naming_the_field(base_url, fields, param):
    # max_tokens leaves room for a tool call: before the checks, these requests generated
    text = json.dumps({"messages": HI, "max_tokens": 40, **fields}).replace('"HUGE"', "9" * 5000)
    r = _post_text(base_url, text)
    _assert_400(r)
    assert r.status_code == 400 and r.json()["error"]["param"] == param, r.text[:300]


def test_a_tiny_temperature_is_greedy(base_url):
    """N5: 1e-300 made the logits inf and the probabilities NaN (a 500); below 1e-5 it is greedy."""
    body = {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 8}
    greedy = _chat(base_url, dict(body, temperature=0))
    tiny = _chat(base_url, dict(body, temperature=1e-300, seed=3))
    assert tiny.status_code == 200, tiny.text[:300]
    assert tiny.json()["choices"][0]["message"]["content"] == greedy.json()["choices"][0]["message"]["content"]
    r = httpx.post(base_url + "/v1/responses", timeout=60,
                   json={"input": "Name a colour.", "max_output_tokens": 8, "temperature": 1e-300})
    assert r.status_code == 200 and r.json()["status"] in ("completed", "incomplete"), r.text[:300]


@pytest.mark.parametrize("content_type", ["text/plain", None, "application/x-www-form-urlencoded"])
def test_a_body_that_is_not_sent_as_json_is_a_415(base_url, content_type):
    """N14: a web page may POST text/plain or a form to 127.0.0.1 with no CORS preflight; read as
    JSON, it would start a generation."""
    r = _post_text(base_url, json.dumps({"messages": HI, "max_tokens": 2}), content_type=content_type)
    assert r.status_code == 415, r.text[:300]
    assert r.json()["error"]["code"] == "unsupported_media_type" and "application/json" in r.text
    ok = _post_text(base_url, json.dumps({"messages": HI, "max_tokens": 2}),
                    content_type="application/json; charset=utf-8")
    assert ok.status_code == 200, ok.text[:300]


def test_a_body_that_never_ends_is_a_408():
    """N7: a chunked body without its last chunk, or fewer bytes than its Content-Length, held the
    connection forever; past ServerLimits.body_timeout the answer is a 408."""
    from stencil.server import ServerLimits
    url, stop = start_server(limits=ServerLimits(body_timeout=1.0))
    try:
        host, port = url.rsplit("/", 1)[1].split(":")
        start = f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        for head, sent in ((start + "Transfer-Encoding: chunked\r\n\r\n", b'10\r\n{"messages": [{"\r\n'),
                           (start + "Content-Length: 5000\r\n\r\n", b'{"messages": [{"role": "user", "content": "hi"')):
            with socket.create_connection((host, int(port)), timeout=15) as s:
                t0 = time.monotonic()
                s.sendall(head.encode() + sent)
                answer = _http_answer(s)
                assert answer.startswith("HTTP/1.1 408"), (head, answer)
                assert "did not arrive within 1 s" in answer and time.monotonic() - t0 < 10
        _still_serves(url)
    finally:
        stop()


def _http_answer(s: socket.socket) -> str:
    """The head and body of one HTTP answer (the body by its Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.decode()


def _length(data: bytes) -> int:
    m = regex.search(rb"(?i)content-length: *(\d+)", data)
    return int(m.group(1)) if m else 0


def test_a_request_that_never_fits_under_the_rss_limit_is_a_413():
    """N9: a compile reservation that cannot fit beside what the server holds (no other request
    compiling, grammars evicted) was told "503 ... retry later" on every retry.

    The server runs in a process of its own: in the test process, what earlier tests freed went
    back to the OS while the request waited (the server trims), the RSS fell under the ballast's
    and CI saw a 503 under load."""
    # the limit 320 MB over the RSS with the model read in; then the server holds 300 MB more (as a
    # warm server's grows): 150 MB past what admits a 180 KB body's reservation (about 90 MB),
    # which fits beside the RSS at the start but not beside this one
    # (no request before it: the ballast leaves room for none; the child's forward pass read the weights in)
    with ServerProcess(rss_margin=320 << 20, ballast=300 << 20) as url:
        schema = {"type": "string", "description": "d" * (180 << 10)}
        r = _chat(url, _schema_request(schema))
        health = httpx.get(url + "/health", timeout=30).json()
        assert r.status_code == 413, (health, r.text[:300])
        err = r.json()["error"]
        assert err["code"] == "request_too_large" and "--rss-limit" in err["message"], err


def test_unique_items_never_dead_end_a_generation(base_url):
    """Review N1: sampled hot, a unique array of objects of booleans keeps running into items
    that can only end as repeats; that was a 500 DeadEnd mid-generation. Every choice now ends
    valid (or is cut at max_tokens as a valid prefix of one)."""
    jsonschema = pytest.importorskip("jsonschema")
    item = {"type": "object", "properties": {k: {"type": "boolean"} for k in "abc"}, "required": list("abc"),
            "additionalProperties": False}
    schema = {"type": "array", "uniqueItems": True, "minItems": 6, "items": item}
    body = _schema_request(schema) | {"max_tokens": 256, "temperature": 2.0, "n": 2, "seed": 7}
    r = _chat(base_url, body, timeout=600)
    assert r.status_code == 200, r.text[:300]
    for choice in r.json()["choices"]:
        text = choice["message"]["content"]
        if choice["finish_reason"] == "stop":
            jsonschema.validate(json.loads(text), schema)
        else:
            assert choice["finish_reason"] == "length", choice
