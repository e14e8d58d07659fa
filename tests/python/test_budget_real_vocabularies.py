"""Budget-aware masks on real tokenizers and JSON Schemas (the part of issue 18's checks that
needs a real vocabulary): random walks within their budget end valid, loose budgets leave the mask
bit for bit, masks equal the definition (the cost after each kept token fits) on counted strings,
word counts, lengths beside patterns and formats, with few lexer states; searches cut short by
their work limit still bound the cost. test_budget.py holds the definition on tiny vocabularies
(and an independent regex oracle).
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
from budget_helpers import EOS, byte_vocab  # noqa: E402

from tests.support.tight_walks import allowed  # noqa: E402

# ----------------------------------------------------------------------- real tokenizers

REAL_SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "minLength": 2}, "age": {"type": "integer"},
                                      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
     "required": ["name", "age"]},
    {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"},
                                      "kind": {"enum": ["a", "bb", "ccc"]},
                                      "point": {"type": "object", "properties": {"x": {"type": "number"},
                                                                                 "y": {"type": "number"}},
                                                "required": ["x", "y"]}},
     "required": ["id", "kind", "point"]},
    {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+@[a-z]+\\.com$"}, "minItems": 1,
     "maxItems": 2},
]


@pytest.mark.parametrize("zoo_name", ["smollm2-gguf", "cl100k"])
def test_real_vocabulary_random_walks_end_valid(zoo_name):
    """Random tokens of a real vocabulary under JSON Schemas with the budget at the bound and a
    little above: each walk ends with JSON that validates, within its budget."""
    jsonschema = pytest.importorskip("jsonschema")
    import tokenizers_zoo
    tok = tokenizers_zoo.get(zoo_name).info
    c = stencil.GrammarCompiler(tok)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    eos = set(tok.eos_token_ids)
    rng = random.Random(5)
    for schema in REAL_SCHEMAS:
        g = c.compile_json_schema(schema, whitespace="compact", string_spelling="plain")
        for slack in (0, 2, 8):
            m = stencil.Matcher(g)
            k = m.min_completion_tokens() + slack
            out = []
            for used in range(k):
                ids = allowed(m, bm, k - used)
                assert ids, m.debug_state()
                t = rng.choice(ids)
                if t in eos:
                    break
                assert m.accept_token(t)
                out.append(t)
            assert m.is_accepting()
            value = json.loads(tok.decode_bytes(out).decode("utf-8"))
            jsonschema.validators.validator_for(schema)(schema).validate(value)


def test_real_vocabulary_masks_identical_when_budget_is_loose():
    """Along a valid instance under SmolLM2's vocabulary: a budget with room to spare gives the
    unbudgeted mask bit for bit at every step; a tight one only removes tokens."""
    import tokenizers_zoo
    z = tokenizers_zoo.get("smollm2-gguf")
    tok = z.info
    g = stencil.GrammarCompiler(tok).compile_json_schema(REAL_SCHEMAS[0], whitespace="compact")
    text = json.dumps({"name": "Ada Lovelace", "age": 36, "tags": ["math", "poetry"]}, separators=(",", ":"))
    ids = z.encode_batch([text])[0]
    m = stencil.Matcher(g)
    free = stencil.allocate_token_bitmask(1, tok.vocab_size)
    budgeted = stencil.allocate_token_bitmask(1, tok.vocab_size)
    tightened = 0
    for i, t in enumerate(ids):
        m.fill_next_token_bitmask(free, 0)
        m.fill_next_token_bitmask(budgeted, 0, remaining_tokens=m.min_completion_tokens() + 200)
        assert (free == budgeted).all(), i
        m.fill_next_token_bitmask(budgeted, 0, remaining_tokens=m.min_completion_tokens())
        assert not (budgeted & ~free).any()
        tightened += int((budgeted != free).any())
        assert m.accept_token(t)
    assert tightened > len(ids) // 2


@pytest.mark.parametrize("zoo_name", ["smollm2-gguf", "cl100k"])
def test_real_vocabulary_mask_matches_the_bound_after_each_token(zoo_name):
    """The mask's walk (which skips sub-tries of looping characters in strings and numbers)
    against the definition, token by token: t is allowed under k exactly when the bound after
    accepting t is at most k - 1, for sampled tokens at states along random budgeted walks."""
    import tokenizers_zoo
    tok = tokenizers_zoo.get(zoo_name).info
    c = stencil.GrammarCompiler(tok)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    eos = set(tok.eos_token_ids)
    rng = random.Random(9)
    checked = 0
    for schema in REAL_SCHEMAS:
        g = c.compile_json_schema(schema, whitespace="compact", string_spelling="plain")
        m = stencil.Matcher(g)
        k = m.min_completion_tokens() + 6
        for used in range(k):
            full = [t for t in allowed(m, bm) if t not in eos]
            for kk in {k - used, max(m.min_completion_tokens(), 1)}:
                got = set(allowed(m, bm, kk))
                for t in rng.sample(full, min(len(full), 40)):
                    y = m.fork()
                    assert y.accept_token(t)
                    fits = y.min_completion_tokens() is not None and y.min_completion_tokens() <= kk - 1
                    assert (t in got) == fits, (tok.token_bytes(t), kk, m.debug_state())
                    checked += 1
            ids = allowed(m, bm, k - used)
            t = rng.choice(ids)
            if t in eos:
                break
            assert m.accept_token(t)
    assert checked > 1000


# Strings the budget costs per successor state or bounds by a lexeme ceiling: counted (maxLength,
# minLength), an unanchored pattern that tracks its progress, a date-time format, free keys after
# the known ones, a long hex id. (In definition order: the bound does not model required keys in
# any order, where no token may fit and the cheapest then stay.)
COUNTED_SCHEMAS = [
    {"type": "object", "properties": {"note": {"type": "string", "maxLength": 300},
                                      "code": {"type": "string", "minLength": 5, "maxLength": 40},
                                      "hex": {"type": "string", "pattern": "^0x[0-9a-f]{24}$"}},
     "required": ["note", "code", "hex"], "additionalProperties": False},
    {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"},
                                      "ref": {"type": "string", "pattern": "\\d{3}-\\d{2}"}},
     "required": ["when", "ref"]},
    # numbers: ranges keep the digits read, so their lexer states never repeat and no ceiling
    # search over them ends (LexemeCeiling::state_ceiling skips it; the successors decide)
    # formats and patterns whose lexeme ceilings are read off the expression (no search), a
    # length beside a pattern (an intersection: searched), an enum of long strings
    {"type": "object", "properties": {"u": {"type": "string", "format": "uri"},
                                      "e": {"type": "string", "format": "email"},
                                      "v": {"type": "string", "maxLength": 12, "pattern": "^\\d+\\.\\d+.*$"},
                                      "k": {"enum": ["application/octet-stream", "text/plain"]}},
     "required": ["u", "e", "v", "k"], "additionalProperties": False},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0},
                                      "x": {"type": "number", "minimum": 1.5, "maximum": 1000},
                                      "c": {"enum": [1, 2]}, "i": {"type": "integer"}},
     "required": ["n", "x", "c", "i"], "additionalProperties": False},
    # key patterns: beside the keys that do not match (their pairs give way to each other: the
    # ceiling comes from the states one token reaches, LexemeCeiling::reach), and alone, where a
    # matched pattern leaves `.*` among its alternatives
    {"type": "object", "properties": {"sums": {"type": "object", "minProperties": 1,
                                               "patternProperties": {"[0-9a-f]{20}": {"type": "boolean"}}},
                                      "tags": {"type": "object", "minProperties": 2, "additionalProperties": False,
                                               "patternProperties": {"[0-9]{2}": {"type": "integer"}}}},
     "required": ["sums", "tags"], "additionalProperties": False},
    # a long unanchored run of letters and digits: each count a state of its own, each walk of its
    # successors every such token, so the token searches are not afforded and a path in single
    # bytes bounds the cost (LexemeSearch::tokens_to_end); the masks must still follow it exactly
    {"type": "object", "properties": {"rid": {"type": "string", "pattern": "[a-zA-Z0-9_-]{60}"}},
     "required": ["rid"], "additionalProperties": False},
    # a length beside a complement (text up to a marker, as Qwen3-Coder's raw parameters): each count
    # a state of its own, whose walk for a token that ends it is answered by the state with the
    # count lifted (LexemeSearch::ends_in_one_token)
    {"type": "object", "properties": {"body": {"type": "string", "minLength": 20, "maxLength": 90,
                                               "not": {"pattern": "</p>"}}},
     "required": ["body"], "additionalProperties": False},
    # formats beside a minLength (benchmarks/format_strings.py): the token searches of a URI's
    # counts run out of work, and what a cost falls back to must stay within the ceilings (the
    # single bytes' distance) and be what the one-token check and the mask both use
    {"type": "object", "properties": {
        "links": {"type": "array", "maxItems": 5,
                  "items": {"type": "string", "format": "uri", "minLength": 47, "maxLength": 64}},
        "mail": {"type": "string", "format": "email", "minLength": 26, "maxLength": 2048},
        "at": {"type": "string", "format": "date-time", "minLength": 20, "maxLength": 253}},
     "required": ["at", "mail", "links"], "additionalProperties": False},
]


@pytest.mark.parametrize("zoo_name", ["smollm2-gguf", "cl100k"])
@pytest.mark.parametrize("schema_index", range(len(COUNTED_SCHEMAS)))
def test_budget_masks_equal_the_definition_on_counted_strings(zoo_name, schema_index):
    """Every allowed token, at budgets from the bound to far above it, along random budgeted
    walks: t stays allowed under k exactly when the bound after accepting t is at most k - 1 (the
    mask's costs come from the walk's successor states and the lexeme ceilings, the oracle from
    a fork that accepts t)."""
    import tokenizers_zoo
    tok = tokenizers_zoo.get(zoo_name).info
    g = stencil.GrammarCompiler(tok).compile_json_schema(COUNTED_SCHEMAS[schema_index], whitespace="compact",
                                                         string_spelling="plain")
    _check_budget_masks_against_the_definition(g, tok, random.Random(31 + schema_index), slacks=(20, 4))


def _check_budget_masks_against_the_definition(g, tok, rng, slacks):
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    eos = set(tok.eos_token_ids)
    checked = refused = 0
    for slack in slacks:
        m = stencil.Matcher(g)
        k = m.min_completion_tokens() + slack
        for used in range(k):
            full = [t for t in allowed(m, bm) if t not in eos]
            bound = m.min_completion_tokens()
            sample = rng.sample(full, min(len(full), 25))
            after = {}
            for t in sample:
                y = m.fork()
                assert y.accept_token(t)
                after[t] = y.min_completion_tokens()
            # (largest first, as a generation's budget shrinks: each smaller one must redo what
            # a bound that fitted the larger one skipped)
            for kk in sorted({max(bound, 1), bound + 2, bound + 3, k - used, bound + 60}, reverse=True):
                got = set(allowed(m, bm, kk))
                for t in sample:
                    fits = after[t] is not None and after[t] <= kk - 1
                    assert (t in got) == fits, (tok.token_bytes(t), kk, after[t], m.debug_state())
                    # the one-token check (opportunistic masking) answers as the mask does
                    assert m.fork().accept_token(t, kk) == fits, (tok.token_bytes(t), kk)
                    checked += 1
                    refused += not fits
            t = rng.choice(allowed(m, bm, k - used))
            if t in eos:
                break
            assert m.accept_token(t)
        assert m.is_accepting()
    assert checked > 500 and refused > 0


@pytest.mark.parametrize("schema_index", [0, 2, 5])
def test_budget_below_the_bound_keeps_the_cheapest_tokens(schema_index):
    """Under a budget below the bound (1, and the bound - 1) no token fits, unless one spans two
    lexemes, and the cheapest stay: along random walks, every token the mask keeps (end of
    sequence aside) has the same bound after it, no sampled token the grammar allows has a
    smaller one, and each sampled token of that bound is kept (the oracle: a fork that accepts
    the token). The costs then come from those the mask walk and the successor states found, not
    from a walk of the whole trie."""
    import tokenizers_zoo
    tok = tokenizers_zoo.get("smollm2-gguf").info
    g = stencil.GrammarCompiler(tok).compile_json_schema(COUNTED_SCHEMAS[schema_index], whitespace="compact",
                                                         string_spelling="plain")
    rng, bm, eos = random.Random(7 + schema_index), stencil.allocate_token_bitmask(1, tok.vocab_size), set(tok.eos_token_ids)
    m = stencil.Matcher(g)
    checked = 0
    for _ in range(40):
        bound = m.min_completion_tokens()
        full = [t for t in allowed(m, bm) if t not in eos]
        if not full or bound < 3:
            break
        sample = rng.sample(full, min(len(full), 30))
        for kk in (1, bound - 1):
            kept = [t for t in allowed(m, bm, kk) if t not in eos]
            assert kept, (kk, m.debug_state())
            costs = {}
            for t in set(kept[:10]) | set(sample):
                y = m.fork()
                assert y.accept_token(t)
                costs[t] = y.min_completion_tokens()
            if all(costs[t] is not None and costs[t] <= kk - 1 for t in kept[:10]):
                # a token that spans two lexemes may finish sooner than the bound says: it fits
                for t in sample:
                    assert (t in kept) == (costs[t] is not None and costs[t] <= kk - 1), (tok.token_bytes(t), kk)
                continue
            least = {costs[t] for t in kept[:10]}
            assert len(least) == 1 and None not in least, (kk, least)
            (c,) = least
            for t in sample:
                assert costs[t] is None or costs[t] >= c, (tok.token_bytes(t), kk, costs[t], c)
                assert (costs[t] == c) == (t in kept), (tok.token_bytes(t), kk, costs[t], c)
                checked += 1
        assert m.accept_token(rng.choice(allowed(m, bm, bound + 5)))
    assert checked > 300


# Word counts beside a length (a pattern and a maxLength intersected, counts times pattern
# states; every token makes new lexer states): the ceiling of `pattern & C{0,hi}` is read off the
# pattern once minLength is met (Lexer::counted_ceiling), times the longest character's bytes
# near hi. "w" stays near its maxLength, "t" and "d" far from it ("d": a dash needs six digits
# more, so the tokens inside it differ in cost; "m": characters still required, past what the
# pattern needs, in tokens of at most three digits); JSON escapes make characters of up to 12 bytes in the "any" spelling.
WORDS = {"type": "object", "properties": {
    "w": {"type": "string", "minLength": 1, "maxLength": 20, "pattern": "^(?:\\S+\\s+){0,3}\\S+$"},
    "t": {"type": "string", "minLength": 2, "maxLength": 400, "pattern": "^$|(^(?:\\S+\\s+){0,60}\\S+$)"},
    "d": {"type": "string", "minLength": 1, "maxLength": 300, "pattern": "^[a-z]+(?: [a-z]+){0,6}(?:-[0-9]{6})?$"},
    "m": {"type": "string", "minLength": 12, "maxLength": 200, "pattern": "^[0-9]+(?: [0-9]+)*$"}},
    "required": ["w", "t", "d", "m"], "additionalProperties": False}


@pytest.mark.parametrize("spelling", ["plain", "any"])
def test_budget_masks_equal_the_definition_on_word_counts(spelling):
    import tokenizers_zoo
    tok = tokenizers_zoo.get("cl100k").info
    g = stencil.GrammarCompiler(tok).compile_json_schema(WORDS, whitespace="compact", string_spelling=spelling)
    _check_budget_masks_against_the_definition(g, tok, random.Random(7), slacks=(30, 12, 3))


def test_budget_masks_at_a_word_count_beside_a_length_make_few_lexer_states():
    """A word-count pattern beside a maxLength of 5,000 (MaskBench's Github_easy---o21053): every
    token makes new lexer states. With the lexeme ceiling read off the pattern, a budget that
    does not bind costs no successor states: before, each step built the inner tokens' successors
    and searched from each (24,000 lexer states against 2,100 plain, about 50 ms a mask)."""
    import tokenizers_zoo
    z = tokenizers_zoo.get("cl100k")
    schema = {"type": "object", "properties": {"q": {"type": "string", "minLength": 1, "maxLength": 5000,
              "pattern": "^$|(^(?:\\S+\\s+){0,99}\\S+$)"}}, "required": ["q"], "additionalProperties": False}
    text = "What is the meaning of life, the universe and everything? Nobody knows, but many have tried."
    ids = z.encode_batch([json.dumps({"q": text}, separators=(",", ":"))])[0]
    states = {}
    for remaining in (None, 4096, 32):
        g = stencil.GrammarCompiler(z.info).compile_json_schema(schema, whitespace="compact", string_spelling="plain")
        m = stencil.Matcher(g)
        bm = stencil.allocate_token_bitmask(1, z.info.vocab_size)
        for k, t in enumerate(ids):
            m.fill_next_token_bitmask(bm, 0, remaining_tokens=None if remaining is None else remaining + len(ids) - k)
            assert (bm[0, t >> 5] >> (t & 31)) & 1
            assert m.accept_token(t)
        states[remaining] = g.num_lexer_states
    assert states[4096] <= 3 * states[None] and states[32] <= 3 * states[None], states


def test_budget_masks_over_numbers_make_few_lexer_states():
    """A number's lexer states never repeat (the digits read are kept): a lexeme ceiling searched
    from each of them would build up to 256 lexer states per digit and still find none. Budgeted
    masks along long numbers make a few times the lexer states plain masks make, not one search
    per digit."""
    import tokenizers_zoo
    z = tokenizers_zoo.get("cl100k")
    tok = z.info
    schema = COUNTED_SCHEMAS[3]
    value = {"n": 1234567890123, "x": 987.654321, "c": 2, "i": -31415926}
    states = {}
    for budgeted in (False, True):
        g = stencil.GrammarCompiler(tok).compile_json_schema(schema, whitespace="compact", string_spelling="plain")
        m = stencil.Matcher(g)
        bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
        ids = z.encode_batch([json.dumps(value, separators=(",", ":"))])[0]
        for k, t in enumerate(ids):
            if budgeted:
                m.fill_next_token_bitmask(bm, 0, remaining_tokens=len(ids) - k + 8)
            else:
                m.fill_next_token_bitmask(bm, 0)
            assert (bm[0, t >> 5] >> (t & 31)) & 1
            assert m.accept_token(t)
        states[budgeted] = g.num_lexer_states
    # (about 350 against 76 here; about 2,000 with a ceiling search from each number state)
    assert states[True] <= 8 * states[False], states


def test_budget_masks_at_formats_search_nothing_when_loose():
    """A loose budget over a uri and an email: the costs after the tokens that open each string
    and the lexemes' ceilings are read off their expressions (Lexer::pair_bytes), so budgeted
    masks make no more lexer states than plain ones (a ceiling search from the uri's start made
    about 200, a token search per state reached at the opening quote a few dozen per string)."""
    import tokenizers_zoo
    z = tokenizers_zoo.get("cl100k")
    tok = z.info
    schema = {"type": "object", "properties": {"u": {"type": "string", "format": "uri"},
                                               "e": {"type": "string", "format": "email"}},
              "required": ["u", "e"], "additionalProperties": False}
    value = {"u": "https://example.com/a/b?q=1#frag", "e": "ada.lovelace@example.org"}
    ids = z.encode_batch([json.dumps(value, separators=(",", ":"))])[0]
    states = {}
    for budgeted in (False, True):
        g = stencil.GrammarCompiler(tok).compile_json_schema(schema, whitespace="compact", string_spelling="plain")
        m = stencil.Matcher(g)
        m.min_completion_tokens()  # the bound's tables (their searches make states): in both runs
        bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
        free = stencil.allocate_token_bitmask(1, tok.vocab_size)
        for k, t in enumerate(ids):
            m.fill_next_token_bitmask(free, 0)
            if budgeted:
                m.fill_next_token_bitmask(bm, 0, remaining_tokens=len(ids) - k + 200)
                assert (bm == free).all(), k  # loose: the plain mask bit for bit
            assert m.accept_token(t)
        states[budgeted] = g.num_lexer_states
    assert states[True] <= states[False] + 8, states


def test_plain_masks_agree_with_accept_on_a_length_beside_a_pattern():
    """maxLength 6 beside ^\\d+\\.\\d+: after '"9', '"9714' must refuse a fifth digit (no room left
    for '.d'). The shared mask cache keyed both states alike (repetition bounds clamped at the
    longest token also under the intersection, where a far bound still decides emptiness); every
    token the plain mask allows must be accepted."""
    tok = byte_vocab()
    g = stencil.GrammarCompiler(tok).compile_json_schema(
        {"type": "string", "maxLength": 6, "pattern": "^\\d+\\.\\d+.*$"}, string_spelling="plain")
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    rng = random.Random(3)
    for w in range(200):
        m = stencil.Matcher(g)
        k = m.min_completion_tokens() + rng.randrange(4) if w % 2 else None
        for used in range(30 if k is None else k):
            ids = [t for t in allowed(m, bm, None if k is None else k - used) if t != EOS]
            if not ids:
                break
            assert m.accept_token(rng.choice(ids))


def test_budget_masks_at_a_length_beside_a_pattern_make_few_lexer_states():
    """A maxLength beside a pattern (an intersection: counts times pattern states): a lexeme-
    ceiling search from the string's start passes its cap and fails; it stops at 64 states and
    marks what it explored, so the states inside the string search no more (each searched 256
    states again before: 469 states against 81 plain; 392 now, most of them made by the inner
    tokens' successors, InnerSteps, one table per counted state)."""
    import tokenizers_zoo
    z = tokenizers_zoo.get("cl100k")
    tok = z.info
    schema = {"type": "object", "properties": {"v": {"type": "string", "maxLength": 32,
                                                     "pattern": "^(\\d+\\.\\d+\\.\\d+.*)$"}},
              "required": ["v"], "additionalProperties": False}
    ids = z.encode_batch([json.dumps({"v": "1.0.0"}, separators=(",", ":"))])[0]
    states = {}
    for budgeted in (False, True):
        g = stencil.GrammarCompiler(tok).compile_json_schema(schema, whitespace="compact", string_spelling="plain")
        m = stencil.Matcher(g)
        bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
        for k, t in enumerate(ids):
            m.fill_next_token_bitmask(bm, 0, **({"remaining_tokens": len(ids) - k + 2} if budgeted else {}))
            assert (bm[0, t >> 5] >> (t & 31)) & 1
            assert m.accept_token(t)
        states[budgeted] = g.num_lexer_states
    assert states[True] <= 5 * states[False], states


def test_a_token_search_cut_short_still_bounds_the_cost():
    """A maxLength beside a pattern whose states branch at each byte (the last 15 bytes decide):
    the token searches pass their caps (32,768 states from the string's start) before any end, and the
    intersection has no shortest word read off its expression. The cost was then unknown and the
    budget refused every token of a valid instance (an email beside a maxLength 254 in MaskBench);
    the path in single bytes bounds it now (here exactly: one token per byte)."""
    tok = byte_vocab()
    g = stencil.GrammarCompiler(tok).compile_json_schema(
        {"type": "string", "maxLength": 40, "pattern": "^[ab]*a[ab]{14}$"}, string_spelling="plain")
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    text = b'"ab' + b"b" * 13 + b'"'
    for k, b in enumerate(text):  # (the quotes and 15 characters, the first an a: the shortest)
        assert m.min_completion_tokens() == len(text) - k, k
        assert b in allowed(m, bm, len(text) - k), k  # the instance fits its budget exactly
        assert m.accept_token(b)
    assert m.is_accepting()


def test_cost_searches_stop_at_their_work_limit():
    """Three counted patterns intersected beside a minLength of 800: every lexer state costs
    milliseconds of derivatives, and the cost searches behind min_completion_tokens and budget
    masks ran for minutes (a similar MaskBench schema, Handwritten---string2: 286 s for the
    bound). They now stop at a derivative work limit (support/work_limit.h): no bound is known,
    and the budget mask falls back to coarse costs (single-byte distances inside a lexeme): a
    subset of the grammar's mask, never empty, never every token by default. (The lexeme search
    stops at its 8 s; about 9 s in all here, or ends sooner on a fast machine.)"""
    import time
    import tokenizers_zoo
    tok = tokenizers_zoo.get("cl100k").info
    schema = {"type": "string", "minLength": 800, "allOf": [
        {"pattern": "^([a-z][0-9])+$"}, {"pattern": "^((a1b2c3).{2,6}){5}"}, {"pattern": "(x|9){8}$"}]}
    g = stencil.GrammarCompiler(tok).compile_json_schema(schema, string_spelling="plain")
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    start = time.thread_time()
    # None where the lexeme search stops at its 8 s (a deadline: a fast machine may end it first,
    # and then the bound is a real path's length: at least 800 characters in the longest tokens)
    bound = m.min_completion_tokens()
    longest = max(len(tok.token_bytes(t)) for t in range(tok.vocab_size))
    assert bound is None or bound >= 800 // longest
    budgeted = allowed(m, bm, 300)
    assert time.thread_time() - start < 30
    assert budgeted and set(budgeted) <= set(allowed(m, bm))
    assert m.accept_token(budgeted[0])
    after = allowed(m, bm, 299)
    assert after and set(after) <= set(allowed(m, bm))


def test_single_bytes_counted_per_byte_class():
    """SmolLM2's vocabulary lacks 21 single bytes (control bytes JSON never writes unescaped, 0xF1
    and 0xF2 beside 0xF3 in their byte class, bytes UTF-8 never uses). The budget's single-byte
    bounds need a byte per byte class that is a token, not all 256 (asking for all 256 sent every
    counted string down the token searches, milliseconds a mask): with the missing bytes added
    as tokens of their own, the costs, the budget masks on the shared tokens and
    min_completion_tokens are the same along random walks (budgets from below the bound to
    above it), and every budgeted walk ends valid within its budget. Both vocabularies are made
    here, so that neither holds what other tests' grammars left in its shared caches (how far a
    cost search may go depends on what they hold)."""
    jsonschema = pytest.importorskip("jsonschema")
    import tokenizers_zoo
    zoo = tokenizers_zoo.get("smollm2-gguf").info
    tokens = [zoo.token_bytes(i) for i in range(zoo.vocab_size)]
    have = {t for t in tokens if len(t) == 1}
    missing = [bytes([b]) for b in range(256) if bytes([b]) not in have]
    assert len(missing) >= 10   # the vocabulary under test lacks single bytes
    tok, full = _fresh_copy(zoo), _fresh_copy(zoo, missing)
    n = tok.vocab_size
    bm, bm_full = stencil.allocate_token_bitmask(1, n), stencil.allocate_token_bitmask(1, full.vocab_size)
    rng = random.Random(11)
    for schema in COUNTED_SCHEMAS + REAL_SCHEMAS:
        g = stencil.GrammarCompiler(tok).compile_json_schema(schema, whitespace="compact", string_spelling="plain")
        g_full = stencil.GrammarCompiler(full).compile_json_schema(schema, whitespace="compact",
                                                                    string_spelling="plain")
        for _ in range(4):
            m, m_full = stencil.Matcher(g), stencil.Matcher(g_full)
            budget = m.min_completion_tokens() + rng.choice([0, 1, 3, 20])
            text = b""
            while True:
                k = m.min_completion_tokens()
                assert k == m_full.min_completion_tokens(), (schema, text)
                for left in sorted({max(1, k - 1), k, k + 2, max(1, budget)}):
                    m.fill_next_token_bitmask(bm, 0, remaining_tokens=left)
                    m_full.fill_next_token_bitmask(bm_full, 0, remaining_tokens=left)
                    assert np.array_equal(_bits(bm, n), _bits(bm_full, n)), (schema, text, left)
                m.fill_next_token_bitmask(bm, 0, remaining_tokens=budget)
                t = int(rng.choice(np.flatnonzero(_bits(bm, n))))
                if t in tok.eos_token_ids:   # (the budget counts the tokens before EOS)
                    break
                assert m.accept_token(t) and m_full.accept_token(t)
                budget -= 1
                text += tok.token_bytes(t)
            assert budget >= 0 and m.is_accepting()
            jsonschema.validate(json.loads(text), schema)


def _fresh_copy(info, extra=()):
    """A new TokenizerInfo with info's tokens (and `extra` after them): its shared caches start
    empty, whatever other tests' grammars left in info's."""
    tokens = [info.token_bytes(i) for i in range(info.vocab_size)] + list(extra)
    return stencil.TokenizerInfo(tokens, special_token_ids=info.special_token_names, eos_token_ids=info.eos_token_ids)


def _bits(bm, n):
    return np.unpackbits(bm[0].view(np.uint8), bitorder="little")[:n]


@pytest.mark.parametrize("case", ["qwen-coder raw text", "lark counted and-not"])
def test_budget_masks_hold_where_the_cost_search_runs_out(case):
    """A counted lexeme over any character (raw text up to an end marker, at most 80 characters)
    makes every token a lexer state of its own: the exact cost search runs out of work. The mask
    then fell back to the grammar's whole mask, and outputs ran past their budget (a Qwen3-Coder
    tool call cut inside a parameter). Now: at a budget of exactly min_completion_tokens, every
    token the mask allows leaves a completion within the tokens left, and random walks end
    complete within their budgets."""
    import random
    import tokenizers_zoo
    from stencil.testing import random_walk
    tok = tokenizers_zoo.get("deepseek")
    compiler = stencil.GrammarCompiler(tok.info)
    if case == "qwen-coder raw text":
        params = {"type": "object", "properties": {
            "note": {"type": "string", "maxLength": 80},
            "who": {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"}},
                    "required": ["id"]}}, "required": ["note", "who"]}
        g = compiler.compile_tool_calls([{"name": "f", "parameters": params}], format="qwen-coder",
                                        tool_choice="required")
        prefix = "<tool_call>\n<function=f>\n<parameter=note>\nhello"
    else:
        g = compiler.compile_lark('start: X " one two three four five six seven eight"\n'
                                  'X: /(?s:.{0,80})<\\/a>/ & ~/(?s:.*<\\/a>.+)/')
        prefix = "hello"
    m = stencil.Matcher(g)
    ids = tok.encode_batch([prefix])[0]
    assert m.accept_tokens(ids) == len(ids)
    need = m.min_completion_tokens()
    bm = stencil.allocate_token_bitmask(1, tok.info.vocab_size)
    kept = [t for t in allowed(m, bm, need) if t not in tok.info.eos_token_ids]
    assert kept and len(kept) < 5000
    for t in kept:
        f = m.fork()
        assert f.accept_token(t)
        assert f.min_completion_tokens() <= need - 1, (t, tok.info.token_bytes(t))
    rng = random.Random(7)
    for extra in (0, 1, 3, 10):
        for _ in range(3):
            w = m.fork()
            random_walk(w, tok.info, rng, need + extra, end_chance=0.0)
            assert w.is_accepting()


def test_a_counted_string_may_close_with_its_last_characters():
    """A minLength string's last token may hold characters and the closing quote at once
    (``abcdefgh"``): the bound counts it, from the opening quote on and after it (the fewest
    tokens of a counted string body are found per count without a token search, so this path
    must be counted there too, or the bound would be 9 single bytes)."""
    tok = stencil.TokenizerInfo.from_vocab([b"<eos>", b'"', *(bytes([c]) for c in b"abcdefgh"), b'abcdefgh"', b"abcd"],
                                           eos_token_ids=0)
    compiler = stencil.GrammarCompiler(tok)
    for length, fewest in ((8, 2), (6, 2), (12, 3), (9, 3)):
        m = stencil.Matcher(compiler.compile_json_schema({"type": "string", "minLength": length}))
        assert m.min_completion_tokens() == fewest, length
        assert m.accept_token(1)  # the opening quote
        assert m.min_completion_tokens() == fewest - 1, length
    m = stencil.Matcher(compiler.compile_json_schema({"type": "string", "minLength": 8, "maxLength": 8}))
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    assert m.accept_token(1) and m.min_completion_tokens() == 1
    assert allowed(m, bm, 1) == [10]  # only the token that closes it at once fits one token


def test_budget_masks_keep_a_valid_instance_where_the_searches_run_out():
    """A uri of at least 63 characters beside a date list and a host name (an unseen schema of
    `benchmarks.format_strings`): inside the uri every token leads to a lexer state of its own, and
    the exact cost searches of one mask run out of work. The coarse pass then bounded each inner
    token by its distance in single bytes (63 and more), over the tokens the instance had left
    (+ 32): the mask refused `https` at the uri's start, where 14 tokens finish the output. It now
    bounds them by the single bytes' path cut into tokens first (a real path, memoized as a
    search's is), so each token of the instance is kept at every step, and every token it keeps
    leaves a completion within the tokens left. A fresh copy of the vocabulary: what other tests'
    grammars left in its shared caches would decide how far the searches go."""
    import tokenizers_zoo
    zoo = tokenizers_zoo.get("deepseek")
    tok = _fresh_copy(zoo.info)
    schema = {"type": "object", "properties": {
        "date_0": {"type": "array", "items": {"type": "string", "format": "date", "maxLength": 128, "minLength": 10},
                   "maxItems": 5},
        "uri_1": {"type": "string", "format": "uri", "maxLength": 2048, "minLength": 63},
        "hostname_2": {"type": "string", "format": "hostname", "maxLength": 100, "minLength": 12}},
        "required": ["date_0", "hostname_2", "uri_1"], "additionalProperties": False}
    text = json.dumps({"date_0": ["1976-11-07", "1989-12-13"],
                       "uri_1": "https://fast.shipment.support.net/renewal/storage?onboarding=42",
                       "hostname_2": "weekly.co.uk"})
    ids = zoo.encode_batch([text])[0]
    m = stencil.Matcher(stencil.GrammarCompiler(tok).compile_json_schema(schema, string_spelling="plain"))
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    eos = set(tok.eos_token_ids)
    for k, t in enumerate(ids):
        left = len(ids) - k + 32
        kept = allowed(m, bm, left)
        assert t in kept, (k, tok.token_bytes(t))
        for u in kept[:: max(1, len(kept) // 40)]:   # (a sample: each fork's bound is a search)
            if u not in eos:
                f = m.fork()
                assert f.accept_token(u) and 0 <= f.min_completion_tokens() <= left - 1, (k, tok.token_bytes(u))
        assert m.accept_token(t)
    assert m.is_accepting()
