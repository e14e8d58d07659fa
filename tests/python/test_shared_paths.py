"""The token paths the budget's searches find to a lexeme's end, shared by every grammar compiled
for one vocabulary (keyed by the lexer state's canonical signature, cost/lexeme_search.cpp): a
grammar that meets a state another grammar's search already answered replays that path through its
own lexer instead of searching. Its costs and budget masks must be those of a vocabulary whose
shared cache is empty, and the paths must be taken (not searched again)."""
from __future__ import annotations

import random

import numpy as np

import stencil
from stencil.testing import vocab_stats

# Schemas that share lexemes (a date, an e-mail, a counted pattern, key names, bounded strings)
# in different places and beside different neighbours: other lexeme ids, other lexer states.
SCHEMAS = [
    {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                                      "when": {"type": "string", "format": "date"},
                                      "mail": {"type": "string", "format": "email"}},
     "required": ["id", "when", "mail"], "additionalProperties": False},
    {"type": "array", "minItems": 2, "maxItems": 3,
     "items": {"type": "object", "properties": {"when": {"type": "string", "format": "date"},
                                                "note": {"type": "string", "minLength": 5, "maxLength": 12}},
               "required": ["when", "note"], "additionalProperties": False}},
    {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                                      "mail": {"type": "string", "format": "email"},
                                      "n": {"type": "integer", "minimum": 10, "maximum": 99}},
     "required": ["code", "mail", "n"], "additionalProperties": False},
]


def _walk_masks(info, grammar, rng_seed: int, slack: int) -> tuple[int, list[np.ndarray]]:
    """The shortest completion, and the budget masks along a seeded walk that takes a random allowed
    token each step under a budget of that completion plus ``slack``."""
    m = stencil.Matcher(grammar)
    need = m.min_completion_tokens()
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    rng = random.Random(rng_seed)
    masks, left = [], need + slack
    while not m.is_terminated() and left > 0:
        m.fill_next_token_bitmask(bm, 0, remaining_tokens=left)
        masks.append(bm[0].copy())
        allowed = np.flatnonzero(np.unpackbits(bm[0].view(np.uint8), bitorder="little")[:info.vocab_size])
        assert len(allowed), "an empty budget mask"
        token = int(rng.choice(allowed))
        if token in info.eos_token_ids:
            break
        assert m.accept_token(token)
        left -= 1
    return need, masks


def test_shared_paths_give_the_costs_and_masks_of_a_cold_vocabulary(deepseek):
    warm_info = stencil.TokenizerInfo.from_huggingface(deepseek.hf)
    warm = stencil.GrammarCompiler(warm_info)
    for i, schema in enumerate(SCHEMAS):   # each after the ones before filled the shared paths
        cold_info = stencil.TokenizerInfo.from_huggingface(deepseek.hf)
        cold = stencil.GrammarCompiler(cold_info).compile_json_schema(schema)
        for seed in range(3):
            w_need, w_masks = _walk_masks(warm_info, warm.compile_json_schema(schema), seed, slack=seed * 3)
            c_need, c_masks = _walk_masks(cold_info, cold, seed, slack=seed * 3)
            assert w_need == c_need, (i, seed)
            assert len(w_masks) == len(c_masks), (i, seed)
            for k, (a, b) in enumerate(zip(w_masks, c_masks)):
                assert np.array_equal(a, b), (i, seed, k)
    stats = vocab_stats(warm_info)
    assert stats.shared_path_entries > 0 and stats.shared_path_hits > 0


def test_a_grammar_with_the_same_lexemes_takes_the_paths_instead_of_searching(deepseek):
    info = stencil.TokenizerInfo.from_huggingface(deepseek.hf)
    compiler = stencil.GrammarCompiler(info)
    first = stencil.Matcher(compiler.compile_json_schema(SCHEMAS[0])).min_completion_tokens()
    entries, hits = vocab_stats(info).shared_path_entries, vocab_stats(info).shared_path_hits
    assert entries > 0
    # the same lexemes in another order, under another title: every search answered by a path
    again = dict(SCHEMAS[0], title="Again", properties=dict(reversed(list(SCHEMAS[0]["properties"].items()))))
    assert stencil.Matcher(compiler.compile_json_schema(again)).min_completion_tokens() == first
    after = vocab_stats(info)
    assert after.shared_path_entries == entries
    assert after.shared_path_hits > hits
