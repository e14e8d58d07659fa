"""`stencil serve` through the real openai client: parse() with Pydantic models, strict tool
calls, streaming == non-streaming, structured_outputs regex/choice, errors as OpenAI's JSON."""
from __future__ import annotations

import json
import re
from enum import Enum
from typing import Literal, Optional

import pytest

from server_fixture import start_server

pydantic = pytest.importorskip("pydantic")
from pydantic import BaseModel, Field  # noqa: E402

# bounded strings and numbers: the 135M model would otherwise run on inside a string past max_tokens
Short = Field(max_length=12)


@pytest.fixture(scope="module")
def base_url():
    url, stop = start_server()
    yield url
    stop()


@pytest.fixture(scope="module")
def client(base_url):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=base_url + "/v1", api_key="none", max_retries=0, timeout=120)


class Color(BaseModel):
    name: str = Short
    hex: str = Field(pattern=r"^#[0-9a-f]{6}$")


class Level(str, Enum):
    low = "low"
    high = "high"


class City(BaseModel):
    city: str = Short
    population: int = Field(ge=0, le=10**8)
    capital: bool


class Point(BaseModel):
    x: int = Field(ge=-999, le=999)
    y: float


class Tagged(BaseModel):
    tags: list[Literal["red", "green", "blue"]] = Field(max_length=3)
    level: Level


class Person(BaseModel):
    name: str = Short
    age: Optional[int] = Field(ge=0, le=150)
    role: Literal["admin", "user"]


@pytest.mark.parametrize("model", [Color, City, Point, Tagged, Person], ids=lambda m: m.__name__)
def test_parse_pydantic(client, model):
    r = client.chat.completions.parse(model=client.models.list().data[0].id,
                                      messages=[{"role": "user", "content": f"Give one {model.__name__} as JSON."}],
                                      response_format=model, max_tokens=64,
                                      extra_body={"repetition_penalty": 1.1})
    msg = r.choices[0].message
    if r.choices[0].finish_reason == "length":
        pytest.skip("the small model did not finish within max_tokens")  # parse() raises on length
    assert isinstance(msg.parsed, model)
    assert model.model_validate_json(msg.content) == msg.parsed
    assert r.usage.completion_tokens > 0 and r.usage.prompt_tokens > 0


def test_strict_tool_call_required(client):
    jsonschema = pytest.importorskip("jsonschema")
    params = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                               "unit": {"type": "string", "enum": ["c", "f"]}},
              "required": ["city", "unit"], "additionalProperties": False}
    tools = [{"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": params}}]
    r = client.chat.completions.create(model=client.models.list().data[0].id, tools=tools, tool_choice="required",
                                       messages=[{"role": "user", "content": "Weather in Paris?"}], max_tokens=80,
                                       extra_body={"repetition_penalty": 1.1})
    assert r.choices[0].finish_reason != "length", r.choices[0].message
    calls = r.choices[0].message.tool_calls
    assert calls and calls[0].function.name == "get_weather"
    jsonschema.validate(json.loads(calls[0].function.arguments), params)
    assert r.choices[0].finish_reason == "tool_calls"


def test_stream_equals_non_stream(client):
    kw = dict(model=client.models.list().data[0].id, max_tokens=16, temperature=0,
              messages=[{"role": "user", "content": "Name three colors."}])
    full = client.chat.completions.create(**kw).choices[0].message.content
    pieces = [c.choices[0].delta.content or "" for c in client.chat.completions.create(stream=True, **kw) if c.choices]
    assert "".join(pieces) == full and full


def test_structured_outputs_regex_and_choice(client):
    name = client.models.list().data[0].id
    msgs = [{"role": "user", "content": "In which year did the Berlin wall fall?"}]
    r = client.chat.completions.create(model=name, messages=msgs, max_tokens=8,
                                       extra_body={"structured_outputs": {"regex": r"[0-9]{4}"}})
    assert re.fullmatch(r"[0-9]{4}", r.choices[0].message.content)
    r = client.chat.completions.create(model=name, messages=[{"role": "user", "content": "Is the sky blue?"}],
                                       max_tokens=8, extra_body={"structured_outputs": {"choice": ["yes", "no"]}})
    assert r.choices[0].message.content in ("yes", "no")


def test_completions_and_stop(client):
    r = client.completions.create(model=client.models.list().data[0].id, prompt="1, 2, 3, 4,", max_tokens=12,
                                  stop=[","], extra_body={"structured_outputs": {"regex": r" [0-9]+(, [0-9]+)*"}})
    assert "," not in r.choices[0].text and re.fullmatch(r" [0-9]+", r.choices[0].text)


def test_errors_are_openai_400s(client):
    openai = pytest.importorskip("openai")
    name = client.models.list().data[0].id
    msgs = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=name, messages=msgs, max_tokens=4, response_format={
            "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a": {"type": "nonsense"}}}}})
    assert "/properties/a" in str(e.value), str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=name, messages=msgs, max_tokens=4,
                                       extra_body={"structured_outputs": {"grammar": "start: (\n"}})
    assert "line" in str(e.value).lower(), str(e.value)
    with pytest.raises(openai.BadRequestError, match="unknown model"):
        client.chat.completions.create(model="no-such-model", messages=msgs, max_tokens=4)
    with pytest.raises(openai.BadRequestError, match="context"):
        client.chat.completions.create(model=name, messages=[{"role": "user", "content": "hi " * 9000}], max_tokens=4)
    ok = client.chat.completions.create(model=name, messages=msgs, max_tokens=4)
    assert ok.choices[0].message.content is not None
