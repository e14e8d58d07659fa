"""Malformed keyword values (issue 40, review N10/N11): every keyword stencil reads takes a value of
one kind (a schema, a list or map of schemas, a string, a count...), and a value of another kind is
a GrammarError naming the keyword and the JSON pointer of the value (or of the item or member that
is wrong), at the root and deep inside, never a TypeError from deeper in (``unhashable type:
'list'``) nor a keyword silently skipped. Unknown keywords and annotations stay unchecked."""
from __future__ import annotations

import re

import pytest

import stencil
from stencil.grammar.json.schema import SchemaInfo, json_schema_grammar
from stencil.grammar.json.schema.core.keywords import KEYWORD_VALUES

OBJ = "must be an object or a boolean"

# keyword -> (a wrong value, where the error points below the keyword, what the message says)
BAD = {
    "additionalProperties": ([1], "", OBJ),
    "additionalItems": ([1], "", OBJ),
    "contains": ([1], "", OBJ),
    "propertyNames": ([1], "", OBJ),
    "not": ([1], "", OBJ),
    "if": ([1], "", OBJ),
    "then": ("x", "", OBJ),
    "else": (3, "", OBJ),
    "unevaluatedItems": ([1], "", OBJ),
    "unevaluatedProperties": ([1], "", OBJ),
    "contentSchema": ([], "", OBJ),
    "items": ([{}, [1]], "/1", OBJ),
    "allOf": ([], "", "must be a non-empty list of schemas"),
    "anyOf": ([[1]], "/0", OBJ),
    "oneOf": ({"a": {}}, "", "must be a non-empty list of schemas"),
    "prefixItems": ([True, 1], "/1", OBJ),
    "properties": ({"a/b": [1]}, "/a~1b", OBJ),
    "patternProperties": ({"^x": None}, "/^x", OBJ),
    "$defs": ({"d": "string"}, "/d", OBJ),
    "definitions": ([], "", "must be an object whose values are schemas"),
    "dependentSchemas": ({"a": ["b"]}, "/a", OBJ),
    "dependencies": ({"a": [1]}, "/a", "must be a schema or a list of property names"),
    "dependentRequired": ({"a": {}}, "/a", "must be a list of property names"),
    "required": (["a", 3], "/1", "must be a string, got 3"),
    "type": (["string", 1], "/1", "must be a string"),
    "enum": ("red", "", "must be a list"),
    "minLength": (-1, "", "must be a non-negative integer, got -1"),
    "maxLength": (1.5, "", "must be a non-negative integer, got 1.5"),
    "minItems": ("2", "", "must be a non-negative integer"),
    "maxItems": (True, "", "must be a non-negative integer, got true"),
    "minContains": (None, "", "must be a non-negative integer, got null"),
    "maxContains": ([2], "", "must be a non-negative integer"),
    "minProperties": (-0.5, "", "must be a non-negative integer"),
    "maxProperties": ({}, "", "must be a non-negative integer"),
    "minimum": ("0", "", "must be a finite number"),
    "maximum": (float("inf"), "", "must be a finite number"),
    "exclusiveMinimum": ("1", "", "must be a finite number or a boolean"),
    "exclusiveMaximum": ([1], "", "must be a finite number or a boolean"),
    "multipleOf": (0, "", "must be a finite number greater than 0"),
    "pattern": (["a"], "", "must be a string"),
    "format": (["date"], "", "must be a string"),
    "contentEncoding": (64, "", "must be a string"),
    "$ref": (["#"], "", "must be a string"),
    "$dynamicRef": (1, "", "must be a string"),
    "$recursiveRef": (True, "", "must be a string"),
    "$id": ([1], "", "must be a string"),
    "$schema": (7, "", "must be a string"),
    "$anchor": ({}, "", "must be a string"),
    "$dynamicAnchor": (1, "", "must be a string"),
    "uniqueItems": ("yes", "", 'must be a boolean, got "yes"'),
    "$recursiveAnchor": (1, "", "must be a boolean"),
}


def test_every_keyword_of_the_table_has_a_case():
    assert set(BAD) == set(KEYWORD_VALUES)


def _error(schema, **options):
    with pytest.raises(stencil.GrammarError) as e:
        json_schema_grammar(schema, **options)
    return e.value


@pytest.mark.parametrize("keyword", sorted(BAD))
@pytest.mark.parametrize("place", ["", "/properties/p~1q/items"])
def test_a_wrong_value_names_keyword_and_pointer(keyword, place):
    value, below, what = BAD[keyword]
    schema = {keyword: value}
    if place:   # deep inside: an object's property whose items have the keyword
        schema = {"type": "object", "properties": {"p/q": {"type": "array", "items": schema}}}
    err = _error(schema)
    pointer = f"{place}/{keyword}{below}"
    assert str(err).startswith(f"{keyword} at {pointer}: {what}"), str(err)
    assert (err.keyword, err.pointer) == (keyword, pointer)


@pytest.mark.parametrize("schema,pointer", [
    # the review's cases (N10: TypeError "unhashable type: 'list'"; N11: compiled without an error)
    ({"additionalProperties": [1]}, "/additionalProperties"), ({"items": [[1]]}, "/items/0"),
    ({"not": [1]}, "/not"), ({"contains": [1]}, "/contains"), ({"propertyNames": [1]}, "/propertyNames"),
    ({"unevaluatedProperties": [1]}, "/unevaluatedProperties"), ({"anyOf": [[1]]}, "/anyOf/0"),
    ({"if": [1]}, "/if"), ({"additionalItems": [1]}, "/additionalItems"), ({"format": [1]}, "/format"),
    ({"type": "string", "format": ["date"]}, "/format"), ({"$id": [1]}, "/$id"),
])
def test_the_reviews_cases_through_the_compiler(compiler, schema, pointer):
    with pytest.raises(stencil.GrammarError, match=re.escape(f"at {pointer}: must be ")):
        compiler.compile_json_schema(schema)


def test_a_malformed_value_is_an_error_even_when_lenient():
    # lenient mode ignores what cannot be enforced, not a schema that is not one
    assert _error({"type": "string", "format": ["date"]}, lenient=True).pointer == "/format"


def test_a_malformed_value_in_another_document_names_it():
    registry = {"https://example.com/other.json": {"$defs": {"a": {"minLength": "3"}}}}
    with pytest.raises(stencil.GrammarError) as e:
        json_schema_grammar({"$ref": "https://example.com/other.json#/$defs/a"}, registry=registry)
    assert e.value.pointer == "https://example.com/other.json#/$defs/a/minLength"


D4, D6, D7 = (f"http://json-schema.org/draft-0{n}/schema#" for n in (4, 6, 7))
D2019 = "https://json-schema.org/draft/2019-09/schema"


@pytest.mark.parametrize("schema", [
    {"$schema": D7, "items": [{"type": "integer"}], "additionalItems": False},   # a tuple: draft 7's items
    {"items": [{"type": "integer"}, True], "additionalItems": {"type": "string"}},  # read in 2020-12 too
    {"$schema": D4, "minimum": 0, "exclusiveMinimum": True},                      # draft 4's flag
    {"$schema": D7, "dependencies": {"a": ["b"], "c": {"required": ["d"]}}},      # names or a schema
    {"required": True, "type": "object"},                  # draft 3's per-property flag, seen in the wild
    {"type": "string", "minLength": 2.0, "maxLength": 3.0},                        # 2.0 is the integer 2
    {"type": "integer", "multipleOf": 0.5, "maximum": 1e3},
    {"x-unknown": [1], "title": 5, "description": [], "default": {}, "examples": 3, "$comment": 1},
    {"$schema": D6, "if": [1], "then": 3},                 # not keywords of draft 6: unknown, unchecked
])
def test_legal_and_unread_values_still_compile(schema):
    json_schema_grammar(schema)


def test_a_keyword_newer_than_the_draft_is_listed_not_checked():
    info = SchemaInfo()
    json_schema_grammar({"$schema": D6, "type": "integer", "if": [1]}, info=info)
    assert info.unknown_keywords == {"if (not in draft 6)": "/if"}


@pytest.mark.parametrize("schema,pointer,what", [
    ({"$schema": D7, "items": [{"type": "integer"}, [1]]}, "/items/1", OBJ),
    ({"$schema": D7, "items": [{}], "additionalItems": "no"}, "/additionalItems", OBJ),
    ({"$schema": D4, "dependencies": {"a": ["b", 2]}}, "/dependencies/a", "must be a schema or a list of property names"),
    ({"$schema": D4, "exclusiveMaximum": "yes", "maximum": 3}, "/exclusiveMaximum", "must be a finite number or a boolean"),
    ({"$schema": D2019, "$recursiveAnchor": "yes"}, "/$recursiveAnchor", "must be a boolean"),
])
def test_draft_specific_keywords(schema, pointer, what):
    err = _error(schema)
    assert err.pointer == pointer and f"at {pointer}: {what}" in str(err)
