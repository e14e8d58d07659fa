"""Structural tags (XGrammar's JSON format) with the DeepSeek tokenizer: every format type on the
examples of XGrammar's structural-tag documentation and tests, exactness of free text against a
brute-force reference, special tokens as markers, the legacy structures/triggers form, and errors
that name the JSON path of a bad spec."""
from __future__ import annotations

import itertools
import json
import re

import pytest

import stencil
from grammar_oracle import accepts, encode_segments


def by_string(g, text: str) -> bool:
    m = stencil.Matcher(g)
    return m.accept_string(text) and m.is_accepting()


def check(env, fmt, cases):
    _, compiler, _ = env
    g = compiler.compile_structural_tag({"type": "structural_tag", "format": fmt})
    got = {text: accepts(env, g, text) for text, _ in cases}
    assert got == dict(cases)
    return g


WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TIME = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}


def fn_tag(name, schema):
    return {"type": "tag", "begin": f"<function={name}>", "content": {"type": "json_schema", "json_schema": schema},
            "end": "</function>"}


# --- the documentation's examples (XGrammar docs/structural_tag/structural_tag.md) -----------------

def test_doc_minimal_tag(env):
    check(env, {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"}, [
        ("<think>...</think>", True), ("<think></think>", True), ("<think>a < b, </thin k></think>", True),
        ("<think>two</think> ends</think>", False), ("<think>open", False), ("think</think>", False)])


def test_doc_minimal_triggered_tags(env):
    check(env, {"type": "triggered_tags", "triggers": ["<function="], "tags": [fn_tag("get_weather", WEATHER)]}, [
        ('I will call a tool now. <function=get_weather>{"city": "San Francisco"}</function>', True),
        ("plain text, no call", True), ("", True),
        ('<function=get_weather>{"city": "A"}</function> and <function=get_weather>{"city": "B"}</function>', True),
        ('<function=get_weather>{"town": "A"}</function>', False),        # the schema applies
        ('<function=get_time>{}</function>', False),                      # text with the trigger enters a tag
        ('<function=get_weather>{"city": "A"}', False)])                  # the end tag is required


def test_doc_const_string_sequence_or(env):
    check(env, {"type": "sequence", "elements": [{"type": "const_string", "value": "Answer: "},
                                                 {"type": "json_schema", "json_schema": {"type": "object"}}]}, [
        ('Answer: {"a": 1}', True), ("Answer: {}", True), ("Answer:{}", False), ("Answer: [1]", False)])
    check(env, {"type": "or", "elements": [{"type": "const_string", "value": "yes"},
                                           {"type": "const_string", "value": "no"}]}, [
        ("yes", True), ("no", True), ("maybe", False), ("yesno", False), ("", False)])


def test_doc_regex_and_grammar(env):
    check(env, {"type": "regex", "pattern": "[A-Z]{3}-[0-9]{4}"}, [
        ("ABC-1234", True), ("AB-1234", False), ("ABC-12345", False)])
    check(env, {"type": "grammar", "grammar": 'root ::= ("yes" | "no")'}, [("yes", True), ("no", True), ("nope", False)])


def test_doc_repetitions(env):
    item = {"type": "const_string", "value": "item"}
    check(env, {"type": "optional", "content": {"type": "const_string", "value": "Optional prefix: "}},
          [("Optional prefix: ", True), ("", True), ("Optional", False)])
    check(env, {"type": "plus", "content": item}, [("item", True), ("itemitem", True), ("", False)])
    check(env, {"type": "star", "content": {"type": "const_string", "value": "x"}}, [("", True), ("xxx", True), ("y", False)])
    check(env, {"type": "repeat", "min": 1, "max": 3, "content": item},
          [("", False), ("item", True), ("itemitemitem", True), ("itemitemitemitem", False)])


def test_doc_tag_with_several_ends(env):
    check(env, {"type": "tag", "begin": "<response>", "content": {"type": "json_schema", "json_schema": {"type": "object"}},
                "end": ["</response>", "</answer>"]},
          [('<response>{"a": 1}</response>', True), ("<response>{}</answer>", True), ("<response>{}</other>", False)])


def test_doc_any_text_excludes_and_max_chars(env):
    check(env, {"type": "tag", "begin": "<think>", "content": {"type": "any_text", "excludes": ["<function="],
                                                                "max_chars": 10}, "end": "</think>"},
          [("<think>0123456789</think>", True), ("<think>01234567890</think>", False),
           ("<think>é€😀</think>", True), ("<think><function=x</think>", False)])


def test_doc_force_exactly_one_tool_call(env):
    check(env, {"type": "triggered_tags", "triggers": ["<function="], "at_least_one": True, "stop_after_first": True,
                "tags": [fn_tag("get_weather", WEATHER), fn_tag("get_time", TIME)]}, [
        ('<function=get_time>{"timezone": "UTC"}</function>', True),
        ('<function=get_weather>{"city": "Oslo"}</function>', True),
        ('Sure. <function=get_time>{"timezone": "UTC"}</function>', False),     # no text before the call
        ('<function=get_time>{"timezone": "UTC"}</function> done', False),      # nothing after it
        ("no call", False)])


def test_doc_reasoning_then_tool_calls(env):
    check(env, {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
        {"type": "triggered_tags", "triggers": ["<function="], "tags": [fn_tag("get_weather", WEATHER)]}]}, [
        ('<think>I need the weather, so <function= it is</think>\n<function=get_weather>{"city": "Rome"}</function>', True),
        ("<think>nothing to call</think>Hello!", True),
        ('<function=get_weather>{"city": "Rome"}</function>', False)])


def test_doc_tags_with_separator(env):
    item = {"type": "tag", "begin": "<item>", "content": {"type": "json_schema", "json_schema": {"type": "object"}},
            "end": "</item>"}
    check(env, {"type": "tags_with_separator", "tags": [item], "separator": ","}, [
        ("", True), ("<item>{}</item>", True), ('<item>{}</item>,<item>{"a": [1]}</item>', True),
        ("<item>{}</item><item>{}</item>", False), ("<item>{}</item>,", False), ("text<item>{}</item>", False)])


def test_doc_dispatch_inside_tag(env):
    check(env, {"type": "tag", "begin": "<response>", "end": "</response>", "content": {
        "type": "dispatch", "loop": True, "excludes": ["</response>"], "rules": [
            ["<function=func1>", {"type": "json_schema", "json_schema": {"type": "integer"}}],
            ["<function=func2>", {"type": "const_string", "value": "ok"}]]}}, [
        ("<response>a <function=func1>12 b <function=func2>ok</response>", True),
        ("<response>free</response>", True),
        ("<response><function=func1>x</response>", False),
        ("<response><function=func3></response>", True),      # not a rule's pattern: free text
        ("<response>a</response>b", False)])


def test_doc_token_formats(env):
    entry, compiler, _ = env
    bos, eos = entry.info.special_token_names[0], entry.info.special_token_names[1]
    g = compiler.compile_structural_tag({"type": "sequence", "elements": [
        {"type": "tag", "begin": {"type": "token", "token": bos}, "content": {"type": "any_tokens"},
         "end": {"type": "token", "token": 1}},
        {"type": "const_string", "value": "!"}]})
    m = stencil.Matcher(g)
    assert m.accept_token(0) and m.accept_tokens(encode_segments(entry, ["free text"])) > 0
    assert m.accept_token(128005)                  # another special token: any_tokens allows it
    assert m.accept_string("more") and not m.is_accepting()
    assert m.accept_token(1) and m.accept_string("!") and m.is_accepting()
    assert bos and eos


# --- XGrammar's converter tests: triggered tags and separators, with and without an outer tag ------

def _triggered(at_least_one, stop_after_first):
    return {"type": "triggered_tags", "triggers": ["A"], "at_least_one": at_least_one,
            "stop_after_first": stop_after_first, "tags": [
                {"begin": "A1", "content": {"type": "const_string", "value": "L1"}, "end": "A"},
                {"begin": "A2", "content": {"type": "const_string", "value": "L2"}, "end": "A"}]}


FLAGS = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.parametrize("case", range(4))
def test_triggered_tags_flags(env, case):
    cases = [("textA1L1AtextA2L2AText", [True, False, False, False]), ("A1L1Atext", [True, True, False, False]),
             ("A1L1AtextA2L2A", [True, True, False, False]), ("A1L1A", [True, True, True, True]),
             ("text", [True, False, True, False]), ("", [True, False, True, False]),
             ("AA", [False] * 4), ("A1L2A", [False] * 4), ("A1L1A2L2A", [False] * 4)]
    check(env, _triggered(*FLAGS[case]), [(t, r[case]) for t, r in cases])


@pytest.mark.parametrize("case", range(4))
def test_triggered_tags_inside_a_tag(env, case):
    cases = [("beginabcA1L1Atextend", [True, False, False, False]), ("beginA1L1AtextA2L2Aend", [True, True, False, False]),
             ("beginA1L1Aend", [True] * 4), ("beginend", [True, False, True, False]),
             ("beginA1L1Aendabc", [False] * 4), ("beginA1L2end", [False] * 4)]
    check(env, {"type": "tag", "begin": "begin", "content": _triggered(*FLAGS[case]), "end": "end"},
          [(t, r[case]) for t, r in cases])


@pytest.mark.parametrize("case", range(4))
def test_tags_with_separator_flags(env, case):
    at_least_one, stop_after_first = FLAGS[case]
    fmt = {"type": "tags_with_separator", "separator": "AA", "at_least_one": at_least_one,
           "stop_after_first": stop_after_first, "tags": _triggered(False, False)["tags"]}
    cases = [("", [True, False, True, False]), ("A1L1A", [True] * 4), ("A1L1AAAA2L2A", [True, True, False, False]),
             ("A1L1AA2L2A", [False] * 4)]
    check(env, fmt, [(t, r[case]) for t, r in cases])


def test_tag_with_empty_end_and_excluding_text(env):
    # a tag whose content stops before an excluded string; free text (the loop) reads the rest
    check(env, {"type": "triggered_tags", "triggers": ["<TOOL>"], "at_least_one": True, "tags": [
        {"begin": "<TOOL>", "content": {"type": "any_text", "excludes": ["<END>"]}, "end": ""}]},
        [("<TOOL>hello world", True), ("<TOOL>hello world<END>", True), ("<TOOL>", True), ("hello<TOOL>", False)])


def test_triggered_tags_text_between_tags(env):
    check(env, {"type": "triggered_tags", "triggers": ["<start>"], "tags": [
        {"begin": "<start>", "content": {"type": "const_string", "value": "[TEXT]"}, "end": "<end>"}]},
        [("<start>[TEXT]<end>[TEXT]<start>[TEXT]<end>[TEXT]", True), ("<start>[TEXT]<end><start>", False)])


# --- exactness: free text against a brute-force reference -------------------------------------------

def test_free_text_is_exact_against_a_reference(env):
    """Every string over a small alphabet up to length 8: text that contains the trigger enters
    the tag, the tag's any_text ends at the first end marker, and the matcher's verdict (and
    prefix verdict) equals Python's regex on the same language."""
    _, compiler, _ = env
    g = compiler.compile_structural_tag({"type": "triggered_tags", "triggers": ["ab"], "tags": [
        {"type": "tag", "begin": "abc", "content": {"type": "any_text", "excludes": ["cc"]}, "end": "ba"}]})
    no = lambda s: f"(?:(?!{s}).)*"                                        # noqa: E731
    text, content = no("ab"), "(?:(?!ba)(?!cc).)*"
    whole = re.compile(f"(?:{text}ab(?:c{content}ba))*{text}", re.S)
    checked = 0
    for n in range(9):
        for t in itertools.product("abc", repeat=n):
            s = "".join(t)
            assert by_string(g, s) == bool(whole.fullmatch(s)), s
            checked += 1
    assert checked == 9841


def test_text_before_a_tag_is_exact_against_a_reference(env):
    """any_text followed by a tag in a sequence: the first occurrence of the tag's begin ends the
    text (all strings over "abc" up to length 8, against Python's regex)."""
    _, compiler, _ = env
    g = compiler.compile_structural_tag({"type": "sequence", "elements": [
        {"type": "any_text", "excludes": ["cc"]},
        {"type": "tag", "begin": "ab", "content": {"type": "const_string", "value": "c"}, "end": "a"}]})
    whole = re.compile("(?:(?!ab)(?!cc).)*abca", re.S)
    for n in range(9):
        for t in itertools.product("abc", repeat=n):
            s = "".join(t)
            assert by_string(g, s) == bool(whole.fullmatch(s)), s


def test_text_containing_a_trigger_enters_the_tag_token_by_token(env):
    """Through real tokens: once the text spells a trigger, only the tag may follow, even when the
    trigger is split across tokens or ends inside one."""
    entry, compiler, bitmask = env
    g = compiler.compile_structural_tag({"type": "triggered_tags", "triggers": ["<function="],
                                         "tags": [fn_tag("get_weather", WEATHER)]})
    m = stencil.Matcher(g)
    assert m.accept_string("Calling <func")
    assert not m.fork().accept_string("tion=get_time>")
    assert m.accept_string("tion=get_weather>")
    m2 = stencil.Matcher(g)
    assert m2.accept_string("x <function=")
    assert not m2.accept_string(" more text")


# --- special tokens, legacy form, compile_request ----------------------------------------------------

def test_strings_that_are_special_tokens_are_those_tokens(env):
    entry, compiler, _ = env
    eos_text = entry.info.special_token_names[1]
    g = compiler.compile_structural_tag({"type": "tag", "begin": "<a>", "content": {"type": "any_text"},
                                         "end": eos_text})
    m = stencil.Matcher(g)
    assert m.accept_string("<a>text, even with ")
    spelled = m.fork()
    assert spelled.accept_string(eos_text) and not spelled.is_accepting()   # its spelling is text, not the end
    assert m.accept_token(1) and m.is_accepting()


def test_legacy_structures_and_triggers(env):
    _, compiler, _ = env
    from stencil.integrations._requests import compile_request
    legacy = {"structures": [{"begin": "<function=get_weather>", "schema": WEATHER, "end": "</function>"},
                             {"begin": "<tool=get_time>", "schema": TIME, "end": "</tool>"}],
              "triggers": ["<function=", "<tool="]}
    for g in (compiler.compile_structural_tag(legacy), compile_request(compiler, "structural_tag", json.dumps(legacy))):
        assert accepts(env, g, 'a <function=get_weather>{"city": "X"}</function> b <tool=get_time>{"timezone": "Z"}</tool>')
        assert not accepts(env, g, '<tool=get_time>{"city": "X"}</tool>')
        assert not accepts(env, g, '<function=get_weather>{"city": "X"}</tool>')


@pytest.mark.parametrize("spec, where", [
    ({"type": "structural_tag"}, "$ has no 'format'"),
    ({"type": "structural_tag", "format": {"type": "bogus"}}, "$.format: unknown format type 'bogus'"),
    ({"type": "sequence", "elements": [{"type": "const_string"}]}, "$.elements[0]: const_string needs value"),
    ({"type": "tag", "begin": "<a>", "end": "</a>", "content": {"type": "json_schema", "json_schema": {"type": "nope"}}},
     "$.content.json_schema:"),
    ({"type": "triggered_tags", "triggers": ["<f"], "tags": [{"begin": "<g>", "content": {"type": "any_text"}, "end": "x"}]},
     "$.tags[0].begin: '<g>' must start with exactly one trigger"),
    ({"type": "sequence", "elements": [{"type": "any_text"}, {"type": "json_schema", "json_schema": {}}]},
     "$.elements[0]: any_text reads text up to an end"),
    ({"type": "any_text", "max_tokens": 5}, "$.max_tokens: not supported"),
    ({"type": "json_schema", "json_schema": {}, "style": "minimax_xml"}, "$.style: style 'minimax_xml' is not supported"),
    ({"type": "token", "token": "<not a token>"}, "$.token: '<not a token>' is not a special token"),
    ({"type": "repeat", "min": 2, "max": 1, "content": {"type": "const_string", "value": "x"}}, "$.max: expected -1"),
    ({"type": "tag", "begin": "a", "end": "b", "content": {"type": "const_string", "value": "x"}, "extra": 1},
     "$: tag has unknown field(s) extra"),
    ({"type": "exclude_token", "exclude_tokens": [1]}, "exactly one token of text is not expressible"),
    ({"type": "token_triggered_tags", "trigger_tokens": [2], "tags": [{"begin": "<a>", "content": {"type": "any_text"},
                                                                       "end": "x"}]},
     "$.tags[0].begin: tags of token_triggered_tags begin with a token format"),
    ("{not json", "not JSON"),
    ("[" * 100_000, "nested deeper than"),
    ({"structures": [{"begin": "<a>", "schema": {"type": "bogus"}, "end": "</a>"}], "triggers": ["<a>"]},
     "$(structures as triggered_tags).tags[0].content.json_schema:"),
    ({"structures": [{"begin": "<a>", "end": "</a>"}]}, "$.structures[0] has no schema"),
    ({"type": "triggered_tags", "triggers": [""], "tags": [{"begin": "a", "content": {"type": "const_string", "value": "b"},
                                                            "end": "c"}]}, "$.triggers: a trigger is a non-empty string"),
])
def test_bad_specs_name_the_json_path(env, spec, where):
    """Errors, never crashes or Python recursion errors, for malformed or hostile specs."""
    _, compiler, _ = env
    with pytest.raises(stencil.GrammarError) as e:
        compiler.compile_structural_tag(spec)
    assert where in str(e.value), str(e.value)


def test_deep_nesting_is_an_error_not_a_recursion_crash(env):
    _, compiler, _ = env
    spec = {"type": "const_string", "value": "x"}
    for depth in range(1, 5001):
        spec = {"type": "optional", "content": spec}
        if depth == 300:
            with pytest.raises(stencil.GrammarError, match="nested deeper than 200 levels"):
                compiler.compile_structural_tag(spec)
    # a document past any format's depth is refused before it is walked
    with pytest.raises(stencil.GrammarError, match=r"nests more than 1400 levels deep \(at \$\.content\.content"):
        compiler.compile_structural_tag(spec)
    ok = {"type": "const_string", "value": "x"}
    for _ in range(50):
        ok = {"type": "optional", "content": ok}
    assert by_string(compiler.compile_structural_tag(ok), "x") and by_string(compiler.compile_structural_tag(ok), "")


# --- json_schema with style qwen_xml (XGrammar's qwen_xml_parameter examples) --------------------------

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}


@pytest.mark.parametrize("kind", ["json_schema", "qwen_xml_parameter"])
def test_qwen_xml_parameters(env, kind):
    fmt = {"type": kind, "json_schema": PERSON}
    if kind == "json_schema":
        fmt["style"] = "qwen_xml"
    check(env, fmt, [
        ("<parameter=name>Bob</parameter><parameter=age>\t100\n</parameter>", True),
        ("<parameter=name>Bob</parameter><parameter=age>100</parameter>", True),
        ("\n\t<parameter=name>Bob</parameter><parameter=age>100</parameter>", True),
        ('<parameter=name>"Bob&lt;"</parameter><parameter=age>100</parameter>', True),
        ('<parameter=name><!DOCTYPE html>\n<html lang="en">\n  <body><h1>Hello</h1></body>\n</html></parameter>'
         "<parameter=age>100</parameter>", True),
        ("<parameter=name>\nBob\n</parameter>\n<parameter=age>\n100\n</parameter>\n", True),   # Qwen3-Coder's layout
        ("<parameter=name>Bob</parameter>", False),                                  # age is required
        ("<parameter=name>Bob</parameter><parameter=age>1.5</parameter>", False),    # not an integer
        ("<parameter=age>1</parameter><parameter=name>Bob</parameter>", False),      # definition order
        ("<parameter=name>Bob</parameter><parameter=age>1</parameter><parameter=x>y</parameter>", True),  # extra
        ("<parameter=name>Bob</parameter><parameter=age>1</parameter><parameter=name>y</parameter>", False),
    ])
    closed = {**PERSON, "additionalProperties": False}
    check(env, {**fmt, "json_schema": closed, "any_order": True}, [
        ("<parameter=age>1</parameter><parameter=name>Bob</parameter>", True),
        ("<parameter=name>Bob</parameter><parameter=age>1</parameter><parameter=x>y</parameter>", False)])


def test_qwen_xml_values_by_type(env):
    schema = {"type": "object", "properties": {
        "flag": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
        "unit": {"enum": ["c", "f"]}, "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "where": {"$ref": "#/$defs/place"}},
        "$defs": {"place": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}}
    check(env, {"type": "json_schema", "style": "qwen_xml", "json_schema": schema}, [
        ("<parameter=flag>\nTrue\n</parameter>\n<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n<parameter=unit>\nc\n"
         "</parameter>\n<parameter=code>\nABC\n</parameter>\n<parameter=where>\n{\"x\": 1}\n</parameter>\n", True),
        ("<parameter=flag>false</parameter>", True),
        ("<parameter=flag>yes</parameter>", False),
        ("<parameter=tags>a, b</parameter>", False),
        ("<parameter=unit>k</parameter>", False),
        ("<parameter=code>\nABCD\n</parameter>", False),
        ("<parameter=where>{\"y\": 1}</parameter>", False)])


def test_doc_token_level_delimiters(env):
    """The documentation's recipe: a reasoning block between special tokens, then tool calls that a
    special token starts, at least one; placeholder special tokens of the DeepSeek tokenizer play
    the model's think and tool-call tokens."""
    entry, compiler, _ = env
    names = entry.info.special_token_names
    think, think_end, call, call_end, banned = 128000, 128001, 128002, 128003, 128010
    call_tag = {"type": "tag", "begin": {"type": "token", "token": names[call]},
                "content": {"type": "json_schema", "json_schema": WEATHER}, "end": {"type": "token", "token": call_end}}
    g = compiler.compile_structural_tag({"type": "sequence", "elements": [
        {"type": "tag", "begin": {"type": "token", "token": names[think]}, "content": {"type": "any_tokens"},
         "end": {"type": "token", "token": names[think_end]}},
        {"type": "token_triggered_tags", "trigger_tokens": [names[call]], "tags": [call_tag],
         "exclude_tokens": [names[banned]], "at_least_one": True}]})

    def run(*segs):
        ids = encode_segments(entry, list(segs))
        m = stencil.Matcher(g)
        return m.accept_tokens(ids) == len(ids) and m.is_accepting()

    args = '{"city": "Oslo"}'
    assert run(think, "hmm ", 128007, " more", think_end, call, args, call_end)        # other special tokens in the thought
    assert run(think, think_end, call, args, call_end, "then text", 128008, call, args, call_end, "end")
    assert not run(think, think_end, "text first", call, args, call_end)             # at_least_one: a call first
    assert not run(think, think_end, call, args, call_end, "x", banned, "y")          # an excluded token
    assert not run(think, think_end, call, '{"town": "Oslo"}', call_end)
    assert not run(think, "x", call, args, call_end)                                  # the thought is not closed


def test_token_dispatch(env):
    entry, compiler, _ = env
    names = entry.info.special_token_names
    g = compiler.compile_structural_tag({"type": "token_dispatch", "loop": False, "rules": [
        [names[128006], {"type": "const_string", "value": "six"}], [128007, {"type": "regex", "pattern": "[0-9]+"}]]})
    m = stencil.Matcher(g)
    assert m.accept_string("free ") and m.accept_token(128009) and m.accept_string(" text") and m.is_accepting()
    assert m.accept_token(128007) and not m.is_accepting() and m.accept_string("42") and m.is_accepting()
    assert not m.fork().accept_string(" more")                                        # loop false: it ends here
    m2 = stencil.Matcher(g)
    assert m2.accept_token(128006) and not m2.fork().accept_string("seven") and m2.accept_string("six")


def test_excludes_end_free_text_when_no_end_is_known(env):
    # dispatch and triggered_tags stop before an excluded string; the next format takes it from there
    rules = [["<f>", {"type": "json_schema", "json_schema": {"type": "integer"}}]]
    check(env, {"type": "sequence", "elements": [
        {"type": "dispatch", "rules": rules, "excludes": ["</end>"]},
        {"type": "tag", "begin": "</end>", "content": {"type": "const_string", "value": "!"}, "end": "."}]}, [
        ("a <f>12 b</end>!.", True), ("</end>!.", True), ("a <f>x</end>!.", False), ("a </end>b</end>!.", False)])
    check(env, {"type": "sequence", "elements": [
        {"type": "triggered_tags", "triggers": ["<f"], "excludes": ["STOP"], "tags": [
            {"begin": "<f>", "content": {"type": "const_string", "value": "1"}, "end": "</f>"}]},
        {"type": "const_string", "value": "STOP"}, {"type": "regex", "pattern": "[0-9]"}]},
        [("x<f>1</f>ySTOP7", True), ("xSTOP", False), ("STOP1", True), ("xSTOPySTOP1", False)])
    # a follower that starts with no known string cannot end free text exactly: an error, not a guess
    _, compiler, _ = env
    with pytest.raises(stencil.GrammarError, match=r"\$\.elements\[0\]: any_text reads text up to an end"):
        compiler.compile_structural_tag({"type": "sequence", "elements": [
            {"type": "any_text", "excludes": ["STOP"]}, {"type": "regex", "pattern": "STOP[0-9]"}]})
