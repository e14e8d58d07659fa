"""The JSON Schema compiler's API and options: errors with keyword and pointer, lenient mode and
what it reports, whitespace modes, property order, references and registries, the core's checks
(unique items, duplicate keys, required keys in any order), compile_json, compile_pydantic and the
``stencil check`` report. Instances are fed as text to real compiled grammars (DeepSeek)."""
from __future__ import annotations

import json

import pytest
from call_counts import python_calls
from grammar_oracle import accepts_text

import stencil
from stencil.grammar.json.schema import SchemaInfo, build_json_schema, json_schema_grammar
from stencil.grammar.json.schema.check import check_report
from stencil.testing import matcher_stats


def test_compile_json_schema_accepts_dict_and_json_text(compiler):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    for s in (schema, json.dumps(schema)):
        g = compiler.compile_json_schema(s)
        assert accepts_text(g, '{"a": 1}') and accepts_text(g, '{"a":1}') and not accepts_text(g, '{}')
    with pytest.raises(stencil.GrammarError, match="not valid JSON"):
        compiler.compile_json_schema("{not json")


def test_two_schemas_in_one_builder(compiler):
    from stencil.grammar.ebnf import Namespaced
    b = stencil.GrammarBuilder()
    a = build_json_schema(Namespaced(b, "a/"), {"type": "object", "properties": {"x": {"type": "integer"}},
                                                "required": ["x"], "additionalProperties": False})
    c = build_json_schema(Namespaced(b, "c/"), {"type": "array", "items": {"type": "string"}})
    start = b.rule("start")
    b.add_alternative(start, [a])
    b.add_alternative(start, [c])
    g = compiler.compile_grammar(b.build(start))
    assert accepts_text(g, '{"x": 1}') and accepts_text(g, '["s"]')
    assert not accepts_text(g, '{"x": "s"}') and not accepts_text(g, '[1]')


def test_build_json_schema_adds_rules_without_building(compiler):
    b = stencil.GrammarBuilder()
    start = build_json_schema(b, {"type": "array", "items": {"enum": ["red", "green"]}})
    g = compiler.compile_grammar(b.build(start))
    assert accepts_text(g, '["red", "green"]') and accepts_text(g, '[ "red" ,\n "green" ]') and not accepts_text(g, '["blue"]')
    # a value for a larger grammar: white space inside it, none around it (the host decides)
    assert not accepts_text(g, ' ["red"]') and not accepts_text(g, '["red"] ')
    standalone = compiler.compile_json_schema({"type": "array"})
    assert accepts_text(standalone, '[ 1 ]') and not accepts_text(standalone, ' [1]') and not accepts_text(standalone, '[1] ')


@pytest.mark.parametrize("schema,value", [({"type": "array"}, "[1]"), ({"type": "integer"}, "12"),
                                          ({"type": "string"}, '"s"'), (True, "[1]"),
                                          ({"type": "object", "properties": {"a": {"type": "null"}}}, '{"a": null}')])
def test_no_white_space_around_the_value_unless_asked(compiler, schema, value):
    # llguidance and XGrammar refuse white space before or after the whole value
    g = compiler.compile_json_schema(schema)
    assert accepts_text(g, value) and not accepts_text(g, " " + value) and not accepts_text(g, value + "\n")
    m = stencil.Matcher(g)
    assert m.accept_string(value) and m.is_accepting()
    assert not m.accept_string(" ")                      # the mask's side: nothing trails the value
    around = compiler.compile_json_schema(schema, whitespace_around=True)
    assert accepts_text(around, " " + value) and accepts_text(around, value + "\n") and accepts_text(around, value)
    with pytest.raises(stencil.GrammarError, match="whitespace_around must be True or False"):
        compiler.compile_json_schema(schema, whitespace_around="yes")


@pytest.mark.parametrize("schema,keyword,pointer", [
    ({"$recursiveAnchor": True, "properties": {"a": {"$recursiveRef": "#"}}}, "$recursiveRef",
     "/properties/a/$recursiveRef"),
    ({"items": {"type": "string", "format": "regex"}}, "format", "/items/format"),
    ({"properties": {"p": {"pattern": "(?=a)b"}}}, "pattern", "/properties/p/pattern"),
    ({"allOf": [{"extends": {}}]}, "extends", "/allOf/0/extends"),
])
def test_unsupported_keyword_names_keyword_and_pointer(schema, keyword, pointer):
    with pytest.raises(stencil.GrammarError) as e:
        json_schema_grammar(schema)
    assert e.value.keyword == keyword and e.value.pointer == pointer
    assert f"{keyword} at {pointer}" in str(e.value)


def test_lenient_ignores_and_lists(compiler):
    schema = {"$recursiveAnchor": True,
              "properties": {"a": {"type": "string", "format": "regex"}, "b": {"$recursiveRef": "#"}}}
    info = SchemaInfo()
    g = compiler.compile_json_schema(schema, lenient=True, info=info)
    assert sorted(k for k, _, _ in info.ignored) == ["$recursiveRef", "format"]
    assert accepts_text(g, '{"a": "(", "b": 1}')
    # the same report as data on the compiled grammar, without an info object
    again = compiler.compile_json_schema(schema, lenient=True)
    assert sorted(again.not_enforced) == sorted(info.ignored)
    assert [(k, w) for k, w, _ in sorted(again.not_enforced)] == [("$recursiveRef", "/properties/b/$recursiveRef"),
                                                                 ("format", "/properties/a/format")]


def test_not_enforced_is_per_schema_though_the_grammar_is_shared(compiler):
    """Two schemas whose grammars are the same, one of them with a keyword lenient mode ignores:
    each compiled grammar reports its own (a shared cache entry would report the other's)."""
    plain = compiler.compile_json_schema({"type": "integer"})
    ignored = compiler.compile_json_schema({"type": "integer", "divisibleBy": 3}, lenient=True)
    assert plain.not_enforced == [] and [k for k, _, _ in ignored.not_enforced] == ["divisibleBy"]
    assert compiler.compile_json_schema({"type": "integer"}) is plain
    assert compiler.compile_json_schema({"type": "integer", "divisibleBy": 3}, lenient=True) is ignored
    assert compiler.compile_regex("[0-9]+").not_enforced == []


def test_unknown_keywords_are_annotations_and_are_listed():
    info = SchemaInfo()
    json_schema_grammar({"type": "string", "x-kind": "id", "format": "int32"}, info=info)
    assert info.unknown_keywords == {"x-kind": "/"} and info.unknown_formats == {"int32": "/format"}


def test_bad_schemas_and_references_are_errors():
    for schema, msg in [({"type": "strng"}, "unknown type"), ({"minLength": -1}, "non-negative"),
                        ({"$ref": "#/$defs/missing"}, "does not exist"), ({"$ref": "other.json"}, "cannot resolve"),
                        ({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "infinite recursion"),
                        ({"required": "a"}, "list of strings"), (3, "object or a boolean")]:
        with pytest.raises(stencil.GrammarError, match=msg):
            json_schema_grammar(schema)


def test_unsatisfiable_schema_is_an_error():
    with pytest.raises(stencil.GrammarError, match="no JSON value satisfies"):
        json_schema_grammar({"type": "string", "minLength": 3, "maxLength": 2})


def test_whitespace_modes(compiler):
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
    value = {"a": [1, 2]}
    flexible = compiler.compile_json_schema(schema)
    assert accepts_text(flexible, json.dumps(value)) and accepts_text(flexible, json.dumps(value, indent=2))
    compact = compiler.compile_json_schema(schema, whitespace="compact")
    assert accepts_text(compact, json.dumps(value, separators=(",", ":")))
    assert not accepts_text(compact, json.dumps(value))
    indented = compiler.compile_json_schema(schema, whitespace=2)
    assert accepts_text(indented, json.dumps(value, indent=2)) and accepts_text(indented, json.dumps({}, indent=2))
    assert not accepts_text(indented, json.dumps(value)) and not accepts_text(indented, json.dumps(value, indent=4))
    with pytest.raises(stencil.GrammarError, match="whitespace"):
        json_schema_grammar(schema, whitespace="loose")


_RECURSIVE = [   # (schema, a value nested a few levels, with the registry the schema needs)
    ({"type": "array", "items": {"$ref": "#"}}, [[], [[]]], None),
    ({"type": "object", "properties": {"a": {"$ref": "#"}}}, {"a": {"a": {}}}, None),
    ({"$defs": {"n": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {
        "type": "array", "items": {"$ref": "#/$defs/n"}}}, "required": ["v"]}}, "$ref": "#/$defs/n"},
     {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]}, None),
    ({"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#"}, "minItems": 1}]}, [1, [2, [3]]], None),
    ({"$id": "https://example.com/numbers", "$ref": "list",
      "$defs": {"item": {"$dynamicAnchor": "item", "$ref": "list"}}},   # lists of lists
     [[], [[]]], {"https://example.com/list": {"$id": "https://example.com/list",
                                                   "$defs": {"item": {"$dynamicAnchor": "item"}},
                                                   "type": "array", "items": {"$dynamicRef": "#item"}}}),
]


@pytest.mark.parametrize("schema,value,registry", _RECURSIVE)
@pytest.mark.parametrize("indent", [2, 4])
def test_recursive_schemas_under_an_indentation(compiler, schema, value, registry, indent):
    # the rules of an indentation depend on the depth: a recursive reference gets those of each
    # depth up to max_depth, where a value that can only be a container has no rule left (the
    # mask oracle found it "used but has no definition", so that such schemas did not compile)
    g = compiler.compile_json_schema(schema, registry=registry, whitespace=indent)
    assert accepts_text(g, json.dumps(value, indent=indent)) and not accepts_text(g, json.dumps(value))
    shallow = compiler.compile_json_schema(schema, registry=registry, whitespace=indent, max_depth=2)
    assert accepts_text(shallow, json.dumps(value, indent=indent)) == (_depth(value) <= 2)


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def test_max_depth_bounds_an_indented_recursion(compiler):
    g = compiler.compile_json_schema({"type": "array", "items": {"$ref": "#"}}, whitespace=2, max_depth=3)
    assert accepts_text(g, json.dumps([[[]]], indent=2)) and not accepts_text(g, json.dumps([[[[]]]], indent=2))
    m = stencil.Matcher(g)   # at the last level only the empty array is left: "[" then "]"
    assert m.accept_string("[\n  [\n    [") and not m.fork().accept_string("\n") and m.accept_string("]")


def test_whitespace_runs_are_bounded(compiler):
    g = compiler.compile_json_schema({"type": "array"}, max_whitespace_run=4)
    assert accepts_text(g, "[1,    2]")
    assert not accepts_text(g, "[1," + " " * 40 + "2]")


def test_property_order(compiler):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
              "required": ["b"]}
    definition = compiler.compile_json_schema(schema)
    assert accepts_text(definition, '{"a": 1, "b": 2}') and accepts_text(definition, '{"b": 2}')
    assert not accepts_text(definition, '{"b": 2, "a": 1}')           # definition order only
    assert accepts_text(definition, '{"b": 2, "c": 3}')               # then the other keys
    assert not accepts_text(definition, '{"b": 2, "c": 3, "c": 4}')   # never the same key twice
    anyorder = compiler.compile_json_schema(schema, property_order="any")
    assert accepts_text(anyorder, '{"b": 2, "a": 1}') and accepts_text(anyorder, '{"c": 0, "b": 2}')
    assert not accepts_text(anyorder, '{"a": 1}')                     # required, in any order
    assert not accepts_text(anyorder, '{"b": 2, "b": 2}') and not accepts_text(anyorder, '{"b": 2, "a": 1, "a": 1}')


_CLOSE_NEEDS = [   # (schema, a member, the shortest rest in compact JSON)
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, '"b":1', ',"a":0}'),
    ({"type": "object", "minProperties": 2}, '"b":1', ',"":0}'),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}, "required": ["a"],
      "additionalProperties": False}, '"b":1', ',"a":0}'),
    ({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "required": ["a", "b"], "minProperties": 3},
     '"a":1', ',"b":0,"":0}'),
    ({"type": "object", "dependentRequired": {"b": ["a"]}}, '"b":1', ',"a":0}'),
]


@pytest.mark.parametrize("schema,member,rest", _CLOSE_NEEDS)
@pytest.mark.parametrize("whitespace", ["compact", "flexible", 2])
def test_objects_in_any_order_close_only_with_what_they_need(schema, member, rest, whitespace):
    # Required keys and minProperties in any order are counted by the member list, not only by the
    # check as the object ends: with an indentation the newline before "}" was a dead end (the mask
    # oracle's indent_required_key), and the budget's shortest completion was "}" (one token)
    info = stencil.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b"<eos>"], eos_token_ids=256)
    g = stencil.GrammarCompiler(info).compile_json_schema(schema, property_order="any", whitespace=whitespace)
    if whitespace == 2:
        text, closing = '{\n  ' + member.replace(":", ": "), "\n"
        rest = rest.replace(",", ",\n  ").replace(":", ": ").replace("}", "\n}")
    else:
        text, closing = "{" + member, "}"
    m = stencil.Matcher(g)
    assert m.accept_string(text) and not m.fork().accept_string(closing)
    assert m.min_completion_tokens() == len(rest.encode()), rest
    assert m.accept_string(rest) and m.is_accepting()


def test_objects_in_any_order_that_cannot_close_are_an_error():
    # minProperties past the keys an object may have: every '{' was a dead end in any order
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False,
              "minProperties": 2}
    for order in ("any", "definition"):
        with pytest.raises(stencil.GrammarError, match="no JSON value satisfies"):
            json_schema_grammar(schema, property_order=order)


def test_min_max_properties_in_both_orders(compiler):
    schema = {"type": "object", "properties": {"a": {}, "b": {}}, "minProperties": 2, "maxProperties": 3}
    for order in ("definition", "any"):
        g = compiler.compile_json_schema(schema, property_order=order)
        assert not accepts_text(g, '{"a": 1}') and accepts_text(g, '{"a": 1, "b": 2}') and accepts_text(g, '{"a": 1, "x": 0}')
        assert accepts_text(g, '{"a": 1, "b": 2, "x": 0}') and not accepts_text(g, '{"a": 1, "b": 2, "x": 0, "y": 0}')


def test_unique_items_for_any_item_type(compiler):
    g = compiler.compile_json_schema({"type": "array", "uniqueItems": True})
    assert accepts_text(g, '[1, "1", [1], {"a": 1}, {"a": 2}]')
    for dup in ('[1, 1.0]', '[{"a": 1, "b": 2}, {"b": 2, "a": 1}]', '[[1, [2]], [1, [2]]]', '["x", "\\u0078"]'):
        assert not accepts_text(g, dup), dup


def test_dynamic_reference_follows_the_dynamic_scope(compiler):
    # a generic list whose items are whatever the schema that uses it says they are
    generic = {"$id": "https://example.com/list", "$defs": {"item": {"$dynamicAnchor": "item"}},
               "type": "array", "items": {"$dynamicRef": "#item"}}
    numbers = {"$id": "https://example.com/numbers", "$ref": "list",
               "$defs": {"item": {"$dynamicAnchor": "item", "type": "number"}}}
    g = compiler.compile_json_schema(numbers, registry={"https://example.com/list": generic})
    assert accepts_text(g, "[1, 2.5]") and not accepts_text(g, '[1, "x"]')
    g = compiler.compile_json_schema({"$ref": "https://example.com/list"},
                                     registry={"https://example.com/list": generic})
    assert accepts_text(g, '[1, "x"]')


def test_recursive_schema_and_registry(compiler):
    tree = {"$id": "https://example.com/tree", "type": "object",
            "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
            "additionalProperties": False}
    g = compiler.compile_json_schema({"$ref": "https://example.com/tree"},
                                     registry={"https://example.com/tree": tree})
    assert accepts_text(g, '{"v": 1, "kids": [{"v": 2, "kids": []}, {}]}')
    assert not accepts_text(g, '{"v": 1, "kids": [{"v": "x"}]}')


def test_one_of_exact_where_branches_overlap(compiler):
    g = compiler.compile_json_schema({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, property_order="any")
    assert accepts_text(g, '{"a": 1}') and accepts_text(g, '{"b": 1}')
    assert not accepts_text(g, '{"a": 1, "b": 1}') and not accepts_text(g, '{}')


def _discriminated(n: int, wrap) -> dict:
    """n object branches told apart by a `kind` constant that only the parent requires (a branch
    alone allows an object without it: the branches overlap), each with a property of its own."""
    branches = [{"$ref": f"#/$defs/b{i}"} for i in range(n)]
    defs = {f"b{i}": {"type": "object", "properties": {"kind": {"const": f"k{i}"}, f"p{i}": {"type": "integer"}}}
            for i in range(n)}
    outer = wrap(branches)
    return {**outer, "$defs": {**defs, **outer.get("$defs", {})}, "type": "object", "required": ["kind"]}


@pytest.mark.parametrize("wrap", [lambda b: {"allOf": [{"description": "one", "oneOf": b}]},
                                  lambda b: {"allOf": [{"$ref": "#/$defs/one"}], "$defs": {"one": {"oneOf": b}}},
                                  lambda b: {"oneOf": b}], ids=["allOf", "allOf-ref", "beside"])
def test_one_of_in_all_of_reads_under_its_siblings(compiler, wrap):
    """A oneOf alone in an allOf member (or behind its lone $ref) is read under the schema's other
    keywords, as one beside them is: the parent's `required` proves the branches disjoint, so no
    branch takes the complements of the others (n^2 work: 57 ms for 18 Azure table kinds). Four
    times the branches: ~4x the calls, not ~16x; and exactly one branch's objects are taken."""
    small, large = (python_calls(lambda n=n: json_schema_grammar(_discriminated(n, wrap))) for n in (4, 16))
    assert large < 7 * small, (small, large)
    g = compiler.compile_json_schema(_discriminated(4, wrap), property_order="any")
    assert accepts_text(g, '{"kind": "k1", "p1": 2}') and accepts_text(g, '{"p3": 1, "kind": "k3"}')
    assert not accepts_text(g, '{"kind": "k1", "p1": "x"}') and not accepts_text(g, '{"p1": 2}')
    assert not accepts_text(g, '{"kind": "k9"}')


def test_compile_json_any_value(compiler):
    g = compiler.compile_json()
    for text in ('null', '[1, {"a": [true, "x"]}]', '-1.5e3', '"\\ud83d\\ude00"'):
        assert accepts_text(g, text), text
    assert not accepts_text(g, '{"a": 1, "a": 2}') and not accepts_text(g, "[1,]")


def test_compile_pydantic(compiler):
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        name: str
        qty: int = pydantic.Field(ge=1, le=10)
        tags: list[str] = []

    g = compiler.compile_pydantic(Item)
    assert accepts_text(g, Item(name="x", qty=3).model_dump_json())
    assert accepts_text(g, '{"name": "x", "qty": 10}')
    assert not accepts_text(g, '{"name": "x", "qty": 11}') and not accepts_text(g, '{"qty": 1}')
    assert accepts_text(compiler.compile_pydantic(list[int]), "[1, 2]")


def test_check_report():
    text, ok = check_report({"type": "object", "x-kind": 1, "properties": {"a": {"format": "int32"}}})
    assert ok and "OK" in text and "x-kind" in text and "int32" in text
    text, ok = check_report({"$recursiveAnchor": True,
                             "properties": {"a": {"format": "regex"}, "b": {"$recursiveRef": "#"}}})
    assert not ok and "format at /properties/a/format" in text and "$recursiveRef at /properties/b" in text


def test_key_spelling_plain_allows_only_the_plain_spelling(compiler):
    schema = {"type": "object", "properties": {"ab": {"type": "integer"}, "é\"x": {"type": "integer"}},
              "required": ["ab"], "additionalProperties": False}
    anyspelling = compiler.compile_json_schema(schema)
    plain = compiler.compile_json_schema(schema, key_spelling="plain")
    for text in ('{"ab": 1}', '{"ab": 1, "é\\"x": 2}'):
        assert accepts_text(anyspelling, text) and accepts_text(plain, text)
    for text in ('{"a\\u0062": 1}', '{"ab": 1, "\\u00e9\\"x": 2}', '{"ab": 1, "é\\u0022x": 2}'):
        assert accepts_text(anyspelling, text) and not accepts_text(plain, text)
    # Other keys keep every spelling, and a declared name spelled otherwise is not "another key".
    open_schema = {"type": "object", "properties": {"ab": {"type": "integer"}}}
    g = compiler.compile_json_schema(open_schema, key_spelling="plain", property_order="any")
    assert accepts_text(g, '{"ab": 1, "c\\u0064": "x"}') and not accepts_text(g, '{"a\\u0062": "x"}')
    with pytest.raises(stencil.GrammarError, match="key_spelling"):
        compiler.compile_json_schema(schema, key_spelling="ascii")


def test_same_schema_same_grammar_whatever_the_memory_layout():
    """Merged sub-schemas are read in creation order, never in the order of memory addresses: the
    first of two merged objects gives the property order, so an address-ordered read made
    definition order (and so which documents are valid) change from one compile to the next."""
    schema = {
        "allOf": [{"$ref": "#/definitions/base"}, {"$ref": "#/definitions/with-id"},
                  {"oneOf": [{"not": {"$ref": "#/definitions/kind"}},
                             {"allOf": [{"$ref": "#/definitions/kind"}, {"$ref": "#/definitions/more"}]}]}],
        "definitions": {
            "base": {"type": "object", "required": ["type", "props"],
                     "properties": {"type": {"type": "string"}, "props": {"type": "object"}}},
            "with-id": {"properties": {"props": {"required": ["id"], "properties": {"id": {"type": "string"}}}}},
            "kind": {"properties": {"type": {"enum": ["car"]}}},
            "more": {"properties": {"props": {"properties": {"make": {"type": "string"}, "year": {"type": "integer"}}}}},
        },
    }
    texts = set()
    for i in range(40):
        junk = [{"k": j} for j in range(i * 7)]  # other objects between compiles move later allocations
        texts.add(str(json_schema_grammar(json.loads(json.dumps(schema)))))
        del junk
    assert len(texts) == 1


def _parser_items(m) -> int:
    """The Earley items the matcher's parser holds."""
    return matcher_stats(m).parser_items


@pytest.mark.parametrize("schema, first, rest", [
    ({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 1000}, "7", "7"),
    ({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "maxItems": 1000}, '"s"', "7"),
    ({"type": "array", "contains": {"const": 3}, "maxContains": 2, "maxItems": 1000}, "3", "1"),
])
def test_large_max_items_exact_at_depth(compiler, schema, first, rest):
    """maxItems 1000: the 1000th item may close the array and may not be followed by another, the
    first items too; the parser holds a bounded number of items per row however deep the list
    (right-nested lists completed through Leo's memo, not one prediction per count)."""
    g = compiler.compile_json_schema(schema)
    m = stencil.Matcher(g)
    assert m.accept_string("[" + first)
    per_row = []
    for n in range(2, 1001):
        assert m.accept_string(", " + rest), n
        if n % 100 == 0:
            per_row.append(_parser_items(m) / n)
    assert m.accept_string("]") and m.is_accepting()
    over = stencil.Matcher(g)
    assert over.accept_string("[" + first + (", " + rest) * 999)
    assert not over.fork().accept_string(", " + rest)
    assert over.accept_string("]")
    if "minItems" in schema:
        assert not accepts_text(g, "[" + first + "]") and accepts_text(g, "[" + first + ", " + rest + "]")
    if "contains" in schema:
        assert accepts_text(g, "[3, 1, 3]") and not accepts_text(g, "[3, 1, 3, 3]") and not accepts_text(g, "[1, 1]")
    # items per byte of input stay flat: the 1000th item costs what the 100th did
    assert max(per_row) < 2 * min(per_row), per_row


def test_right_recursive_gbnf_list_parses_in_linear_items(compiler):
    """`list ::= item ("," list)?` nests one level per item; completing it at each item must not
    walk all the levels (Leo's memo), or the parser would hold a quadratic number of items."""
    g = compiler.compile_gbnf('root ::= "[" list "]"\nlist ::= item ("," list)?\nitem ::= [0-9]+\n')
    m = stencil.Matcher(g)
    assert m.accept_string("[1")
    sizes = {}
    for n in range(2, 3001):
        assert m.accept_string(",%d" % n)
        if n in (300, 3000):
            sizes[n] = _parser_items(m)
    assert m.accept_string("]") and m.is_accepting()
    assert sizes[3000] < 15 * sizes[300], sizes   # linear: about 10x; without the memo about 100x
    assert not accepts_text(g, "[1,2,]") and not accepts_text(g, "[]") and accepts_text(g, "[1,2,3]")
    # forks keep their own memo: each branch goes on from the shared rows to its own end
    base = stencil.Matcher(g)
    assert base.accept_string("[" + ",".join(str(i) for i in range(500)))
    a, b = base.fork(), base.fork()
    assert a.accept_string(",7,8]") and a.is_accepting()
    assert b.accept_string(",9") and not b.fork().accept_string("]]") and b.accept_string("]") and b.is_accepting()
    assert not base.fork().accept_string(",]") and base.accept_string("]") and base.is_accepting()


@pytest.mark.parametrize("order", ["any", "definition"])
@pytest.mark.parametrize("schema", [
    {"type": "object", "propertyNames": {"enum": ["a", "b"]}, "minProperties": 3},
    {"type": "object", "properties": {"a": {}}, "propertyNames": {"enum": ["a", "b"]}, "minProperties": 3},
    {"type": "object", "propertyNames": {"const": "a"}, "minProperties": 2},
])
def test_more_members_than_property_names_allow_is_no_value(order, schema):
    """minProperties beyond the keys propertyNames allows: no object satisfies it, a GrammarError
    at compile time (it compiled, and every output dead-ended at its last member)."""
    tok = stencil.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b"<eos>"], eos_token_ids=[256])
    with pytest.raises(stencil.GrammarError, match="no JSON value satisfies"):
        stencil.GrammarCompiler(tok).compile_json_schema(schema, property_order=order)
    fewer = dict(schema, minProperties=schema["minProperties"] - 1)
    stencil.GrammarCompiler(tok).compile_json_schema(fewer, property_order=order)


def test_formulas_of_lengths_alone_are_ranges_of_lengths():
    """Random formulas of Length atoms under And, Or and Not (oneOf over strings that differ by
    maxLength makes them): the ranges they become admit exactly the lengths the formula does."""
    import random
    from stencil.grammar.json.schema.core.formulas import And, Length, Not, Or, str_eval
    from stencil.grammar.json.schema.lang.scalars import length_set
    rng = random.Random(5)

    def formula(depth):
        if depth == 0 or rng.random() < 0.3:
            lo = rng.randrange(0, 8)
            return Length(lo, rng.choice([None, lo + rng.randrange(0, 5)]))
        kind = rng.randrange(3)
        if kind == 0:
            return Not(formula(depth - 1))
        items = tuple(formula(depth - 1) for _ in range(rng.randrange(2, 4)))
        return And(items) if kind == 1 else Or(items)

    for _ in range(400):
        f = formula(3)
        spans = length_set(f)
        assert all(a[1] is not None and a[1] + 1 < b[0] for a, b in zip(spans, spans[1:]))   # sorted, apart
        for n in range(16):
            assert (str_eval(f, "x" * n)) == any(n >= lo and (hi is None or n <= hi) for lo, hi in spans), (f, n)


def test_string_formulas_evaluate_as_their_definition_says():
    """str_eval (which scans a string for lone surrogates once and looks wide unions of names up in
    a set) against the definition, written out here: random formulas of names, lengths and
    patterns under And, Or (up to 14 items) and Not, on ASCII, non-ASCII and lone-surrogate strings."""
    import random
    import re
    from stencil.grammar.json.schema.core.formulas import FALSE, TRUE, And, Const, Length, Not, Or, Pattern, str_eval
    rng = random.Random(11)
    words = ["a", "ab", "b", "\u00e9t\u00e9", "x1", "", "\ud800", "a\udc00"]
    patterns = ["^a", "b$", "[0-9]", "^.{2}$"]

    def truth(f, s):
        k = type(f)
        if k is Or:
            return any(truth(x, s) for x in f.items)
        if k is And:
            return all(truth(x, s) for x in f.items)
        if k is Not:
            return not truth(f.item, s)
        if f in (TRUE, FALSE):
            return f == TRUE
        if k is Const:
            return s == f.text
        if any(0xD800 <= ord(c) <= 0xDFFF for c in s):
            return False
        if k is Length:
            return f.lo <= len(s) and (f.hi is None or len(s) <= f.hi)
        return re.search(f.pattern, s) is not None

    def formula(depth):
        if depth == 0 or rng.random() < 0.3:
            kind = rng.randrange(4)
            if kind == 0:
                return Const(rng.choice(words))
            if kind == 1:
                return Length(rng.randrange(3), rng.choice([None, 2, 4]))
            return Pattern(rng.choice(patterns)) if kind == 2 else rng.choice([TRUE, FALSE])
        kind = rng.randrange(3)
        if kind == 0:
            return Not(formula(depth - 1))
        n = rng.choice([2, 3, 9, 14])
        if n > 3:   # a wide union or intersection: names, as additionalProperties makes, and a few others
            items = tuple(Const(rng.choice(words)) if rng.random() < 0.8 else formula(0) for _ in range(n))
        else:
            items = tuple(formula(depth - 1) for _ in range(n))
        return And(items) if kind == 1 else Or(items)

    for _ in range(300):
        f = formula(3)
        for _ in range(2):   # (asked again: the union's set comes from the memo)
            for w in words:
                assert str_eval(f, w) == truth(f, w), (f, w)


def test_a_oneof_of_string_lengths_compiles_to_a_counted_body():
    # (the tuning half's o9804: its budget bound's lexeme search ran 8 s through the complements)
    import time
    from tests.support.tokenizers import load_tokenizer
    info = load_tokenizer("smollm2")[0]
    schema = {"oneOf": [{"type": "string", "maxLength": 64}, {"type": "string", "maxLength": 255},
                        {"type": "string", "maxLength": 2048}]}
    g = stencil.GrammarCompiler(info).compile_json_schema(schema)
    t0 = time.thread_time()
    assert stencil.Matcher(g).min_completion_tokens() > 2   # 256 characters at least
    assert time.thread_time() - t0 < 1.0   # (8 s before: the search's time limit)
    for n, ok in ((255, False), (256, True), (2048, True), (2049, False), (10, False)):
        m = stencil.Matcher(g)
        assert (m.accept_string(json.dumps("x" * n)) and m.is_accepting()) == ok, n
