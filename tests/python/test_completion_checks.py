"""Completion checks (`GrammarBuilder.add_check`): uniqueItems, unique keys and required keys in any
order, enforced exactly at the token that completes the offending item, in masks and in
accept_token alike. The oracle is Python's json module on the text accepted so far."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

import stencil
from mask_oracle_checks import masks_alike_byte_by_byte
from stencil.grammar.json.value import json_value, string_expr


def unique_array_grammar():
    b = stencil.GrammarBuilder()
    value = json_value(b)
    # Names of their own: json_value already has "array", "object" and "members" rules.
    arr, items, item = b.rule("unique_array"), b.rule("unique_items"), b.rule("unique_item")
    b.add_alternative(item, [value])
    b.add_check(item, stencil.CheckKind.unique_item)
    b.add_alternative(items, [item])
    b.add_alternative(items, [items, b.literal(","), item])
    b.add_alternative(arr, [b.literal("["), b.literal("]")])
    b.add_alternative(arr, [b.literal("["), items, b.literal("]")])
    return b.build(arr)


def keyed_object_grammar(required, lo, hi):
    b = stencil.GrammarBuilder()
    value = json_value(b)
    obj, members, member, top = b.rule("keyed_object"), b.rule("keyed_members"), b.rule("keyed_member"), b.rule("top")
    b.add_alternative(member, [b.lexeme(string_expr(b), "KEY"), b.literal(":"), value])
    b.add_check(member, stencil.CheckKind.unique_key)
    b.add_alternative(members, [member])
    b.add_alternative(members, [members, b.literal(","), member])
    b.add_alternative(obj, [b.literal("{"), b.literal("}")])
    b.add_alternative(obj, [b.literal("{"), members, b.literal("}")])
    b.add_alternative(top, [obj])
    b.add_check(top, stencil.CheckKind.object_keys, required, lo, hi)
    return b.build(top)


def canon(v):
    """JSON Schema equality: numbers by value (bools are not numbers), objects unordered."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return (type(v).__name__, v)
    if isinstance(v, (int, float)):
        from fractions import Fraction
        return ("num", Fraction(v) if isinstance(v, int) else Fraction(repr(v)))
    if isinstance(v, list):
        return ("list", tuple(canon(x) for x in v))
    return ("obj", frozenset((k, canon(x)) for k, x in v.items()))


def feed(entry, compiled, text):
    """Accept the text token by token, checking mask == accept at every step; returns
    (all tokens accepted, accepting at the end)."""
    m = stencil.Matcher(compiled)
    bm = stencil.allocate_token_bitmask(1, entry.info.vocab_size)
    for t in entry.hf.encode(text, add_special_tokens=False).ids:
        m.fill_next_token_bitmask(bm, 0)
        in_mask = bool((int(bm[0, t >> 5]) >> (t & 31)) & 1)
        ok = m.accept_token(t)
        assert in_mask == ok, (text, entry.info.token_bytes(t))
        if not ok:
            return False, False
    return True, m.is_accepting()


def random_value(rng, depth=0):
    kind = rng.randrange(7 if depth < 2 else 4)
    if kind == 0:
        return rng.choice([0, 1, 2, 1.0, 2.5, -1, 10, 1e2, 100])
    if kind == 1:
        return rng.choice(["a", "b", "A", "\u00e9", "x y", ""])
    if kind == 2:
        return rng.choice([True, False, None])
    if kind == 3:
        return rng.choice([1, "a", True])
    if kind == 4:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    keys = rng.sample(["a", "b", "c"], rng.randrange(3))
    return {k: random_value(rng, depth + 1) for k in keys}


def test_unique_items_exact_against_json_oracle(deepseek):
    compiled = stencil.GrammarCompiler(deepseek.info).compile_grammar(unique_array_grammar())
    rng = random.Random(3)
    seen_dupes = seen_unique = 0
    for _ in range(300):
        arr = [random_value(rng) for _ in range(rng.randrange(6))]
        text = json.dumps(arr, separators=rng.choice([(",", ":"), (", ", ": ")]))
        canon_items = [canon(x) for x in arr]
        unique = len(set(canon_items)) == len(canon_items)
        accepted, accepting = feed(deepseek, compiled, text)
        assert (accepted and accepting) == unique, text
        seen_dupes += not unique
        seen_unique += unique
    assert seen_dupes > 30 and seen_unique > 30


def test_duplicate_is_rejected_at_the_token_that_completes_it(deepseek):
    compiled = stencil.GrammarCompiler(deepseek.info).compile_grammar(unique_array_grammar())
    m = stencil.Matcher(compiled)
    assert m.accept_string('["x", "y", ')
    assert not m.accept_string('"x"')      # the closing quote completes a duplicate
    assert m.accept_string('"x')           # still a prefix of "xy"
    assert m.accept_string('y"]') and m.is_accepting()
    m = stencil.Matcher(compiled)
    assert m.accept_string("[1, 2, 1")     # a prefix of [1, 2, 10]
    assert not m.accept_string("]") and not m.accept_string(",")
    assert m.accept_string("0]") and m.is_accepting()
    m = stencil.Matcher(compiled)
    assert m.accept_string('[{"a": 1, "b": [2]}, ')
    assert not m.accept_string('{"b": [2.0], "a": 1e0}')


def test_object_keys_and_unique_keys(deepseek):
    compiled = stencil.GrammarCompiler(deepseek.info).compile_grammar(keyed_object_grammar(["a", "b"], 2, 3))
    cases = {
        '{"a": 1, "b": 2}': True, '{"b": [1], "a": {}}': True, '{"a": 1, "b": 2, "c": 3}': True,
        '{"a": 1}': False, '{"a": 1, "a": 2}': False, '{"a": 1, "b": 2, "c": 3, "d": 4}': False,
        '{"\\u0061": 1, "a": 2}': False, '{}': False, '{"c": 1, "b": 2, "a": 3}': True,
    }
    for text, valid in cases.items():
        accepted, accepting = feed(deepseek, compiled, text)
        assert (accepted and accepting) == valid, text
    # The closing brace is masked out until the required keys are there.
    m = stencil.Matcher(compiled)
    assert m.accept_string('{"a": 1')
    assert not m.accept_string("}")
    assert m.accept_string(', "b": 2}') and m.is_accepting()


def test_checks_survive_fork_rollback_and_serialization(deepseek):
    grammar = unique_array_grammar()
    again = stencil.Grammar.deserialize(grammar.serialize())
    assert again.hash() == grammar.hash() and "check unique_item: unique_item" in str(again)
    compiled = stencil.GrammarCompiler(deepseek.info).compile_grammar(again)
    m = stencil.Matcher(compiled, max_rollback=-1)
    ids = deepseek.hf.encode('["p", "q", "p"]', add_special_tokens=False).ids
    n = m.accept_tokens(ids)
    assert n < len(ids)
    f = m.fork()
    assert not f.accept_string('"]') and f.accept_string('r"]') and f.is_accepting()  # inside the third string
    m.rollback(n)
    assert m.accept_string('["p", "q", "r"]') and m.is_accepting()


def test_bad_checks_are_errors():
    b = stencil.GrammarBuilder()
    r = b.rule("r")
    with pytest.raises(TypeError):  # the kinds are stencil.CheckKind's, one list with the core's
        b.add_check(r, "unique_item")
    with pytest.raises(stencil.GrammarError, match="rules, not lexemes"):
        b.add_check(b.literal("x"), stencil.CheckKind.unique_item)
    b.add_check(r, stencil.CheckKind.unique_item)
    with pytest.raises(stencil.GrammarError, match="already has a check"):
        b.add_check(r, stencil.CheckKind.unique_key)
    with pytest.raises(stencil.GrammarError, match="bounds"):
        b.add_check(b.rule("o"), stencil.CheckKind.object_keys, [], 3, 1)


def not_in_grammar(names):
    b = stencil.GrammarBuilder()
    s = b.rule("word")
    b.add_alternative(s, [b.lexeme(string_expr(b), "WORD")])
    b.add_check(s, stencil.CheckKind.not_in, names)
    top = b.rule("top")
    b.add_alternative(top, [s])
    return b.build(top)


@pytest.mark.parametrize("make, texts", [
    (unique_array_grammar, ['["ab", "abc", "ab"]', '["xyz", "xy", "x", "xyz"]', '[1, 12, 123, 12]']),
    (lambda: keyed_object_grammar(["ab"], 1, 3), ['{"ab": "abab", "abc": 1, "ab": 2}', '{"a": 1, "ab": "a"}']),
    (lambda: not_in_grammar(["ab", "abcd"]), ['"abcde"', '"ab"', '"abcd"']),
])
def test_repeated_mask_memo_tracks_text_the_checks_read(deepseek, make, texts):
    """Inside one lexeme the lexer state and the parser rows repeat, and the matcher reuses its
    last mask; a check that read the lexeme's own bytes (a duplicate string item, a key being
    typed, a forbidden word) must void that. Byte by byte, masks equal those without the memo."""
    grammar = make()
    with_memo = stencil.GrammarCompiler(deepseek.info).compile_grammar(grammar)
    without = stencil.GrammarCompiler(deepseek.info, mask_optimizations={"repeat_memo": False}).compile_grammar(grammar)
    for text in texts:
        masks_alike_byte_by_byte(deepseek.info, with_memo, without, text, refill=True)


def test_boundary_runs_share_scans_only_when_checks_ignore_the_prefix(deepseek):
    """Boundaries ending one lexeme at the same depth share one parser scan; with completion
    checks, boundaries under different token prefixes share it only if no check read the prefix
    (a key being closed reads it, a value being closed does not). Masks equal those computed
    boundary by boundary."""
    runs = stencil.GrammarCompiler(deepseek.info)
    single = stencil.GrammarCompiler(deepseek.info, mask_optimizations={"boundary_runs": False, "repeat_memo": False})
    for grammar in (keyed_object_grammar(["ab"], 1, 4), unique_array_grammar()):
        a_g, b_g = runs.compile_grammar(grammar), single.compile_grammar(grammar)
        for text in ('{"ab": "x", "abc": "ab", "a": 1, "b": [1, "x"]}', '["ab", "abc", 1, "x y", "ab"]',
                     '{"x": "y", "y": "x", "ab": "ab"}'):
            same_masks_along(deepseek, a_g, b_g, text)


def same_masks_along(entry, a_g, b_g, text):
    """Feeds ``text`` to a matcher of each grammar, asserting equal masks before every token;
    stops at the first token either refuses. Returns whether all were accepted."""
    ma, mb = stencil.Matcher(a_g), stencil.Matcher(b_g)
    bma = stencil.allocate_token_bitmask(1, entry.info.vocab_size)
    bmb = stencil.allocate_token_bitmask(1, entry.info.vocab_size)
    for t in entry.hf.encode(text, add_special_tokens=False).ids:
        ma.fill_next_token_bitmask(bma, 0)
        mb.fill_next_token_bitmask(bmb, 0)
        assert np.array_equal(bma, bmb), text
        if not (ma.accept_token(t) and mb.accept_token(t)):
            return False
    return ma.is_accepting() and mb.is_accepting()


def test_boundary_runs_with_named_and_other_keys(deepseek):
    """A key lexeme ends with its closing quote inside tokens (`id":`, `name":`); the names are
    kept apart from other keys by a check on the key's text, so tokens closing different keys
    must not share that verdict, while string values closing alike may. Masks at every step
    equal those computed boundary by boundary."""
    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "integer"},
                                               "type": {"type": "boolean"}},
              "additionalProperties": {"type": "string"}}
    runs = stencil.GrammarCompiler(deepseek.info).compile_json_schema(schema, property_order="any")
    single = stencil.GrammarCompiler(deepseek.info, mask_optimizations={"boundary_runs": False, "repeat_memo": False}
                                     ).compile_json_schema(schema, property_order="any")
    texts = ['{"id": 1, "x": "y", "name": 2, "type": true, "ids": "a", "nam": "b", "i": "c"}',
             '{"ids": "1", "names": "x", "id": 3}']
    for text in texts:
        assert same_masks_along(deepseek, runs, single, text), text


def test_string_closed_inside_tokens_gets_its_own_verdict():
    """Tokens that close a string with the same byte at the same depth share one parser scan
    only when no check reads the string: here a check forbids two words, so `ab"` and `cd"`
    (and `abcd"`, `abce"`) are judged each on its own text."""
    vocab = [b'"', b"a", b"b", b"c", b"d", b"e", b'ab"', b'cd"', b'ba"', b'abcd"', b'abce"', b'ab"x', b"</s>"]
    info = stencil.TokenizerInfo.from_vocab(vocab, eos_token_ids=[len(vocab) - 1])
    for opts in ({}, {"boundary_runs": False}):
        g = stencil.GrammarCompiler(info, mask_optimizations=opts).compile_grammar(not_in_grammar(["ab", "abcd"]))
        m = stencil.Matcher(g)
        assert m.accept_string('"')
        bm = stencil.allocate_token_bitmask(1, info.vocab_size)
        m.fill_next_token_bitmask(bm, 0)
        allowed = {vocab[t] for t in range(len(vocab)) if (int(bm[0, t >> 5]) >> (t & 31)) & 1}
        assert b'ab"' not in allowed and b'abcd"' not in allowed and b'ab"x' not in allowed, opts
        assert {b'cd"', b'ba"', b'abce"', b'"', b"a"} <= allowed, opts


def test_leaf_verdicts_carry_over_only_between_runs_alike():
    """Boundaries that close a lexeme with the same byte from the same lexer state run together,
    and a leaf below them (`,` under `ax"`) is judged once for the run, and for later runs of the
    same state and byte at other depths (`axx"`). Here the lexeme a string closes decides what
    follows (`"a..."` then `,`, `"b..."` then `}`): runs from the two lexer states must not share
    verdicts. Each mask is the expected one, the same boundary by boundary, and every token it
    allows is accepted."""
    ends = [s + e for s in (b"ax", b"ay", b"axy", b"ayx", b"bx", b"by", b"bxy", b"byx") for e in (b'",', b'"}')]
    vocab = [b'"', b"a", b"b", b"x", b"y", b",", b"}", b'x",', b'x"}'] + ends + [b"</s>"]
    info = stencil.TokenizerInfo.from_vocab(vocab, eos_token_ids=[len(vocab) - 1])
    b = stencil.GrammarBuilder()
    body = b.re_repeat(b.re_byte_ranges([(ord("x"), ord("y"))]), 0, -1)
    top = b.rule("top")
    b.add_alternative(top, [b.lexeme(b.re_concat([b.re_literal('"a'), body, b.re_literal('"')]), "A"), b.literal(",")])
    b.add_alternative(top, [b.lexeme(b.re_concat([b.re_literal('"b'), body, b.re_literal('"')]), "B"), b.literal("}")])
    grammar = b.build(top)
    expected = {'"': {b"a", b"b"} | {t for t in ends if t[:1] == b"a" and t.endswith(b",")}
                | {t for t in ends if t[:1] == b"b" and t.endswith(b"}")},
                '"a': {b"x", b"y", b'x",'}, '"b': {b"x", b"y", b'x"}'}}
    for opts in ({}, {"boundary_runs": False, "repeat_memo": False}):
        g = stencil.GrammarCompiler(info, mask_optimizations=opts).compile_grammar(grammar)
        for text, want in expected.items():
            m = stencil.Matcher(g)
            assert m.accept_string(text)
            bm = stencil.allocate_token_bitmask(1, info.vocab_size)
            m.fill_next_token_bitmask(bm, 0)
            allowed = {vocab[t] for t in range(len(vocab)) if (int(bm[0, t >> 5]) >> (t & 31)) & 1}
            assert allowed >= want and not allowed - want - {b'"', b",", b"}"}, (opts, text, allowed)
            for t in allowed:
                assert stencil.Matcher(g).accept_string(text) and m.fork().accept_token(vocab.index(t)), (text, t)


def test_duplicate_item_closed_inside_a_token_is_masked():
    """A token that ends an array item and goes on (`8,`) is masked out when the item repeats an
    earlier one, while tokens ending other items the same way (`3,`) stay allowed, with and
    without shared boundary scans."""
    digits = [str(d).encode() for d in range(10)]
    vocab = [b"[", b"]", b",", b" ", b'"', b"x"] + digits + [d + b"," for d in digits] + [d + b"]" for d in digits] + [b"</s>"]
    info = stencil.TokenizerInfo.from_vocab(vocab, eos_token_ids=[len(vocab) - 1])
    for opts in ({}, {"boundary_runs": False}):
        g = stencil.GrammarCompiler(info, mask_optimizations=opts).compile_grammar(unique_array_grammar())
        m = stencil.Matcher(g)
        assert m.accept_string("[8, 9, ")  # in trie order the unique items (1-7) come first
        bm = stencil.allocate_token_bitmask(1, info.vocab_size)
        m.fill_next_token_bitmask(bm, 0)
        allowed = {vocab[t] for t in range(len(vocab)) if (int(bm[0, t >> 5]) >> (t & 31)) & 1}
        assert b"8," not in allowed and b"9]" not in allowed, opts
        assert b"3," in allowed and b"0]" in allowed and b"8" in allowed, opts  # 8 may go on: 80, 81...
        # Inside an item, tokens that close it share the bytes before them but not their own:
        # each verdict is on its own text (`18,` repeats 18, `17,` does not).
        m = stencil.Matcher(g)
        assert m.accept_string("[18, 9, 1")
        m.fill_next_token_bitmask(bm, 0)
        allowed = {vocab[t] for t in range(len(vocab)) if (int(bm[0, t >> 5]) >> (t & 31)) & 1}
        assert b"8," not in allowed and b"8]" not in allowed, opts
        assert {b"0,", b"7,", b"9]", b"8", b","} <= allowed, opts


GUARDED_SCHEMAS = [
    ({"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
      "required": ["id"], "maxProperties": 3, "additionalProperties": {"type": "integer"}},
     ['{"id": 1, "x": 2, "name": "n"}', '{"name": "n", "x": 1, "y": 2}', '{"x": 1, "id": 2, "x": 3}',
      '{"name": "a", "id": 1}', '{"id": 1, "id": 2}', '{"ids": 1, "id": 2, "name": "x"}']),
    ({"const": {"a": 21, "bc": [1]}}, ['{"bc": [1], "a": 21}', '{"a": 21, "a": 21}', '{"a": 2.1e1, "bc": [1.0]}']),
    ({"type": "array", "items": {"enum": ["ab", "abc", 1, 10, True]}, "uniqueItems": True},
     ['["abc", "ab", 10, 1, true]', '["ab", "ab"]', '[1, 10, 1.0]', '[10, 1e1]', '[true, "abc"]']),
    # An item that is a prefix of another: after `[12, ` the token `1` may go on to `12` (vetoed)
    # or end as `1`; named keys that are prefixes of each other, with and without other keys.
    ({"type": "array", "items": {"enum": [1, 12, 123]}, "uniqueItems": True},
     ['[12, 1, 123]', '[1, 12]', '[12, 12]', '[123, 12, 1]', '[1, 123, 1]']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"type": "integer"}, "b": {"type": "integer"}},
      "additionalProperties": False},
     ['{"ab": 1, "a": 2, "b": 3}', '{"a": 1, "ab": 2, "a": 3}', '{"b": 1, "ab": 2, "ab": 3}', '{"a": 1, "abc": 2}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"type": "integer"}},
      "additionalProperties": {"type": "integer"}, "required": ["ab"]},
     ['{"ab": 1, "a": 2, "abc": 3}', '{"abc": 1, "ab": 2, "abc": 3}', '{"a": 1, "ab": 2, "a": 3}', '{"a": 1, "b": 2}']),
]


@pytest.mark.parametrize("schema, texts", GUARDED_SCHEMAS)
def test_checks_before_keys_and_items_against_json_schema(deepseek, schema, texts):
    """next_key / more_members (objects in any order) and next_item (unique arrays of values) run
    as a rule is predicted, inside tokens: masks equal accept_token and the masks computed
    without the memo and boundary runs at every token, and the texts accepted are those
    jsonschema validates (with no key repeated)."""
    import jsonschema
    fast = stencil.GrammarCompiler(deepseek.info).compile_json_schema(schema, property_order="any")
    plain = stencil.GrammarCompiler(deepseek.info, mask_optimizations={"boundary_runs": False, "repeat_memo": False}
                                    ).compile_json_schema(schema, property_order="any")
    valid_seen = invalid_seen = 0

    def no_repeated_keys(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError("a repeated key")
        return dict(pairs)

    for text in texts:
        try:
            valid = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text, object_pairs_hook=no_repeated_keys))
        except ValueError:
            valid = False
        accepted, accepting = feed(deepseek, fast, text)
        assert (accepted and accepting) == valid, text
        assert same_masks_along(deepseek, fast, plain, text) == valid, text
        valid_seen += valid
        invalid_seen += not valid
    assert valid_seen and invalid_seen


def test_member_starts_share_one_lexer_state_whatever_keys_were_seen(deepseek):
    """Where a member of an object in any order may start, the keys already written are vetoed at
    the parser row, not removed from the lexer's start state: every member start of the object
    reaches the same cached mask entries, so walking the same keys in other orders adds none
    (while the masks still refuse the keys seen, checked against accept_token by feed)."""
    names = ["alpha", "beta", "gamma", "delta", "epsilon"]
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}, "additionalProperties": False}
    g = stencil.GrammarCompiler(deepseek.info).compile_json_schema(schema, property_order="any")
    orders = [names, names[::-1], names[2:] + names[:2], [names[i] for i in (3, 0, 4, 1, 2)]]
    counts = []
    for order in orders:
        text = "{" + ", ".join(f'"{n}": {i}' for i, n in enumerate(order)) + "}"
        assert feed(deepseek, g, text) == (True, True), text
        assert feed(deepseek, g, text[:-1] + f', "{order[0]}": 9}}') == (False, False)
        counts.append(g.num_cached_masks)
    assert counts[1:] == counts[:-1], counts


def test_vetoed_keys_stay_exact_across_lexer_renewals(deepseek):
    """A lexer that renews (its memory limit passed inside long pattern strings) renumbers its
    states: the walker's per-state memos of the vetoed-key walk are forgotten with the old epoch,
    and masks at every member start equal those of a grammar that never renews."""
    pattern = "^[ab]*a[ab]{12}c$"
    schema = {"type": "object", "additionalProperties": False,
              "properties": {"alpha": {"type": "string", "pattern": pattern}, "beta": {"type": "integer"},
                             "gamma": {"type": "string", "pattern": pattern}, "delta": {"type": "integer"}}}
    rng = random.Random(3)

    def value():
        return "".join(rng.choice("ab") for _ in range(700)) + "a" + "".join(rng.choice("ab") for _ in range(12)) + "c"
    small = stencil.GrammarCompiler(deepseek.info, lexer_memory_bytes=200 << 10)
    renewing = small.compile_json_schema(schema, property_order="any")
    steady = stencil.GrammarCompiler(deepseek.info).compile_json_schema(schema, property_order="any")
    text = json.dumps({"beta": 1, "alpha": value(), "delta": 2, "gamma": value()})
    assert same_masks_along(deepseek, renewing, steady, text)
    assert renewing.num_lexer_renewals >= 2
    assert not same_masks_along(deepseek, renewing, steady, text[:-1] + ', "beta": 3}')


_X = {"type": "object", "properties": {"a": {"type": "integer"}, "d": {"type": "integer"}}, "required": ["a"],
      "additionalProperties": False}
_Y = {"type": "object", "properties": {"a": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["c"],
      "maxProperties": 2, "additionalProperties": {"type": "integer"}}
ROOM_SCHEMAS = [
    {"anyOf": [_X, _Y]},
    {"anyOf": [_Y, _X]},
    # the same key names one level down, under other required names and bounds
    {"type": "object", "properties": {"a": _Y, "b": {"type": "integer"}}, "required": ["b"], "maxProperties": 2,
     "additionalProperties": {"type": "integer"}},
    # room for one more: a named key's verdict is whether it was written, before the walk's token or in it
    {"type": "object", "properties": {"a": {"type": "integer"}, "c": {"type": "integer"}, "d": {"type": "integer"}},
     "additionalProperties": False},
]


@pytest.mark.parametrize("schema", ROOM_SCHEMAS)
def test_next_key_room_counts_the_required_names_of_each_object(schema):
    """Two objects' next_key checks read one member list (anyOf at one place) or the same key names
    (nested): each leaves room for its own object's required names. Against jsonschema: after each
    prefix, the letters L whose key may start are exactly those some valid object goes on with.
    Asked twice: by the byte `L` after `"` (the keys read as the comma was accepted), and by a
    token `,"L` after a value (the keys read inside a mask walk, the earlier ones kept apart)."""
    import jsonschema
    valid = jsonschema.Draft202012Validator(schema).is_valid
    letters = "abcdx"
    vocab = [bytes([i]) for i in range(256)] + [b"<eos>"] + [f',"{c}'.encode() for c in letters]
    info = stencil.TokenizerInfo.from_vocab(vocab, eos_token_ids=256)
    g = stencil.GrammarCompiler(info).compile_json_schema(schema, property_order="any", whitespace="compact")
    bm = stencil.allocate_token_bitmask(1, len(vocab))
    nested = schema.get("properties", {}).get("a", {}).get("type") == "object"
    values = ['{"a":{"a":1', '{"a":{"c":1', '{"a":{"a":1,"c":1'] if nested else ['{"a":1', '{"c":1', '{"a":1,"c":1']
    members = ["", ',"a":1', ',"c":1', ',"d":1', ',"c":1,"d":1']
    closes = ['},"b":1}', "}}"] if nested else ["}"]

    def completes(text):
        try:  # a repeated key is never valid (json.loads would keep the last)
            return valid(json.loads(text, object_pairs_hook=no_repeats))
        except ValueError:
            return False

    def allowed_after(text, token_of):
        m = stencil.Matcher(g)
        if not m.accept_string(text):  # (a comma no member can follow)
            return set()
        m.fill_next_token_bitmask(bm, 0)
        return {c for c in letters if (int(bm[0, token_of(c) >> 5]) >> (token_of(c) & 31)) & 1}

    seen = []
    for value in values:
        expected = {c for c in letters if any(completes(value + f',"{key}":1' + more + close)
                                              for key in (c, c + "z") for more in members for close in closes)}
        assert allowed_after(value + ',"', ord) == expected, value
        assert allowed_after(value, lambda c: 257 + letters.index(c)) == expected, value
        seen.append(expected)
    assert any(seen) and any(e != set(letters) for e in seen)  # the prefixes allow keys and refuse some


def no_repeats(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a repeated key")
    return dict(pairs)
