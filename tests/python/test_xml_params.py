"""Qwen3-Coder's XML parameters (stencil.grammar.tagged.xml_params) where a value may be a string
or something else (``anyOf`` / ``oneOf`` / ``enum`` with a string branch): the grammar writes JSON
there, Qwen3.6's chat template writes every string raw, so reading takes the JSON where the text is
JSON of a type the schema allows, else the raw string (as Qwen's own parser tries the schema first
and falls back to the string). What the grammar lets the model write reads back to the same,
valid value, and a history the template rendered reads back to its calls (but for a string whose
raw text is JSON of another allowed type, which the rendering cannot tell apart).
"""
from __future__ import annotations

import json
import random
import re

import pytest

import stencil
from stencil.grammar.tagged.tool_presets import call_syntax
from stencil.grammar.tagged.tool_reading import read_calls, write_calls
from stencil.grammar.tagged.xml_params import read_xml_value, write_xml_parameters

SCHEMA = {"type": "object", "properties": {
    "notes": {"anyOf": [{"type": "string", "maxLength": 12}, {"type": "null"}]},
    "count": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    "label": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "flag": {"anyOf": [{"enum": ["on", "off"]}, {"type": "boolean"}]},
    "size": {"anyOf": [{"type": "string", "pattern": "^x"}, {"type": "number", "minimum": 3},
                       {"type": "array", "items": {"type": "integer"}}]},
    "where": {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/point"}]},
    "code": {"anyOf": [{"type": "string"}, {"enum": [1, 2, None]}]}},
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
    "required": ["notes", "count", "label", "flag", "size", "where", "code"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "note", "parameters": SCHEMA}}]

#: Qwen3.6's parameter lines (TRL's qwen3_6.jinja): strings raw, everything else tojson
QWEN36_PARAMETERS = """{%- for args_name, args_value in arguments|items %}
{{- '<parameter=' + args_name + '>\\n' }}
{%- set args_value = args_value | string if args_value is string else args_value | tojson | safe %}
{{- args_value }}
{{- '\\n</parameter>\\n' }}
{%- endfor %}"""


def rendered(args: dict) -> str:
    jinja2 = pytest.importorskip("jinja2")
    env = jinja2.Environment()
    env.filters["tojson"] = lambda v: json.dumps(v, ensure_ascii=False)
    return env.from_string(QWEN36_PARAMETERS).render(arguments=args)


@pytest.mark.parametrize("key,text,value", [
    ("notes", "\n.$—\n", ".$—"),          # a raw string under anyOf (read_xml_value raised JSONDecodeError)
    ("notes", "\nParis, France\n", "Paris, France"),
    ("notes", "\nnull\n", None),
    ("notes", '\n"null"\n', "null"),        # a JSON string: what the grammar writes for a string
    ("notes", "\nnull pointer\n", "null pointer"),
    ("count", "\n5\n", 5),
    ("count", "\n5 apples\n", "5 apples"),
    ("label", "\nNaN\n", "NaN"),            # not JSON (Python's json would read a float)
    ("label", "\n5\n", "5"),                # integers are not allowed: the raw string
    ("flag", "\nTrue\n", True),
    ("flag", "\non\n", "on"),
    ("size", "\n[1, 2]\n", [1, 2]),
    ("size", "\n{x\n", "{x"),
    ("where", '\n{"x": 1}\n', {"x": 1}),
    ("code", "\n3\n", "3"),
])
def test_a_value_that_may_be_a_string_reads_json_of_an_allowed_type_else_the_raw_string(key, text, value):
    got = read_xml_value(SCHEMA, key, text)
    assert got == value and type(got) is type(value)


def test_a_plain_string_and_a_non_string_read_as_before():
    schema = {"type": "object", "properties": {"s": {"type": "string"}, "n": {"type": "integer"},
                                               "b": {"type": "boolean"}}}
    assert read_xml_value(schema, "s", '\n"5"\n') == '"5"'
    assert read_xml_value(schema, "n", "\n 7 \n") == 7
    assert read_xml_value(schema, "b", "\nFalse\n") is False
    with pytest.raises(ValueError):
        read_xml_value(schema, "n", "\nseven\n")


@pytest.fixture(scope="module")
def grammar():
    toks = [bytes([c]) for c in range(32, 127)] + [b"\n", b"</parameter>", b"<parameter=", b"null", b"true",
                                                     b"5", b'"', b"<eos>"]
    info = stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1])
    g = stencil.GrammarCompiler(info).compile_structural_tag(
        {"type": "json_schema", "style": "qwen_xml", "json_schema": SCHEMA})
    return info, toks, g


def accepts(g, text: str) -> bool:
    m = stencil.Matcher(g)
    return m.accept_string(text) and m.is_accepting()


ONE = {"notes": '"x"', "count": '"1"', "label": "null", "flag": '"on"', "size": '"x"', "where": '"x"', "code": "1"}


#: SCHEMA with "where" an object only (the chat template writes it as JSON too)
OBJECTS = {**SCHEMA, "properties": {**SCHEMA["properties"], "where": {"$ref": "#/$defs/point"}}}
OBJECT_TOOLS = [{"type": "function", "function": {"name": "note", "parameters": OBJECTS}}]


def params(**values) -> str:
    return "".join(f"<parameter={k}>{v}</parameter>" for k, v in {**ONE, **values}.items())


@pytest.mark.parametrize("key,text,ok", [
    ("notes", '\n"Paris"\n', True), ("notes", "null", True), ("notes", '"null"', True),
    ("notes", '"much too long a note"', False), ("count", "5", True), ("count", '"5 apples"', True),
    ("flag", '"on"', True), ("flag", "true", True), ("flag", '"maybe"', False),
    ("size", "2", False), ("size", "3.5", True), ("size", '"xl"', True), ("size", "[1,2]", True),
    ("where", '{"x":1}', True), ("code", "2", True), ("code", "3", False), ("code", '"3"', True),
    # the template's raw strings are not what the grammar writes (a budget-aware mask over a raw
    # alternative beside JSON costs 2-10x the shortest-completion search; see read_xml_value)
    ("notes", "Paris", False), ("count", "5 apples", False),
    # a JSON value's strings may hold </parameter> (the reader ends the value outside them), but
    # not one that may be a string (the template writes it raw): that one holds it only escaped
    ("size", '[1,2]', True), ("code", '"</parameter>"', False), ("code", '"<\\/parameter>"', True),
    ("where", '{"x":1,"a":"x</parameter>"}', False),
])
def test_the_grammar_writes_json_where_a_value_may_be_a_string_or_else(grammar, key, text, ok):
    _, _, g = grammar
    assert accepts(g, params(**{key: text})) == ok


def ambiguous(key: str, value) -> bool:
    """A string whose raw text (as the template renders it) is JSON of another allowed type."""
    return isinstance(value, str) and read_xml_value(SCHEMA, key, f"\n{value}\n") != value


def test_what_the_grammar_writes_reads_back_valid_and_through_the_template(grammar):
    """Random walks over the mask: every output's values validate, and the template's rendering
    of them (strings raw, the rest tojson) reads back to the same values."""
    jsonschema = pytest.importorskip("jsonschema")
    info, toks, g = grammar
    rng = random.Random(1)
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    complete = 0
    for _ in range(120):
        m, out = stencil.Matcher(g), ""
        for _ in range(160):
            m.fill_next_token_bitmask(bm, 0)
            allowed = [t for t in range(info.vocab_size) if bm[0][t >> 5] >> (t & 31) & 1]
            marks = [t for t in allowed if len(toks[t]) > 1 or toks[t] in (b'"', b"]", b"}")]
            t = rng.choice(marks if marks and rng.random() < 0.5 else allowed)
            if t == info.vocab_size - 1:
                break
            assert m.accept_token(t)
            out += toks[t].decode()
        # (complete outputs whose JSON numbers are plain: the JSON front-end's exponents may overflow a
        # float)
        if not m.is_accepting() or re.search(r"[0-9][eE]", out):
            continue
        complete += 1
        _, _, calls = read_calls(call_syntax("qwen-coder"), TOOLS, f"<tool_call>\n<function=note>\n{out}</function>\n</tool_call>")
        assert len(calls) == 1, out
        (call,) = calls
        values = json.loads(call["arguments"])
        assert set(values) == set(ONE), out
        jsonschema.validate(values, SCHEMA)
        _, _, calls = read_calls(call_syntax("qwen-coder"), TOOLS,
                                 f"<tool_call>\n<function=note>\n{rendered(values)}</function>\n</tool_call>")
        (back,) = [json.loads(c["arguments"]) for c in calls]
        assert {k: v for k, v in back.items() if not ambiguous(k, values[k])} == \
            {k: v for k, v in values.items() if not ambiguous(k, v)}, out
    assert complete >= 15, complete


def test_the_templates_rendering_is_read_back():
    args = {"notes": ".$—", "count": 3, "label": None, "flag": "off", "size": [4], "where": {"x": 2}, "code": None}
    _, _, calls = read_calls(call_syntax("qwen-coder"), TOOLS,
                             f"<tool_call>\n<function=note>\n{rendered(args)}</function>\n</tool_call>")
    assert [json.loads(c["arguments"]) for c in calls] == [args]
    # what a rendered history cannot tell apart: the string "5" is written as the integer 5
    assert read_xml_value(SCHEMA, "count", "\n5\n") == 5 and ambiguous("count", "5")


def test_calls_written_into_a_prompt_are_written_as_the_grammar_writes_them():
    args = {"notes": "null", "count": "5", "label": "x", "flag": "on", "size": "xl", "where": "{", "code": "1"}
    text = write_xml_parameters(args, SCHEMA)
    assert '<parameter=notes>\n"null"\n' in text and '<parameter=count>\n"5"\n' in text
    assert '<parameter=label>\n"x"\n' in text and '<parameter=flag>\n"on"\n' in text
    plain = {"type": "object", "properties": {"s": {"type": "string"}, "e": {"enum": ["a", "b"]}}}
    assert write_xml_parameters({"s": "5", "e": "a", "other": "x"}, plain) == \
        "<parameter=s>\n5\n</parameter>\n<parameter=e>\na\n</parameter>\n<parameter=other>\nx\n</parameter>\n"
    written = write_calls(call_syntax("qwen-coder"), [("note", args)], TOOLS)
    _, _, calls = read_calls(call_syntax("qwen-coder"), TOOLS, written)
    assert [json.loads(c["arguments"]) for c in calls] == [args]


@pytest.mark.parametrize("value", ['{"x":1,"a":"x</parameter>y"}', '{"x":1,"a":"\\"</parameter>\\\\"}',
                                   '{"x":1,"</parameter>":[]}'])
def test_a_json_value_holding_the_end_marker_reads_back_whole(value):
    """Qwen3-Coder's parser ends a value at the first </parameter>; the grammar writes JSON values
    (whose strings may hold it), so the reader ends one at the first outside its strings, also in
    a stream cut anywhere; a rendered history's raw string with an unpaired quote still reads."""
    from stencil.grammar.tagged.tool_reading import CallReader
    info = stencil.TokenizerInfo.from_vocab([bytes([c]) for c in range(32, 127)] + [b"\n", b"<eos>"], eos_token_ids=[96])
    g = stencil.GrammarCompiler(info).compile_structural_tag(
        {"type": "json_schema", "style": "qwen_xml", "json_schema": OBJECTS})
    text = params(where=value)
    assert accepts(g, text)
    whole = f"<tool_call>\n<function=note>\n{text}</function>\n</tool_call>"
    _, _, (call,) = read_calls(call_syntax("qwen-coder"), OBJECT_TOOLS, whole)
    assert json.loads(call["arguments"])["where"] == json.loads(value)
    for cut in range(0, len(whole), 7):
        reader = CallReader(call_syntax("qwen-coder"), OBJECT_TOOLS)
        pieces = reader.feed(whole[:cut]) + reader.feed(whole, final=True)   # (the text so far each time)
        assert "".join(p[1] for p in pieces if p[0] == "args") == call["arguments"], cut
    history = '<tool_call>\n<function=note>\n<parameter=notes>\nsay "hi\n</parameter>\n</function>\n</tool_call>'
    _, _, (call,) = read_calls(call_syntax("qwen-coder"), TOOLS, history)
    assert json.loads(call["arguments"]) == {"notes": 'say "hi'}
