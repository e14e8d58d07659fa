"""Every keyword stencil says it enforces (``read.common.UNDERSTOOD``, the union of
``KEYWORD_GROUPS``) is enforced where it stands alone in a schema object: a keyword that a group
left out would be accepted and never read (review of 2026-11-29: the groups of read/types.py
were a second list, and nothing tied it to the first). Each case is a schema with the keyword
alone (beside ``type``/``items``/``if`` where the keyword only means something beside it) and an
instance that a schema without the keyword accepts and the keyword refuses."""
from __future__ import annotations

import json

import pytest

import stencil
from stencil.grammar.json.schema.read.common import KEYWORD_GROUPS, UNDERSTOOD

# keyword -> (schema with the keyword, instance it refuses, instance it accepts); the keyword's
# schema less the keyword must accept both
CASES = {
    "type": ({"type": "string"}, 1, "a"),
    "enum": ({"enum": [1, 2]}, 3, 2),
    "const": ({"const": "x"}, "y", "x"),
    "minimum": ({"minimum": 5}, 4, 5),
    "maximum": ({"maximum": 5}, 6, 5),
    "exclusiveMinimum": ({"exclusiveMinimum": 5}, 5, 6),
    "exclusiveMaximum": ({"exclusiveMaximum": 5}, 5, 4),
    "multipleOf": ({"multipleOf": 3}, 4, 9),
    "minLength": ({"minLength": 2}, "a", "ab"),
    "maxLength": ({"maxLength": 2}, "abc", "ab"),
    "pattern": ({"pattern": "^a+$"}, "b", "aa"),
    "format": ({"format": "date"}, "tomorrow", "2026-11-29"),
    "prefixItems": ({"prefixItems": [{"type": "integer"}]}, ["x"], [1, "x"]),
    "items": ({"items": {"type": "integer"}}, [1, "x"], [1, 2]),
    "additionalItems": ({"items": [{"type": "integer"}], "additionalItems": False,
                         "$schema": "http://json-schema.org/draft-07/schema#"}, [1, 2], [1]),
    "minItems": ({"minItems": 2}, [1], [1, 2]),
    "maxItems": ({"maxItems": 1}, [1, 2], [1]),
    "uniqueItems": ({"uniqueItems": True}, [1, 1], [1, 2]),
    "contains": ({"contains": {"type": "string"}}, [1], [1, "a"]),
    "minContains": ({"contains": {"type": "string"}, "minContains": 2}, [1, "a"], ["a", "b"]),
    "maxContains": ({"contains": {"type": "string"}, "maxContains": 1}, ["a", "b"], ["a", 1]),
    "properties": ({"properties": {"a": {"type": "integer"}}}, {"a": "x"}, {"a": 1}),
    "patternProperties": ({"patternProperties": {"^a": {"type": "integer"}}}, {"ab": "x"}, {"ab": 1}),
    "additionalProperties": ({"additionalProperties": False}, {"a": 1}, {}),
    "required": ({"required": ["a"]}, {"b": 1}, {"a": 1}),
    "propertyNames": ({"propertyNames": {"maxLength": 1}}, {"ab": 1}, {"a": 1}),
    "minProperties": ({"minProperties": 1}, {}, {"a": 1}),
    "maxProperties": ({"maxProperties": 1}, {"a": 1, "b": 2}, {"a": 1}),
    "dependentRequired": ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, {"a": 1, "b": 2}),
    "dependentSchemas": ({"dependentSchemas": {"a": {"required": ["b"]}}}, {"a": 1}, {"a": 1, "b": 2}),
    "dependencies": ({"dependencies": {"a": ["b"]}, "$schema": "http://json-schema.org/draft-07/schema#"},
                     {"a": 1}, {"a": 1, "b": 2}),
    "$ref": ({"$ref": "#/$defs/s", "$defs": {"s": {"type": "string"}}}, 1, "a"),
    "allOf": ({"allOf": [{"type": "string"}]}, 1, "a"),
    "anyOf": ({"anyOf": [{"type": "string"}]}, 1, "a"),
    "oneOf": ({"oneOf": [{"type": "string"}]}, 1, "a"),
    "not": ({"not": {"type": "string"}}, "a", 1),
    "if": ({"if": {"type": "string"}, "then": {"minLength": 2}}, "a", "ab"),
    "then": ({"if": {"type": "string"}, "then": {"minLength": 2}}, "a", 1),
    "else": ({"if": {"type": "string"}, "else": {"minimum": 2}}, 1, "a"),
    "unevaluatedItems": ({"prefixItems": [{}], "unevaluatedItems": False}, [1, 2], [1]),
    "unevaluatedProperties": ({"properties": {"a": {}}, "unevaluatedProperties": False}, {"b": 1}, {"a": 1}),
}


def test_every_keyword_has_one_group():
    seen: dict = {}
    for group, keys in KEYWORD_GROUPS.items():
        for k in keys:
            assert k not in seen, (k, group, seen.get(k))
            seen[k] = group
    assert set(seen) == UNDERSTOOD == set(CASES), set(CASES) ^ UNDERSTOOD


@pytest.fixture(scope="module")
def compiler(ascii_tokenizer):
    return stencil.GrammarCompiler(ascii_tokenizer)


def _accepts(compiler, schema, value) -> bool:
    m = stencil.Matcher(compiler.compile_json_schema(schema, whitespace="compact"))
    text = json.dumps(value, separators=(",", ":"))
    return m.accept_string(text) and m.is_accepting()


@pytest.mark.parametrize("keyword", sorted(CASES))
def test_a_keyword_standing_alone_is_enforced(compiler, keyword):
    schema, refused, accepted = CASES[keyword]
    without = {k: v for k, v in schema.items() if k != keyword}
    assert _accepts(compiler, without, refused) and _accepts(compiler, without, accepted), "the case is wrong"
    assert _accepts(compiler, schema, accepted), (keyword, accepted)
    assert not _accepts(compiler, schema, refused), (keyword, "ignored:", refused, "accepted")
