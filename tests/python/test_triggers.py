"""Grammars that start free and become constrained after a trigger, with the DeepSeek tokenizer:
reasoning then JSON (the reasoning is unconstrained, the answer follows the schema), tool calls
(the arguments follow the chosen tool's schema), special-token markers, and a GBNF grammar
composed inside a reasoning wrapper."""
from __future__ import annotations

import json

import numpy as np
import pytest

import stencil
from grammar_oracle import encode_segments, feed
from stencil.grammar.tagged.triggers import reasoning_then, tool_calls
from stencil.grammar.ebnf.gbnf import build_gbnf
from stencil.grammar.ebnf.lark import build_lark

SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer", "minimum": 0},
                                           "unit": {"enum": ["m", "km"]}},
          "required": ["answer", "unit"], "additionalProperties": False}

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "minLength": 1},
                                         "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city"], "additionalProperties": False}}},
    {"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                                   "required": ["a", "b"], "additionalProperties": False}},
    {"name": "lookup", "parameters": {"$defs": {"id": {"type": "string", "pattern": "^[A-Z]{3}[0-9]{3}$"}},
                                      "type": "object", "properties": {"ids": {"type": "array", "items": {"$ref": "#/$defs/id"},
                                                                               "minItems": 1}},
                                      "required": ["ids"], "additionalProperties": False}},
]


def run(env, g, *segments) -> bool:
    entry, _, bitmask = env
    ids = encode_segments(entry, segments)
    n, ok = feed(stencil.Matcher(g), ids, bitmask, entry.info.eos_token_ids[0])
    return n == len(ids) and ok


def mask_of(env, matcher) -> np.ndarray:
    entry, _, bitmask = env
    matcher.fill_next_token_bitmask(bitmask, 0)
    return np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[:entry.info.vocab_size].astype(bool)


def ordinary_tokens(tok) -> np.ndarray:
    ordinary = np.array([len(tok.token_bytes(i)) > 0 for i in range(tok.vocab_size)])
    ordinary[tok.special_token_ids] = False
    return ordinary


def test_reasoning_then_json(env):
    _, compiler, _ = env
    g = compiler.compile_reasoning_json(SCHEMA)
    thought = ("<think>\nThe user wants a distance. {\"answer\": \"not yet\"} could be wrong; "
               "what about </thin k> or <think> again? 5 km... \U0001F914\n</think>\n\n")
    assert run(env, g, thought + '{"answer": 5, "unit": "km"}')
    assert run(env, g, '<think></think>{"answer":0,"unit":"m"}')
    assert not run(env, g, thought + '{"answer": -5, "unit": "km"}')
    assert not run(env, g, thought + '{"answer": 5, "unit": "miles"}')
    assert not run(env, g, thought + 'The answer is 5 km.')
    assert not run(env, g, '{"answer": 5, "unit": "km"}')             # the reasoning is required
    assert not run(env, g, thought)                                     # and so is the answer
    # the reasoning ends at the first </think>: what follows must be the JSON answer
    assert not run(env, g, '<think>a</think> more thoughts </think>{"answer": 1, "unit": "m"}')
    # optional reasoning, and a prompt that already opened the block
    g2 = compiler.compile_reasoning_json(SCHEMA, optional=True)
    assert run(env, g2, '{"answer": 1, "unit": "m"}') and run(env, g2, thought + '{"answer": 1, "unit": "m"}')
    g3 = compiler.compile_reasoning_json(SCHEMA, begin=None)
    assert run(env, g3, 'so 3 m.</think>{"answer": 3, "unit": "m"}')


def test_reasoning_is_unconstrained_and_answer_is_not(env):
    entry, compiler, _ = env
    tok = entry.info
    g = compiler.compile_reasoning_json(SCHEMA)
    m = stencil.Matcher(g)
    assert m.accept_tokens(encode_segments(entry, ["<think>Let me see"])) > 0
    ordinary = ordinary_tokens(tok)
    inside = mask_of(env, m)
    # every ordinary token is allowed, except those that cannot follow whole characters
    # (they start with a UTF-8 continuation byte or a byte that never occurs in UTF-8)
    for t in np.flatnonzero(ordinary & ~inside):
        assert tok.token_bytes(int(t))[0] in range(0x80, 0xC2) or tok.token_bytes(int(t))[0] >= 0xF5, t
    share_inside = inside[ordinary].mean()
    assert m.accept_tokens(encode_segments(entry, [" ok</think>\n"])) > 0
    after = mask_of(env, m)
    share_after = after[ordinary].mean()
    assert share_after < 0.01
    for t in np.flatnonzero(after)[:200]:
        text = tok.token_bytes(int(t)).decode("utf-8", "replace")
        assert text.strip() == "" or text.lstrip()[0] == "{", repr(text)
    print(f"allowed ordinary tokens: {share_inside:.2%} while reasoning, {share_after:.3%} after </think>")


def test_reasoning_with_special_token_markers(env):
    entry, compiler, bitmask = env
    tok = entry.info
    begin, end = 128000, 128001
    for g in (compiler.compile_reasoning_json(SCHEMA, begin=begin, end=end),
              compiler.compile_reasoning_json(SCHEMA, begin=tok.special_token_names[begin],
                                              end=tok.special_token_names[end])):
        assert run(env, g, begin, "free text, even </think>", end, '{"answer": 2, "unit": "m"}')
        assert not run(env, g, begin, "free text", end, '{"answer": "2", "unit": "m"}')
        m = stencil.Matcher(g)
        m.accept_token(begin)
        m.accept_tokens(encode_segments(entry, ["thinking"]))
        assert not m.accept_token(128005)   # another special token is not text


def call(name, args) -> str:
    return json.dumps({"name": name, "arguments": args})


def test_tool_calls_enforce_the_chosen_tools_schema(env):
    _, compiler, _ = env
    g = compiler.compile_tool_calls(TOOLS, trigger="<tool_call>", end="</tool_call>")
    ok = [
        "Let me check. <tool_call>\n" + call("get_weather", {"city": "Paris", "unit": "celsius"}) + "\n</tool_call>",
        "<tool_call>" + call("add", {"a": 1.5, "b": -2}) + "</tool_call>",
        "<tool_call>" + call("lookup", {"ids": ["ABC123", "XYZ999"]}) + "</tool_call>",
        "I can answer without tools: 42.",
        "",
    ]
    for s in ok:
        assert run(env, g, s), s
    bad = [
        "<tool_call>" + call("get_weather", {"a": 1, "b": 2}) + "</tool_call>",          # add's arguments
        "<tool_call>" + call("add", {"city": "Paris"}) + "</tool_call>",                 # get_weather's
        "<tool_call>" + call("get_weather", {"city": ""}) + "</tool_call>",              # minLength
        "<tool_call>" + call("lookup", {"ids": ["abc123"]}) + "</tool_call>",            # pattern via $ref
        "<tool_call>" + call("search", {"q": "x"}) + "</tool_call>",                     # unknown tool
        "<tool_call>" + call("add", {"a": 1, "b": 2}),                                   # no end marker
        "Sure <tool_call> I will call add",                                              # not JSON
        "<tool_call>" + call("add", {"a": 1, "b": 2}) + "</tool_call>"
        + "<tool_call>" + call("add", {"a": 1, "b": 2}) + "</tool_call>",               # max_calls=1
    ]
    for s in bad:
        assert not run(env, g, s), s


def test_tool_call_options(env):
    _, compiler, _ = env
    two = "<tool_call>" + call("add", {"a": 1, "b": 2}) + "</tool_call>\n<tool_call>" \
        + call("get_weather", {"city": "Oslo"}) + "</tool_call>"
    g = compiler.compile_tool_calls(TOOLS, max_calls=None, require_call=True, text_before=False)
    assert run(env, g, two)
    assert not run(env, g, "no call")
    assert not run(env, g, "text first " + two)
    g = compiler.compile_tool_calls(TOOLS, reasoning=("<think>", "</think>"))
    assert run(env, g, "<think>need weather</think>\nCalling. <tool_call>" + call("get_weather", {"city": "Rome"})
               + "</tool_call>")
    with pytest.raises(stencil.GrammarError, match="distinct"):
        compiler.compile_tool_calls([TOOLS[1], TOOLS[1]])
    with pytest.raises(stencil.GrammarError, match="tool 'bad'"):
        compiler.compile_tool_calls([{"name": "bad", "parameters": {"$ref": "#/missing"}}])


def test_tool_calls_with_special_token_trigger(env):
    _, compiler, _ = env
    begin, end = 128010, 128011
    g = compiler.compile_tool_calls(TOOLS, trigger=begin, end=end)
    assert run(env, g, "I'll add. <tool_call> is just text here", begin, call("add", {"a": 1, "b": 2}), end)
    assert not run(env, g, "x", begin, call("add", {"a": "1", "b": 2}), end)
    assert run(env, g, "plain answer, <tool_call> included")


def test_gbnf_and_lark_inside_wrappers(env):
    """Composition in the IR: a GBNF grammar as the answer after reasoning, a Lark grammar as
    another, both in one builder with a JSON Schema tool call."""
    _, compiler, _ = env
    b = stencil.GrammarBuilder()
    arith = build_gbnf(b, 'root ::= term ("+" term)*\nterm ::= [0-9]+ | "(" root ")"', prefix="g/")
    yes_no = build_lark(b, 'start: ANSWER "."\nANSWER: "yes" | "no"', prefix="l/")
    answer = b.rule("answer")
    b.add_alternative(answer, [arith])
    b.add_alternative(answer, [yes_no])
    g = compiler.compile_grammar(b.build(reasoning_then(b, answer)))
    assert run(env, g, "<think>sum</think>(1+2)+3")
    assert run(env, g, "<think>decide</think>\nyes.")
    assert not run(env, g, "<think>x</think>1+")
    assert not run(env, g, "<think>x</think>maybe.")
    b = stencil.GrammarBuilder()
    g = compiler.compile_grammar(b.build(tool_calls(b, TOOLS[1:2], trigger="CALL:", end=None)))
    assert run(env, g, 'CALL:{"name": "add", "arguments": {"a": 1, "b": 2}}')
