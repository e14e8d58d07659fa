"""OpenAI custom tools in every tool-call format (``stencil.grammar.tagged.custom_tools``): a
call's raw input written in the family's slot (a JSON string ``{"input": "..."}``, Qwen3-Coder's
raw ``<parameter=input>``) is read back to exactly that input, whole and as it streams; every
output a random walk writes under the compiled tool set reads back to calls whose inputs an
independent checker accepts (Python's ``regex`` for a regex; for Lark, the same grammar
compiled alone by ``compile_lark``, and Python's ``regex`` where the Lark language is regular);
and malformed tools are errors naming the tool and the place in its definition.
"""
from __future__ import annotations

import json
import random

import pytest
import regex

import stencil
import stencil.runtime
from stencil.grammar.json.string_view import JsonStringBuilder
from stencil.grammar.tagged.custom_tools import build_json_string, custom_tool
from stencil.grammar.tagged.tool_presets import FORMATS, call_syntax
from stencil.grammar.tagged.tool_reading import CallReader, read_calls, write_calls
from stencil.testing import random_walk

ALL = ["generic"] + list(FORMATS)

#: lines of words: a regular language as a Lark grammar (its Python regex LINES_RE checks it)
LINES = 'start: line ("\\n" line)*\nline: WORD (" " WORD)*\nWORD: /[^ \\n]+/\n'
LINES_RE = r"[^ \n]+( [^ \n]+)*(\n[^ \n]+( [^ \n]+)*)*"
#: a context-free one, with %ignore and terminals that hold quotes and backslashes
EXPR = 'start: expr\nexpr: term (("+" | "-") term)*\nterm: NUM | NAME | "(" expr ")"\n' \
       'NAME: /[a-z"\\\\]+/\nNUM: /[0-9]+/\n%ignore " "\n'
PATTERN = r'[a-zé漢"\\\n {}</>=:,._-]+'


def custom(name: str, syntax: str = "text", definition: str = "") -> dict:
    fmt = {"type": "text"} if syntax == "text" else {"type": "grammar", "syntax": syntax, "definition": definition}
    return {"type": "custom", "name": name, "format": fmt}


ADD = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"],
       "additionalProperties": False}
TOOLS = [custom("lines", "lark", LINES), custom("expr", "lark", EXPR), custom("pattern", "regex", PATTERN),
         custom("note"), {"type": "function", "function": {"name": "add", "parameters": ADD}}]
# inputs with what ends strings, objects, calls and Qwen3-Coder's raw parameters (the Lark one,
# written there as a JSON string, may hold </parameter>; a raw one may not)
CALLS = [("lines", 'He said "}" \\ </tool_call> </parameter>\né 漢 😀 \\"'),
         ("pattern", 'a "b" \\ {x}\n</tool_call> é漢'),
         ("note", 'free "text" \\ with\nnewlines, </tool_call>, \\u00e9 and ünïcødé 😀\n'),
         ("note", ""), ("expr", '(a"\\ + 12) - b'), ("add", {"a": 1, "b": 2})]


@pytest.fixture(scope="module")
def smollm2():
    info = stencil.TokenizerInfo.from_gguf(stencil.runtime.default_model_path())
    return info, stencil.GrammarCompiler(info)


def accepts(compiler, tool: dict, text: str) -> bool:
    """Whether ``text`` is in the custom tool's language, by a checker that knows nothing of
    tool calls: Python's ``regex`` for a regex; ``compile_lark`` alone for Lark (and Python's
    ``regex`` for the regular LINES)."""
    spec = custom_tool(tool)
    if spec.syntax == "regex":
        return regex.fullmatch(spec.definition, text) is not None
    if spec.syntax == "lark":
        m = stencil.Matcher(compiler.compile_lark(spec.definition))
        alone = m.accept_string(text) and m.is_accepting()
        if spec.definition == LINES:
            assert alone == (regex.fullmatch(LINES_RE, text) is not None), text
        return alone
    return True


def streamed(fmt: str, tools, text: str, cuts) -> tuple[list, CallReader]:
    r = CallReader(call_syntax(fmt), tools)
    events = []
    for cut in cuts:
        events += r.feed(text[:cut])
    return events + r.feed(text, final=True), r


def inputs_of(events, reader: CallReader) -> list[str]:
    """Each custom call's input as its ("input", piece) events join."""
    out: list = []
    for e in events:
        if e[0] == "call":
            out.append("")
        elif e[0] == "input":
            out[-1] += e[1]
    return [joined for joined, c in zip(out, reader.calls) if c["type"] == "custom"]


@pytest.mark.parametrize("fmt", ALL)
def test_written_custom_calls_read_back_exactly(smollm2, fmt):
    info, compiler = smollm2
    for name, value in CALLS:
        if not isinstance(value, str):
            continue
        assert accepts(compiler, next(t for t in TOOLS if t.get("name") == name), value), (name, value)
    text = write_calls(call_syntax(fmt), CALLS, TOOLS)
    _, _, read = read_calls(call_syntax(fmt), TOOLS, text)
    assert [(c["name"], c["input"] if c["type"] == "custom" else json.loads(c["arguments"])) for c in read] == CALLS
    # the grammar of the format writes exactly such text (one call at a time: some formats
    # write several calls in one section only)
    for call in CALLS:
        one = write_calls(call_syntax(fmt), [call], TOOLS)
        if fmt == "generic":
            g = compiler.compile_tool_calls(TOOLS, require_call=True, text_before=False, max_calls=None)
        else:
            g = compiler.compile_tool_calls(TOOLS, format=fmt, tool_choice="required")
        m = stencil.Matcher(g)
        assert m.accept_string(one) and m.is_accepting(), (fmt, one)
    # as it streams, cut anywhere: the same calls, input pieces that join to each input
    rng = random.Random(fmt)
    for _ in range(6):
        events, r = streamed(fmt, TOOLS, text, sorted(rng.sample(range(len(text) + 1), 12)))
        assert inputs_of(events, r) == [c["input"] for c in r.calls if c["type"] == "custom"] == \
            [v for n, v in CALLS if n != "add"]


def test_qwen_coder_writes_a_regular_input_raw_and_a_lark_one_as_json():
    syntax = call_syntax("qwen-coder")
    raw = write_calls(syntax, [("pattern", 'a "b"\n')], TOOLS)
    assert raw == '<tool_call>\n<function=pattern>\n<parameter=input>\na "b"\n\n</parameter>\n</function>\n</tool_call>'
    lark = write_calls(syntax, [("lines", 'a "b"')], TOOLS)
    assert '<parameter=input>\n"a \\"b\\""\n</parameter>' in lark
    assert write_calls(call_syntax("qwen"), [("pattern", "x")], TOOLS) == \
        '<tool_call>\n{"name": "pattern", "arguments": {"input": "x"}}\n</tool_call>'


def walk_text(matcher, info, rng) -> str:
    ids = random_walk(matcher, info, rng, 90)
    assert matcher.is_accepting()
    return info.decode_bytes(ids).decode("utf-8")


@pytest.mark.parametrize("fmt", ALL)
def test_random_walks_read_back_to_inputs_the_grammar_accepts(smollm2, fmt):
    info, compiler = smollm2
    rng = random.Random(fmt)
    by_name = {t.get("name") or t["function"]["name"]: t for t in TOOLS}
    seen = 0
    for choice in ("required", "lines", "expr", "pattern", "note"):
        if fmt == "generic":
            named = [by_name[choice]] if choice != "required" else TOOLS
            g = compiler.compile_tool_calls(named, require_call=True, text_before=False, max_calls=None,
                                            json_options={"whitespace": "compact"})
        else:
            g = compiler.compile_tool_calls(TOOLS, format=fmt, tool_choice=choice, json_options={"whitespace": "compact"})
        for _ in range(2):
            text = walk_text(stencil.Matcher(g), info, rng)
            events, r = streamed(fmt, TOOLS, text, sorted(rng.sample(range(len(text) + 1), min(6, len(text) + 1))))
            assert r.calls and all(c["ended"] for c in r.calls), (fmt, text)
            _, _, read = read_calls(call_syntax(fmt), TOOLS, text)
            assert len(read) == len(r.calls), text
            for c in read:
                if c["type"] == "custom":
                    assert accepts(compiler, by_name[c["name"]], c["input"]), (fmt, c["name"], c["input"], text)
                    if fmt == "qwen-coder" and c["name"] in ("pattern", "note"):
                        assert "</parameter>" not in c["input"]
                    seen += 1
                else:
                    assert set(json.loads(c["arguments"])) == {"a", "b"}
            assert inputs_of(events, r) == [c["input"] for c in read if c["type"] == "custom"], text
    assert seen >= 8   # the walks wrote custom calls, not only the function's


@pytest.mark.parametrize("tool,where", [
    (custom("bad", "lark", 'start: "a" (\n'), "line 1"),
    (custom("bad", "lark", "start: missing\n"), "missing"),
    (custom("bad", "regex", "a(b"), "a(b"),
    ({"type": "custom", "name": "bad", "format": {"type": "grammar", "syntax": "ebnf", "definition": "x"}}, "syntax"),
    ({"type": "custom", "name": "bad", "format": {"type": "grammar", "syntax": "lark"}}, "definition"),
    ({"type": "custom", "custom": {"name": "bad", "format": {"type": "json"}}}, "format.type")])
@pytest.mark.parametrize("fmt", ["generic", "qwen", "qwen-coder"])
def test_a_malformed_custom_tool_is_an_error_naming_it(smollm2, tool, where, fmt):
    _, compiler = smollm2
    tools = [TOOLS[-1], tool]
    with pytest.raises(stencil.GrammarError) as e:
        if fmt == "generic":
            compiler.compile_tool_calls(tools)
        else:
            compiler.compile_tool_calls(tools, format=fmt)
    assert "'bad'" in str(e.value) and where in str(e.value), str(e.value)


def json_string_grammar(compiler, syntax: str, definition: str):
    b = stencil.GrammarBuilder()
    start = b.rule("start")
    b.add_alternative(start, [build_json_string(b, syntax, definition)])
    g = compiler.compile_grammar(b.build(start))

    def ok(text):
        m = stencil.Matcher(g)
        return m.accept_string(text) and m.is_accepting()
    return ok


def test_the_input_string_holds_the_json_spellings_of_the_language_and_nothing_else(smollm2):
    _, compiler = smollm2
    # a regex: every JSON spelling; a Lark grammar: json.dumps(ensure_ascii=False)'s (escapes
    # only where JSON needs them, kept apart from raw runs so that "\n" ends a word)
    regex_ok = json_string_grammar(compiler, "regex", "[a-z]+ [a-zé]+")
    assert regex_ok('"a\\u0062 c"') and regex_ok('"ab \\u00e9"') and not regex_ok('"ab"')
    ok = json_string_grammar(compiler, "lark", LINES)
    assert ok('"a b\\nc"') and ok('"\\"\\\\ é"') and ok('"é 漢\\n\\t\\u0001"') and ok('"x\\"\\n\\"y"')
    assert not ok('"a\\u0062 c"') and not ok('"a  b"') and not ok('"a\nb"') and not ok('" a"')
    assert not ok('"a b') and not ok('""')
    # the Lark grammar's %ignore stays inside the input, and not before its first terminal nor
    # after its last: llguidance (and the grammar alone) take "1+2 " since a "+" could have
    # followed; the input's own rules keep a skip between two terminals, a subset of that
    expr = json_string_grammar(compiler, "lark", EXPR)
    for text, good, alone_good in (('"1 + (a - 2)"', True, True), ('"1+2 "', False, True), ('" 1+2"', False, False)):
        assert expr(text) == good, text
        alone = stencil.Matcher(compiler.compile_lark(EXPR))
        assert (alone.accept_string(json.loads(text)) and alone.is_accepting()) == alone_good, text
    with pytest.raises(stencil.GrammarError, match="completion check"):   # (the core reads JSON text there)
        build_json_string(stencil.GrammarBuilder(), "lark", 'start: %json {"type": "object"}')
    with pytest.raises(stencil.GrammarError, match="special token"):
        build_json_string(stencil.GrammarBuilder(), "lark", 'start: "a" <[0]>')
    with pytest.raises(stencil.GrammarError, match="raw bytes|byte"):
        JsonStringBuilder(stencil.GrammarBuilder()).re_bytes(b"\xff")


def test_structural_tag_custom_input(smollm2):
    _, compiler = smollm2
    fmt = {"type": "grammar", "syntax": "regex", "definition": "[a-z ]+"}
    raw = compiler.compile_structural_tag({"type": "tag", "begin": "<x>", "end": "</x>", "content": {
        "type": "custom_input", "format": fmt, "style": "raw", "excludes": ["bad"]}})
    for text, good in (("<x>ok then</x>", True), ("<x>a bad one</x>", False), ("<x>A</x>", False)):
        m = stencil.Matcher(raw)
        assert (m.accept_string(text) and m.is_accepting()) == good, text
    with pytest.raises(stencil.GrammarError, match=r"content\.style: a Lark input cannot be raw"):
        compiler.compile_structural_tag({"type": "tag", "begin": "<x>", "end": "</x>", "content": {
            "type": "custom_input", "format": {"type": "grammar", "syntax": "lark", "definition": LINES},
            "style": "raw"}})
    as_json = compiler.compile_structural_tag({"type": "custom_input", "format": fmt})
    m = stencil.Matcher(as_json)
    assert m.accept_string('"ok then"') and m.is_accepting()
