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

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import stencil  # noqa: E402

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


def allowed(m: stencil.Matcher, bm: np.ndarray, k: int) -> list[int]:
    m.fill_next_token_bitmask(bm, 0, remaining_tokens=k)
    return np.nonzero(np.unpackbits(bm[0].view(np.uint8), bitorder="little"))[0].tolist()


def tight_walk(m: stencil.Matcher, k: int, bm: np.ndarray, eos: set, rng: random.Random, vocab: int) -> list[int]:
    """One walk under a budget of k from m; the tokens it took. Asserts the three properties."""
    taken: list[int] = []
    for used in range(k + 1):
        left = k - used
        ids = [t for t in allowed(m, bm, left) if t < vocab and t not in eos]
        if m.is_accepting() and (not ids or rng.random() < 0.2):
            return taken
        assert ids, f"no token fits {left} tokens left after {used}: {m.debug_state()}"
        tight = []
        for t in rng.sample(ids, min(12, len(ids))):
            f = m.fork()
            assert f.accept_token(t)
            c = f.min_completion_tokens()
            assert c is not None and c <= left - 1, (t, c, left, m.debug_state())
            if c == left - 1:
                tight.append(t)
        taken.append(rng.choice(tight) if tight and rng.random() < 0.85 else rng.choice(ids))
        assert m.accept_token(taken[-1])
    raise AssertionError(f"the budget of {k} ran out before the output was complete: {m.debug_state()}")


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
    for walk in range(6):
        m = stencil.Matcher(g, max_rollback=-1)
        k = m.min_completion_tokens() + walk % 3
        text = tok.decode_bytes(tight_walk(m, k, bm, eos, rng, tok.vocab_size))
        jsonschema.validate(json.loads(text), SCHEMAS[name])

