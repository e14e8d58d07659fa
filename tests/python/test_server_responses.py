"""`stencil serve`'s /v1/responses against the official openai client: `responses.parse` with a
Pydantic model (the output validates and equals the chat route's greedy output), streamed events
that the client's own stream state accepts, function tools over two turns, the incomplete status
of a cut output, and 400s naming what is not done."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from server_fixture import start_server

pydantic = pytest.importorskip("pydantic")
from pydantic import BaseModel  # noqa: E402

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "unit": {"type": "string", "enum": ["c", "f"]}},
           "required": ["city", "unit"], "additionalProperties": False}
TOOLS = [{"type": "function", "name": "get_weather", "description": "The weather in a city", "parameters": WEATHER}]


class City(BaseModel):
    name: str
    country: str
    population: int


@pytest.fixture(scope="module")
def openai():
    return pytest.importorskip("openai")


@pytest.fixture(scope="module")
def client(openai):
    url, stop = start_server()
    yield openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=300)
    stop()


@pytest.fixture(scope="module")
def name(client):
    return client.models.list().data[0].id


def test_parse_with_a_pydantic_model_matches_the_chat_route(client, name):
    r = client.responses.parse(model=name, input="Name a large city.", instructions="Answer in JSON.",
                               text_format=City, temperature=0, max_output_tokens=80)
    assert r.status == "completed" and isinstance(r.output_parsed, City)
    assert r.usage.output_tokens <= 80 and r.usage.input_tokens > 5
    chat = client.chat.completions.parse(model=name, response_format=City, temperature=0, max_tokens=80,
                                         messages=[{"role": "system", "content": "Answer in JSON."},
                                                   {"role": "user", "content": "Name a large city."}])
    assert r.output_text == chat.choices[0].message.content  # the same prompt, constraint and greedy tokens
    assert r.usage.input_tokens == chat.usage.prompt_tokens


def test_streamed_events_build_the_same_response(client, name):
    kw = dict(model=name, input=[{"role": "user", "content": [{"type": "input_text", "text": "Name a city."}]}],
              text_format=City, temperature=0, max_output_tokens=60)
    whole = client.responses.parse(**kw)
    with client.responses.stream(**kw) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 3 and "".join(deltas) == whole.output_text
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert final.output_parsed == whole.output_parsed


def test_function_tools_over_two_turns(client, name):
    jsonschema = pytest.importorskip("jsonschema")
    r = client.responses.create(model=name, input="What is the weather in Paris?", tools=TOOLS,
                                tool_choice="required", max_output_tokens=60)
    calls = [o for o in r.output if o.type == "function_call"]
    assert calls and calls[0].name == "get_weather" and calls[0].call_id
    jsonschema.validate(json.loads(calls[0].arguments), WEATHER)
    history = [{"role": "user", "content": "What is the weather in Paris?"},
               {"type": "function_call", "call_id": calls[0].call_id, "name": calls[0].name,
                "arguments": calls[0].arguments},
               {"type": "function_call_output", "call_id": calls[0].call_id, "output": '{"temperature": 21}'}]
    r2 = client.responses.create(model=name, input=history, tools=TOOLS, max_output_tokens=20)
    r3 = client.responses.create(model=name, input=history[:1], tools=TOOLS, max_output_tokens=1)
    assert r2.usage.input_tokens > r3.usage.input_tokens + 10  # the call and its output are in the prompt


#: greedy tool-call requests, each asked streamed and not (sent together: the server batches them)
LIVE = {"generic": dict(input="Weather in Rome and in Oslo?", tool_choice="required", max_output_tokens=80),
        "harmony": dict(input="Weather in Rome?", max_output_tokens=60, extra_body={"tool_format": "harmony"})}


def test_streamed_tool_calls_arrive_live_and_build_the_same_response(client, name):
    """Each call's arguments stream as they are generated (several deltas, each item added, grown
    and done in turn), and the stream's final response is the unstreamed one of the same greedy request."""
    def stream(kw):
        with client.responses.stream(model=name, tools=TOOLS, temperature=0, **kw) as s:
            return list(s), s.get_final_response()
    with ThreadPoolExecutor(4) as pool:
        streamed = {k: pool.submit(stream, kw) for k, kw in LIVE.items()}
        whole = {k: pool.submit(client.responses.create, model=name, tools=TOOLS, temperature=0, **kw)
                 for k, kw in LIVE.items()}
        streamed = {k: f.result() for k, f in streamed.items()}
        whole = {k: f.result() for k, f in whole.items()}
    for fmt, (events, final) in streamed.items():
        assert [e.sequence_number for e in events] == list(range(len(events)))
        items = items_of(events)
        assert [i["item"].id for i in items] == [o.id for o in final.output], fmt
        assert bare(i["item"] for i in items) == bare(final.output), fmt
        assert bare(final.output) == bare(whole[fmt].output), fmt   # (ids are fresh per response)
        calls = [i for i in items if i["item"].type == "function_call"]
        assert calls, (fmt, final.output)
        for call in calls:
            assert len(call["deltas"]) > 1 and "".join(call["deltas"]) == call["done"].arguments \
                == call["item"].arguments, fmt
            assert call["item"].status == "completed" and json.loads(call["item"].arguments)["city"]


def items_of(events) -> list[dict]:
    """The output items' event runs, checked in order: each item added at the next output index,
    its deltas and .done events naming it, then its output_item.done, before the next one starts."""
    items: list[dict] = []
    for e in events:
        if e.type == "response.output_item.added":
            assert not items or "item" in items[-1], "an item was added before the last one was done"
            assert e.output_index == len(items) and e.item.status == "in_progress"
            items.append({"added": e.item, "deltas": [], "done": None})
        elif e.type == "response.output_item.done":
            assert e.output_index == len(items) - 1 and e.item.id == items[-1]["added"].id
            items[-1]["item"] = e.item
        elif e.type.startswith("response.") and hasattr(e, "output_index"):
            assert (e.output_index, e.item_id) == (len(items) - 1, items[-1]["added"].id) and "item" not in items[-1]
            if e.type.endswith(".delta"):
                items[-1]["deltas"].append(e.delta)
            elif e.type in ("response.function_call_arguments.done", "response.custom_tool_call_input.done"):
                items[-1]["done"] = e
    assert all("item" in i for i in items)
    return items


def bare(output) -> list[dict]:
    """Output items without their ids (fresh per response) and the client's parsed extras."""
    return [o.model_dump(exclude={"id", "call_id", "parsed_arguments"}) for o in output]


def test_family_formats_and_allowed_tools(client, name):
    jsonschema = pytest.importorskip("jsonschema")
    add = {"type": "function", "name": "add", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"],
        "additionalProperties": False}}
    for fmt in ("deepseek", "harmony"):
        r = client.responses.create(
            model=name, input="What is the weather in Paris?", tools=TOOLS + [add], max_output_tokens=160,
            tool_choice={"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "add"}]},
            extra_body={"tool_format": fmt})
        calls = [o for o in r.output if o.type == "function_call"]
        assert calls and {c.name for c in calls} == {"add"}, (fmt, r.output)
        for c in calls:
            jsonschema.validate(json.loads(c.arguments), add["parameters"])


def test_a_cut_output_is_incomplete(client, name):
    r = client.responses.create(model=name, input="Write a long story about the sea.", max_output_tokens=8)
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 8


def test_input_text_and_output_text_parts_reach_the_prompt(client, name):
    """The parts the openai client sends: ``input_text`` (and ``output_text`` in an assistant's
    turn) are the prompt, as the same text given as a string is (they were dropped: the model
    answered an empty prompt)."""
    text = "Repeat exactly: BANANA BANANA BANANA"
    plain = client.responses.create(model=name, input=text, max_output_tokens=1)
    parts = client.responses.create(model=name, max_output_tokens=1, input=[
        {"role": "user", "content": [{"type": "input_text", "text": "Repeat exactly: "},
                                     {"type": "input_text", "text": "BANANA BANANA BANANA"}]}])
    assert parts.usage.input_tokens == plain.usage.input_tokens > 10
    history = [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
               {"role": "assistant", "content": [{"type": "output_text", "text": "Hello! How can I help you today?"}]},
               {"role": "user", "content": "Name a colour."}]
    whole = client.responses.create(model=name, input=history, max_output_tokens=1)
    last = client.responses.create(model=name, input=history[2:], max_output_tokens=1)
    assert whole.usage.input_tokens > last.usage.input_tokens + 10


@pytest.mark.parametrize("extra, param", [
    ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
    ({"include": ["message.output_text.logprobs"]}, "include"),
    ({"reasoning": {"effort": "huge"}}, "reasoning.effort"),
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"text": {"format": {"type": "json_schema", "name": "x"}}}, "text.format.schema"),
    ({"input": [{"type": "image", "url": "x"}]}, "input[0].type"),
    # parts the server cannot read are refused, not dropped (the model would answer without them)
    ({"input": [{"role": "user", "content": [{"type": "input_text", "text": "What is this?"},
                                             {"type": "input_image", "image_url": "data:,"}]}]},
     "input[0].content[1].type"),
    ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "file_1"}]}]},
     "input[0].content[0].type"),
    ({"input": [{"role": "user", "content": [{"type": "output_text", "text": "Hi"}]}]}, "input[0].content[0].type"),
    ({"input": [{"type": "function_call_output", "call_id": "c", "output": [{"type": "input_image"}]}]},
     "input[0].output[0].type"),
])
def test_what_is_not_done_is_a_400_naming_it(client, name, openai, extra, param):
    body = {"model": name, "input": "Hi", "max_output_tokens": 4, **extra}
    with pytest.raises(openai.BadRequestError) as e:
        client.post("/responses", body=body, cast_to=object)
    assert e.value.body["param"] == param, e.value.body
