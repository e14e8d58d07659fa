"""Differential test on generated schemas: random schemas that mix every applicator (allOf, anyOf,
oneOf, not, if/then/else, dependentSchemas) with objects and arrays, random small values, and
stencil's verdict against the reference validator (``jsonschema``, Draft 2020-12) on each.

MaskBench's schemas (test_json_schema_differential.py) seldom combine applicators with the
keywords they interact with; the normalizer's simplifications live there: intersecting branches
with their parent, absorbing branches another covers, negating. Branches over the parent's own
properties (each naming some of them, some forbidding the rest; a generator mode, and a test of
their own): there ``model.covers`` once took a branch that forbids other keys to cover one naming
more (a valid document refused, and under ``not`` an invalid one accepted). A schema stencil
refuses must be one it documents as unsupported (a negated uniqueItems, more than three contains,
too many alternatives or key pattern classes) or one no value satisfies; an exception of another kind is a failure too, but a
compile timeout, which a few recursive schemas still meet (a oneOf whose branch refers back to it:
its normal form keeps growing until the cap on alternatives, past the test's 1 s).
"""
from __future__ import annotations

import json
import random

import jsonschema
import pytest
from grammar_oracle import accepts_text

import stencil

TOKS = [bytes([c]) for c in range(32, 127)] + ["é".encode(), b"<eos>"]
COMPILER = stencil.GrammarCompiler(stencil.TokenizerInfo.from_vocab(TOKS, eos_token_ids=[len(TOKS) - 1]),
                                   compile_timeout=1)
NAMES = ["a", "b", "c", "x1", "x2"]
LEAVES = [
    {"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {"type": "null"}, {"type": "number"},
    {"type": "string", "maxLength": 1}, {"type": "string", "minLength": 2}, {"type": "string", "pattern": "^[ab]+$"},
    {"type": "integer", "minimum": 0, "maximum": 3}, {"minimum": 1}, {"multipleOf": 2}, {"enum": ["a", 1, None]},
    {"const": "a"}, {"const": 1}, {}, True, False, {"not": {"type": "string"}}, {"type": ["string", "null"]},
    {"type": "object"}, {"type": "array"}, {"maxLength": 1}, {"enum": [[1], {"a": 1}, "b"]},
    {"pattern": "a"}, {"type": "string", "pattern": "b$"}, {"exclusiveMinimum": 1}, {"exclusiveMaximum": 2.5},
    {"type": "number", "multipleOf": 0.5}, {"required": ["a"]}, {"maxProperties": 1}, {"minItems": 1},
    {"uniqueItems": True}, {"contains": {"const": 1}}, {"properties": {"a": {"type": "integer"}}},
    {"additionalProperties": False}, {"items": {"type": "string"}}, {"propertyNames": {"pattern": "^[ab]"}},
    {"type": "integer", "not": {"enum": [1, 2]}}, {"not": {"required": ["b"]}},
]
SCALARS = [None, True, False, 0, 1, 2, 3, -1, 2.5, 0.5, 1.0, "", "a", "b", "ab", "ba", "x", "bab"]
APPLICATORS = ["anyOf", "oneOf", "allOf"]
# what a refusal may say (documented limits, or a schema no value satisfies)
REFUSALS = ("no JSON value satisfies", "has no grammar here", "more than three contains",
            "array or object alternatives", "classes of overlapping patterns")


def _branches(r: random.Random, d: int, draft7: bool) -> list:
    return [random_schema(r, d + 1, draft7) for _ in range(r.randint(1, 3))]


def _object(r: random.Random, d: int, draft7: bool) -> dict:
    s: dict = {"type": "object"} if r.random() < 0.7 else {}
    names = r.sample(NAMES, r.randint(0, 3))
    if names:
        s["properties"] = {n: random_schema(r, d + 1, draft7) for n in names}
    if r.random() < 0.5:
        s["required"] = r.sample(NAMES, r.randint(0, 2))
    c = r.random()
    if c < 0.3:
        s["additionalProperties"] = False
    elif c < 0.45:
        s["additionalProperties"] = random_schema(r, d + 1, draft7)
    dependent = (("dependencies", 0.2, lambda: {r.choice(NAMES): [r.choice(NAMES)] if r.random() < 0.5
                                                else random_schema(r, d + 1, draft7)}),) if draft7 else \
        (("dependentRequired", 0.1, lambda: {r.choice(NAMES): [r.choice(NAMES)]}),
         ("dependentSchemas", 0.1, lambda: {r.choice(NAMES): random_schema(r, d + 1, draft7)}))
    for key, p, value in (("patternProperties", 0.2, lambda: {"^x": random_schema(r, d + 1, draft7)}),
                          ("minProperties", 0.15, lambda: r.randint(0, 2)),
                          ("maxProperties", 0.15, lambda: r.randint(0, 2)),
                          ("propertyNames", 0.1, lambda: {"maxLength": 1}), *dependent):
        if r.random() < p:
            s[key] = value()
    if draft7 and r.random() < 0.15:   # recursion through the root's definition
        s.setdefault("properties", {})[r.choice(NAMES)] = {"$ref": "#/definitions/r"}
    if r.random() < 0.25:
        s[r.choice(APPLICATORS)] = _branches(r, d, draft7)
    elif names and r.random() < 0.7:
        s[r.choice(["anyOf", "oneOf"])] = _branches_over_names(r, d + 2, draft7, 3, 0.6)
    return s


def _branches_over_names(r: random.Random, d: int, draft7: bool, most: int, p: float) -> list:
    """Branches that each name some of the parent's properties (mostly with no constraint of
    their own), forbidding the other keys with probability ``p``."""
    branches = []
    for _ in range(r.randint(2, most)):
        b: dict = {"properties": {n: {} if r.random() < p else random_schema(r, d, draft7)
                                  for n in r.sample(NAMES, r.randint(1, most))}}
        if r.random() < p:
            b["additionalProperties"] = False
        if r.random() < 0.3:
            b["required"] = r.sample(list(b["properties"]), 1)
        branches.append(b)
    return branches


def _array(r: random.Random, d: int, draft7: bool) -> dict:
    s: dict = {"type": "array"} if r.random() < 0.7 else {}
    if r.random() < 0.3:   # positional items (then additionalItems in draft 7)
        tuple_items = [random_schema(r, d + 1, draft7) for _ in range(r.randint(1, 2))]
        s["items" if draft7 else "prefixItems"] = tuple_items
        if r.random() < 0.6:
            s["additionalItems" if draft7 else "items"] = random_schema(r, d + 1, draft7)
    elif r.random() < 0.7:
        s["items"] = random_schema(r, d + 1, draft7)
    for key, p, value in (("minItems", 0.3, lambda: r.randint(0, 2)), ("maxItems", 0.3, lambda: r.randint(0, 3)),
                          ("contains", 0.2, lambda: random_schema(r, d + 1, draft7)), ("uniqueItems", 0.2, lambda: True)):
        if r.random() < p:
            s[key] = value()
    if "contains" in s:
        for key, p, value in (("minContains", 0.5, lambda: r.randint(0, 2)), ("maxContains", 0.3, lambda: r.randint(1, 2))):
            if r.random() < p:
                s[key] = value()
    if r.random() < 0.25:
        s[r.choice(APPLICATORS)] = _branches(r, d, draft7)
    return s


def random_schema(r: random.Random, d: int = 0, draft7: bool = False):
    if d >= 3 or r.random() < 0.3:
        return json.loads(json.dumps(r.choice(LEAVES)))
    k = r.random()
    if k < 0.3:
        return _object(r, d, draft7)
    if k < 0.5:
        return _array(r, d, draft7)
    if k < 0.85:
        return {r.choice(APPLICATORS): _branches(r, d, draft7)}
    if k < 0.93:
        return {"not": random_schema(r, d + 1, draft7)}
    s = {"if": random_schema(r, d + 1, draft7)}
    if r.random() < 0.8:
        s["then"] = random_schema(r, d + 1, draft7)
    if r.random() < 0.6:
        s["else"] = random_schema(r, d + 1, draft7)
    return s


def random_value(r: random.Random, d: int = 0):
    c = r.random()
    if d >= 3 or c < 0.5:
        return r.choice(SCALARS)
    if c < 0.75:
        return [random_value(r, d + 1) for _ in range(r.randint(0, 3))]
    return {n: random_value(r, d + 1) for n in r.sample(NAMES, r.randint(0, 3))}


@pytest.mark.parametrize("seed, draft7", [(0, False), (1, False), (2, False), (3, False), (4, True), (5, True)])
def test_generated_schemas_agree_with_jsonschema(seed, draft7):
    """Draft 2020-12, or draft 7 (positional items, dependencies) with the schema under the root's
    definitions, some properties referring back to it (recursive products: normal forms asked
    inside each other once recursed without end, a "nested too deeply" refusal)."""
    r = random.Random(f"generated-{seed}")
    cls = jsonschema.Draft7Validator if draft7 else jsonschema.Draft202012Validator
    checked, mismatches, timeouts = 0, [], 0
    for _ in range(1_000):
        schema = random_schema(r, 0, draft7)
        if not isinstance(schema, dict):
            continue
        if draft7:
            schema = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"r": schema},
                      "$ref": "#/definitions/r"}
        try:
            g = COMPILER.compile_json_schema(schema, property_order="any")
        except stencil.GrammarError as e:
            assert any(s in str(e) for s in REFUSALS), (json.dumps(schema), str(e))
            continue
        except stencil.CompileTimeout:   # (a recursive oneOf's normal form can grow past any cap)
            timeouts += 1
            continue
        validator = cls(schema)
        for _ in range(30):
            value = random_value(r)
            text = json.dumps(value, ensure_ascii=False)
            checked += 1
            if accepts_text(g, text) != validator.is_valid(value):
                mismatches.append((json.dumps(schema), text, validator.is_valid(value)))
    assert checked > 20_000 and timeouts <= 3, (checked, timeouts)
    assert mismatches == [], mismatches[:3]


def branchy_schema(r: random.Random) -> dict:
    """An object whose anyOf/oneOf branches name some of its own properties, each forbidding the
    rest or not: the shapes where one branch may cover another (model.absorb)."""
    names = r.sample(NAMES, r.randint(2, 4))
    s: dict = {"properties": {n: json.loads(json.dumps(r.choice(LEAVES[:12]))) for n in names}}
    if r.random() < 0.5:
        s["type"] = "object"
    s[r.choice(["anyOf", "oneOf"])] = _branches_over_names(r, 2, False, 4, 0.7)
    return {"not": s} if r.random() < 0.2 else s


def test_branches_over_the_parents_properties_agree_with_jsonschema():
    r = random.Random("branchy")
    checked, mismatches = 0, []
    for _ in range(600):
        schema = branchy_schema(r)
        try:
            g = COMPILER.compile_json_schema(schema, property_order="any")
        except stencil.GrammarError as e:
            assert any(s in str(e) for s in REFUSALS), (json.dumps(schema), str(e))
            continue
        validator = jsonschema.Draft202012Validator(schema)
        for _ in range(30):
            value = {n: r.choice(SCALARS) for n in r.sample(NAMES, r.randint(0, 4))}
            checked += 1
            if accepts_text(g, json.dumps(value)) != validator.is_valid(value):
                mismatches.append((json.dumps(schema), json.dumps(value), validator.is_valid(value)))
    assert checked > 15_000
    assert mismatches == [], mismatches[:3]
