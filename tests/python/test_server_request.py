"""The server's request models (``stencil.server.request``) without a server: each route's model
checks the values the service reads, with the messages and ``param`` clients rely on, against the
server's bounds, and hands the engine ``GenerationParams`` and ``SamplingParams`` (issue 42 step 5).
The HTTP tests (test_server_openai.py, test_server_hostile.py) hold the same through a server."""
from __future__ import annotations

import pytest

pytest.importorskip("fastapi")

from stencil.runtime.aligned import DEFAULT_PARTICLES  # noqa: E402
from stencil.server.params import GenerationParams, SamplingParams  # noqa: E402
from stencil.server.protocol import RequestError  # noqa: E402
from stencil.server.request import ChatRequest, CompletionRequest, RequestBounds, parse_request  # noqa: E402

BOUNDS = RequestBounds(max_tokens=1000, max_n=4, vocab_size=500)
HI = [{"role": "user", "content": "hi"}]


def _refused(model, body: dict) -> RequestError:
    with pytest.raises(RequestError) as e:
        parse_request(model, body, BOUNDS)
    return e.value


@pytest.mark.parametrize("fields, param, message", [
    ({"temperature": 3}, "temperature", "temperature must be between 0.0 and 2.0, got 3"),
    ({"temperature": "hot"}, "temperature", "temperature must be a number, got 'hot'"),
    ({"top_p": float("nan")}, "top_p", "top_p must be a finite number, got nan"),
    ({"temperature": 10**400}, "temperature", "temperature must be between 0.0 and 2.0"),
    ({"max_tokens": 1001}, "max_tokens", "max_tokens must be between 0 and 1000, got 1001"),   # the server's bound
    ({"max_completion_tokens": 2.5}, "max_completion_tokens", "max_completion_tokens must be a integer"),
    ({"n": 5}, "n", "n must be between 1 and 4, got 5"),
    ({"seed": True}, "seed", "seed must be a integer, got True"),
    ({"stream": "yes"}, "stream", "stream must be true or false, got 'yes'"),
    ({"ignore_eos": 1}, "ignore_eos", "ignore_eos must be true or false, got 1"),
    ({"parallel_tool_calls": "no"}, "parallel_tool_calls", "parallel_tool_calls must be true or false"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop", "stop must be a string or a list of at most 4 strings"),
    ({"top_k": "many"}, "top_k", "top_k: Input should be a valid integer, got 'many'"),
    ({"logit_bias": {"5": 500}}, "logit_bias.5", "logit_bias.5: Input should be less than or equal to 100"),
    ({"logit_bias": {"500": 1}}, "logit_bias.500", "logit_bias key '500' is not a token id of this model (0 to 499)"),
    ({"top_logprobs": 2}, "top_logprobs", "top_logprobs needs logprobs: true"),
    ({"stream_options": {"include_usage": True}}, "stream_options", "stream_options is only allowed with stream"),
    ({"particles": 4}, "particles", 'particles needs sampling: "aligned"'),
    ({"sampling": "aligned", "temperature": 1.0, "top_p": 0.5, "ignore_eos": True}, "sampling",
     'sampling: "aligned" does not combine with top_p, ignore_eos'),
])
def test_bad_values_are_refused_naming_their_field(fields, param, message):
    e = _refused(ChatRequest, {"messages": HI, **fields})
    assert e.param == param and e.status == 400 and e.code is None, (e.param, e.message)
    assert e.message.startswith(message), e.message


def test_an_unknown_field_is_reported_before_bad_values():
    """It might change the output: ``unsupported_parameter``, whatever else is wrong."""
    e = _refused(ChatRequest, {"messages": HI, "temperature": 9, "best_of": 2})
    assert (e.param, e.code) == ("best_of", "unsupported_parameter")


def test_completions_prompt_and_logprobs():
    for prompt in (None, "", 3):
        e = _refused(CompletionRequest, {} if prompt is None else {"prompt": prompt})
        assert (e.param, e.message) == ("prompt", "prompt must be a non-empty string")
    req = parse_request(CompletionRequest, {"prompt": "x", "logprobs": 2, "heal": True}, BOUNDS)
    assert req.generation_params(16).logprobs == 2
    e = _refused(CompletionRequest, {"prompt": "x", "sampling": "aligned", "temperature": 1.0, "heal": True})
    assert e.message.endswith("does not combine with heal")


def test_checked_values_become_the_engine_params():
    req = parse_request(ChatRequest, {
        "messages": HI, "max_completion_tokens": 40, "temperature": 0.7, "seed": 3, "top_k": -1, "min_p": 0.1,
        "presence_penalty": 0.5, "logit_bias": {"7": -100}, "stop": ["", "\n"], "logprobs": True, "top_logprobs": 2},
        BOUNDS)
    assert req.generation_params(BOUNDS.default_max_tokens) == GenerationParams(
        max_tokens=40, stop=("\n",), logprobs=2)
    assert req.sampling_params() == SamplingParams(temperature=0.7, seed=3, top_k=0, min_p=0.1,
                                                   presence_penalty=0.5, logit_bias={7: -100.0})
    assert req.sampling_params().truncates()   # min_p: a row that needs its mask before it samples


def test_null_is_the_default_and_max_tokens_wins():
    req = parse_request(ChatRequest, {"messages": HI, "temperature": None, "n": None, "stream": None,
                                      "max_tokens": 5, "max_completion_tokens": 9}, BOUNDS)
    assert (req.temperature, req.n, req.stream) == (0.0, 1, False)
    assert req.generation_params(256).max_tokens == 5
    assert parse_request(ChatRequest, {"messages": HI}, BOUNDS).generation_params(256).max_tokens == 256
    assert RequestBounds(max_tokens=100, max_n=1, vocab_size=1).default_max_tokens == 100


def test_aligned_sampling_params():
    req = parse_request(ChatRequest, {"messages": HI, "sampling": "aligned", "temperature": 1.0,
                                      "frequency_penalty": 0.5, "repetition_penalty": 1.2}, BOUNDS)
    assert req.generation_params(16).aligned == DEFAULT_PARTICLES
    assert req.sampling_params().penalties() == {"frequency_penalty": 0.5, "repetition_penalty": 1.2}


# -- the constraint's shapes (server.shapes): response_format and tools ----------------------------

def _fn(name="f", **spec):
    return {"type": "function", "function": {"name": name, **spec}}


@pytest.mark.parametrize("fields, param", [
    ({"response_format": "json"}, "response_format"),
    ({"response_format": {"type": "yaml"}}, "response_format.type"),
    ({"response_format": {"type": "json_schema"}}, "response_format"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "response_format.json_schema.schema"),
    ({"response_format": {"type": "json_schema", "json_schema": {"schema": {}, "strict": "yes"}}},
     "response_format.json_schema.strict"),
    ({"tools": {"type": "function"}}, "tools"),
    ({"tools": [_fn(), "f"]}, "tools[1]"),
    ({"tools": [{"type": "retrieval"}]}, "tools[0].type"),
    ({"tools": [{"type": "function", "custom": {"name": "f"}}]}, "tools[0]"),
    ({"tools": [_fn("a b")]}, "tools[0].function.name"),
    ({"tools": [_fn(7)]}, "tools[0].function.name"),
    ({"tools": [_fn(parameters={"type": "string"})]}, "tools[0].function.parameters"),
    ({"tools": [_fn(parameters="object")]}, "tools[0].function.parameters"),
    ({"tools": [{"type": "custom", "custom": {"name": "</x>"}}]}, "tools[0].custom.name"),
])
def test_a_malformed_constraint_shape_is_refused_naming_its_path(fields, param):
    e = _refused(ChatRequest, {"messages": HI, **fields})
    assert (e.param, e.status) == (param, 400), (e.param, e.message)
    assert e.message.startswith(param + ":"), e.message


@pytest.mark.parametrize("fields", [
    {"response_format": None},
    {"response_format": {"type": "text"}},
    {"response_format": {"type": "json_object"}},
    {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"},
                                                               "strict": True, "description": "d"}}},
    {"response_format": {"type": "json_schema", "json_schema": {"schema": True, "x-vendor": 1}}},
    {"tools": None}, {"tools": []},
    {"tools": [_fn(), _fn("g.h-1", description="d", parameters={"type": "object"}, strict=False),
               _fn("p", parameters=None), _fn("q", parameters={}), _fn("r", examples=[])]},
    {"tools": [{"type": "custom", "custom": {"name": "sql", "description": "d",
                                             "format": {"type": "grammar", "grammar": {"syntax": "lark",
                                                                                      "definition": "start: \"a\""}}}},
               {"type": "custom", "custom": {"name": "free"}}]},
])
def test_every_accepted_constraint_shape_still_parses(fields):
    req = parse_request(ChatRequest, {"messages": HI, **fields}, BOUNDS)
    assert (req.response_format is None) == (fields.get("response_format") is None)
    assert len(req.tools or ()) == len(fields.get("tools") or ())


def test_the_constraint_reads_checked_tools():
    """request_tools no longer checks shapes: it reads what the model let through."""
    from stencil.server.constraints import request_tools
    body = {"messages": HI, "tools": [_fn(parameters=None)]}
    parse_request(ChatRequest, body, BOUNDS)
    assert request_tools(body)[0]["function"]["parameters"] == {"type": "object"}   # no parameters: an empty object
