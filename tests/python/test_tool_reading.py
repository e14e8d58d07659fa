"""Reading tool calls back (``tool_presets.FAMILIES[...].read``, ``tool_reading.CallReader``):
what each family's chat template writes is read back to the calls it was rendered from, in one
piece and as it streams (every split of the text gives the same calls, and argument pieces that
join to the final arguments); and every output the family's grammar lets a random walk over a
real tokenizer write is read back whole: each call ended, its arguments valid for its tool.
"""
from __future__ import annotations

import json
import random

import jsonschema
import pytest

import stencil
from stencil.testing import random_walk
from stencil.grammar.tagged.tool_presets import FAMILIES, FORMATS, GENERIC, call_syntax, family_of_template
from stencil.grammar.tagged.tool_reading import CallReader, read_calls, write_calls
from tokenizers_zoo import get
from tool_templates import CALL_1, CALL_2, FAMILIES as TEMPLATES, TOOLS, mistral_ids, render

# a string that holds what ends strings, objects and calls in other places
CALL_3 = [("get_weather", {"city": 'He said "}" \\", ]{</tool_call>', "days": 2})]
CASES = [(fmt, calls, reasoning) for fmt, (_, _, _, several, _) in TEMPLATES.items()
         for calls in ([CALL_1, CALL_2, CALL_3] if several else [CALL_1, CALL_3]) for reasoning in (False, True)]


def rendered(fmt: str, calls, reasoning: bool) -> str:
    text = render(fmt, calls, reasoning)
    if reasoning and fmt != "harmony":   # the server reads a <think> block before the calls
        text = text[text.index("</think>") + len("</think>"):]
    return text


def streamed(syntax, text: str, cuts: list[int]) -> tuple[list[tuple], CallReader]:
    r = CallReader(syntax, TOOLS)
    events = []
    for cut in cuts:
        events += r.feed(text[:cut])
    return events + r.feed(text, final=True), r


def joined(events) -> dict:
    """Content, reasoning, and each call's (name, id, arguments, ended) from a list of events."""
    out = {"content": "", "reasoning": "", "calls": []}
    for e in events:
        if e[0] in ("content", "reasoning"):
            out[e[0]] += e[1]
        elif e[0] == "call":
            out["calls"].append([e[1], e[2], "", False])
        elif e[0] == "args":
            out["calls"][-1][2] += e[1]
        else:
            out["calls"][-1][3] = True
    return out


@pytest.mark.parametrize("fmt,calls,reasoning", CASES)
def test_template_text_is_read_back_to_its_calls(fmt, calls, reasoning):
    text = rendered(fmt, calls, reasoning)
    content, thought, read = read_calls(call_syntax(fmt), TOOLS, text)
    assert [(c["name"], json.loads(c["arguments"])) for c in read] == calls, text
    assert content.strip() == ""
    assert bool(thought) == (reasoning and fmt == "harmony")
    if fmt == "kimi":   # the id the template wrote: functions.NAME:INDEX
        assert [c["id"] for c in read] == [f"functions.{n}:{i}" for i, (n, _) in enumerate(calls)]
    # streamed: any cut points give the same calls, announced once, arguments pieces joining up
    rng = random.Random(len(text))
    whole = joined(streamed(call_syntax(fmt), text, [])[0])
    for cuts in [list(range(len(text)))] + [sorted(rng.sample(range(len(text)), 5)) for _ in range(20)]:
        events, _ = streamed(call_syntax(fmt), text, cuts)
        got = joined(events)
        assert [c[0::2] for c in got["calls"]] == [c[0::2] for c in whole["calls"]], cuts
        assert got["content"] == whole["content"] and got["reasoning"] == whole["reasoning"]
        assert all(c[3] for c in got["calls"])


def test_content_before_calls_and_plain_answers():
    text = 'Let me check.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    content, _, calls = read_calls(call_syntax("qwen"), TOOLS, text)
    assert content == "Let me check.\n" and [(c["name"], c["arguments"]) for c in calls] == [("add", '{"a": 1, "b": 2}')]
    for fmt in FORMATS:
        if fmt != "harmony":
            assert read_calls(call_syntax(fmt), TOOLS, "The weather is fine.") == ("The weather is fine.", "", [])
    # a text that only starts like a call is given out once it cannot be one
    r = CallReader(call_syntax("qwen"), TOOLS)
    assert r.feed("a <tool") == [("content", "a ")]
    assert r.feed("a <tool_x>", final=True) == [("content", "<tool_x>")]
    # a call cut by max_tokens is not a call
    cut = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b":'
    assert read_calls(call_syntax("qwen"), TOOLS, cut)[2] == []


def test_generic_format_with_white_space():
    text = '<tool_call> {\n"name" : "add",\t"arguments": {"a": 1, "b": 2} }\n</tool_call>\n<tool_call>{"name":"add","arguments":{"a":3,"b":4}}</tool_call>'
    content, _, calls = read_calls(GENERIC, TOOLS, text)
    assert [json.loads(c["arguments"]) for c in calls] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert content.strip() == ""


def test_mistral_calls_rendered_by_mistral_common():
    pytest.importorskip("PIL", reason="mistral-common needs pillow (make install)")
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
    from tokenizers_zoo import data_file
    tok = MistralTokenizer.from_file(data_file("mistral_common", "data", "tekken_240911.json"))
    info = get("tekken").info
    for calls in (CALL_1, CALL_2):
        text = info.decode_bytes(mistral_ids(tok, calls)).decode()
        _, _, read = read_calls(call_syntax("mistral"), TOOLS, text)
        assert [(c["name"], json.loads(c["arguments"])) for c in read] == calls, text
        assert all(len(c["id"]) == 9 and c["id"].isalnum() for c in read)


def test_every_family_is_read_and_told_by_its_template():
    for name, family in FAMILIES.items():
        assert family.read.heads and family.read.closes, name
        template = " ".join(family.marks) + " {% for tools in messages %}{% endfor %}"
        assert family_of_template(template) == name
    assert family_of_template("{{ messages }}") is None


# --- random walks: whatever the grammar lets a model write is read whole ------------------------------

SCHEMAS = [
    {"type": "object", "properties": {"q": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}},
     "required": ["q"], "additionalProperties": False},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["x", "y}", '<z>"\\']}, "maxItems": 3},
                                      "on": {"type": "boolean"}}, "required": ["on"], "additionalProperties": False},
    {"type": "object", "properties": {"to": {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-f]{2,4}$"}},
                                             "required": ["id"], "additionalProperties": False},
                                      "note": {"type": ["string", "null"], "maxLength": 8}},
     "required": ["to"], "additionalProperties": False},
    {"type": "object", "properties": {}, "additionalProperties": False},
]
JSON = {"whitespace": "compact", "number_spelling": "plain"}   # as the server writes (1e400 is no float)
WALK_TOOLS = [{"type": "function", "function": {"name": n, "parameters": s}}
              for n, s in zip(["search", "tag_items", "send.to", "ping"], SCHEMAS)]


def walk(matcher, info, rng, budget: int) -> str:
    ids = random_walk(matcher, info, rng, budget)
    assert matcher.is_accepting()
    return info.decode_bytes(ids).decode("utf-8", errors="replace")


@pytest.mark.parametrize("fmt", ["generic"] + list(FORMATS))
def test_random_walks_are_read_back_whole(fmt):
    entry = get("qwen3_6" if fmt.startswith("qwen") else "deepseek")
    compiler = stencil.GrammarCompiler(entry.info)
    rng = random.Random(fmt)
    seen = 0
    for choice in ("auto", "required"):
        if fmt == "generic":
            g = compiler.compile_tool_calls(WALK_TOOLS, require_call=choice == "required", text_before=choice == "auto",
                                            max_calls=None, json_options=JSON)
        else:
            g = compiler.compile_tool_calls(WALK_TOOLS, format=fmt, tool_choice=choice, json_options=JSON)
        for _ in range(12):
            text = walk(stencil.Matcher(g), entry.info, rng, 120)
            r = CallReader(call_syntax(fmt), WALK_TOOLS)
            events = []
            for cut in sorted(rng.sample(range(len(text) + 1), min(6, len(text) + 1))):
                events += r.feed(text[:cut])
            events += r.feed(text, final=True)
            assert r.state in ("text", "message", "between") or (r.state == "spanned" and fmt == "harmony"), (r.state, text)
            assert all(c["ended"] for c in r.calls), text
            if choice == "required":
                assert r.calls, text
            schemas = {t["function"]["name"]: t["function"]["parameters"] for t in WALK_TOOLS}
            for c in r.calls:
                jsonschema.validate(json.loads(c["arguments"]), schemas[c["name"]])
            assert joined(events)["calls"] == [[c["name"], c["id"], c["arguments"], True] for c in r.calls]
            seen += len(r.calls)
    assert seen >= 12   # the walks wrote calls, not only text


@pytest.mark.parametrize("fmt", ["generic"] + list(FORMATS))
def test_written_calls_are_read_back(fmt):
    # write_calls (prompts whose template writes no tools) and the reading agree, for every family
    for calls in (CALL_1, CALL_2, CALL_3):
        text = write_calls(call_syntax(fmt), calls)
        _, _, read = read_calls(call_syntax(fmt), TOOLS, text)
        assert [(c["name"], json.loads(c["arguments"])) for c in read] == calls, text
