"""The white-space run limit at its boundary (review T4): with ``max_whitespace_run=N`` a run of
exactly N white-space characters is accepted and a run of N+1 refused, at every place JSON allows
white space (after ``{`` and ``[``, around ``:`` and ``,``, before ``}`` and ``]``), in every mode
that bounds it: JSON Schema grammars on their own (one ignored lexeme) and inside larger grammars
(white space carried by the punctuation: structural tags, tool calls), ``compile_json`` and the
generic ``json_value``. (SGLang's ``max_whitespace_cnt``: test_integrations_sglang.py.)"""
from __future__ import annotations

import json

import pytest

import stencil
from stencil.grammar.json.value import json_value

SCHEMA = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}},
                                           "b": {"type": "string"}}}
# a valid instance with one white-space gap at each place JSON allows one
GAPS = '{%s"a"%s:%s[%s1%s,%s2%s]%s,%s"b"%s:%s"x"%s}'
RUNS = (1, 2, 3, 5)


def run(n: int) -> str:
    """n white-space characters, all four kinds mixed in (a run counts characters, not spaces)."""
    return (" \n\t\r" * n)[:n][::-1]


def texts(n: int, gap: str = GAPS):
    """(place, text) for each gap holding a run of ``n``, the others empty."""
    k = gap.count("%s")
    for i in range(k):
        yield i, gap % tuple(run(n) if j == i else "" for j in range(k))


def accepts(g, text: str) -> bool:
    m = stencil.Matcher(g)
    return m.accept_string(text) and m.is_accepting()


def assert_bound(g, n: int, gap: str = GAPS, wrap=lambda t: t):
    for place, text in texts(n, gap):
        assert accepts(g, wrap(text)), f"a run of {n} at gap {place} refused: {wrap(text)!r}"
    for place, text in texts(n + 1, gap):
        assert not accepts(g, wrap(text)), f"a run of {n + 1} at gap {place} accepted: {wrap(text)!r}"


def test_the_instance_is_valid():
    assert json.loads(GAPS % (("",) * GAPS.count("%s"))) == {"a": [1, 2], "b": "x"}


@pytest.mark.parametrize("n", RUNS)
def test_json_schema_alone(compiler, n):
    assert_bound(compiler.compile_json_schema(SCHEMA, max_whitespace_run=n), n)


@pytest.mark.parametrize("n", RUNS)
def test_compile_json(compiler, n):
    assert_bound(compiler.compile_json(max_whitespace_run=n), n)


@pytest.mark.parametrize("n", (1, 4))
def test_generic_json_value(compiler, n):
    b = stencil.GrammarBuilder()
    assert_bound(compiler.compile_grammar(b.build(json_value(b, max_whitespace_run=n))), n)


@pytest.mark.parametrize("n", (1, 3))
def test_structural_tag_max_whitespace_cnt(compiler, n):
    """Inside a tag the schema's white space rides on its punctuation (not an ignored lexeme)."""
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<r>", "end": "</r>", "content": {
        "type": "json_schema", "json_schema": SCHEMA, "max_whitespace_cnt": n}}}
    assert_bound(compiler.compile_structural_tag(tag), n, wrap=lambda t: f"<r>{t}</r>")
    bare = {"type": "structural_tag", "format": {"type": "tag", "begin": "<r>", "end": "</r>", "content": {
        "type": "json_schema", "json_schema": SCHEMA}}}
    assert_bound(compiler.compile_structural_tag(bare, max_whitespace_run=n), n, wrap=lambda t: f"<r>{t}</r>")


@pytest.mark.parametrize("n", (1, 2))
def test_tool_call_wrapper_and_arguments(compiler, n):
    """The tool-call object around the arguments is bounded as the arguments are."""
    g = compiler.compile_tool_calls([{"name": "f", "parameters": SCHEMA}], json_options={"max_whitespace_run": n})
    wrapper = '{%s"name"%s:%s"f"%s,%s"arguments"%s:%s{"a":[1],"b":"x"}%s}'
    assert_bound(g, n, wrapper, wrap=lambda t: f"<tool_call>{t}</tool_call>")
    assert_bound(g, n, wrap=lambda t: '<tool_call>{"name":"f","arguments":' + t + "}</tool_call>")


def test_the_default_bound_is_32(compiler):
    # the default run (DEFAULT_MAX_WHITESPACE_RUN), also that of the vLLM and SGLang backends
    assert_bound(compiler.compile_json_schema(SCHEMA), 32)
