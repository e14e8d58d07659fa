"""The messages of a chat request and the input items of a Responses request as the route models
check them (``stencil.server.messages``), without a server: each malformed shape is a 400 naming
its path (a part the server cannot read: ``unsupported_parameter``), and each shape accepted
before still reaches the chat template as it did (issue 42 step 5). test_server_hostile.py,
_isolation.py and _responses.py hold the same through a server."""
from __future__ import annotations

import pytest

pytest.importorskip("fastapi")

from stencil.server.openai_responses import ResponsesRequest, chat_body  # noqa: E402
from stencil.server.protocol import RequestError  # noqa: E402
from stencil.server.request import ChatRequest, RequestBounds, parse_request  # noqa: E402
from stencil.server.toolcalls import chat_prompt  # noqa: E402

BOUNDS = RequestBounds(max_tokens=1000, max_n=4, vocab_size=500)
USER = {"role": "user", "content": "What is 1+2?"}
CALL = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
CUSTOM = {"id": "call_2", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
ADD = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}


def _refused(model, body: dict) -> RequestError:
    with pytest.raises(RequestError) as e:
        parse_request(model, body, BOUNDS)
    return e.value


def _messages(*msgs) -> list[dict]:
    return parse_request(ChatRequest, {"messages": list(msgs)}, BOUNDS).template_messages()


def _assistant(**fields):
    return {"role": "assistant", "content": None, "tool_calls": [CALL], **fields}


# -- chat messages ---------------------------------------------------------------------------------

@pytest.mark.parametrize("messages, param", [
    (None, "messages"), ([], "messages"), ({"role": "user"}, "messages"),
    (["hi"], "messages[0]"),
    ([{"content": "hi"}], "messages[0].role"),
    ([{"role": "function", "content": "hi", "name": "f"}], "messages[0].role"),
    ([USER, {"role": "user", "content": 5}], "messages[1].content"),
    ([USER, {"role": "user", "content": {"type": "text", "text": "hi"}}], "messages[1].content"),
    ([{"role": "user"}], "messages[0].content"),
    ([{"role": "system", "content": None}], "messages[0].content"),
    ([{"role": "user", "content": ["hi"]}], "messages[0].content[0]"),
    ([{"role": "user", "content": [{"type": "text"}]}], "messages[0].content[0].text"),
    ([{"role": "user", "content": [{"type": "text", "text": None}]}], "messages[0].content[0].text"),
    ([{"role": "user", "content": [{"text": "hi"}]}], "messages[0].content[0].type"),
    # values dropped before when of the wrong type: OpenAI refuses them
    ([{"role": "user", "content": "hi", "name": 5}], "messages[0].name"),
    ([USER, _assistant(), {"role": "tool", "content": "3", "tool_call_id": 1}], "messages[2].tool_call_id"),
    ([USER, _assistant(reasoning_content=["think"])], "messages[1].reasoning_content"),
    # the tool history
    ([USER, {"role": "tool", "content": "3"}], "messages[1].tool_call_id"),
    ([USER, {"role": "user", "content": "hi", "tool_calls": [CALL]}], "messages[1].tool_calls"),
    ([USER, _assistant(tool_calls=CALL)], "messages[1].tool_calls"),
    ([USER, _assistant(tool_calls=["add"])], "messages[1].tool_calls[0]"),
    ([USER, USER, _assistant(tool_calls=[{**CALL, "function": {"name": "add", "arguments": {"a": 1}}}])],
     "messages[2].tool_calls[0].function.arguments"),
    ([USER, _assistant(tool_calls=[{**CALL, "function": {"name": "add"}}])], "messages[1].tool_calls[0].function.arguments"),
    ([USER, _assistant(tool_calls=[{**CALL, "function": {"arguments": "{}"}}])], "messages[1].tool_calls[0].function.name"),
    ([USER, _assistant(tool_calls=[{**CALL, "function": "add"}])], "messages[1].tool_calls[0].function"),
    ([USER, _assistant(tool_calls=[{"id": "c", "type": "function"}])], "messages[1].tool_calls[0].function"),
    ([USER, _assistant(tool_calls=[{k: v for k, v in CALL.items() if k != "id"}])], "messages[1].tool_calls[0].id"),
    ([USER, _assistant(tool_calls=[{**CALL, "type": "retrieval"}])], "messages[1].tool_calls[0].type"),
    ([USER, _assistant(tool_calls=[{**CUSTOM, "custom": {"name": "sql", "input": 1}}])],
     "messages[1].tool_calls[0].custom.input"),
])
def test_a_malformed_message_is_refused_naming_its_path(messages, param):
    e = _refused(ChatRequest, {"messages": messages})
    assert (e.param, e.status, e.code) == (param, 400, None), (e.param, e.code, e.message)
    assert e.message.startswith(param), e.message


@pytest.mark.parametrize("part", [{"type": "image_url", "image_url": {"url": "data:,"}},
                                  {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}},
                                  {"type": "file", "file": {"file_id": "f"}}, {"type": "input_text", "text": "hi"},
                                  {"type": "refusal", "refusal": "no"}])
def test_a_part_the_server_cannot_read_is_unsupported(part):
    """Dropped, the model would answer a prompt without it: ``unsupported_parameter``, named."""
    e = _refused(ChatRequest, {"messages": [USER, {"role": "user", "content": [{"type": "text", "text": "this?"}, part]}]})
    assert (e.param, e.code) == ("messages[1].content[1].type", "unsupported_parameter"), e.message
    assert "reads text only" in e.message


def test_every_accepted_message_shape_reaches_the_template_as_before():
    parts = {"role": "user", "content": [{"type": "text", "text": "What is "}, {"type": "text", "text": "1+2?"}]}
    assert _messages(parts) == _messages(USER) == [USER]
    assert _messages({"role": "developer", "content": ""}, {"role": "user", "content": [], "name": "ann"}) == \
        [{"role": "developer", "content": ""}, {"role": "user", "content": "", "name": "ann"}]
    history = _messages({"role": "system", "content": "Be brief."}, USER,
                        _assistant(reasoning_content="Add them.", tool_calls=[CALL, CUSTOM]),
                        {"role": "tool", "tool_call_id": "call_1", "content": "3", "name": "add"},
                        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "1"}]},
                        {"role": "assistant", "content": "3", "refusal": None, "annotations": []})
    assert history[2] == {"role": "assistant", "content": "", "reasoning_content": "Add them.",
                          "thinking": "Add them.", "tool_calls": [CALL, CUSTOM]}   # (gpt-oss's template: thinking)
    assert history[3:] == [{"role": "tool", "content": "3", "tool_call_id": "call_1", "name": "add"},
                           {"role": "tool", "content": "1", "tool_call_id": "call_2"},
                           {"role": "assistant", "content": "3"}]   # (fields OpenAI may add: passed over)
    # an assistant turn with no content, and calls given back with the fields the client wrote
    assert _messages(USER, {"role": "assistant", "tool_calls": [{**CALL, "x-vendor": 1}]})[1] == \
        {"role": "assistant", "content": "", "tool_calls": [{**CALL, "x-vendor": 1}]}
    assert _messages(USER, {"role": "assistant", "content": "Hi.", "tool_calls": []})[1] == \
        {"role": "assistant", "content": "Hi."}


def test_a_tool_history_renders_through_a_chat_template():
    """Two rounds of calls and results, read from the checked messages by the family's template
    (Qwen3's, TRL's copy): each call's name and arguments and each result are in the prompt."""
    from tests.support.tool_models import family_tokenizer
    tok, _ = family_tokenizer("qwen")
    turns = [USER, _assistant(), {"role": "tool", "tool_call_id": "call_1", "content": "3"},
             {"role": "assistant", "content": "3. And 3+4?"}, {"role": "user", "content": "Yes."},
             _assistant(tool_calls=[{**CALL, "id": "call_3", "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'}}]),
             {"role": "tool", "tool_call_id": "call_3", "content": "7"}]
    req = parse_request(ChatRequest, {"messages": turns, "tools": [ADD]}, BOUNDS)
    messages, tools = chat_prompt(req.template_messages(), [ADD], "qwen")
    text = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    calls = [text.index(s) for s in ('{"name": "add", "arguments": {"a": 1, "b": 2}}', "<tool_response>\n3\n",
                                     "3. And 3+4?", '{"name": "add", "arguments": {"a": 3, "b": 4}}',
                                     "<tool_response>\n7\n")]
    assert calls == sorted(calls), text
    assert text.endswith("<|im_start|>assistant\n"), text


# -- Responses input items --------------------------------------------------------------------------

def _item(**fields):
    return {"type": "function_call", "call_id": "c", "name": "add", "arguments": "{}", **fields}


@pytest.mark.parametrize("items, param", [
    (None, "input"), ([], "input"), (5, "input"), ({"role": "user", "content": "hi"}, "input"),
    (["hi"], "input[0]"),
    ([{"content": "hi"}], "input[0].role"),
    ([{"role": "tool", "content": "hi"}], "input[0].role"),
    ([{"role": "user", "content": 5}], "input[0].content"),
    ([{"role": "user", "content": [{"type": "input_text"}]}], "input[0].content[0].text"),
    ([_item(call_id=None)], "input[0].call_id"),
    ([_item(arguments={"a": 1})], "input[0].arguments"),
    ([{"type": "custom_tool_call", "call_id": "c", "name": "sql"}], "input[0].input"),
    ([{"type": "function_call_output", "output": "3"}], "input[0].call_id"),
    ([{"type": "function_call_output", "call_id": "c", "output": 3}], "input[0].output"),
    ([{"type": "reasoning", "summary": "thought"}], "input[0].summary"),
    ([{"type": "reasoning", "content": "thought"}], "input[0].content"),
    ([{"type": "reasoning", "summary": [{"type": "summary_text"}]}], "input[0].summary[0].text"),
])
def test_a_malformed_input_item_is_refused_naming_its_path(items, param):
    e = _refused(ResponsesRequest, {"input": items})
    assert (e.param, e.status, e.code) == (param, 400, None), (e.param, e.code, e.message)


@pytest.mark.parametrize("items, param", [
    ([{"type": "image", "url": "x"}], "input[0].type"),
    ([{"role": "user", "content": [{"type": "input_image", "image_url": "data:,"}]}], "input[0].content[0].type"),
    ([{"role": "user", "content": [{"type": "output_text", "text": "Hi"}]}], "input[0].content[0].type"),
    ([{"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}], "input[0].content[0].type"),
    ([{"type": "function_call_output", "call_id": "c", "output": [{"type": "output_text", "text": "3"}]}],
     "input[0].output[0].type"),
    ([{"type": "reasoning", "summary": [{"type": "reasoning_text", "text": "t"}]}], "input[0].summary[0].type"),
])
def test_an_input_the_server_cannot_read_is_unsupported(items, param):
    e = _refused(ResponsesRequest, {"input": items})
    assert (e.param, e.code) == (param, "unsupported_parameter"), (e.param, e.message)


def test_every_accepted_input_becomes_the_chat_messages_it_means():
    def chat(items, **fields):
        req = parse_request(ResponsesRequest, {"input": items, **fields}, BOUNDS)
        return parse_request(ChatRequest, chat_body(req), BOUNDS).template_messages()
    assert chat("") == [{"role": "user", "content": ""}]
    assert chat("Hi", instructions="Be brief.") == [{"role": "system", "content": "Be brief."},
                                                    {"role": "user", "content": "Hi"}]
    history = chat([{"role": "developer", "content": "Be brief."},
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "1+2"},
                                                                    {"type": "input_text", "text": "?"}]},
                    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Add."}],
                     "content": [{"type": "reasoning_text", "text": "1+2=3"}]},
                    _item(call_id="c1", arguments='{"a": 1, "b": 2}'),
                    {"type": "custom_tool_call", "call_id": "c2", "name": "sql", "input": "SELECT 1"},
                    {"type": "function_call_output", "call_id": "c1", "output": "3"},
                    {"type": "custom_tool_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "1"}]},
                    {"role": "assistant", "content": [{"type": "output_text", "text": "3"}], "status": "completed"}])
    assert history == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "1+2?"},
        {"role": "assistant", "content": "", "reasoning_content": "Add.\n\n1+2=3", "thinking": "Add.\n\n1+2=3",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
                        {"id": "c2", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}]},
        {"role": "tool", "content": "3", "tool_call_id": "c1"}, {"role": "tool", "content": "1", "tool_call_id": "c2"},
        {"role": "assistant", "content": "3"}]
