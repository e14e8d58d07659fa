"""JSON Schemas at the edges: deep nesting, lone surrogates in names, very many properties.
Each either works or is a GrammarError that says what and where, never an internal error."""
from __future__ import annotations

import json

import pytest

import stencil
from stencil.grammar.json.schema import MAX_SCHEMA_NESTING, json_schema_grammar


@pytest.fixture(scope="module")
def compiler(ascii_tokenizer):
    return stencil.GrammarCompiler(ascii_tokenizer)


def accepts(g, text: str) -> bool:
    m = stencil.Matcher(g)
    return m.accept_string(text) and m.is_accepting()


def nest(keyword: str, n: int, leaf=None):
    s = leaf or {"type": "integer"}
    for _ in range(n):
        s = {keyword: [s, {"type": "null"}]} if keyword == "anyOf" else {"type": "array", "items": s}
    return s


def test_deep_items_compile_and_match(compiler):
    g = compiler.compile_json_schema(nest("items", 300), whitespace="compact")
    assert accepts(g, "[" * 300 + "7" + "]" * 300)
    assert not accepts(g, "[" * 299 + "7" + "]" * 299)


@pytest.mark.parametrize("schema,needle", [
    (nest("anyOf", 10_000), "nests more than 1000 levels deep (at /anyOf/0/anyOf/0/"),
    (nest("anyOf", 499), "nested or chained through $ref too deeply"),   # (the deepest the document check lets by)
    ({"$defs": {**{f"d{i}": {"not": {"$ref": f"#/$defs/d{i + 1}"}} for i in range(2000)}, "d2000": {}},
      "$ref": "#/$defs/d0"}, "nested or chained through $ref too deeply"),
])
def test_too_deep_is_a_grammar_error_naming_the_place(compiler, schema, needle):
    with pytest.raises(stencil.GrammarError, match="JSON Schema") as e:
        compiler.compile_json_schema(schema)
    assert needle in str(e.value)
    assert len(str(e.value)) < 400   # the pointer is shortened, not 20,000 levels long


def test_schemas_read_inside_schemas_are_bounded(compiler, monkeypatch):
    # The reader's own bound (compiled, its recursion is the C stack's, which Python's recursion
    # limit does not watch): lowered, a nesting that compiles at the default is refused past it.
    import stencil.grammar.json.schema.read.context as context
    schema = nest("anyOf", 40)
    assert accepts(compiler.compile_json_schema(schema, whitespace="compact"), "7")
    monkeypatch.setattr(context, "MAX_READ_DEPTH", 30)
    with pytest.raises(stencil.GrammarError, match="nested or chained through \\$ref too deeply"):
        stencil.GrammarCompiler(compiler.tokenizer_info).compile_json_schema(schema)


def test_too_deep_json_text_is_a_grammar_error(compiler):
    text = '{"items": ' * 5000 + "{}" + "}" * 5000
    with pytest.raises(stencil.GrammarError, match="nests too deeply to read|levels deep"):
        compiler.compile_json_schema(text)
    # and the compiler goes on working
    assert accepts(compiler.compile_json_schema({"type": "integer"}), "42")
    assert MAX_SCHEMA_NESTING >= 64   # the deepest MaskBench schema nests 63 levels


@pytest.mark.parametrize("opts", [{}, {"key_spelling": "plain"}, {"string_spelling": "plain"},
                                  {"property_order": "any"}])
def test_lone_surrogate_property_name_is_matched_as_its_escape(compiler, opts):
    name = "a\ud800"
    schema = {"type": "object", "properties": {name: {"type": "integer"}, "b": {"type": "integer"}},
              "required": [name], "additionalProperties": False}
    g = compiler.compile_json_schema(schema, whitespace="compact", **opts)
    text = json.dumps({name: 1})          # '{"a\\ud800": 1}' with ensure_ascii
    assert accepts(g, text.replace(" ", ""))
    assert not accepts(g, '{"a\\ud801":1}')
    assert not accepts(g, '{"b":1}')      # the required surrogate key is checked too
    if opts.get("property_order") == "any":
        assert accepts(g, '{"b":2,"a\\ud800":1}')
        assert not accepts(g, '{"a\\ud800":1,"a\\ud800":1}')


def test_ten_thousand_optional_properties_compile(compiler):
    props = {f"p{i}": {"type": "integer"} for i in range(10_000)}
    g = compiler.compile_json_schema({"type": "object", "properties": props}, whitespace="compact")
    assert accepts(g, '{"p0":1,"p9999":2}')
    assert accepts(g, "{}")
    assert not accepts(g, '{"p9999":1,"p0":2}')   # definition order


def test_too_many_counted_properties_blame_the_counting_keyword():
    props = {f"p{i}": {"type": "integer"} for i in range(2000)}
    with pytest.raises(stencil.GrammarError, match="maxProperties: counting up to 50 members"):
        json_schema_grammar({"type": "object", "properties": props, "maxProperties": 50})
    props = {f"p{i}": {"type": "integer"} for i in range(30_000)}
    with pytest.raises(stencil.GrammarError, match="properties: 30000 properties"):
        json_schema_grammar({"type": "object", "properties": props})


@pytest.mark.parametrize("lo,hi,prefix", [(0, 1, 0), (0, 7, 0), (3, 13, 0), (5, None, 0), (0, 22, 2),
                                          (1, 9, 3), (4, 4, 0), (6, 17, 1), (2, 9, 5)])
def test_long_array_counting_is_exact(compiler, monkeypatch, lo, hi, prefix):
    # The counting rules serve arrays past LONG_ARRAY_POSITIONS positions; a small limit sends
    # small arrays down the same path, where every length can be checked.
    import stencil.grammar.json.schema.emit.arrays as arrays
    monkeypatch.setattr(arrays, "LONG_ARRAY_POSITIONS", 0)
    schema = {"type": "array", "minItems": lo, "prefixItems": [{"const": "p"}] * prefix,
              "items": {"type": "integer"}}
    if hi is not None:
        schema["maxItems"] = hi
    g = compiler.compile_json_schema(schema, whitespace="compact")

    def text(n, closed=True):
        vals = ['"p"' if i < prefix else str(i) for i in range(n)]
        return "[" + ",".join(vals) + ("]" if closed else "")

    for n in range(0, (hi if hi is not None else lo + 6) + 3):
        ok = lo <= n and (hi is None or n <= hi)
        assert accepts(g, text(n)) == ok, n
        # exact masks: one more item may start exactly while the count is below the maximum
        if n:
            m = stencil.Matcher(g)
            assert m.accept_string(text(n, closed=False) + ",") == (hi is None or n < hi), n
    assert not accepts(g, "[1]" if prefix else '["p"]')   # the items' schemas still hold


def test_huge_item_counts_compile_and_match(compiler):
    g = compiler.compile_json_schema({"type": "array", "maxItems": 10**9, "items": {"type": "integer"}},
                                     whitespace="compact")
    assert accepts(g, "[" + ",".join(map(str, range(500))) + "]")
    g = compiler.compile_json_schema({"type": "array", "minItems": 10**9}, whitespace="compact")
    assert not accepts(g, "[1,2,3]")
    assert stencil.Matcher(g).accept_string("[1,2,3,")
