"""Keys that can only end as duplicates (issue 24, F1): where the keys outside ``properties`` have
a finite language (propertyNames ``enum``/``const``/``maxLength``/an anchored ``pattern``,
patternProperties), a key prefix whose every completion repeats a key written before it must be
refused at once; the unique_key check alone vetoed it only as the key (or its member) ended, after
the mask had let the generation walk into a state with no way on, not even end of sequence.

The exact masks are asserted on a byte vocabulary; random walks over a real tokenizer and the
byte vocabulary assert that no mask is ever a dead end and that every output is valid (checked by
the ``jsonschema`` package, independent of the engine, with duplicate keys refused)."""
from __future__ import annotations

import json
import random

import jsonschema
import numpy as np
import pytest

import stencil
from stencil.bitmask import bitmask_to_bool

BYTES = [bytes([i]) for i in range(256)] + [b"<eos>"]
EOS = 256


@pytest.fixture(scope="module")
def byte_tok():
    return stencil.TokenizerInfo.from_vocab(BYTES, eos_token_ids=[EOS])


@pytest.fixture(scope="module")
def byte_compiler(byte_tok):
    return stencil.GrammarCompiler(byte_tok)


def allowed(matcher, tok) -> np.ndarray:
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    matcher.fill_next_token_bitmask(bm, 0)
    return bitmask_to_bool(bm, tok.vocab_size)[0].nonzero()[0]


def next_bytes(compiler, tok, schema, prefix, order):
    g = compiler.compile_json_schema(schema, whitespace="compact", property_order=order)
    m = stencil.Matcher(g)
    assert m.accept_string(prefix), prefix
    return {BYTES[i] for i in allowed(m, tok)}


ORDERS = ["definition", "any"]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("schema, prefix, expected", [
    # the reproducer: after "a", a key may only be "b" (or an escape of it)
    ({"type": "object", "propertyNames": {"enum": ["a", "b"]}}, '{"a":1,"', {b"\\", b"b"}),
    ({"type": "object", "propertyNames": {"pattern": "^[a-c]$"}}, '{"a":1,"', {b"\\", b"b", b"c"}),
    # the key written escaped is the same key
    ({"type": "object", "propertyNames": {"pattern": "^[a-c]$"}}, '{"\\u0061":1,"', {b"\\", b"b", b"c"}),
    # inside an escape: \u0061 ("a") is refused, \u0062 and \u0063 stay
    ({"type": "object", "propertyNames": {"pattern": "^[a-c]$"}}, '{"a":1,"\\u006', {b"2", b"3"}),
    # a key that can go on: after "a, "ab" is still new, the closing quote is not
    ({"type": "object", "propertyNames": {"pattern": "^(a|ab)$"}}, '{"a":1,"a', {b"\\", b"b"}),
    # the other keys leave out the named "a" (not_in) and "b" is written: "c" is left, and in any
    # order the named "a" itself
    ({"type": "object", "properties": {"a": {"type": "integer"}},
      "patternProperties": {"^[a-c]$": {"type": "integer"}}, "additionalProperties": False},
     '{"b":1,"', {b"\\", b"c"} | {b"a"}),
])
def test_mask_refuses_a_key_that_can_only_repeat(byte_compiler, byte_tok, schema, prefix, expected, order):
    if "properties" in schema and order == "definition":
        expected = expected - {b"a"}   # the named "a" comes first in definition order
    assert next_bytes(byte_compiler, byte_tok, schema, prefix, order) == expected


@pytest.mark.parametrize("order", ORDERS)
def test_max_length_one_refuses_the_written_key(byte_compiler, byte_tok, order):
    got = next_bytes(byte_compiler, byte_tok, {"type": "object", "propertyNames": {"maxLength": 1}},
                     '{"a":1,"', order)
    assert b"a" not in got and {b"b", b" ", b"\\", b"\xc3"} <= got
    assert b'"' in got   # the empty key is new too


def test_dead_end_reproducer_then_goes_on(byte_compiler, byte_tok):
    """The issue's reproducer: "a" refused after "a"; "b" then leads on, and once both keys are
    written the comma is refused too (it would open a key that can only repeat)."""
    g = byte_compiler.compile_json_schema({"type": "object", "propertyNames": {"enum": ["a", "b"]}},
                                          whitespace="compact")
    m = stencil.Matcher(g)
    assert m.accept_string('{"a":1,"')
    assert ord("a") not in allowed(m, byte_tok)
    assert not m.accept_token(ord("a"))
    assert m.accept_string('b":2')
    after = set(allowed(m, byte_tok).tolist())
    # the number may go on, or the object close; a comma would lead to a third key, and none is left
    assert ord("}") in after and ord(",") not in after
    assert m.accept_string("}") and m.is_accepting()


FREE_KEYS = [{"type": "object"}, {"type": "object", "additionalProperties": {"type": "integer"}},
             {"type": "object", "properties": {"x": {"type": "integer"}}, "patternProperties": {"^q": {}}}]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("schema", FREE_KEYS)
def test_free_form_key_refuses_its_closing_quote_as_a_repeat(byte_compiler, byte_tok, schema, order):
    """Keys of any string (whose unique_key check waits for the member's value in any order):
    the closing quote that would repeat a written key is refused, in every spelling, and the
    matcher refuses what the mask refuses; a key that only begins like a written one stays."""
    for written, prefix in [('ab', '"ab'), ('ab', '"a\u0062'), ('q1', '"q1'), ('\u00e9', '"\u00e9')]:
        got = next_bytes(byte_compiler, byte_tok, schema, '{"' + written[0:] + '":1,' + prefix, order)
        assert b'"' not in got, (written, prefix)
        assert {b"a", b"\\"} <= got   # the key may go on
        g = byte_compiler.compile_json_schema(schema, whitespace="compact", property_order=order)
        m = stencil.Matcher(g)
        assert m.accept_string('{"' + written + '":1,' + prefix)
        assert not m.accept_string('"')
    assert b'"' in next_bytes(byte_compiler, byte_tok, schema, '{"ab":1,"a', order)   # "a" is new
    assert b'"' in next_bytes(byte_compiler, byte_tok, schema, '{"ab":1,"abc', order)


def test_free_form_key_repeat_refused_inside_tokens(compiler, deepseek):
    """With a real vocabulary, no mask token closes a written key (alone or with the key's start
    inside it), and each mask token is one the matcher accepts."""
    import re
    tok = deepseek.info
    g = compiler.compile_json_schema({"type": "object"}, whitespace="compact", property_order="any")
    refused = 0
    for prefix in ['{"name":1,"name', '{"name":1,"na', '{"":1,', '{"":1,"', '{"name":1,"x":2,"x', '{"a":1,"']:
        m = stencil.Matcher(g)
        assert m.accept_string(prefix)
        ids = set(allowed(m, tok).tolist()) - set(tok.eos_token_ids)
        for t in range(tok.vocab_size):
            text = prefix + tok.token_bytes(t).decode("utf-8", "replace")
            keys = re.findall(r'[{,]"((?:[^"\\]|\\.)*)"', text)
            repeats = len(keys) != len(set(keys))
            if t in ids:
                assert not repeats, text
                probe = stencil.Matcher(g)
                assert probe.accept_string(prefix) and probe.accept_token(t), text
            elif repeats:
                refused += 1
    assert refused >= 10   # tokens that close a key: the quote, quote-colon, two quotes, ...


INT = {"type": "integer", "minimum": 0, "maximum": 99}
WALK_SCHEMAS = [
    {"type": "object", "propertyNames": {"enum": ["a", "b"]}, "additionalProperties": INT},
    {"type": "object", "propertyNames": {"const": "k"}, "additionalProperties": {"type": "boolean"}},
    {"type": "object", "propertyNames": {"maxLength": 1, "pattern": "^[a-e]*$"}, "additionalProperties": INT},
    {"type": "object", "additionalProperties": INT, "minProperties": 2, "maxProperties": 3,
     "propertyNames": {"pattern": "^[a-c]$"}},
    {"type": "object", "propertyNames": {"pattern": "^(a|ab|abc)$"}, "additionalProperties": INT},
    {"type": "object", "patternProperties": {"^x[0-2]$": INT}, "additionalProperties": False},
    {"type": "object", "properties": {"a": INT}, "patternProperties": {"^[a-c]$": INT},
     "additionalProperties": False, "required": ["a"]},
    {"type": "object", "properties": {"a": INT, "b": INT}, "required": ["a"],
     "propertyNames": {"enum": ["a", "b", "c", "d"]}, "additionalProperties": {"type": "null"}},
    {"type": "object", "propertyNames": {"maxLength": 2, "pattern": "^[xy]+$"}, "maxProperties": 4,
     "additionalProperties": INT},
    # keys of an infinite language over a small alphabet: walks repeat keys ("a", "b", ...)
    {"type": "object", "propertyNames": {"pattern": "^[ab]+$"}, "additionalProperties": INT},
    {"type": "object", "patternProperties": {"^[xy]+$": INT}, "additionalProperties": False,
     "properties": {"x": {"type": "boolean"}}},
    {"type": "object", "properties": {"o": {"type": "object", "propertyNames": {"enum": ["p", "q"]},
                                            "additionalProperties": INT, "minProperties": 1}},
     "required": ["o"], "additionalProperties": False},
    # keys of a finite pattern, each dependency a union of object shapes: with a and c no third
    # key is left for minProperties (b needs no c, d no c, e no a), so "c" after "a" must go
    {"type": "object", "patternProperties": {"^[a-e]$": INT}, "additionalProperties": False,
     "dependencies": {"a": {"anyOf": [{"required": ["c"]}, {"required": ["b"]}]}, "b": {"not": {"required": ["c"]}},
                      "c": {"not": {"required": ["d"]}}, "d": {"not": {"required": ["e"]}},
                      "e": {"not": {"required": ["a"]}}},
     "required": ["a"], "minProperties": 3},
]


@pytest.mark.parametrize("schema", [
    {"type": "object", "patternProperties": {"^[a-e]$": True}, "additionalProperties": False, "minProperties": 6},
    {"type": "object", "properties": {"a": {}}, "patternProperties": {"^[ab]$": True},
     "additionalProperties": False, "minProperties": 3},
    {"type": "object", "propertyNames": {"pattern": "^[xy]$"}, "minProperties": 3},
])
def test_more_members_than_keys_is_refused(byte_compiler, schema):
    """minProperties past the keys a finite key pattern leaves (beside the named ones): no object
    satisfies it, which the compiler says, where its masks let the generation walk into a dead end."""
    with pytest.raises(stencil.GrammarError, match="no JSON value satisfies"):
        byte_compiler.compile_json_schema(schema)


def test_the_keys_a_dependency_leaves_are_counted(byte_compiler, byte_tok):
    """The dependencies schema of WALK_SCHEMAS: after "a", the keys that lead to a valid object
    are "b" and "d" ({a, b, d} is its one key set), not "c" nor "e"."""
    schema = WALK_SCHEMAS[-1]
    for order in ORDERS:   # (in definition order, d may have to wait for b)
        got = next_bytes(byte_compiler, byte_tok, schema, '{"a":1,"', order)
        assert b"b" in got and got <= {b"\\", b"b", b"d"}, order


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), f"duplicate keys {keys}"
    return dict(pairs)


def random_walk(matcher, tok, rng, max_steps):
    """Samples allowed tokens until end of sequence or max_steps: (bytes so far, how it stopped:
    "end", "dead" (a mask with no token and no end of sequence) or "cap")."""
    eos = set(tok.eos_token_ids)
    out = []
    for _ in range(max_steps):
        ids = allowed(matcher, tok)
        if len(ids) == 0:
            return b"".join(out), "dead"
        text_ids = [int(i) for i in ids if int(i) not in eos]
        if matcher.is_accepting() and (not text_ids or rng.random() < 0.25):
            return b"".join(out), "end"
        t = text_ids[rng.randrange(len(text_ids))]
        assert matcher.accept_token(t)
        out.append(tok.token_bytes(t))
    return b"".join(out), "cap"


def walks(compiler, tok, n_walks, max_steps, seed):
    """The dead ends over every schema and order, and how many outputs ended (each one valid,
    checked by jsonschema with duplicate keys refused)."""
    rng = random.Random(seed)
    dead, ended = [], 0
    for schema in WALK_SCHEMAS:
        for order in ORDERS:
            g = compiler.compile_json_schema(schema, whitespace="compact", property_order=order)
            for _ in range(n_walks):
                text, how = random_walk(stencil.Matcher(g), tok, rng, max_steps)
                if how == "dead":
                    dead.append((schema, order, text))
                elif how == "end":
                    jsonschema.validate(json.loads(text, object_pairs_hook=no_duplicates), schema)
                    ended += 1
    return dead, ended


def test_random_walks_never_dead_end_bytes(byte_compiler, byte_tok):
    dead, ended = walks(byte_compiler, byte_tok, n_walks=12, max_steps=80, seed=24)
    assert dead == []
    assert ended >= 150   # most walks end: the check above saw real outputs


def test_random_walks_never_dead_end_real_tokenizer(compiler, deepseek):
    dead, ended = walks(compiler, deepseek.info, n_walks=12, max_steps=60, seed=1)
    assert dead == []
    assert ended >= 150


def test_free_form_key_mask_memo_after_rollback(byte_compiler, byte_tok):
    """A mask inside a key that no written key begins like reads nothing of the key (it stays fit
    for the memo); after a rollback to a prefix of a written key, the next fill must see it again."""
    g = byte_compiler.compile_json_schema({"type": "object"}, whitespace="compact", property_order="any")
    m = stencil.Matcher(g, max_rollback=8)
    assert all(m.accept_token(b) for b in b'{"ab":1,"ac')   # byte tokens, one step each
    assert ord('"') in allowed(m, byte_tok)       # "ac" is new
    m.rollback(1)
    assert m.accept_token(ord("b"))               # now "ab": the same lexer state and parser rows
    assert ord('"') not in allowed(m, byte_tok)
    assert not m.accept_token(ord('"'))
    m.rollback(1)
    assert m.accept_token(ord("d")) and ord('"') in allowed(m, byte_tok)
