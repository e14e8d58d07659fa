"""The boundary walks a matcher keeps across masks over one row stack (cpp/src/matcher/
mask_walker.h, BoundaryWalks): inside a lexeme the parser's rows stay while the lexer state moves
(a string under a maxLength has a state per count), and a boundary's walk (the tokens below a
closing quote, an escape, a digit) is taken again from the lexer state after its byte.

The oracle is the same grammar compiled with ``repeat_memo`` off (no mask or walk is kept): along
random walks over random schemas that put counted strings, patterns, enums, ranges, unique items
and keys in any order (checks that read the lexeme's own bytes) side by side, every mask must be
equal bit for bit. The walks draw short tokens often, so strings grow a byte at a time up to their
bounds, and tokens with a quote or a backslash, which cross or stay inside at each count.
"""
from __future__ import annotations

import random

import pytest
from mask_oracle_checks import masks_alike_byte_by_byte, walk_both
from tokenizers_zoo import get

import stencil

STRINGS = [
    {"type": "string", "maxLength": 3},
    {"type": "string", "minLength": 2, "maxLength": 6},
    {"type": "string", "pattern": "^[a-c]{1,4}$"},
    {"type": "string", "pattern": "^(ab|b\"c)+$", "maxLength": 7},
    {"type": "string", "enum": ["ab", "abc", "abcd", "b\\\"", "ba"]},
    {"type": "string", "format": "date", "maxLength": 12},
    {"type": "string", "not": {"enum": ["ab", "abc"]}, "maxLength": 5},
]
NUMBERS = [
    {"type": "integer", "minimum": 3, "maximum": 250},
    {"type": "number", "exclusiveMaximum": 10, "multipleOf": 0.5},
    {"enum": [1, 12, 123, 1.5]},
]


def random_schema(rng: random.Random, depth: int = 0) -> dict:
    """A small schema mixing what makes lexer states move inside a lexeme, with checks beside it."""
    leaf = rng.choice(STRINGS + NUMBERS)
    if depth >= 2 or rng.random() < 0.25:
        return leaf
    if rng.random() < 0.4:
        items = rng.choice(STRINGS + NUMBERS) if rng.random() < 0.6 else random_schema(rng, depth + 1)
        out = {"type": "array", "items": items, "maxItems": rng.choice([2, 3, 5])}
        if rng.random() < 0.5:
            out["uniqueItems"] = True
        return out
    names = rng.sample(["a", "ab", "abc", "b", "ba", "c\"d"], rng.randint(1, 4))
    props = {n: random_schema(rng, depth + 1) for n in names}
    out = {"type": "object", "properties": props, "required": rng.sample(names, rng.randint(0, len(names)))}
    if rng.random() < 0.4:
        out["patternProperties"] = {"^x[a-z]{0,3}$": rng.choice(STRINGS)}
    if rng.random() < 0.5:
        out["additionalProperties"] = False
    if rng.random() < 0.3:
        out["maxProperties"] = rng.randint(1, 3)
    return out


@pytest.mark.parametrize("zoo_name", ["smollm2-hf", "deepseek"])
@pytest.mark.parametrize("order, budgets", [("any", False), ("definition", False), ("any", True)])
def test_kept_boundary_walks_match_masks_without_memos(zoo_name, order, budgets):
    info = get(zoo_name).info
    rng = random.Random(f"{zoo_name}-{order}-{budgets}")
    with_memo = stencil.GrammarCompiler(info)
    without = stencil.GrammarCompiler(info, mask_optimizations={"repeat_memo": False})
    masks = 0
    for _ in range(12):
        schema = random_schema(rng)
        g_a = with_memo.compile_json_schema(schema, property_order=order)
        g_b = without.compile_json_schema(schema, property_order=order)
        for _ in range(3):
            masks += walk_both(info, g_a, g_b, rng, 40, budgets)
    assert masks > 300  # the walks went somewhere


@pytest.mark.parametrize("schema, texts", [
    # a repeat closes only at the count of an earlier item: unique_item reads the string's bytes
    ({"type": "array", "items": {"type": "string", "maxLength": 8}, "uniqueItems": True},
     ['["ab", "abc", "ab"]', '["xyz", "xy", "x", "xyz"]']),
    # keys of a counted pattern, each checked as it closes (unique_key, the named key left out)
    ({"type": "object", "patternProperties": {"^x[a-z]{0,4}$": {"type": "integer"}}, "properties": {"xab": {}},
      "additionalProperties": False}, ['{"xa": 1, "xabc": 2, "xa": 3}', '{"xab": 1, "x": 2, "xab": 3}']),
    # named keys spelled with escapes, under a bound the missing required key needs room in
    ({"type": "object", "properties": {"a": {}, "ab": {}, "abc": {"type": "string", "maxLength": 4}}, "required": ["ab"],
      "maxProperties": 1}, ['{"\\u0061b": 1}', '{"a": 1}', '{"abc": "abcd"}']),
    # optional members after a counted string: `",` costs more than `"}`
    ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 20}, "b": {"type": "string"},
                                       "c": {"type": "integer"}}}, ['{"a": "abcdefgh", "b": "xyz"}']),
    # a string that must not be one of a few words
    ({"type": "string", "maxLength": 6, "not": {"enum": ["ab", "abcd"]}}, ['"abcde"', '"ab"', '"abcd"']),
])
@pytest.mark.parametrize("budget", [False, True])
def test_kept_boundary_walks_byte_by_byte(deepseek, schema, texts, budget):
    """Byte by byte, every count of a lexeme fills a mask over the same rows: where a check reads
    the lexeme's bytes (a repeated item or key closing, a forbidden word), no walk is kept. Under
    the tightest budget (where `",` after a string that may close its object costs more than the
    budget leaves) masks walk every boundary for its costs, kept walks or not: the same masks."""
    info = deepseek.info
    g_a = stencil.GrammarCompiler(info).compile_json_schema(schema, property_order="any")
    g_b = stencil.GrammarCompiler(info, mask_optimizations={"repeat_memo": False}).compile_json_schema(
        schema, property_order="any")
    for text in texts:
        masks_alike_byte_by_byte(info, g_a, g_b, text, budget=budget)
