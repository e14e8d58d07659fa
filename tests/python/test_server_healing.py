"""Token healing in `stencil serve` (``/v1/completions`` with ``heal: true``, a stencil extension):
the choice's text follows the prompt and leaves the healed prefix out, ``healed_prefix`` names it,
streamed pieces join to the same text, every choice under the grammar is valid."""
from __future__ import annotations

import json
import re

import pytest

from server_fixture import openai_client, start_server


@pytest.fixture(scope="module")
def base_url():
    url, stop = start_server()
    yield url
    stop()


PROMPT = 'person = {"name": "Marie Cu'
REGEX = r'[A-Za-z ]+", "born": [0-9]{4}\}'


def complete(client, heal: bool, **kw):
    extra = dict(kw.pop("extra_body", {}), **({"heal": True} if heal else {}))
    return client.completions.create(model=client.models.list().data[0].id, prompt=kw.pop("prompt", PROMPT),
                                     max_tokens=16, temperature=0, extra_body=extra, **kw)


def test_completions_heal_the_prompt(base_url):
    """The healed choice differs from the plain one, names its prefix, and is valid under the regex."""
    client = openai_client(base_url)
    regex = {"structured_outputs": {"regex": REGEX}}
    plain = complete(client, False, extra_body=regex).choices[0]
    healed = complete(client, True, extra_body=regex).choices[0]
    assert healed.healed_prefix == " Cu" and PROMPT.endswith(healed.healed_prefix)
    assert not hasattr(plain, "healed_prefix") or plain.healed_prefix is None
    for c in (plain, healed):
        assert re.fullmatch(REGEX, c.text) and c.finish_reason == "stop", c.text
    assert healed.text != plain.text
    free = complete(client, True, prompt='print("Hello, wor').choices[0]
    assert free.healed_prefix == " wor" and not free.text.startswith(" wor")


def test_streamed_healing_is_the_same_text(base_url):
    import httpx
    body = {"prompt": PROMPT, "max_tokens": 16, "temperature": 0, "heal": True, "n": 2,
            "structured_outputs": {"regex": REGEX}}
    whole = httpx.post(base_url + "/v1/completions", json=body, timeout=120).json()
    texts, prefixes = ["", ""], [None, None]
    with httpx.stream("POST", base_url + "/v1/completions", json=dict(body, stream=True), timeout=120) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                c = json.loads(line[6:])["choices"][0]
                texts[c["index"]] += c["text"]
                if c["finish_reason"] is not None:
                    prefixes[c["index"]] = c.get("healed_prefix")
    assert texts == [c["text"] for c in whole["choices"]] and prefixes == [" Cu", " Cu"]
    spec = httpx.post(base_url + "/v1/completions", json=dict(body, speculate=True), timeout=120).json()
    assert [c["text"] for c in spec["choices"]] == texts


def test_heal_is_refused_where_it_means_nothing(base_url):
    """Chat prompts end with the template's own tokens: ``heal`` there is an unknown field (400)."""
    import httpx
    r = httpx.post(base_url + "/v1/chat/completions", timeout=60,
                   json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "heal": True})
    assert r.status_code == 400 and "heal" in r.json()["error"]["message"]


def test_logprobs_offsets_count_from_the_returned_text(base_url):
    """The healing tokens are in the log-probabilities, before the text: at negative offsets."""
    c = complete(openai_client(base_url), True, logprobs=1).choices[0]
    prefix = c.model_extra["healed_prefix"]
    lp = c.logprobs
    assert prefix and "".join(lp.tokens) == prefix + c.text
    assert lp.text_offset[0] == -len(prefix)
    for token, offset in zip(lp.tokens, lp.text_offset):
        if offset >= 0:
            assert c.text[offset:].startswith(token)
