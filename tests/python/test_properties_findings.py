"""Findings of the fuzz targets and property tests, kept as regression tests.

json_schema fuzz target (fuzz/fuzz_json_schema.py): a number constant such as `{"const": 1000}`,
`{"const": 1e5}` or `{"type": "number", "minimum": 100000, "maximum": 100000}` gave a first mask
that allowed every digit 1-9 while accept_token refused all but "1": the range [v, v] is an
intersection of two bounded repetitions, and relaxing both for the walk made it non-empty (fixed
in ca182f7 and 1960de1). And an object in any order, whose repeated or surplus members were
vetoed only when the object closed (the tests after test_const_object_in_any_order_has_no_dead_end).
"""
from __future__ import annotations

import pytest

import stencil

_TOKS = [bytes([c]) for c in range(256)] + [b"<eos>"]
TOK = stencil.TokenizerInfo.from_vocab(_TOKS, eos_token_ids=[256])


def _first_mask_promises_kept(schema: str) -> tuple[bytes, bytes]:
    """(first bytes the mask allows, those of them accept_token refuses)."""
    m = stencil.Matcher(stencil.GrammarCompiler(TOK).compile_json_schema(schema))
    bm = stencil.allocate_token_bitmask(1, TOK.vocab_size)
    m.fill_next_token_bitmask(bm, 0)
    allowed = [t for t in range(256) if (int(bm[0, t >> 5]) >> (t & 31)) & 1]
    return bytes(allowed), bytes(t for t in allowed if not m.fork().accept_token(t))


@pytest.mark.parametrize("schema", ['{"const": 10}', '{"type": "integer", "minimum": 100000, "maximum": 100000}'])
def test_number_constant_mask_matches_accept(schema):
    allowed, refused = _first_mask_promises_kept(schema)
    assert b"1" in allowed and refused == b""


@pytest.mark.parametrize("schema", ['{"const": 1000}', '{"const": 1e5}', '{"const": 100000}', '{"enum": [9007199254740990.0]}',
                                    '{"type": "number", "minimum": 100000, "maximum": 100000}'])
def test_large_number_constant_mask_matches_accept(schema):
    allowed, refused = _first_mask_promises_kept(schema)
    assert refused == b"", f"mask allows {allowed!r}, accept_token refuses {refused!r}"


@pytest.mark.parametrize("prefix", ['{"a": 21, ', '{"a": 21, "a": 2.1e1', '{"a": 21, "a"'])
def test_const_object_in_any_order_has_no_dead_end(prefix):
    """fuzz/findings json_schema-crash-2a5e17d7: `{"allOf": [{"enum": [{"a": 21}]}, ...]}` walked
    into `{"\\u0061": 21, "a": 2.10e1` and an empty mask: the object_keys check vetoed a repeated
    or surplus key only when the object closed. Every prefix the mask allows must still be
    completable: here only `}` (after the first member) can end the object."""
    g = stencil.GrammarCompiler(TOK).compile_json_schema('{"const": {"a": 21}}', property_order="any")
    m = stencil.Matcher(g)
    assert m.accept_string(prefix) is False or m.fork().accept_string("}")


def _allowed(m) -> bytes:
    bm = stencil.allocate_token_bitmask(1, TOK.vocab_size)
    m.fill_next_token_bitmask(bm, 0)
    return bytes(t for t in range(256) if (int(bm[0, t >> 5]) >> (t & 31)) & 1)


# (schema, prefix, byte the mask must refuse there, byte it must allow): each refused byte led into
# a dead end before the key and separator checks (issue 17).
DEAD_ENDS = [
    # a repeated named key, refused before it starts
    ('{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, '
     '"additionalProperties": false}', '{"b": 1, "', "b", "a"),
    # a comma after the last member a bounded object can hold
    ('{"type": "object", "properties": {"a": {"type": "integer"}}, "maxProperties": 1}', '{"a": 1', ",", "}"),
    ('{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, '
     '"additionalProperties": false}', '{"b": 1, "a": 2', ",", "}"),
    # a key that leaves no room for a required key not written yet, refused before it starts
    ('{"type": "object", "required": ["a", "b"], "maxProperties": 3}', '{"x": 1, "', "y", "a"),
    ('{"type": "object", "required": ["a"], "maxProperties": 2}', '{"x": 1, "', "y", "a"),
    # an item of a unique array of known values that repeats one, refused before it starts
    ('{"type": "array", "items": {"enum": ["a", "bbbb"]}, "uniqueItems": true}', '["a", "', "a", "b"),
    ('{"type": "array", "items": {"enum": [1, 2]}, "uniqueItems": true}', '[1.0, ', "1", "2"),
    ('{"type": "array", "items": {"type": "boolean"}, "uniqueItems": true}', '[true, ', "t", "f"),
    # a comma after every value is used
    ('{"type": "array", "items": {"enum": [null, "x"]}, "uniqueItems": true}', '["x", null', ",", "]"),
]


@pytest.mark.parametrize("order", ["any", "definition"])
@pytest.mark.parametrize("schema, prefix, refused, allowed", DEAD_ENDS)
def test_checks_refuse_dead_ends_where_they_start(schema, prefix, refused, allowed, order):
    m = stencil.Matcher(stencil.GrammarCompiler(TOK).compile_json_schema(schema, property_order=order))
    if not m.accept_string(prefix):
        assert order == "definition"   # an order the definition order does not write
        return
    mask = _allowed(m)
    assert refused.encode() not in mask
    if allowed is not None:
        assert allowed.encode() in mask


def test_repeated_other_key_refused_as_it_closes_in_definition_order():
    """After the named properties, a key of the other keys that repeats one is refused at its
    closing quote (it could still go on). Under property_order="any" it is refused only as its
    member ends (the member rule is shared by every place in the list, for mask speed)."""
    g = stencil.GrammarCompiler(TOK).compile_json_schema('{"type": "object", "additionalProperties": {"type": "integer"}}')
    m = stencil.Matcher(g)
    assert m.accept_string('{"x": 1, "x')
    mask = _allowed(m)
    assert b'"' not in mask and b"y" in mask


OBJECT_SCHEMAS = [
    '{"const": {"a": 21, "b": [1]}}',
    '{"enum": [{"a": 1}, {"b": 2, "a": 1}]}',
    '{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}}, "required": ["b"], '
    '"additionalProperties": false}',
    '{"type": "object", "required": ["a", "b"], "maxProperties": 3, "additionalProperties": {"type": "integer"}}',
    '{"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "required": ["a"], "maxProperties": 2}',
    '{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}, '
    '"maxProperties": 1}}, "required": ["a"], "minProperties": 2, "maxProperties": 2, '
    '"additionalProperties": {"type": "integer"}}',
    '{"type": "array", "items": {"enum": ["a", "bbbb", 1, 10, true, null]}, "uniqueItems": true, "minItems": 2}',
    '{"type": "array", "items": {"type": "boolean"}, "uniqueItems": true, "maxItems": 1}',
]
_PREFERRED = b'"{},:[]01abxyzktfn'


@pytest.mark.parametrize("order", ["any", "definition"])
@pytest.mark.parametrize("schema", OBJECT_SCHEMAS)
def test_random_walks_over_objects_never_dead_end(schema, order):
    """Oracle: the mask never offers a byte after which nothing can follow. Seeded random walks
    (biased to JSON punctuation and a few key letters) until the output is complete."""
    import random
    g = stencil.GrammarCompiler(TOK).compile_json_schema(schema, property_order=order)
    rng = random.Random(17)
    for _ in range(40):
        m = stencil.Matcher(g)
        text = b""
        for _ in range(80):
            mask = _allowed(m)
            if not mask:
                assert m.is_accepting(), f"dead end after {text!r}"
                break
            pick = [c for c in mask if c in _PREFERRED] or list(mask)
            c = rng.choice(pick)
            assert m.accept_token(c), f"mask allows {bytes([c])!r} after {text!r}, accept refuses"
            text += bytes([c])


@pytest.mark.parametrize("whitespace", ["compact", "flexible", 2])
def test_comma_after_the_last_member_is_refused_in_every_layout(whitespace):
    """With indentation the comma is followed by a newline (the more_members check refuses it);
    alone, the parser's empty row after it does."""
    g = stencil.GrammarCompiler(TOK).compile_json_schema('{"const": {"a": 21, "b": true}}', property_order="any",
                                                         whitespace=whitespace)
    m = stencil.Matcher(g)
    first, rest = {"compact": ('{"b":true', ',"a":21'), "flexible": ('{"b": true', ', "a": 21'),
                   2: ('{\n  "b": true', ',\n  "a": 21')}[whitespace]
    assert m.accept_string(first)
    assert m.fork().accept_string(",")
    assert m.accept_string(rest)
    assert not m.fork().accept_string(",")
