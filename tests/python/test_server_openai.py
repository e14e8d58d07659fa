"""`stencil serve` against the official openai client, for what OpenAI clients (and llama-server's
and vLLM's) send: finish_reason of a budget-closed output, logprobs of the masked distribution,
the sampling fields, stream_options.include_usage, llama-server's grammar/json_schema fields,
tools over two turns with streamed argument deltas, and 400s for fields the server lacks."""
from __future__ import annotations

import json

import pytest

from generation_model import default_model
from server_fixture import start_server

pydantic = pytest.importorskip("pydantic")
from pydantic import BaseModel  # noqa: E402

YES_NO = {"structured_outputs": {"choice": ["yes", "no"]}}
SKY = [{"role": "user", "content": "Is the sky blue?"}]
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "unit": {"type": "string", "enum": ["c", "f"]}},
           "required": ["city", "unit"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                           "parameters": WEATHER}}]


@pytest.fixture(scope="module")
def client():
    openai = pytest.importorskip("openai")
    url, stop = start_server()
    yield openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=300)
    stop()


@pytest.fixture(scope="module")
def name(client):
    return client.models.list().data[0].id


class Step(BaseModel):
    explanation: str
    output: str


class MathReasoning(BaseModel):
    steps: list[Step]
    final_answer: str


def test_parse_of_a_budget_closed_output_is_stop(client, name):
    # unbounded strings: the 135M model runs on until the budget closes the JSON at max_tokens;
    # that output is complete, so finish_reason is "stop" and parse() (which raises on "length") works
    r = client.chat.completions.parse(model=name, temperature=0, max_tokens=200, response_format=MathReasoning,
                                      messages=[{"role": "user", "content": "Solve 8x + 7 = -23 step by step."}])
    assert r.choices[0].finish_reason == "stop"
    assert isinstance(r.choices[0].message.parsed, MathReasoning)
    assert r.usage.completion_tokens <= 200


def test_unconstrained_output_cut_is_length(client, name):
    r = client.chat.completions.create(model=name, messages=[{"role": "user", "content": "Write a long story."}],
                                       max_tokens=5)
    assert r.choices[0].finish_reason == "length"


def test_logprobs_are_those_of_the_masked_distribution(client, name):
    r = client.chat.completions.create(model=name, messages=SKY, max_tokens=4, logprobs=True, top_logprobs=10,
                                       extra_body=YES_NO)
    ch = r.choices[0]
    first = ch.logprobs.content[0]
    tops = first.top_logprobs
    # the grammar allows only the starts of "yes" and "no": fewer than 10 tokens, all of them prefixes
    assert 2 <= len(tops) < 10 and all(("yes".startswith(t.token) or "no".startswith(t.token)) for t in tops), tops
    assert abs(sum(2.718281828 ** t.logprob for t in tops) - 1.0) < 1e-3  # the mass is all on allowed tokens
    assert first.token == tops[0].token and first.logprob == tops[0].logprob  # greedy takes the most likely
    assert "".join(e.token for e in ch.logprobs.content) == ch.message.content
    assert bytes(first.bytes).decode() == first.token


def test_completions_logprobs_and_streamed_logprobs(client, name):
    r = client.completions.create(model=name, prompt="1, 2, 3,", max_tokens=4, logprobs=2)
    lp = r.choices[0].logprobs
    assert "".join(lp.tokens) == r.choices[0].text and len(lp.token_logprobs) == len(lp.tokens)
    assert all(len(t) <= 2 for t in lp.top_logprobs) and lp.text_offset[0] == 0
    chunks = list(client.chat.completions.create(model=name, messages=SKY, max_tokens=4, logprobs=True,
                                                 stream=True, extra_body=YES_NO))
    streamed = [e for c in chunks if c.choices and c.choices[0].logprobs for e in c.choices[0].logprobs.content]
    assert "".join(e.token for e in streamed) in ("yes", "no")


def test_logit_bias_and_truncations(client, name):
    info = default_model().tokenizer_info
    base = client.chat.completions.create(model=name, messages=SKY, max_tokens=4, extra_body=YES_NO)
    first = base.choices[0].message.content
    other = "no" if first == "yes" else "yes"
    bias = {str(info.token_id(first[0])): -100, str(info.token_id(first)): -100}
    flipped = client.chat.completions.create(model=name, messages=SKY, max_tokens=4, extra_body=YES_NO,
                                             logit_bias=bias)
    assert flipped.choices[0].message.content == other
    # top_k 1 and min_p 1 leave the most likely token only: greedy even at temperature 2
    greedy = client.chat.completions.create(model=name, messages=SKY, max_tokens=12).choices[0].message.content
    for extra in ({"top_k": 1}, {"min_p": 1.0}):
        for seed in range(2):
            r = client.chat.completions.create(model=name, messages=SKY, max_tokens=12, temperature=2.0, seed=seed,
                                               extra_body=extra)
            assert r.choices[0].message.content == greedy, extra
    # penalties change the greedy output of a repetitive continuation
    kw = dict(model=name, prompt="a a a a a a a a", max_tokens=8)
    plain = client.completions.create(**kw).choices[0].text
    assert client.completions.create(frequency_penalty=2.0, **kw).choices[0].text != plain
    assert client.completions.create(presence_penalty=2.0, **kw).choices[0].text != plain


def test_stream_options_include_usage(client, name):
    kw = dict(model=name, messages=SKY, max_tokens=6)
    full = client.chat.completions.create(**kw)
    chunks = list(client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kw))
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.model_dump() == full.usage.model_dump()
    assert all(c.usage is None for c in chunks[:-1])
    plain = list(client.chat.completions.create(stream=True, **kw))
    assert all(c.usage is None for c in plain)


def test_unsupported_and_malformed_fields_are_400s_naming_them(client, name):
    openai = pytest.importorskip("openai")
    for extra, param in [({"best_of": 2}, "best_of"), ({"reasoning_effort": "high"}, "reasoning_effort"),
                         ({"top_k": "many"}, "top_k"), ({"min_p": 2}, "min_p"),
                         ({"logit_bias": {"x": 1}}, "logit_bias.x"), ({"logit_bias": {"5": 500}}, "logit_bias.5"),
                         ({"top_logprobs": 3}, "top_logprobs"), ({"stream_options": {"include_usage": True}},
                                                                 "stream_options"),
                         ({"grammar": 'root ::= "a"', "json_schema": {}}, "json_schema")]:
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model=name, messages=SKY, max_tokens=4, extra_body=extra)
        assert e.value.body["param"] == param, (extra, e.value.body)
    # fields that change nothing in the output pass
    ok = client.chat.completions.create(model=name, messages=SKY, max_tokens=2, user="u", metadata={"a": "b"},
                                        store=False)
    assert ok.choices[0].message.content


def test_llama_server_fields_constrain_the_output(client, name):
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"answer": {"type": "boolean"}}, "required": ["answer"],
              "additionalProperties": False}
    r = client.chat.completions.create(model=name, messages=SKY, max_tokens=20, extra_body={"json_schema": schema})
    jsonschema.validate(json.loads(r.choices[0].message.content), schema)
    r = client.chat.completions.create(model=name, messages=SKY, max_tokens=8,
                                       extra_body={"grammar": 'root ::= "Yes." | "No."'})
    assert r.choices[0].message.content in ("Yes.", "No.")
    r = client.completions.create(model=name, prompt="The year:", max_tokens=8, extra_body={"grammar": r'root ::= [0-9]{4}'})
    assert r.choices[0].text.isdigit() and len(r.choices[0].text) == 4


def test_structured_outputs_json_object_and_structural_tag(client, name):
    r = client.chat.completions.create(model=name, messages=SKY, max_tokens=30,
                                       extra_body={"structured_outputs": {"json_object": True}})
    # any object, closed by the budget within max_tokens
    assert r.choices[0].finish_reason == "stop", r.choices[0].message.content
    assert isinstance(json.loads(r.choices[0].message.content), dict)
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<answer>",
                                                "content": {"type": "regex", "pattern": "yes|no"}, "end": "</answer>"}}
    r = client.chat.completions.create(model=name, messages=SKY, max_tokens=12,
                                       extra_body={"structured_outputs": {"structural_tag": json.dumps(tag)}})
    assert r.choices[0].message.content in ("<answer>yes</answer>", "<answer>no</answer>")


def test_tools_over_two_turns_keep_the_history(client, name):
    jsonschema = pytest.importorskip("jsonschema")
    msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = client.chat.completions.create(model=name, messages=msgs, tools=TOOLS, tool_choice="required", max_tokens=60)
    assert r.choices[0].finish_reason == "tool_calls"
    call = r.choices[0].message.tool_calls[0]
    jsonschema.validate(json.loads(call.function.arguments), WEATHER)
    turn = msgs + [r.choices[0].message.model_dump(exclude_none=True),
                   {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 21}'}]
    r2 = client.chat.completions.create(model=name, messages=turn, tools=TOOLS, max_tokens=30)
    assert r2.choices[0].finish_reason in ("stop", "length", "tool_calls")
    # the assistant's call is in the prompt: without it the prompt is shorter
    bare = [m for m in turn if m["role"] != "tool"]
    bare[1] = {"role": "assistant", "content": ""}
    r3 = client.chat.completions.create(model=name, messages=bare, tools=TOOLS, max_tokens=1)
    assert r2.usage.prompt_tokens > r3.usage.prompt_tokens + 10


def test_tool_arguments_stream_as_deltas(client, name):
    kw = dict(model=name, messages=[{"role": "user", "content": "What is the weather in Paris?"}], tools=TOOLS,
              tool_choice="required", max_tokens=60)
    full = client.chat.completions.create(**kw).choices[0].message.tool_calls[0]
    chunks = [c for c in client.chat.completions.create(stream=True, **kw) if c.choices]
    deltas = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].function.name == "get_weather" and deltas[0].id
    args = [d.function.arguments for d in deltas if d.function and d.function.arguments]
    assert len(args) > 3  # arguments come piece by piece, not as one final delta
    assert "".join(args) == full.function.arguments
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_reasoning_streams_as_reasoning_deltas_then_content(client, name):
    """`reasoning: true`: a free <think> block, then the schema's JSON. Streamed, the block comes
    as reasoning_content deltas and the JSON as content deltas, adding up to the whole message
    (before, the whole message came as one final delta)."""
    kw = dict(model=name, max_tokens=60, temperature=0,
              messages=[{"role": "user", "content": "Think, then give the weather in Paris as JSON."}],
              response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": WEATHER}},
              extra_body={"reasoning": True})
    r = client.chat.completions.create(logprobs=True, **kw)
    whole = r.choices[0].message
    reasoning = whole.model_extra.get("reasoning_content")
    assert reasoning and json.loads(whole.content)["unit"] in ("c", "f")
    # usage counts the tokens up to and with the one that closes </think> (from the tokens' bytes)
    text, upto = b"", 0
    while b"</think>" not in text:
        text += bytes(r.choices[0].logprobs.content[upto].bytes)
        upto += 1
    assert r.usage.completion_tokens_details.reasoning_tokens == upto < r.usage.completion_tokens
    deltas = [c.choices[0].delta for c in client.chat.completions.create(stream=True, **kw) if c.choices]
    thought = [d.model_extra.get("reasoning_content") for d in deltas if d.model_extra.get("reasoning_content")]
    content = [d.content for d in deltas if d.content]
    assert len(thought) > 3 and "".join(thought) == reasoning
    assert len(content) > 3 and "".join(content) == whole.content
    first_content = next(k for k, d in enumerate(deltas) if d.content)
    assert all(not d.model_extra.get("reasoning_content") for d in deltas[first_content:])


def test_serve_in_thread_says_when_its_server_cannot_start():
    """A port already taken: the server's thread ends, and serve_in_thread says so at once
    instead of waiting out its start timeout."""
    import socket
    import time

    from stencil.server import serve_in_thread
    lm = default_model()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match="stopped before it served"):
            serve_in_thread(lm, port=s.getsockname()[1], start_timeout=60)
        assert time.monotonic() - t0 < 30
