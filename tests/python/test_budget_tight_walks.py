"""Budget-aware masks at the edge: walks that start with a budget of exactly
``min_completion_tokens()`` and keep choosing the tokens that use the whole budget (cost after
= tokens left - 1), so that every step is one where a wrong bound shows.

At each step, before any cost after a token was asked (a mask first: what the cost memos hold
then must not decide it), the budgeted mask must keep some token (the budget never paints
itself into a corner), every kept token sampled must finish within the tokens left after it
(``min_completion_tokens()`` of a fork), and the walk must end complete within its budget.
The schemas are of the shapes whose cost searches run out of work (a counted pattern with a
character it needs, long runs, formats) or whose key order the grammar must count (any order
with required keys), in both member orders and with flexible whitespace (whitespace tokens are
many and never shorten a completion).
"""
from __future__ import annotations

import json
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import stencil  # noqa: E402
from tests.support.tight_walks import tight_walk  # noqa: E402

SCHEMAS = {
    # a character the pattern needs (@) amid a count up to 200: each length a lexer state of its
    # own, the exact token searches run out of the mask's work
    "needed-char": {"type": "object", "properties": {
        "contact": {"type": "string", "minLength": 10, "maxLength": 200, "pattern": ".+[@].+[.]___"}},
        "required": ["contact"]},
    "run-and-format": {"type": "object", "properties": {
        "rid": {"type": "string", "pattern": "[a-zA-Z0-9_-]{40}"},
        "when": {"type": "string", "format": "date"},
        "n": {"type": "integer", "minimum": 10, "maximum": 99999}},
        "required": ["rid", "when", "n"]},
    # six required keys beside optional ones and free keys: in any order the member list holds
    # which are written (64 key sets), so the shortest completion writes the missing ones
    "many-required": {"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}, "kind": {"enum": ["a", "bb"]},
        "price": {"type": "number"}, "currency": {"enum": ["EUR", "USD"]}, "description": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}}, "ok": {"type": "boolean"}},
        "required": ["description", "currency", "price", "kind", "name", "id"]},
    "nested": {"type": "object", "properties": {
        "items": {"type": "array", "minItems": 1, "items": {
            "type": "object", "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
                                             "qty": {"type": "integer", "minimum": 1}},
            "required": ["sku", "qty"]}},
        "note": {"type": "string", "maxLength": 30}},
        "required": ["items"]},
}


@pytest.mark.parametrize("order", ["definition", "any"])
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_tight_walks_end_within_the_budget(name, order):
    import tokenizers_zoo
    tok = tokenizers_zoo.get("smollm2-gguf").info
    jsonschema = pytest.importorskip("jsonschema")
    g = stencil.GrammarCompiler(tok).compile_json_schema(SCHEMAS[name], property_order=order)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    eos = set(tok.eos_token_ids)
    rng = random.Random(name)
    for w in range(6):
        m = stencil.Matcher(g, max_rollback=-1)
        k = m.min_completion_tokens() + w % 3
        walk = tight_walk(m, k, bm, eos, rng, tok.vocab_size, sample=12, tight=0.85, stop=0.2)
        assert walk.end == "done" and walk.over == 0, walk.first
        text = tok.decode_bytes(walk.taken)
        jsonschema.validate(json.loads(text), SCHEMAS[name])

