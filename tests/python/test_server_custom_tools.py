"""OpenAI custom tools through `stencil serve` and the official openai client (issue 44): a Lark
tool, a regex tool and a free-text tool, alone and beside a function tool, named by
``tool_choice`` and listed by ``allowed_tools``, in chat completions and the Responses API,
streamed and not. Every call's raw input is checked by a checker that knows nothing of the
server (Python's ``regex``; for the Lark grammar also ``compile_lark`` alone), streamed input
deltas join to the input of the same greedy request unstreamed, a past call and its output reach
the next turn's prompt, and malformed tools are 400s naming the tool.

The generation requests go out together at the start (one module fixture), so that the server
batches them: the whole module costs about one request's time.
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
import regex

import stencil
import stencil.runtime
from server_fixture import start_server

openai = pytest.importorskip("openai")

SQL = 'start: "SELECT " COL ("," COL)* " FROM " TABLE\nCOL: /[a-z_]+/\nTABLE: /[a-z_]+/\n'
SQL_RE = r"SELECT [a-z_]+(,[a-z_]+)* FROM [a-z_]+"
DATE = r"\d{4}-\d{2}-\d{2}"
ADD = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"],
       "additionalProperties": False}
# chat's forms (the grammar nested under "grammar") and the Responses API's (flat)
CHAT_TOOLS = [
    {"type": "custom", "custom": {"name": "sql", "description": "Run a SQL query",
                                  "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": SQL}}}},
    {"type": "custom", "custom": {"name": "date", "description": "Set a date",
                                  "format": {"type": "grammar", "grammar": {"syntax": "regex", "definition": DATE}}}},
    {"type": "custom", "custom": {"name": "note", "description": "Write a note", "format": {"type": "text"}}},
    {"type": "function", "function": {"name": "add", "description": "a + b", "parameters": ADD}}]
RESPONSES_TOOLS = [
    {"type": "custom", "name": "sql", "description": "Run a SQL query",
     "format": {"type": "grammar", "syntax": "lark", "definition": SQL}},
    {"type": "custom", "name": "date", "description": "Set a date",
     "format": {"type": "grammar", "syntax": "regex", "definition": DATE}},
    {"type": "custom", "name": "note", "description": "Write a note"},
    {"type": "function", "name": "add", "description": "a + b", "parameters": ADD}]
ASK = [{"role": "user", "content": "List the names of the users table."}]


def named(name: str) -> dict:
    return {"type": "custom", "custom": {"name": name}}


#: name -> chat request (the shared fields below); one greedy pair per kind, streamed and not
CHAT = {
    "sql": dict(tool_choice=named("sql")),
    "date": dict(tool_choice=named("date")),
    "note": dict(tool_choice=named("note"), max_tokens=40),
    "mixed": dict(tools=[CHAT_TOOLS[3], CHAT_TOOLS[0]], tool_choice="required", temperature=1.0, seed=3),
    "allowed": dict(tool_choice={"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
        named("date"), {"type": "function", "function": {"name": "add"}}]}}, temperature=1.0, seed=4),
    "qwen-coder": dict(tool_choice=named("date"), extra_body={"tool_format": "qwen-coder"}),
}
STREAMED = ("sql", "date")
#: a past custom call and its output, in chat's and the Responses API's words (one token each)
PAST = {"id": "call_1", "type": "custom", "custom": {"name": "sql", "input": "SELECT name FROM users"}}
PAST_ITEMS = [{"role": "user", "content": ASK[0]["content"]},
              {"type": "custom_tool_call", "call_id": "call_1", "name": "sql", "input": "SELECT name FROM users"},
              {"type": "custom_tool_call_output", "call_id": "call_1", "output": "alice, bob"}]


@pytest.fixture(scope="module")
def server():
    url, stop = start_server()
    client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=300)
    client.model = client.models.list().data[0].id
    yield client
    stop()


@pytest.fixture(scope="module")
def compiler():
    return stencil.GrammarCompiler(stencil.TokenizerInfo.from_gguf(stencil.runtime.default_model_path()))


@pytest.fixture(scope="module")
def answers(server):
    """Every generation request of the module, sent at once (the server batches them)."""
    def chat(kw, stream=False):
        args = dict(model=server.model, messages=ASK, tools=CHAT_TOOLS, max_tokens=64, temperature=0) | kw
        if not stream:
            return server.chat.completions.create(**args)
        return [c for c in server.chat.completions.create(stream=True, **args) if c.choices]

    def responses(**kw):
        return server.responses.create(model=server.model, input="What is today's date?", tools=RESPONSES_TOOLS,
                                       max_output_tokens=64, temperature=0, **kw)

    history = ASK + [{"role": "assistant", "content": None, "tool_calls": [PAST]},
                     {"role": "tool", "tool_call_id": "call_1", "content": "alice, bob"}]
    HISTORY = {"history/chat": lambda: server.chat.completions.create(
                   model=server.model, messages=history, tools=CHAT_TOOLS, max_tokens=1),
               "history/none": lambda: server.chat.completions.create(
                   model=server.model, messages=ASK, tools=CHAT_TOOLS, max_tokens=1),
               "history/responses": lambda: server.responses.create(
                   model=server.model, input=PAST_ITEMS, tools=RESPONSES_TOOLS, max_output_tokens=1)}

    sql = dict(model=server.model, input="List the names of the users table.", tools=RESPONSES_TOOLS,
               tool_choice={"type": "custom", "name": "sql"}, max_output_tokens=64, temperature=0)

    def responses_stream():
        with server.responses.stream(**sql) as stream:
            return list(stream), stream.get_final_response()
    with ThreadPoolExecutor(16) as pool:
        jobs = {k: pool.submit(chat, kw) for k, kw in CHAT.items()}
        jobs |= {k + "/stream": pool.submit(chat, CHAT[k], True) for k in STREAMED}
        jobs |= {k: pool.submit(f) for k, f in HISTORY.items()}
        jobs["responses/allowed"] = pool.submit(responses, tool_choice={
            "type": "allowed_tools", "mode": "required", "tools": [{"type": "custom", "name": "note"},
                                                                  {"type": "custom", "name": "date"}]})
        jobs["responses/stream"] = pool.submit(responses_stream)
        jobs["responses/sql"] = pool.submit(server.responses.create, **sql)
        return {k: f.result() for k, f in jobs.items()}


def accepted(compiler, name: str, text: str) -> bool:
    if name == "date":
        return regex.fullmatch(DATE, text) is not None
    if name == "sql":
        m = stencil.Matcher(compiler.compile_lark(SQL))
        alone = m.accept_string(text) and m.is_accepting()
        return alone and regex.fullmatch(SQL_RE, text) is not None
    return True   # free text


def custom_calls(message) -> list:
    assert message.tool_calls, message
    return [(c.custom.name, c.custom.input) for c in message.tool_calls if c.type == "custom"]


@pytest.mark.parametrize("kind", ["sql", "date", "note", "qwen-coder"])
def test_a_named_custom_tool_is_called_with_an_input_its_grammar_accepts(answers, compiler, kind):
    r = answers[kind]
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    ((name, text),) = custom_calls(choice.message)
    assert name == CHAT[kind]["tool_choice"]["custom"]["name"]
    assert accepted(compiler, name, text), (name, text)


@pytest.mark.parametrize("kind", STREAMED)
def test_streamed_input_deltas_join_to_the_input(answers, kind):
    ((_, whole),) = custom_calls(answers[kind].choices[0].message)
    deltas = [tc for c in answers[kind + "/stream"] for tc in (c.choices[0].delta.tool_calls or [])]
    head = deltas[0]
    assert head.id and head.type == "custom" and head.custom["name"] == kind and head.custom["input"] == ""
    pieces = [d.custom["input"] for d in deltas[1:]]
    assert len(pieces) > 1 and "".join(pieces) == whole
    assert answers[kind + "/stream"][-1].choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize("kind,names", [("mixed", {"add", "sql"}), ("allowed", {"add", "date"})])
def test_functions_and_custom_tools_together(answers, compiler, kind, names):
    for choice in answers[kind].choices:
        assert choice.message.tool_calls, choice.message
        for c in choice.message.tool_calls:
            if c.type == "custom":
                assert c.custom.name in names and accepted(compiler, c.custom.name, c.custom.input), c
            else:
                assert c.function.name in names and set(json.loads(c.function.arguments)) == {"a", "b"}, c


def test_responses_custom_tool_calls(answers, compiler):
    allowed = [o for o in answers["responses/allowed"].output if o.type in ("custom_tool_call", "function_call")]
    assert allowed and all(o.type == "custom_tool_call" and o.name in ("note", "date") for o in allowed)
    assert all(accepted(compiler, o.name, o.input) for o in allowed)
    events, final = answers["responses/stream"]
    (call,) = [o for o in final.output if o.type == "custom_tool_call"]
    assert call.name == "sql" and call.call_id and call.id and accepted(compiler, "sql", call.input)
    deltas = [e.delta for e in events if e.type == "response.custom_tool_call_input.delta"]
    done = [e.input for e in events if e.type == "response.custom_tool_call_input.done"]
    assert len(deltas) > 1 and "".join(deltas) == call.input and done == [call.input]   # live, not at the end
    kinds = [e.type for e in events]
    assert kinds[-1] == "response.completed" and "response.output_item.added" in kinds
    added = kinds.index("response.output_item.added")
    assert kinds[added:added + 2] == ["response.output_item.added", "response.custom_tool_call_input.delta"]
    # the streamed response is the unstreamed one of the same greedy request
    assert [o.model_dump(exclude={"id", "call_id"}) for o in final.output] == \
        [o.model_dump(exclude={"id", "call_id"}) for o in answers["responses/sql"].output]


def test_a_past_custom_call_and_its_output_reach_the_prompt(answers):
    with_history = answers["history/chat"].usage.prompt_tokens
    assert with_history > answers["history/none"].usage.prompt_tokens + 10
    assert answers["history/responses"].usage.input_tokens == with_history   # the same prompt as chat's


@pytest.mark.parametrize("fmt,words", [
    ({"type": "grammar", "grammar": {"syntax": "lark", "definition": 'start: "a" (\n'}}, ["'bad'", "line 1"]),
    ({"type": "grammar", "grammar": {"syntax": "regex", "definition": "a(b"}}, ["'bad'", "regex"]),
    ({"type": "grammar", "grammar": {"syntax": "ebnf", "definition": "x"}}, ["'bad'", "syntax"]),
    ({"type": "grammar", "grammar": {"syntax": "lark"}}, ["'bad'", "definition"])])
def test_a_malformed_custom_tool_is_a_400_naming_it(server, fmt, words):
    bad = {"type": "custom", "custom": {"name": "bad", "format": fmt}}
    with pytest.raises(openai.BadRequestError) as e:
        server.chat.completions.create(model=server.model, messages=ASK, tools=CHAT_TOOLS + [bad], max_tokens=8)
    assert all(w in str(e.value) for w in words), str(e.value)
    flat = {"type": "custom", "name": "bad", "format": {"type": "grammar", **fmt.get("grammar", {})}}
    with pytest.raises(openai.BadRequestError) as e:
        server.responses.create(model=server.model, input="x", tools=[flat], max_output_tokens=8)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_tool_choice_must_name_a_tool_of_its_kind(server):
    for choice in (named("add"), {"type": "function", "function": {"name": "sql"}}, named("nope")):
        with pytest.raises(openai.BadRequestError) as e:
            server.chat.completions.create(model=server.model, messages=ASK, tools=CHAT_TOOLS, max_tokens=8,
                                           tool_choice=choice)
        assert "tool_choice" in str(e.value)


def test_history_and_tools_as_each_format_takes_them():
    from stencil.grammar.tagged.tool_presets import call_syntax
    from stencil.grammar.tagged.tool_reading import read_calls
    from stencil.server.toolcalls import FORMATS, chat_prompt
    raw = 'SELECT name FROM "users"\n'
    turn = ASK + [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "custom", "custom": {"name": "note", "input": raw}},
        {"id": "call_2", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]
    for fmt in FORMATS:
        # a template that writes no tools (SmolLM2's): the calls in the format's own words, read
        # back as they were; the custom tool announced as a function of "input"
        messages, tools = chat_prompt(turn, CHAT_TOOLS, fmt, template_tools=False)
        assert tools is None and '"name": "sql"' in messages[0]["content"] and "input" in messages[0]["content"]
        _, _, calls = read_calls(call_syntax(fmt), CHAT_TOOLS, messages[2]["content"])
        assert [(c["name"], c.get("input"), c.get("arguments")) for c in calls] == \
            [("note", raw, None), ("add", None, '{"a": 1, "b": 2}')], fmt
        if fmt == "generic":
            continue
        # a template with tools: custom tools as functions of one string "input", past custom
        # calls as function calls with {"input": ...}
        messages, tools = chat_prompt(turn, CHAT_TOOLS, fmt)
        assert [t["type"] for t in tools] == ["function"] * 4
        assert tools[0]["function"]["parameters"]["required"] == ["input"] and SQL in tools[0]["function"]["description"]
        past = messages[1]["tool_calls"][0]["function"]
        args = json.loads(past["arguments"]) if isinstance(past["arguments"], str) else past["arguments"]
        assert past["name"] == "note" and args == {"input": raw}


def test_tool_strict_off_leaves_a_custom_input_free():
    from stencil.server.constraints import strictly
    kinds = {p: [t["custom"].get("format", {}).get("type") for t in strictly(CHAT_TOOLS[:3], p)]
             for p in ("all", "requested", "off")}
    assert kinds == {"all": ["grammar", "grammar", "text"], "requested": ["grammar", "grammar", "text"],
                     "off": ["text"] * 3}
