"""Masks agree with ``accept_token`` on tokens that end at a key's closing quote or inside a key
(issue 40): each check that reads a key's text (``unique_key`` as the key or its member ends, the
``not_in`` names of the other keys, keys exhausted under ``propertyNames`` or finite pattern keys,
``uniqueItems``' item guard) must judge each token of a mask by that token's own bytes, the way
``accept_token`` judges it.

The mask walk shares one parser scan among tokens that end a lexeme alike unless a check read
their bytes (ReadWatch::kPrefix), so a check that reports less than it read lets a token take
another's verdict. Two did: the ``unique_key`` check of keys checked as they end
(``property_order="definition"``) reported only the key's first byte, so tokens under different
first bytes (``b"``, ``c"``) that close a key begun before them shared the first one's verdict;
and the memo of exhausted keys replayed what a verdict read where the same key had begun one byte
earlier (after ``,`` rather than ``, ``), missing the key's last byte.

The brute force: random small schemas, random prefixes that begin written keys again, and a
vocabulary of single bytes plus tokens that close keys; at every state after the last complete
member, each token's mask bit must equal what ``accept_token`` says of it."""
from __future__ import annotations

import random

import numpy as np
import pytest

import stencil
from stencil.bitmask import bitmask_to_bool

ORDERS = ["definition", "any"]


def mask_of(matcher, vocab_size: int) -> np.ndarray:
    bm = stencil.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bm, 0)
    return bitmask_to_bool(bm, vocab_size)[0]


# ---------------------------------------------------------------------------------------------
# The reproducer: bytes and two tokens that close a key.

REPRO = [bytes([i]) for i in range(256)] + [b'b"', b'c"', b"<eos>"]
B_CLOSE, C_CLOSE = 256, 257


@pytest.mark.parametrize("fills", [1, 2])
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("prefix, b_new, c_new", [
    ('{"ab":1,"a', False, True),     # b" repeats "ab", c" writes "ac"
    ('{"ac":1,"a', True, False),
    ('{"abc":1,"ab', True, False),   # "abb" is new, "abc" repeats
])
def test_tokens_closing_a_key_each_judged_by_their_own_bytes(order, prefix, b_new, c_new, fills):
    """With fills=2, the mask of the entry's second walk: its merged runs (MergedRuns) judge `"`,
    `b"` and `c"` (one trie) key by key; `c"` walked alone once `"` (one byte deep) had cut the
    frames that held its prefix read a key without its `c`."""
    compiler = stencil.GrammarCompiler(stencil.TokenizerInfo.from_vocab(REPRO, eos_token_ids=[len(REPRO) - 1]),
                                       mask_optimizations={"repeat_memo": False})
    g = compiler.compile_json_schema({"type": "object"}, whitespace="compact", property_order=order)
    m = stencil.Matcher(g)
    assert m.accept_string(prefix)
    for _ in range(fills):
        mask = mask_of(m, len(REPRO))
    for t, new in [(B_CLOSE, b_new), (C_CLOSE, c_new)]:
        probe = stencil.Matcher(g)
        assert probe.accept_string(prefix)
        assert bool(mask[t]) == new == probe.accept_token(t), (order, prefix, REPRO[t])


ESCAPED = [bytes([i]) for i in range(256)] + [b'\\u0062"', b'\\u0063"', b'\\"b"', b'\\"c"', b'\\u0062":',
                                              b'b"', b'c"', b"<eos>"]


@pytest.mark.parametrize("fills", [1, 2])
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("prefix, new_keys", [
    ('{"ab":1,"a', {b'\\u0063"', b'c"', b'\\"b"', b'\\"c"'}),  # `\u0062"` and `b"` close "ab" again
    ('{"a\\u0062":1,"a', {b'\\u0063"', b'c"', b'\\"b"', b'\\"c"'}),  # the written key escaped: "ab"
    ('{"a\\"b":1,"a', {b'\\u0062"', b'\\u0063"', b'\\"c"', b'\\u0062":', b'b"', b'c"'}),  # a"b written
    ('{"ab":1, "a', {b'\\u0063"', b'c"', b'\\"b"', b'\\"c"'}),
])
def test_escaped_keys_judged_by_their_decoded_text(order, prefix, new_keys, fills):
    """A key spelled with escapes (`\\u0062"`, `\\"b"`: hundreds of such tokens in a 262k
    vocabulary) is judged by the key it decodes to, in the mask and in accept_token alike: one that
    decodes to a written key is refused, any other allowed. (The expectations are JSON's, not the
    engine's: the two share the decoding.)"""
    tok = stencil.TokenizerInfo.from_vocab(ESCAPED, eos_token_ids=[len(ESCAPED) - 1])
    compiler = stencil.GrammarCompiler(tok, mask_optimizations={"repeat_memo": False})
    g = compiler.compile_json_schema({"type": "object"}, whitespace="flexible", property_order=order)
    m = stencil.Matcher(g)
    assert m.accept_string(prefix)
    for _ in range(fills):
        mask = mask_of(m, len(ESCAPED))
    for t in range(256, len(ESCAPED) - 1):
        probe = stencil.Matcher(g)
        assert probe.accept_string(prefix)
        want = ESCAPED[t] in new_keys
        assert bool(mask[t]) == want == probe.accept_token(t), (order, prefix, ESCAPED[t], bool(mask[t]))


@pytest.mark.parametrize("order", ORDERS)
def test_deepseek_tokens_closing_a_key_agree_with_accept_token(compiler, deepseek, order):
    """What the dead-end harness found with DeepSeek's vocabulary: `}"` after `{"a}":1,"a` and `]"`
    after `{"a]":1,"a` were allowed by the mask (the first token of their run closed a new key)."""
    tok = deepseek.info
    g = compiler.compile_json_schema({"type": "object"}, whitespace="compact", property_order=order)
    for prefix in ['{"a}":1,"a', '{"a]":1,"a', '{"ab":1,"a', '{"name":1,"na', '{"a":1,"', '{"a}":1,"a}']:
        m = stencil.Matcher(g, max_rollback=2)
        assert m.accept_string(prefix)
        wrong = [tok.token_bytes(t) for t in wrong_bits(m, mask_of(m, tok.vocab_size))]
        assert wrong == [], (prefix, wrong[:10])


# ---------------------------------------------------------------------------------------------
# The brute force.

# Tokens that close keys (alone, with what follows, with the key's start), escapes that close
# them, whitespace around them, and items of unique arrays.
MULTI = [b'b"', b'c"', b'}"', b']"', b'bc"', b'ab"', b'a"', b'"a"', b'"b"', b'"ab"', b'"a', b'"ab',
         b'a":', b'b":', b'c":', b'b":1', b'c":1,', b'b":1}', b'a" :', b'b" :', b'c": 1', b'"a":1',
         b',"a', b',"ab"', b'1,"a', b'1,"ab":', b', "a', b'}":1', b']":', b'b"}', b'b"]', b'b","',
         b'","', b'"]', b'\\u0062"', b'\\u0061', b'2"', b'1"', b'3":', b'\\"', b'"}', b'1}', b'1,',
         b'ca"', b'cab"', b'"ca', b'"cab":', b'bca"']  # (the last five go on after leaving the written keys)
SINGLE = [bytes([i]) for i in list(range(0x20, 0x7F)) + [0x09, 0x0A, 0x0D, 0xC3, 0xA9]]
VOCAB = SINGLE + MULTI + [b"<eos>"]
EOS = len(VOCAB) - 1

INT = {"type": "integer"}
KEYS = ["a", "ab", "ac", "abc", "b", "bc", "c", "a}", "a]", "ab}", "\u00e9"]


def random_schema(rng: random.Random) -> dict:
    """A small object schema: free keys, named properties beside the others, pattern keys, or
    restricted names; sometimes required names and a member bound. Values are integers."""
    shape = rng.choice(["free", "properties", "pattern", "names_enum", "names_pattern", "names_length"])
    s: dict = {"type": "object"}
    names = rng.sample(KEYS, rng.randint(1, 3))
    if shape == "properties":
        s["properties"] = {n: INT for n in names}
        s["additionalProperties"] = rng.choice([True, False, INT])
    elif shape == "pattern":
        # one pattern, or two: keys of two finite lexemes, each leaving the written keys on its own
        patterns = rng.sample(["^a[bc]?$", "^a", "[}\\]]$", "^[abc]{1,2}$", "^[abc]{1,3}$"], rng.choice([1, 1, 2]))
        s["patternProperties"] = {p: INT for p in patterns}
        s["additionalProperties"] = rng.choice([False, INT])
        if rng.random() < 0.5:
            s["properties"] = {n: INT for n in names}
    elif shape == "names_enum":
        s["propertyNames"] = {"enum": rng.sample(KEYS, rng.randint(2, 5))}
    elif shape == "names_pattern":
        s["propertyNames"] = {"pattern": rng.choice(["^[abc]{1,3}$", "^a[}\\]bc]?$", "^[ab]+$", "c$"])}
    elif shape == "names_length":
        s["propertyNames"] = {"maxLength": rng.randint(1, 3)}
    if shape != "free" and "additionalProperties" not in s:
        s["additionalProperties"] = INT
    if rng.random() < 0.3:
        s["required"] = [rng.choice(names)]
    if rng.random() < 0.2:
        s["maxProperties"] = rng.randint(2, 3)
    return s


def spell(key: str, rng: random.Random) -> str:
    """A JSON spelling of key, its quotes included: sometimes with one letter escaped."""
    body = key.replace("\\", "\\\\").replace('"', '\\"')
    if rng.random() < 0.2 and key[:1].isascii() and key[:1].isalpha():
        body = "\\u%04x" % ord(key[0]) + body[1:]
    return '"' + body + '"'


def random_prefix(rng: random.Random, flexible: bool) -> tuple[str, int]:
    """An object's start with a few members, then a member that begins like a written key (or any
    key), cut inside or after its key. Returns the text and where the states to check begin (the
    last member's start)."""
    def ws() -> str:
        return rng.choice(["", "", " ", "\n  "]) if flexible else ""

    written = rng.sample(KEYS, rng.randint(1, 3))
    text = "{" + ws()
    for k in written:
        text += spell(k, rng) + ws() + ":" + ws() + str(rng.randint(0, 12)) + ws() + "," + ws()
    last = rng.choice(written) if rng.random() < 0.8 else rng.choice(KEYS)
    raw = spell(last, rng)
    tail = raw[:rng.randint(1, len(raw))]
    if tail == raw and rng.random() < 0.5:
        tail += ws() + ":"
    return text + tail, len(text) - 1


def wrong_bits(m, mask: np.ndarray) -> list:
    """The tokens whose mask bit differs from what accept_token says of them (m, which must allow a
    rollback of one step, is left as it was)."""
    wrong = []
    for t in range(len(mask)):
        took = m.accept_token(t)
        if took:
            m.rollback(1)
        if took != bool(mask[t]):
            wrong.append(t)
    return wrong


def disagreements(g, text: str, start: int, vocab_size: int, fills: int = 1) -> tuple[list, int]:
    """At each state of text from byte `start` on: the tokens whose mask bit differs from
    accept_token's verdict (as (prefix, token, mask bit)), and how many states were checked.
    With fills > 1 each state's mask is filled that many times and the last one judged (under
    a grammar without the repeat memo, a mask cache entry walked twice merges its runs)."""
    m = stencil.Matcher(g, max_rollback=2)
    data = text.encode()
    if not m.accept_bytes(data[:start]):
        return [], 0
    found, states = [], 0
    for i in range(start, len(data) + 1):
        if i > start and not m.accept_bytes(data[i - 1:i]):
            break
        states += 1
        for _ in range(fills):
            mask = mask_of(m, vocab_size)
        found += [(data[:i], VOCAB[t], bool(mask[t])) for t in wrong_bits(m, mask)]
    return found, states


@pytest.fixture(scope="module")
def vocab_compiler():
    return stencil.GrammarCompiler(stencil.TokenizerInfo.from_vocab(VOCAB, eos_token_ids=[EOS]))


def test_key_verdicts_kept_apart_by_where_the_key_begins(vocab_compiler):
    """The verdict on a key prefix is kept by its row, lexer state and bytes, and now by where the
    key begins: a mask walk after `,` judged the token `"a"` (a repeat of a finite pattern key); the
    same key begun after `, ` took that verdict back with the bytes it read one place early, and
    the walk after `, "` shared its refusal with `b"` and `c"`."""
    schema = {"type": "object", "patternProperties": {"^[abc]{1,2}$": {"type": "integer"}},
              "additionalProperties": {"type": "integer"}}
    g = vocab_compiler.compile_json_schema(schema, whitespace="flexible", property_order="any")
    m = stencil.Matcher(g)
    assert m.accept_string('{"a":0 ,')
    mask_of(m, len(VOCAB))
    assert m.accept_string(' "')
    mask = mask_of(m, len(VOCAB))
    for token, new in [(b'a"', False), (b'b"', True), (b'c"', True), (b'bc"', True)]:
        probe = stencil.Matcher(g)
        assert probe.accept_string('{"a":0 , "')
        assert bool(mask[VOCAB.index(token)]) == new == probe.accept_token(VOCAB.index(token)), token


@pytest.mark.parametrize("seed", range(6))
def test_object_masks_agree_with_accept_token(vocab_compiler, seed):
    found, states = object_disagreements(vocab_compiler, random.Random(seed))
    assert found == []
    assert states >= 250   # most prefixes are texts of their schema: the loop saw real states


@pytest.mark.parametrize("seed", range(3))
def test_merged_run_masks_agree_with_accept_token(seed):
    """The same states' masks from merged runs (MergedRuns: the boundaries that close a key at
    every depth walked as one trie, each token's key judged after): the second walk of a mask
    cache entry merges, so each mask is filled twice with the repeat memo off."""
    compiler = stencil.GrammarCompiler(stencil.TokenizerInfo.from_vocab(VOCAB, eos_token_ids=[EOS]),
                                       mask_optimizations={"repeat_memo": False})
    found, states = object_disagreements(compiler, random.Random(100 + seed), fills=2)
    assert found == []
    assert states >= 250


def object_disagreements(compiler, rng: random.Random, fills: int = 1) -> tuple[list, int]:
    found, states = [], 0
    for _ in range(16):
        schema = random_schema(rng)
        for order in ORDERS:
            for ws in ["compact", "flexible"]:
                try:
                    g = compiler.compile_json_schema(schema, whitespace=ws, property_order=order)
                except stencil.GrammarError:   # no object satisfies it (a required name it refuses)
                    continue
                for _ in range(3):
                    text, start = random_prefix(rng, ws == "flexible")
                    bad, n = disagreements(g, text, start, len(VOCAB), fills)
                    found += [(schema, order, ws, *b) for b in bad[:3]]
                    states += n
    return found, states


UNIQUE_ARRAYS = [
    {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "string", "maxLength": 2}, "uniqueItems": True},
    {"type": "array", "items": {"enum": ["a", "ab", "b}", "c"]}, "uniqueItems": True},
    {"type": "array", "items": {"type": "object"}, "uniqueItems": True},
]


@pytest.mark.parametrize("schema", UNIQUE_ARRAYS)
@pytest.mark.parametrize("order", ORDERS)
def test_unique_item_masks_agree_with_accept_token(vocab_compiler, schema, order):
    """Items of unique arrays that begin like earlier ones (the item guard, a post-filter), and
    objects inside them whose keys begin like their earlier keys."""
    rng = random.Random(7)
    g = vocab_compiler.compile_json_schema(schema, whitespace="compact", property_order=order)
    found, states = [], 0
    for _ in range(8):
        items = rng.sample(["a", "ab", "b}", "c", "abc"], rng.randint(1, 3))
        if schema["items"].get("type") == "object":
            parts = ['{"%s":1}' % k for k in items]
            last = '{"%s":1,"%s' % (items[0], rng.choice(items)[:rng.randint(0, 2)])
        else:
            parts = ['"%s"' % k for k in items]
            last = '"' + rng.choice(items)[:rng.randint(0, 3)]
        text = "[" + ",".join(parts) + "," + last
        bad, n = disagreements(g, text, len(text) - len(last) - 1, len(VOCAB))
        found += [(order, *b) for b in bad[:3]]
        states += n
    assert found == []
    assert states >= 20


def nested_schema(rng: random.Random) -> dict:
    """random_schema, sometimes with fewer members allowed, inside an object or in an array."""
    s = random_schema(rng)
    r = rng.random()
    if r < 0.15:
        s["minProperties"] = rng.randint(1, 2)
    elif r < 0.3:
        s = {"type": "object", "properties": {"o": s, "p": INT}, "additionalProperties": rng.choice([False, s])}
    elif r < 0.4:
        s = {"type": "array", "items": s, "uniqueItems": rng.random() < 0.5}
    return s


KEYISH = [i for i, t in enumerate(VOCAB[:-1]) if any(c in t for c in b'abc"}]:,')]


@pytest.mark.parametrize("seeds", [range(0, 20), range(20, 40)])
def test_random_walk_masks_agree_with_accept_token(vocab_compiler, seeds):
    """Random walks that mostly take key-closing tokens, the mask checked at every step, over
    schemas nested in objects and arrays, with white space compact, flexible or indented."""
    found, states = random_walk_disagreements(vocab_compiler, seeds)
    assert found == []
    assert states >= 1000


def test_random_walk_merged_run_masks_agree_with_accept_token():
    """The same walks' masks from merged runs (each mask filled twice, the repeat memo off)."""
    compiler = stencil.GrammarCompiler(stencil.TokenizerInfo.from_vocab(VOCAB, eos_token_ids=[EOS]),
                                       mask_optimizations={"repeat_memo": False})
    found, states = random_walk_disagreements(compiler, range(40, 60), fills=2)
    assert found == []
    assert states >= 1000


def random_walk_disagreements(compiler, seeds, fills: int = 1) -> tuple[list, int]:
    found, states = [], 0
    for seed in seeds:
        rng = random.Random(seed)
        schema = nested_schema(rng)
        for order in ORDERS:
            for ws in ["compact", "flexible", 2]:
                try:
                    g = compiler.compile_json_schema(schema, whitespace=ws, property_order=order)
                except stencil.GrammarError:
                    continue
                m, out = stencil.Matcher(g, max_rollback=2), b""
                for _ in range(30):
                    for _ in range(fills):
                        mask = mask_of(m, len(VOCAB))
                    states += 1
                    found += [(schema, order, ws, out, VOCAB[t]) for t in wrong_bits(m, mask)[:3]]
                    ids = [int(i) for i in np.nonzero(mask)[0] if i != EOS]
                    if not ids:
                        break
                    keyish = [i for i in ids if i in KEYISH]
                    t = rng.choice(keyish if keyish and rng.random() < 0.8 else ids)
                    assert m.accept_token(t)
                    out += VOCAB[t]
    return found, states
