"""Equal sub-schemas read and emitted once (core/content.py, ``Resolver(share_equal=True)``):
generated schemas repeat inline sub-schemas, and two schema objects that say the same, reached
with the same base URI, draft and dynamic scope, are one location.

The oracle for sharing is the same schema compiled without it: along random walks over random
schemas that repeat sub-schemas (with different annotations, in anyOf branches, in arrays that
count), every mask must be equal bit for bit, and the grammar must be smaller. What must not be
shared is checked against the reference validator: values that only look like annotations
(inside ``enum``), the same ``$ref`` under two base URIs.

Sharing exposed an unsound simplification (``model.covers``, which drops an alternative another
covers): an object alternative with ``additionalProperties: false`` was taken to cover one that
names more properties (the rule for the keys outside its properties forbids the extra key), once
their shared properties were one sub-schema; an array alternative likewise one with a longer
prefix. Both happen without sharing too (a property every branch takes from a common parent).
"""
from __future__ import annotations

import copy
from collections import OrderedDict
import json
import random

import jsonschema
import pytest
from grammar_oracle import accepts_text
from mask_oracle_checks import walk_both
from tokenizers_zoo import get

import stencil
import stencil.grammar.json.schema as json_schema
from stencil.grammar.json.schema import json_schema_grammar
from stencil.grammar.json.schema.core.content import ContentNumbers

LEAVES = [
    {"type": "string", "maxLength": 4},
    {"type": "integer", "minimum": 0, "maximum": 30},
    {"enum": ["a", "b", 1]},
    {"type": "array", "items": {"type": "string", "maxLength": 2}, "maxItems": 3},
    {"type": "boolean"},
]


@pytest.fixture
def unshared(monkeypatch):
    """Compile with every place its own location (the oracle)."""
    def use(share: bool):
        monkeypatch.setattr(json_schema, "Resolver", lambda *a, **k: _RESOLVER(*a, **{**k, "share_equal": share}))
    return use


_RESOLVER = json_schema.Resolver


def _annotated(schema: dict, rng: random.Random) -> dict:
    """A copy of ``schema`` with annotations that differ from copy to copy."""
    out = copy.deepcopy(schema)
    if rng.random() < 0.7:
        out["description"] = f"copy {rng.randrange(1000)}"
    if rng.random() < 0.3:
        out["title"] = rng.choice(["T", "U"])
    return out


def random_schema(rng: random.Random) -> dict:
    """An object whose properties repeat a few sub-schemas, as copies; some under anyOf branches
    that share properties and forbid others (the covers case), some in counted arrays."""
    shared = [rng.choice(LEAVES) for _ in range(2)]
    props = {}
    for name in rng.sample(["a", "b", "c", "d", "e", "f"], rng.randint(3, 6)):
        sub = _annotated(rng.choice(shared), rng)
        if rng.random() < 0.3:
            sub = {"type": "array", "items": sub, "maxItems": rng.choice([2, 4])}
        props[name] = sub
    names = list(props)
    out: dict = {"type": "object", "properties": props, "required": rng.sample(names, rng.randint(0, 2))}
    if rng.random() < 0.6:
        common = {n: _annotated(props[n], rng) for n in names[:2]}
        branches = []
        for extra in names[2:4]:
            branch_props = dict(common)
            branch_props[extra] = _annotated(props[extra], rng)
            branches.append({"properties": branch_props, "additionalProperties": False})
        out["anyOf"] = branches + [{"properties": dict(common), "additionalProperties": False}]
    return out


@pytest.mark.parametrize("order", ["any", "definition"])
def test_shared_subschemas_keep_every_mask(unshared, order):
    info = get("smollm2-hf").info
    rng = random.Random(f"shared-{order}")
    masks = smaller = 0
    for _ in range(25):
        schema = random_schema(rng)
        built = []
        for share in (False, True):
            unshared(share)
            try:
                built.append((stencil.GrammarCompiler(info).compile_json_schema(schema, property_order=order),
                              json_schema_grammar(schema, property_order=order).num_rules))
            except stencil.GrammarError as e:   # (a branch may forbid a required key: no value)
                built.append(str(e))
        if isinstance(built[0], str) or isinstance(built[1], str):
            assert built[0] == built[1]
            continue
        (g_b, rules_b), (g_a, rules_a) = built
        assert rules_a <= rules_b
        smaller += rules_a < rules_b
        for _ in range(3):
            masks += walk_both(info, g_a, g_b, rng, 30)
    assert masks > 800 and smaller >= 12  # the walks went somewhere; most schemas lost rules


def test_repeated_inline_arrays_emit_once(unshared):
    """24 properties that each write out the same counted array (a generated schema's shape)."""
    array = {"type": "array", "items": {"type": "string", "maxLength": 255}, "maxItems": 100}
    schema = {"type": "object", "properties": {f"p{i}": dict(copy.deepcopy(array), description=f"field {i}")
                                               for i in range(24)}}
    unshared(False)
    before = json_schema_grammar(schema).num_rules
    unshared(True)
    after = json_schema_grammar(schema).num_rules
    assert after * 10 < before, (after, before)


@pytest.mark.parametrize("schema, docs", [
    # a branch that forbids other keys does not cover one that names one more (shared property)
    ({"properties": {"image": {"type": "string"}}, "anyOf": [
        {"properties": {"image": {}}, "additionalProperties": False},
        {"properties": {"image": {}, "docker": {}}, "additionalProperties": False}]},
     ['{"image": "x"}', '{"image": "x", "docker": 1}', '{"docker": 1}', '{"other": 1}']),
    # the same through equal copies, under a type beside the branches
    ({"type": "object", "anyOf": [
        {"additionalProperties": False, "properties": {"image": {"type": "string", "title": "a"}}},
        {"additionalProperties": False, "properties": {"docker": {"type": "object"}, "image": {"type": "string"}}}]},
     ['{"image": "x"}', '{"image": "x", "docker": {}}', '{"docker": {}}', '{"image": 1}']),
    # an array branch whose prefix holds a position the other's items constrain
    ({"anyOf": [{"items": {"type": "string"}}, {"prefixItems": [{}], "items": {"type": "string"}}]},
     ['["a", "b"]', '[1, "x"]', '[1, 2]']),
    # annotation-looking keys inside enum are values: two properties, two different enums
    ({"type": "object", "properties": {"p": {"enum": [{"title": "a"}]}, "q": {"enum": [{"title": "b"}]}}},
     ['{"p": {"title": "a"}, "q": {"title": "b"}}', '{"p": {"title": "b"}}', '{"q": {"title": "a"}}']),
    # 1, 1.0 and true are different constants
    ({"type": "object", "properties": {"p": {"const": 1}, "q": {"const": True}}},
     ['{"p": 1, "q": true}', '{"p": true}', '{"q": 1}']),
    # the same $ref under two base URIs leads to two schemas
    ({"type": "object", "properties": {
        "p": {"$id": "https://example.com/p.json", "$defs": {"t": {"type": "integer"}}, "$ref": "#/$defs/t"},
        "q": {"$id": "https://example.com/q.json", "$defs": {"t": {"type": "string"}}, "$ref": "#/$defs/t"},
        "r": {"$id": "https://example.com/r/", "properties": {"s": {"$ref": "#/$defs/u"}},
              "$defs": {"u": {"type": "boolean"}}},
        "v": {"$id": "https://example.com/v/", "properties": {"s": {"$ref": "#/$defs/u"}},
              "$defs": {"u": {"type": "null"}}}}},
     ['{"p": 1, "q": "x"}', '{"p": "x"}', '{"q": 1}', '{"r": {"s": true}, "v": {"s": null}}', '{"r": {"s": null}}',
      '{"v": {"s": true}}']),
])
def test_sharing_keeps_meaning(schema, docs):
    grammar = stencil.GrammarCompiler(get("smollm2-hf").info).compile_json_schema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema)
    for doc in docs:
        assert accepts_text(grammar, doc) == validator.is_valid(json.loads(doc)), doc


def test_content_numbers():
    c = ContentNumbers()
    a = {"type": "string", "description": "one", "examples": ["x"]}
    assert c.schema(a) == c.schema({"type": "string", "title": "two"})
    assert c.schema(a) != c.schema({"type": "string", "maxLength": 1})
    assert c.schema({"const": 1}) != c.schema({"const": True}) != c.schema({"const": 1.0})
    assert c.schema({"enum": [{"title": "a"}]}) != c.schema({"enum": [{"title": "b"}]})
    # sub-schemas compared by content, annotations aside, in every place the table names
    assert c.schema({"properties": {"p": {"type": "null", "title": "x"}}, "items": [{"title": "y"}]}) == \
        c.schema({"properties": {"p": {"type": "null"}}, "items": [{}]})
    assert c.schema({"properties": {"p": {}, "q": {}}}) != c.schema({"properties": {"q": {}, "p": {}}})
    # what Python callers hand in beside json.loads' types: dict subclasses, tuples
    assert c.schema({"properties": OrderedDict(p={"type": "null"})}) == c.schema({"properties": {"p": {"type": "null"}}})
    assert c.schema({"enum": (1, 2), "default": OrderedDict(a=1)}) != c.schema({"enum": [1, 2]})
