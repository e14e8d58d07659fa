"""JSON Schemas the engine integration tests generate with, written here so that a clone runs them
(no data from outside the repository).

- ``SCHEMAS``: ten small object schemas of the kinds real users send (an address, an event, an
  order line, ...): short values (``maxLength``, ``maxItems``, enums), so that greedy decoding with
  the 135M default model ends well inside a few hundred tokens.
- ``LLGUIDANCE_REFUSED``: schemas that stencil compiles exactly but that llguidance (1.7 with vLLM 0.32, 1.9; vLLM's
  ``guidance`` backend) refuses in its validator (``Unknown format``, ``Unimplemented keys``,
  lookahead in ``pattern``, ``minProperties`` with optional keys); the vLLM test checks that
  llguidance still refuses each one, so the list keeps meaning what it says.
- ``OPEN_ENDED``: schemas with unbounded strings and arrays, where greedy decoding rambles on until
  ``max_tokens`` unless the token budget closes the output in time.
"""
from __future__ import annotations

import json

import pytest

SCHEMAS = [
    ("address", {"type": "object", "properties": {
        "street": {"type": "string", "maxLength": 30}, "city": {"type": "string", "maxLength": 20},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["street", "city", "zip"],
        "additionalProperties": False}),
    ("event", {"type": "object", "properties": {
        "title": {"type": "string", "maxLength": 24}, "day": {"type": "integer", "minimum": 1, "maximum": 31},
        "online": {"type": "boolean"}}, "required": ["title", "day", "online"]}),
    ("order_line", {"type": "object", "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"}, "qty": {"type": "integer", "minimum": 1,
                                                                           "maximum": 99},
        "price": {"type": "number", "minimum": 0, "maximum": 1000}}, "required": ["sku", "qty", "price"]}),
    ("person", {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "email": {"type": "string", "format": "email", "maxLength": 40}}, "required": ["name", "age"]}),
    ("colour", {"type": "object", "properties": {
        "name": {"enum": ["red", "green", "blue", "black"]}, "hex": {"type": "string", "pattern": "^#[0-9a-f]{6}$"}},
        "required": ["name", "hex"], "additionalProperties": False}),
    ("tags", {"type": "object", "properties": {
        "id": {"type": "integer", "minimum": 0, "maximum": 9999},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3}},
        "required": ["id", "tags"]}),
    ("point", {"type": "object", "properties": {
        "x": {"type": "number", "minimum": -100, "maximum": 100}, "y": {"type": "number", "minimum": -100,
                                                                        "maximum": 100},
        "label": {"type": ["string", "null"], "maxLength": 12}}, "required": ["x", "y", "label"]}),
    ("status", {"type": "object", "properties": {
        "code": {"type": "integer", "enum": [200, 404, 500]}, "ok": {"type": "boolean"},
        "message": {"type": "string", "maxLength": 30}}, "required": ["code", "ok"]}),
    ("book", {"type": "object", "properties": {
        "title": {"type": "string", "maxLength": 30}, "year": {"type": "integer", "minimum": 1450, "maximum": 2030},
        "author": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}},
                   "required": ["name"]}}, "required": ["title", "year", "author"]}),
    ("weather", {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 16}, "unit": {"enum": ["C", "F"]},
        "temps": {"type": "array", "items": {"type": "integer", "minimum": -50, "maximum": 50},
                  "minItems": 1, "maxItems": 3}}, "required": ["city", "unit", "temps"]}),
]

LLGUIDANCE_REFUSED = [
    ("format_topic", {"type": "object", "properties": {"topic": {"type": "string", "format": "topic",
                                                                 "maxLength": 20}},
                      "required": ["topic"]}),
    ("format_custom", {"type": "object", "properties": {"c": {"type": "string", "format": "color-hex",
                                                              "maxLength": 7}}, "required": ["c"]}),
    ("not", {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9,
                                                    "not": {"const": 3}}}, "required": ["a"]}),
    ("if_then", {"type": "object", "properties": {"k": {"enum": ["a", "b"]}, "v": {"type": "integer",
                                                                                 "minimum": 0, "maximum": 99}},
                 "required": ["k", "v"], "if": {"properties": {"k": {"const": "a"}}},
                 "then": {"properties": {"v": {"maximum": 5}}}}),
    ("uniqueItems", {"type": "object", "properties": {"xs": {"type": "array", "items": {"enum": [1, 2, 3]},
                                                             "uniqueItems": True, "maxItems": 3}},
                     "required": ["xs"]}),
    ("minProperties", {"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": False,
                       "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                                      "b": {"type": "integer", "minimum": 0, "maximum": 9}}}),
    ("dependentRequired", {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                                                            "b": {"type": "boolean"}},
                           "dependentRequired": {"a": ["b"]}, "additionalProperties": False}),
    ("contains", {"type": "object", "properties": {"xs": {"type": "array", "items": {"enum": [0, 1, 2]},
                                                          "contains": {"const": 1}, "maxItems": 3}},
                  "required": ["xs"]}),
    ("propertyNames", {"type": "object", "propertyNames": {"pattern": "^[a-z]{1,4}$"}, "maxProperties": 2,
                       "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9}}),
    ("lookahead", {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(?!x)[a-z]{2,5}$"}},
                   "required": ["s"]}),
    ("allOf_not", {"type": "object", "properties": {"a": {"allOf": [{"type": "integer", "minimum": 1},
                                                                    {"maximum": 5}, {"not": {"const": 2}}]}},
                   "required": ["a"]}),
    ("minContains", {"type": "object", "properties": {"xs": {"type": "array", "items": {"enum": [1, 2]},
                                                             "contains": {"const": 2}, "minContains": 2,
                                                             "maxItems": 3}}, "required": ["xs"]}),
    ("unevaluatedProperties", {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0,
                                                                      "maximum": 9}},
                               "unevaluatedProperties": False, "required": ["a"]}),
    ("dependentSchemas", {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                                                           "b": {"type": "string", "maxLength": 3}},
                          "dependentSchemas": {"a": {"required": ["b"]}}, "additionalProperties": False}),
]

OPEN_ENDED = [
    ("story", {"type": "object", "properties": {"title": {"type": "string"}, "text": {"type": "string"}},
               "required": ["title", "text"]}),
    ("list", {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}},
              "required": ["items"]}),
    ("nested", {"type": "object", "properties": {"name": {"type": "string"}, "friends": {
        "type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                                    "note": {"type": "string"}},
                                   "required": ["name", "note"]}}}, "required": ["name", "friends"]}),
    ("numbers", {"type": "object", "properties": {"values": {"type": "array", "items": {"type": "number"}},
                                                  "comment": {"type": "string"}}, "required": ["values", "comment"]}),
]


def schema_prompt(schema: dict) -> list[dict]:
    """Chat messages asking for one instance of ``schema`` (the schema in the system message)."""
    return [{"role": "system", "content": "Answer with a JSON object valid for this JSON Schema:\n"
             + json.dumps(schema)}, {"role": "user", "content": "Give an example."}]


def check_instance(schema: dict, text: str) -> None:
    """Raises (ValueError, jsonschema.ValidationError) unless ``text`` is a JSON instance of ``schema``."""
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.validators.validator_for(schema)
    validator(schema, format_checker=None).validate(json.loads(text))
