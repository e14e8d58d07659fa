"""uniqueItems without dead ends (issue 40). The unique_item check refuses a repeated item only as
it ends; a mask must refuse at once the token after which the item can only end as a repeat
(`[true,t`, `[0,0` over integers, `[{"a":true,"b":true},{"a":true,"b":tru`), or the generation is
stuck with an empty mask, not even end of sequence.

The exact masks come from an oracle that shares no code with stencil: where the items' values are
few and each has one spelling (compact, keys in definition order, plain numbers and strings), the
valid documents are all arrays of distinct values, listed with ``itertools.permutations`` and
written with ``json.dumps``; a prefix is live exactly when some document begins with it. Every
prefix of every document is checked, on a byte vocabulary and on a vocabulary of multi-byte tokens
that cross item boundaries (`e,`, `,t`, `],[`...). Beyond that, random walks in every spelling
(numbers, white space, key order) with a real tokenizer, steered towards repeats, never meet an
empty mask and end valid for ``jsonschema``."""
from __future__ import annotations

import itertools
import json
import random

import jsonschema
import numpy as np
import pytest

import stencil
from stencil.bitmask import bitmask_to_bool

BYTES = [bytes([i]) for i in range(256)]
# multi-byte tokens that end one item and begin the next, or write most of one
MULTI = [b"true", b"false", b"tru", b"e,", b",t", b",f", b"e]", b",{", b"},{", b'{"a":', b',"b":', b'e,"b":',
         b'e}', b'e},', b'"x"', b',"x', b'x",', b"],[", b"[[", b"]]", b",[", b"1,", b",0", b",1", b"0,", b"null,",
         b'"a"', b'"b",', b'","', b"[]", b",[]"]


def vocabulary(extra: list[bytes]) -> tuple[stencil.TokenizerInfo, list[bytes]]:
    tokens = BYTES + extra + [b"<eos>"]
    return stencil.TokenizerInfo.from_vocab(tokens, eos_token_ids=[len(tokens) - 1]), tokens


@pytest.fixture(scope="module", params=["bytes", "multi"])
def vocab(request):
    return vocabulary([] if request.param == "bytes" else MULTI)


def mask_of(m: stencil.Matcher, tok: stencil.TokenizerInfo) -> np.ndarray:
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    m.fill_next_token_bitmask(bm, 0)
    return bitmask_to_bool(bm, tok.vocab_size)[0]


# (schema, the items' values as the oracle writes them). The values are each spelled one way
# under the options below; the arrays are every permutation of distinct values within the bounds.
ARRAY_OPTIONS = dict(whitespace="compact", property_order="definition", number_spelling="plain",
                     string_spelling="plain", key_spelling="plain")
BOOL2 = {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "boolean"}},
         "required": ["a", "b"], "additionalProperties": False}
FINITE = {
    # the reproducer of the review (N1), at minItems near the number of values
    "objects_of_two_booleans": ({"type": "array", "uniqueItems": True, "items": BOOL2, "minItems": 3},
                                [{"a": a, "b": b} for a in (True, False) for b in (True, False)]),
    "optional_member": ({"type": "array", "uniqueItems": True, "minItems": 2, "maxItems": 3, "items": {
        "type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "integer", "enum": [0, 1]}}, "required": ["a"],
        "additionalProperties": False}},
        [{"a": a} for a in (True, False)] + [{"a": a, "b": b} for a in (True, False) for b in (0, 1)]),
    "arrays_of_booleans": ({"type": "array", "uniqueItems": True, "minItems": 2, "maxItems": 3,
                            "items": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}},
                           [[]] + [[a] for a in (True, False)] + [[a, b] for a in (True, False)
                                                                  for b in (True, False)]),
    "integer_range": ({"type": "array", "uniqueItems": True, "minItems": 3,
                       "items": {"type": "integer", "minimum": 0, "maximum": 3}}, [0, 1, 2, 3]),
    "booleans_and_null": ({"type": "array", "uniqueItems": True, "minItems": 2,
                           "items": {"type": ["boolean", "null"]}}, [True, False, None]),
    "prefix_items": ({"type": "array", "uniqueItems": True, "prefixItems": [{"type": "boolean"}, {"type": "boolean"}],
                      "items": False}, [True, False]),
    # an enum with a structured value: no longer the known scalar values of next_item checks
    "enum_mixed": ({"type": "array", "uniqueItems": True, "minItems": 3,
                    "items": {"enum": [True, "x", None, {"a": [False]}]}}, [True, "x", None, {"a": [False]}]),
}


def spellings(value) -> list[str]:
    """The texts of a value under ARRAY_OPTIONS: compact, members in the order given (the
    schemas' definition order), plain numbers (0 is also -0)."""
    if isinstance(value, list):
        return ["[" + ",".join(p) + "]" for p in itertools.product(*map(spellings, value))]
    if isinstance(value, dict):
        parts = [[json.dumps(k) + ":" + v for v in spellings(x)] for k, x in value.items()]
        return ["{" + ",".join(p) + "}" for p in itertools.product(*parts)]
    if value == 0 and not isinstance(value, bool):
        return ["0", "-0"]
    return [json.dumps(value)]


def documents(schema: dict, values: list) -> set[bytes]:
    """Every valid document: each arrangement of distinct values, checked by jsonschema, in each
    of its spellings."""
    lo = schema.get("minItems", 0)
    hi = min(schema.get("maxItems", len(values)), len(values))
    out = set()
    for n in range(lo, hi + 1):
        for items in itertools.permutations(values, n):
            if jsonschema.Draft202012Validator(schema).is_valid(list(items)):
                out.update(text.encode() for text in spellings(list(items)))
    return out


@pytest.mark.parametrize("name", sorted(FINITE))
def test_masks_are_exact_over_finite_items(vocab, name):
    tok, tokens = vocab
    schema, values = FINITE[name]
    docs = documents(schema, values)
    assert docs, name
    prefixes = {d[:i] for d in docs for i in range(len(d) + 1)}
    g = stencil.GrammarCompiler(tok).compile_json_schema(schema, **ARRAY_OPTIONS)
    eos = len(tokens) - 1
    checked = 0
    # every live prefix, reached one byte at a time
    for prefix in sorted(prefixes, key=len):
        m = stencil.Matcher(g)
        assert m.accept_string(prefix.decode()), prefix
        got = mask_of(m, tok)
        want = np.array([p in prefixes for p in (prefix + t for t in tokens[:eos])] + [prefix in docs])
        wrong = np.nonzero(got[:len(tokens)] != want)[0]
        assert not len(wrong), (name, prefix, [(tokens[i], "allowed" if got[i] else "refused") for i in wrong[:8]])
        for i in np.nonzero(~want[:eos])[0][:40]:  # the refused tokens are refused by accept too
            assert not m.accept_token(int(i)), (name, prefix, tokens[i])
        checked += 1
    assert checked == len(prefixes) > 20


def allowed_text(compiler, schema, prefix, **options) -> set[bytes]:
    tok = compiler.tokenizer_info
    m = stencil.Matcher(compiler.compile_json_schema(schema, whitespace="compact", **options))
    assert m.accept_string(prefix), prefix
    return {BYTES[i] if i < 256 else b"<eos>" for i in np.nonzero(mask_of(m, tok))[0]}


@pytest.fixture(scope="module")
def byte_compiler():
    return stencil.GrammarCompiler(vocabulary([])[0])


@pytest.mark.parametrize("schema, prefix, refused, kept", [
    # any item: after true, only a repeat begins with t
    ({"uniqueItems": True}, "[true,", b"t", b"fn[{\"0-"),
    ({"uniqueItems": True}, "[true,false,null,", b"tfn", b"[{\"0-"),
    # integers in every spelling: 5, 5.0, 50e-1 are all 5, and 0.1e1 is 1
    ({"type": "array", "uniqueItems": True, "items": {"type": "integer", "minimum": 0, "maximum": 5}}, "[5,",
     b"5", b"01234"),
    ({"type": "array", "uniqueItems": True, "items": {"type": "integer", "minimum": 0, "maximum": 5}}, "[0,",
     b"-", b"012345"),
    # a number may still go on: 0.5 is new
    ({"type": "array", "uniqueItems": True, "items": {"type": "number"}}, "[0,", b"", b"0-1"),
    ({"type": "array", "uniqueItems": True, "items": BOOL2}, '[{"a":true,"b":true},{"a":true,"b":', b"t", b"f"),
    # a free string before the repeated tail: the tail alone decides
    ({"type": "array", "uniqueItems": True, "items": {
        "type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}, "required": ["a", "b"],
        "additionalProperties": False}}, '[{"a":"x","b":true},{"a":"x","b":', b"t", b"f"),
    # strings at their longest: the closing quote of a repeat
    ({"type": "array", "uniqueItems": True, "items": {"type": "string", "maxLength": 2}}, '["ab","a', b"b", b"ac"),
])
@pytest.mark.parametrize("order", ["definition", "any"])
def test_mask_refuses_what_can_only_repeat(byte_compiler, schema, prefix, refused, kept, order):
    got = allowed_text(byte_compiler, schema, prefix, property_order=order)
    for b in refused:
        assert bytes([b]) not in got, (prefix, bytes([b]), "allowed, but every completion repeats an item")
    for b in kept:
        assert bytes([b]) in got, (prefix, bytes([b]), "refused, though it begins a new item")


@pytest.mark.parametrize("schema, prefix, refused, kept", [
    # plain numbers: 0 has no spelling but 0 and -0
    ({"type": "array", "uniqueItems": True, "items": {"type": "integer", "minimum": 0}}, "[0,", b"0-", b"123"),
    ({"type": "array", "uniqueItems": True, "items": {"type": "integer"}}, "[0,", b"0", b"-12"),
    ({"type": "array", "uniqueItems": True, "items": {"type": "integer", "minimum": -1, "maximum": 5}}, "[-1,-", b"1",
     b"0"),
])
def test_mask_refuses_plain_numbers_that_can_only_repeat(byte_compiler, schema, prefix, refused, kept):
    got = allowed_text(byte_compiler, schema, prefix, number_spelling="plain")
    for b in refused:
        assert bytes([b]) not in got, (prefix, bytes([b]), "allowed, but every completion repeats an item")
    for b in kept:
        assert bytes([b]) in got, (prefix, bytes([b]), "refused, though it begins a new item")


_DRAFT4 = {"$schema": "http://json-schema.org/draft-04/schema#"}


@pytest.mark.parametrize("root, items, options, refused, kept", [
    # an integer-typed value stays one among the items' others: plain writes it without a fraction
    ({}, {"anyOf": [{"type": "integer", "enum": [2]}, {"type": "number", "enum": [3.5]}]}, {"number_spelling": "plain"},
     b".e", b",]"),
    # draft 4's not-integer 2 is 2.0 (its values were read by value, and none was left)
    (_DRAFT4, {"enum": [2, 3], "not": {"type": "integer"}}, {}, b",]", b".e"),
    (_DRAFT4, {"anyOf": [{"enum": [2], "not": {"type": "integer"}}, {"type": "integer", "enum": [3]}]}, {}, b",]",
     b".e"),
])
def test_listed_values_keep_their_spelling(byte_compiler, root, items, options, refused, kept):
    # a unique array of known values lists each value with the formula of its spellings
    schema = {**root, "type": "array", "uniqueItems": True, "items": items}
    got = allowed_text(byte_compiler, schema, "[2", **options)
    for b in refused:
        assert bytes([b]) not in got, (items, bytes([b]), "allowed, but 2 is not spelled so here")
    for b in kept:
        assert bytes([b]) in got, (items, bytes([b]), "refused, though 2 is spelled so here")


def test_tokens_that_cross_items_are_refused_with_the_repeat(byte_compiler):
    """A token that ends one item and begins a repeat (`e,t` after `[true,fals`) is judged at its
    end, not at its first byte."""
    tok, tokens = vocabulary([b"e,t", b"e,n", b"e,tr"])
    g = stencil.GrammarCompiler(tok).compile_json_schema({"uniqueItems": True}, whitespace="compact")
    m = stencil.Matcher(g)
    assert m.accept_string("[true,fals")
    got = {tokens[i] for i in np.nonzero(mask_of(m, tok))[0]}
    assert b"e,n" in got and b"e" in got
    assert b"e,t" not in got and b"e,tr" not in got
    assert not m.accept_token(tokens.index(b"e,t"))
    assert m.accept_token(tokens.index(b"e,n"))


# Random walks: every spelling, a real tokenizer. Shapes whose items have few values, at minItems
# near their number, where walks keep running into repeats.
WALK_SCHEMAS = [
    {"type": "array", "uniqueItems": True, "minItems": 4, "items": BOOL2},
    {"type": "array", "uniqueItems": True, "minItems": 2, "items": {"type": "boolean"}},
    {"type": "array", "uniqueItems": True, "minItems": 3, "items": {"type": "integer", "minimum": 0, "maximum": 3}},
    {"type": "array", "uniqueItems": True, "minItems": 2, "items": {"type": "integer"}},
    {"type": "array", "uniqueItems": True, "minItems": 3, "items": {"enum": ["a", "b", "c", 1, 2]}},
    {"type": "array", "uniqueItems": True, "minItems": 3,
     "items": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}},
    {"type": "array", "uniqueItems": True, "minItems": 2, "items": {"type": "string", "maxLength": 1,
                                                                    "pattern": "^[ab]*$"}},
    {"uniqueItems": True, "type": "array", "minItems": 3, "items": {"type": ["boolean", "null"]}},
]


def walk(m: stencil.Matcher, tok: stencil.TokenizerInfo, rng: random.Random, steps: int) -> bytes | None:
    """Follows the masks, preferring tokens that write again what was written before (repeats);
    a budget-aware mask, then end of sequence wherever allowed, ends the walk (the budget does not
    count repeats: README). The text, or None at an empty mask (a dead end), or b"" if it did not end."""
    out = b""
    eos = set(tok.eos_token_ids)
    for step in range(4 * steps):
        bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
        m.fill_next_token_bitmask(bm, 0, remaining_tokens=max(steps - step, 1) if step < steps else None)
        ids = [int(i) for i in np.nonzero(bitmask_to_bool(bm, tok.vocab_size)[0])[0]]
        if not ids:
            return None
        repeats = [i for i in ids if i not in eos and tok.decode_bytes([i]) and tok.decode_bytes([i]) in out]
        ends = [i for i in ids if i in eos]
        t = (ends[0] if ends and step >= steps else
             rng.choice(repeats) if repeats and rng.random() < 0.7 else rng.choice(ids))
        assert m.accept_token(t)
        if m.is_terminated():
            return out
        out += tok.decode_bytes([t])
    return b""


@pytest.mark.parametrize("index", range(len(WALK_SCHEMAS)))
@pytest.mark.parametrize("whitespace, order", [("compact", "definition"), ("flexible", "any")])
def test_random_walks_meet_no_dead_end(deepseek, index, whitespace, order):
    schema = WALK_SCHEMAS[index]
    tok = deepseek.info
    g = stencil.GrammarCompiler(tok).compile_json_schema(schema, whitespace=whitespace, property_order=order)
    rng = random.Random(index)
    ended = 0
    for _ in range(6):
        text = walk(stencil.Matcher(g), tok, rng, 48)
        assert text is not None, ("dead end", schema)
        if text:
            jsonschema.validate(json.loads(text), schema)
            ended += 1
    assert ended >= 3, schema


@pytest.mark.parametrize("items, most", [
    ({"type": "integer", "minimum": 0, "maximum": 2}, 3),
    ({"type": "integer", "exclusiveMinimum": -1.5, "exclusiveMaximum": 1}, 2),   # -1 and 0
    ({"type": "integer", "minimum": 0, "maximum": 9, "multipleOf": 3}, 4),     # 0, 3, 6, 9
    ({"type": "boolean"}, 2),
    ({"enum": ["a", "b", 1]}, 3),
])
def test_unique_array_of_fewer_values_than_min_items_is_refused(byte_compiler, items, most):
    """Items with a few values (a small integer range included) are listed: an array that needs
    more distinct items than there are values is an error at compile time, not an output that
    dead-ends at its last item; one of exactly that many items compiles and ends valid."""
    with pytest.raises(stencil.GrammarError, match="no JSON value satisfies"):
        byte_compiler.compile_json_schema({"type": "array", "uniqueItems": True, "minItems": most + 1, "items": items})
    schema = {"type": "array", "uniqueItems": True, "minItems": most, "items": items}
    g = byte_compiler.compile_json_schema(schema, whitespace="compact")
    tok = byte_compiler.tokenizer_info
    rng = random.Random(most)
    for _ in range(5):
        m, out = stencil.Matcher(g), b""
        while not m.is_terminated():
            ids = np.nonzero(mask_of(m, tok))[0]
            assert len(ids), ("dead end", out)
            t = int(rng.choice(ids)) if len(out) < 40 or 256 not in ids else 256
            assert m.accept_token(t)
            out += BYTES[t] if t < 256 else b""
        jsonschema.validate(json.loads(out), schema)


@pytest.mark.parametrize("items", [{"const": "a"}, {"enum": [1, 2]}, {"type": "boolean"}, False])
def test_unique_array_of_listed_values_under_max_items_zero(byte_compiler, items):
    """maxItems 0 leaves the empty array alone (the listed values' rules once indexed a count of
    items that has no rule: an IndexError, not a grammar)."""
    g = byte_compiler.compile_json_schema({"type": "array", "uniqueItems": True, "maxItems": 0, "items": items})
    for text, ok in (("[]", True), ('["a"]', False), ("[1]", False), ("[true]", False)):
        m = stencil.Matcher(g)
        assert (m.accept_string(text) and m.is_accepting()) == ok, text
