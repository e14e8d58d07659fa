"""The mask caches: per grammar (by lexer state) and per vocabulary (by the lexer state's canonical
signature, shared across grammars). Masks served from a warm cache must equal masks computed by a
cold one, including when another grammar filled the shared cache and boundaries are resolved
through a different lexer."""
from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

import stencil
from stencil.grammar.json.value import json_value
from stencil.testing import vocab_stats


def grammar_variant(k: int):
    """Generic JSON plus k extra literal alternatives: other lexeme ids, other lexer states."""
    b = stencil.GrammarBuilder()
    for i in range(k):
        b.literal(f"unused{i}")  # shifts lexeme numbering between variants
    value = json_value(b)
    start = b.rule("start")
    b.add_alternative(start, [value])
    for i in range(k):
        b.add_alternative(start, [b.literal("@" * (i + 1)), value])
    return b.build(start)


def masks_along(entry, compiled, text):
    m = stencil.Matcher(compiled)
    bm = stencil.allocate_token_bitmask(1, entry.info.vocab_size)
    out = []
    for t in entry.hf.encode(text, add_special_tokens=False).ids:
        m.fill_next_token_bitmask(bm, 0)
        out.append(bm[0].copy())
        assert m.accept_token(t)
    return out


NO_SHORTCUTS = {"shared_masks": False, "plain_slice": False, "loop_skip": False}


def walks_alike(toks, schema, choose, walks, steps, **compile_opts):
    """Random walks under ``schema`` (a vocabulary of ``toks``, EOS first or last as ``<eos>``)
    with the cache's shortcuts and without: each mask equal to the whole trie walk's, the token
    ``choose(allowed)`` picks taken by both. Yields each mask's allowed token ids."""
    def compiled(**opts):
        info = stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[toks.index(b"<eos>")])
        return stencil.GrammarCompiler(info, **opts).compile_json_schema(schema, whitespace="compact",
                                                                         **compile_opts)
    fast, slow = compiled(), compiled(mask_optimizations=NO_SHORTCUTS)
    bm = stencil.allocate_token_bitmask(2, len(toks))
    for _ in range(walks):
        a, b = stencil.Matcher(fast), stencil.Matcher(slow)
        for _ in range(steps):
            if a.is_terminated():
                break
            a.fill_next_token_bitmask(bm, 0)
            b.fill_next_token_bitmask(bm, 1)
            assert np.array_equal(bm[0], bm[1]), (schema, a.debug_state())
            allowed = [t for t in range(len(toks)) if (int(bm[0, t >> 5]) >> (t & 31)) & 1]
            yield allowed
            t = choose(allowed)
            assert a.fork().accept_token(t) and a.accept_token(t) and b.accept_token(t), (schema, toks[t])


def test_shared_masks_equal_cold_masks(deepseek):
    rng = random.Random(5)
    texts = [json.dumps({"k": [1, "two", {"x": None}], "s": "h\u00e9llo \u4e16\u754c", "n": -1.5e3}),
             json.dumps([{"a": "b" * rng.randrange(1, 30)} for _ in range(3)]),
             '@@ {"deep": [[["x"]]], "e": "\\u0041\\n"}']
    warm_info = deepseek.info
    compiler = stencil.GrammarCompiler(warm_info)
    for k in (0, 1, 3):  # each variant reuses what the previous ones put in the shared cache
        warm = compiler.compile_grammar(grammar_variant(k))
        for text in texts:
            if text.startswith("@") and k < 2:
                continue
            # A fresh vocabulary has an empty shared cache: every mask is walked from scratch.
            cold_info = stencil.TokenizerInfo.from_huggingface(deepseek.hf)
            cold = stencil.GrammarCompiler(cold_info).compile_grammar(grammar_variant(k))
            for a, b in zip(masks_along(deepseek, warm, text), masks_along(deepseek, cold, text)):
                assert np.array_equal(a, b)
    assert vocab_stats(warm_info).shared_mask_entries > 0


def test_shared_cache_is_hit_across_grammars(deepseek):
    info = stencil.TokenizerInfo.from_huggingface(deepseek.hf)
    compiler = stencil.GrammarCompiler(info)
    masks_along(deepseek, compiler.compile_grammar(grammar_variant(0)), '{"a": "text"}')
    entries = vocab_stats(info).shared_mask_entries
    # Another grammar with the same string lexeme reaches the same string-body state: no new entry.
    b = stencil.GrammarBuilder()
    value = json_value(b)
    start = b.rule("pair")
    b.add_alternative(start, [b.literal("["), value, b.literal("]")])
    g = compiler.compile_grammar(b.build(start))
    m = stencil.Matcher(g)
    assert m.accept_string('["')
    before = vocab_stats(info).shared_mask_entries
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(bm, 0)
    assert vocab_stats(info).shared_mask_entries == before >= entries


@pytest.mark.parametrize("pattern,text", [
    (r'"[a-z ]{0,200}"', '"' + "the quick brown fox jumps over the lazy dog " * 4 + '"'),
    (r'"[^"]{3,150}"x', '"' + "abc " * 36 + '"x'),
    (r'(ab|c){0,400}', "ab" * 150 + "c" * 90),
])
def test_bounded_repetitions_share_entries_soundly(deepseek, pattern, text):
    # States of a bounded repetition differ only in the count left; far from the bound they share
    # a shared-cache entry (the key clamps counts at the longest token). Near the bound they must
    # not: compare every mask with a compiler that shares nothing.
    warm = stencil.GrammarCompiler(deepseek.info).compile_regex(pattern)
    cold = stencil.GrammarCompiler(stencil.TokenizerInfo.from_huggingface(deepseek.hf),
                                   mask_optimizations={"shared_masks": False}).compile_regex(pattern)
    for a, b in zip(masks_along(deepseek, warm, text), masks_along(deepseek, cold, text)):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("max_length,text", [
    (3, "ab"), (5, "ñé€𝄞x"), (20, "hello wörld, fine"), (40, "日本語のテキスト" * 4),
    (130, "lorem ipsum dolor sit amet " * 5), (300, "consectetur adipiscing elit " * 11),
])
def test_bounded_strings_take_plain_tokens_by_character_count(deepseek, max_length, text):
    """A string with k characters left admits exactly the plain tokens of at most k characters
    (a slice by character count, multibyte characters counted once); every mask equals the one
    a compiler without plain slices or shared masks computes by walking the whole trie."""
    schema = {"type": "array", "items": {"type": "string", "maxLength": max_length}}
    text = json.dumps([text[:max_length], text[:max_length // 2]], ensure_ascii=False)
    fast = stencil.GrammarCompiler(deepseek.info).compile_json_schema(schema, key_spelling="plain")
    slow = stencil.GrammarCompiler(stencil.TokenizerInfo.from_huggingface(deepseek.hf),
                                   mask_optimizations={"shared_masks": False, "plain_slice": False}
                                   ).compile_json_schema(schema, key_spelling="plain")
    fast_masks, slow_masks = masks_along(deepseek, fast, text), masks_along(deepseek, slow, text)
    assert len(fast_masks) == len(slow_masks) == len(deepseek.hf.encode(text, add_special_tokens=False).ids)
    for a, b in zip(fast_masks, slow_masks):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("schema,value", [
    ({"type": "string", "maxLength": 32, "pattern": "^(\\d+\\.\\d+\\.\\d+.*)$"}, "1.0.12-beta x \u00e9"),
    ({"type": "string", "minLength": 6, "maxLength": 6}, "abc\u00e9\u2029z"),
    ({"type": "string", "pattern": "^[a-z]*$", "maxLength": 10}, "qzxjkvbwmp"),
    ({"type": "string", "pattern": "^(..)*$", "maxLength": 5}, "qzxj"),  # even lengths: 5 is out
    ({"type": "string", "minLength": 9}, "long enough \u2028 text"),
    ({"type": "string", "pattern": "\\d{3}-x"}, "ab 123-x and \u2028 more"),
    ({"type": "string", "pattern": "^[a-z.]+@.*$", "maxLength": 24}, "ann@b.c d \u00e9"),
    # states that loop on a class of characters: sub-tries of it are skipped whole
    ({"type": "string", "pattern": "^[^/]+/[^/]+$"}, "sec/12 \u00e9 \u65e5"),
    ({"type": "string", "pattern": "^[^\\s]+$"}, "a\u00e9\u4e2d\u3001x"),
    ({"type": "string", "pattern": "^([\\w\\/-]|[\\w-][\\w\\/-]*[\\w-])$", "maxLength": 255}, "my/side-bar_2"),
    ({"type": "string", "pattern": "^[0-9A-Za-z]{8}-[0-9A-Za-z]{4}$"}, "ab12CD34-x9Z0"),
    ({"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$"},
     "www.example-host.co"),
    ({"type": "string", "maxLength": 40, "pattern": "^\\d+\\.\\d+.*$"}, "1.22 rc \u00e9 x"),
    # bounds some tokens reach (16 to 128): a state per count, sub-tries under the bound walked
    # with it lifted (a word count, a counted class, a length beside a pattern), up to the bound
    ({"type": "string", "maxLength": 500, "pattern": "^(?:\\S+\\s+){0,49}\\S+$"},
     "This is an example service summary with a few more words " * 3 + "end"),
    ({"type": "string", "pattern": "^(?:\\S+\\s+){0,19}\\S+$"}, " ".join(["word"] * 19) + " last"),
    ({"type": "string", "pattern": "^[a-z ]{0,40}$"}, "ab" + " " * 36 + "cd"),
    ({"type": "string", "maxLength": 30, "pattern": "^[a-zA-Z0-9_ -]+$"}, "internationalization_x " + "-" * 7),
    ({"type": "array", "items": {"type": "string", "pattern": "^[a-z]{0,24}$"}},
     ["abcdefghijklmnopqrstuvwx", "internationalization", ""]),
    # loop-shaped parts: one alternative of a pattern (before the closing quote too), a free
    # key beside named ones
    ({"type": "string", "pattern": "^draft|in review|published$"}, "not yet in review, x \u00e9"),
    ({"type": "string", "pattern": "^(https?:\\/\\/)?([\\da-z\\.-]+)\\.([a-z\\.]{2,6})([\\/\\w \\.-]*)*\\/?$"},
     "https://en.wikipedia.org/wiki/Height of x"),
    ({"type": "object", "properties": {"alpha": {"type": "integer"}, "beta": {"type": "string"},
                                       "gamma_delta": {"type": "boolean"}},
      "additionalProperties": {"type": "string"}}, {"alpha": 1, "beta": "y", "zeta \u00e9 alp": "x"}),
])
def test_string_states_with_patterns_and_counts_match_full_walks(deepseek, schema, value):
    """Plain tokens are taken whole where a string state provably admits them: a pattern that
    matches anywhere, one whose rest holds any text beside a length bound, counts with only a
    lower bound. Line separators are not plain (a pattern's `.` refuses them). Sub-tries are
    skipped where every character in them loops on the state. Every mask, on valid text and
    around it, equals a full trie walk's."""
    masks_match_full_walks(deepseek, schema, value, 7)


def masks_match_full_walks(entry, schema, value, prefix):
    """Every mask along ``value``'s JSON text and along its first ``prefix`` characters equals the
    mask of a compiler without the cache's shortcuts (each one a whole trie walk)."""
    fast = stencil.GrammarCompiler(entry.info).compile_json_schema(schema, string_spelling="plain")
    slow = stencil.GrammarCompiler(stencil.TokenizerInfo.from_huggingface(entry.hf),
                                   mask_optimizations=NO_SHORTCUTS
                                   ).compile_json_schema(schema, string_spelling="plain")
    for text in (json.dumps(value, ensure_ascii=False), json.dumps(value, ensure_ascii=False)[:prefix]):
        fast_masks, slow_masks = masks_along(entry, fast, text), masks_along(entry, slow, text)
        assert len(fast_masks) == len(slow_masks) > 1
        for a, b in zip(fast_masks, slow_masks):
            assert np.array_equal(a, b), (schema, text)


@pytest.mark.parametrize("schema,value", [
    # keys that match a counted pattern property beside those that match none (a complement over
    # the count): the state's words stay alive on any plain text, provably from a subset of them
    ({"type": "object", "properties": {"Name": {"type": "string"}},
      "patternProperties": {"^[a-z_]{1,200}$": {"type": "integer"}}},
     {"Name": "x", "count_total": 3, "Other Key \u00e9!": True, "n": 1}),
    ({"type": "object", "patternProperties": {"^[0-9a-zA-Z_-]{1,255}$": {"type": ["string", "null"]},
                                              "^x\\.[a-z]{2,40}$": {"type": "integer"}}},
     {"x.ab": 1, "column12": None, "x y z": "\u65e5"}),
    ({"type": "string", "not": {"pattern": "^[a-z]{2,64}$"}}, "abc de \u00e9"),
    # where the subset dies, the state is walked as before: only pattern keys, a bounded body
    ({"type": "object", "patternProperties": {"^[a-z_]{1,200}$": {"type": "integer"}},
      "additionalProperties": False}, {"alpha_beta": 1, "g": 2}),
    ({"type": "string", "maxLength": 40, "not": {"pattern": "^[a-z]{1,30}$"}}, "abc de"),
])
def test_complements_over_counts_match_full_walks(deepseek, schema, value):
    """A count under a complement (the keys no pattern property matches, beside a pattern of 1 to
    255 characters; a string that must not match a counted pattern) is a new lexer state at every
    byte, which no exploration of plain text exhausts. Plain tokens are taken whole where a subset
    of the state's words without such counts is alive on every plain text; every mask, on valid
    text and on its prefix, equals a full trie walk's."""
    masks_match_full_walks(deepseek, schema, value, 9)


@pytest.mark.parametrize("schema,value,covered", [
    # language-suffixed keys beside a prefix (OCDS): every class's keys hold any string together
    ({"type": "object", "properties": {"title": {"type": "string"}},
      "patternProperties": {"^(title|description)_(([A-Za-z]{2})|([A-Za-z]{2}_[A-Za-z]{2}))$": {"type": "string"},
                            "^x-": {}}},
     {"title": "a", "title_en_GB": "b", "x-note": 1, "free key \u00e9": None}, True),
    # unanchored patterns whose schemas all meet: eight classes, one product of three searches
    ({"type": "object", "patternProperties": {"net_[a-z]+[0-9]+": {"type": "object"},
                                              "drv_([a-z]+)": {"type": "object", "required": ["name"]},
                                              "dir": {"minProperties": 1}}},
     {"net_ab1": {}, "drv_x": {"name": 1}, "a dir net_q9 drv_z": {"name": 2}, "plain": 3}, True),
    # a key matching both patterns has no value: those keys are refused, so no cover
    ({"type": "object", "patternProperties": {"a_": {"type": "string"}, "_b": {"type": "integer"}}},
     {"a_x": "s", "y_b": 1, "free": True}, False),
])
def test_key_classes_that_cover_every_key_match_full_walks(deepseek, schema, value, covered):
    """Keys split into classes by the patternProperties they match: where no class is dropped,
    the grammar declares that together they cover the string of any key, and a key's plain
    tokens are taken whole on the cover's proof (the classes' own states are their product);
    where a class is dropped (no value satisfies both schemas) it declares none. Every mask, on
    valid text and on its prefix, equals a full trie walk's."""
    g = stencil.GrammarCompiler(deepseek.info).compile_json_schema(schema, string_spelling="plain")
    assert bool(g.grammar.covers) == covered
    masks_match_full_walks(deepseek, schema, value, 12)


WORDS = {"type": "string", "maxLength": 300, "pattern": "^(?:\\S+\\s+){0,29}\\S+$"}


def test_a_count_sandwich_verdict_is_shared_by_the_grammars_of_a_vocabulary(deepseek):
    """A string of at most 30 words makes every word a new lexer state; where whole walks from
    the count lowered (8 words left) and lifted agree, the lowered state's entry serves every
    count between. That verdict costs two whole walks and is the same in every grammar with the
    pattern: a second grammar (the string in an array, not an object) takes it from the
    vocabulary, and its masks equal full walks."""
    info = stencil.TokenizerInfo.from_huggingface(deepseek.hf)
    compiler = stencil.GrammarCompiler(info)
    entry = type("Entry", (), {"info": info, "hf": deepseek.hf})
    words = "We are looking for participants who have experience with digital products"
    masks_along(entry, compiler.compile_json_schema({"type": "object", "properties": {"summary": WORDS}},
                                                    string_spelling="plain"), json.dumps({"summary": words}))
    stats = vocab_stats(info)
    assert stats.shared_verdict_entries > 0
    array = {"type": "array", "items": WORDS}
    text = json.dumps([words, "two words"])
    fast = masks_along(entry, compiler.compile_json_schema(array, string_spelling="plain"), text)
    assert vocab_stats(info).shared_verdict_hits > stats.shared_verdict_hits
    slow = masks_along(entry, stencil.GrammarCompiler(stencil.TokenizerInfo.from_huggingface(deepseek.hf),
                                                      mask_optimizations=NO_SHORTCUTS
                                                      ).compile_json_schema(array, string_spelling="plain"), text)
    assert len(fast) == len(slow) > 10
    for a, b in zip(fast, slow):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("pattern,max_length,good,bad", [
    ("azzzzzz|X", 5, "X", "a"),          # the lark fuzz finding: no word of 5 starts with `a`
    ("a[a-c]{9}b|[a-c]{0,3}", 8, "abc", "abca"),
    ("(ab){4}c|[xy]+", 6, "xyxyxy", "ab"),
])
def test_a_length_bound_beside_a_pattern_is_relaxed_only_where_the_pattern_still_fits(pattern, max_length, good, bad):
    """A maximum length beside a pattern (llguidance's %regex max_length, an intersection) is
    lifted for the cache only when every word the pattern may still need fits in what the bound
    leaves: otherwise a mask offered tokens no word completes. Every token of every mask along
    random walks is accepted (the byte vocabulary spells every prefix)."""
    toks = [bytes([c]) for c in range(256)] + [b"ab", b"abc", b"<eos>"]
    info = stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1])
    lark = f'start: NAME\nNAME: %regex {json.dumps({"pattern": "^(" + pattern + ")$", "max_length": max_length})}\n'
    g = stencil.GrammarCompiler(info).compile_lark(lark)
    assert stencil.Matcher(g).accept_string(good)
    assert not stencil.Matcher(g).accept_string(bad)
    rng = random.Random(1)
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    for _ in range(30):
        m = stencil.Matcher(g)
        while not m.is_terminated():
            m.fill_next_token_bitmask(bm, 0)
            allowed = [t for t in range(info.vocab_size) if (int(bm[0, t >> 5]) >> (t & 31)) & 1]
            for t in allowed:
                assert m.fork().accept_token(t), (pattern, toks[t])
            assert m.accept_token(rng.choice(allowed))


# Tokens with DEL (0x7F) beside plain text, quotes and escapes: DEL is no plain text, so under a
# spelling that escapes controls ("controls": DEL only as \u007F) a string state still takes the
# plain slice whole, and these tokens are walked (refused there, taken under "plain" and "any").
DEL_TOKENS = (b"\x7f", b"a\x7f", b"\x7fb", b"ab\x7f", b"\x7f\"", b"a\x7f\"", b"\\u007F", b"\\u007f", b"\\u00",
              b"7F\"", b"ab", b"abc", b"abcd", b"\xc3\xa9a", b"a\"", b"\",", b"\"]", b"\"", b"\\", b"\\\"")


@pytest.mark.parametrize("spelling", ["controls", "plain", "any"])
@pytest.mark.parametrize("max_length", [None, 2, 5, 40])
def test_del_is_no_plain_text_in_any_spelling(spelling, max_length):
    """Masks of string states, with and without a character count, in each spelling, along random
    walks that follow them: every mask equals the one a compiler without plain slices, shared
    masks or loop skips computes by walking the whole trie (raw DEL is walked, not sliced, and
    allowed only where the spelling writes it raw)."""
    toks = [bytes([c]) for c in range(256)] + list(DEL_TOKENS) + [b"<eos>"]
    schema = {"type": "array", "items": {"type": "string", **({"maxLength": max_length} if max_length else {})},
              "maxItems": 3}
    rng = random.Random(max_length or 0)
    del_seen = 0
    # the multi-byte tokens first
    for allowed in walks_alike(toks, schema, lambda allowed: rng.choice([t for t in allowed if t >= 256] or allowed),
                               walks=12, steps=60, string_spelling=spelling):
        del_seen += any(b"\x7f" in toks[t] for t in allowed)
    # raw DEL is a string character where the spelling writes it raw, never under "controls"
    assert (del_seen > 0) == (spelling != "controls")


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "^[ab ]{0,20}$"},
    {"type": "string", "maxLength": 24, "pattern": "^[ab ]*$"},
    {"type": "string", "pattern": "^(?:[ab]+ +){0,17}[ab]+$"},
])
def test_counts_that_long_tokens_reach_mask_as_a_full_walk(schema):
    """A count of 16 to 128 left: tokens longer than what is left (17 spaces and a quote, 25
    spaces and a quote, 20 letters) are refused exactly where they no longer fit, and where the
    string may end inside them too, whatever lifted states the walk takes for the sub-tries under
    the bound. Every mask along strings up to the bound equals a full walk's, and the long tokens
    are kept while they fit."""
    tokens = [b"<eos>", b'"', b" ", b"a", b"b", b" " * 17 + b'"', b" " * 25 + b'"', b"a" * 20,
              b"ab" * 9 + b'"', b"a" * 16 + b'"', b"ab " * 6, b"a " * 9]
    info = stencil.TokenizerInfo.from_vocab(tokens, eos_token_ids=0)
    fast = stencil.GrammarCompiler(info).compile_json_schema(schema)
    slow = stencil.GrammarCompiler(stencil.TokenizerInfo.from_vocab(tokens, eos_token_ids=0),
                                   mask_optimizations=NO_SHORTCUTS).compile_json_schema(schema)
    bm = stencil.allocate_token_bitmask(2, info.vocab_size)
    kept = set()
    for body in ("ab " * 6 + "a", "a " * 9 + "b", "a" * 19, "b " * 5):
        m, n = stencil.Matcher(fast), stencil.Matcher(slow)
        for ch in '"' + body:
            m.fill_next_token_bitmask(bm, 0)
            n.fill_next_token_bitmask(bm, 1)
            assert np.array_equal(bm[0], bm[1]), (schema, body, ch)
            kept.update(t for t in range(5, len(tokens)) if (int(bm[0, t >> 5]) >> (t & 31)) & 1)
            tid = tokens.index(ch.encode())
            assert m.accept_token(tid) and n.accept_token(tid)
    assert 6 not in kept and kept >= {7}  # 25 spaces never fit; 20 letters fit at the opening quote


# Counts of words or groups (items of two bytes or more): tokens that hold many of them, beside
# single bytes (every string spellable) and the words the walks write.
COUNT_TOKENS = [b"<eos>", b'"', b'",', b"ab", b"cd", b" ", b"ab ", b"cd ab ", b"ab cd ab cd ab cd ab cd ab cd ",
                b"a b c d e f g h i j k ", b"x, " * 9, b"123-", b"123-456-789-012-345-678-901-234-567-",
                b"ab" * 12, b" " * 20] + [bytes([c]) for c in range(32, 127) if c not in (34, 92)]


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "^(?:\\S+\\s+){0,30}\\S+$"},
    {"type": "string", "pattern": "^(?:\\S+\\s+){0,30}\\S+$", "maxLength": 40},
    {"type": "string", "pattern": "^(?:\\S+\\s+){2,14}\\S+$", "maxLength": 300},
    {"type": "string", "pattern": "^(?:[a-z]+, ){0,20}[a-z]+$"},
    {"type": "string", "pattern": "^(?:\\d{3}-){0,12}\\d{3}$"},
    {"type": "array", "items": {"type": "string", "pattern": "^(?:ab ?|cd ){0,11}x?$"}, "maxItems": 3},
])
def test_counts_far_from_their_bound_mask_as_a_full_walk(schema):
    """A count of words far from its bound makes every word a new lexer state; the cache serves
    the states between the count lowered to 8 and lifted with one entry where those two ends agree
    on every trie node, and walks where a token holds enough words to tell them apart (the tokens
    of 5 to 10 words here). Along random walks that take the many-word tokens first, every mask
    equals a whole trie walk's without the cache's shortcuts, and every kept token is taken."""
    rng = random.Random(json.dumps(schema))

    def choose(allowed):
        several = [t for t in allowed if len(COUNT_TOKENS[t]) > 1]
        return rng.choice(several if several and rng.random() < 0.7 else allowed)
    long_kept = 0
    for allowed in walks_alike(COUNT_TOKENS, schema, choose, walks=8, steps=70):
        long_kept += any(len(COUNT_TOKENS[t]) > 12 for t in allowed)
    assert long_kept > 0  # the walks stood where many-word tokens fit


TEXT_60_WORDS = " ".join(["The", "quick", "service", "helps", "teams", "ship", "work", "faster,", "every", "day."] * 6)


@pytest.mark.parametrize("schema,value", [
    # counts of words under a count of 49 and 99 (the shape LLM-written schemas give a description)
    ({"type": "string", "pattern": "^(?:\\S+\\s+){0,99}\\S+$", "maxLength": 500}, TEXT_60_WORDS),
    ({"type": "object", "properties": {"summary": {"type": "string", "pattern": "^(?:\\S+\\s+){0,69}\\S+$"}}},
     {"summary": TEXT_60_WORDS}),
    # a maxLength some tokens reach beside a pattern: each character a state of its own
    ({"type": "string", "pattern": "^(?:\\S+\\s+){0,19}\\S+$", "maxLength": 100}, TEXT_60_WORDS[:98]),
    ({"type": "string", "pattern": "^[A-Za-z ,.]+$", "maxLength": 100}, TEXT_60_WORDS[:100]),
    ({"type": "string", "pattern": "[A-z]+", "maxLength": 64}, TEXT_60_WORDS[:64]),
    ({"type": "array", "items": {"type": "string", "pattern": "^[^<>]*$", "maxLength": 120}},
     [TEXT_60_WORDS[:120], TEXT_60_WORDS[:7], " " * 40]),
    # the last characters before a maxLength beside a class: 16 to 23 left lift at 16
    ({"type": "string", "pattern": "^[A-Za-z0-9_][^<>*#.%&:\\+?/]*$", "maxLength": 60},
     "AzureBlobTable" * 4 + "Azur"),
    # unanchored counts (every run begun an alternative, the least kept), alone and beside a length
    ({"type": "string", "pattern": "[0-9a-f]{40}"}, "sha: " + "0123456789abcdef" * 2 + "01234567 ok"),
    ({"type": "string", "pattern": "[A-Z0-9]{60,64}", "maxLength": 90}, "ref-" + "AB12CD34EF" * 6 + "GH by"),
])
def test_counted_strings_with_a_real_vocabulary_mask_as_a_full_walk(deepseek, schema, value):
    """DeepSeek's 128k vocabulary (tokens up to 128 bytes) along strings up to their bounds:
    every mask equals a whole trie walk's without the cache's shortcuts."""
    masks_as_full_walk(deepseek, schema, value)


def masks_as_full_walk(deepseek, schema, value):
    """Along ``value`` serialized, each mask of ``schema`` over DeepSeek's vocabulary equals a
    whole trie walk's without the cache's shortcuts."""
    fast = stencil.GrammarCompiler(deepseek.info).compile_json_schema(schema, string_spelling="plain")
    slow = stencil.GrammarCompiler(stencil.TokenizerInfo.from_huggingface(deepseek.hf),
                                   mask_optimizations=NO_SHORTCUTS).compile_json_schema(schema, string_spelling="plain")
    serialized = json.dumps(value, ensure_ascii=False)
    fast_masks, slow_masks = masks_along(deepseek, fast, serialized), masks_along(deepseek, slow, serialized)
    assert len(fast_masks) == len(slow_masks) > 10
    for k, (x, y) in enumerate(zip(fast_masks, slow_masks)):
        assert np.array_equal(x, y), (schema, k)


# Character classes beside counts (Lexer::plain_filter): a class refuses some plain bytes, and a
# plain token with one dies there; the others count by characters. Pool: ASCII letters, digits
# and punctuation, a space, two- and three-byte characters.
CLASS_POOL = list("aZ09 -_.,:/<>*#%&+?") + ["é", "中"]


def class_tokens(rng: random.Random) -> list[bytes]:
    """Single characters, quotes and escapes, cut characters and their continuations, and random
    runs of the pool (refused bytes inside, a closing quote after, a cut multi-byte character at
    the end, an escape in the middle)."""
    # (the cut characters' continuations too: a walk that takes a cut character goes on)
    toks = [b"<eos>", b'"', b'",', b'"]', b"[", b"]", b",", b"\\n", b"\\u00e9", b"\\u4e2d", b"\xc3", b"\xe4\xb8",
            b"\xa9", b"\xad", b"\xb8\xad"]
    toks += [c.encode() for c in CLASS_POOL]
    while len(toks) < 160:
        run = "".join(rng.choice(CLASS_POOL) for _ in range(rng.randint(2, 9))).encode()
        shape = rng.random()
        run = run + b'"' if shape < 0.15 else run[:-1] if shape < 0.25 and run[-1] >= 0x80 else \
            run[:2] + b"\\n" + run[2:] if shape < 0.3 else run
        if run not in toks:
            toks.append(run)
    return toks


@pytest.mark.parametrize("seed", range(40))
def test_classes_beside_counts_mask_as_a_full_walk(seed):
    """Random classes (kept or negated, with or without the non-ASCII characters, after a first
    character of another class; and pairs, a last character apart) beside random lengths, over
    random vocabularies: along random
    walks that take multi-character tokens first, every mask equals a whole trie walk's without
    the cache's shortcuts."""
    rng = random.Random(seed)
    chosen = rng.sample(CLASS_POOL, rng.randint(3, 9))
    body = "".join("\\" + c if c in "-/" else c for c in chosen)
    cls = f"[^{body}]" if rng.random() < 0.5 else f"[{body}]"
    a, b = (re.escape(c) for c in rng.sample(CLASS_POOL, 2))
    # (and shapes that only look like a class where they start: a pair, a last character apart)
    pattern = rng.choice([f"^{cls}*$", f"^{cls}+$", f"^[a-z0-9]{cls}*$", f"^(?:{cls})*$", f"^(?:{a}{b})*$",
                          f"^{cls}*{a}?$", f"^(?:{cls}|{a}{b})*$"])
    string = {"type": "string", "pattern": pattern}
    string.update(rng.choice([{"maxLength": 5}, {"maxLength": 17}, {"maxLength": 40, "minLength": 3},
                              {"minLength": 2}, {}]))
    schema = {"type": "array", "items": string, "maxItems": 4}
    toks = class_tokens(rng)

    def choose(allowed):
        several = [t for t in allowed if len(toks[t]) > 1]
        return rng.choice(several if several and rng.random() < 0.8 else allowed)
    steps = sum(1 for _ in walks_alike(toks, schema, choose, walks=8, steps=40, string_spelling="plain"))
    assert steps > 12  # (walks end early where EOS is taken)


@pytest.mark.parametrize("pattern,length", [("^[^<>*#.%&:\\+?/]*$", 260), ("^[A-Za-z0-9_-]+$", 63),
                                            ("^[a-z ]*$", 30)])
def test_classes_beside_counts_with_a_real_vocabulary_mask_as_a_full_walk(deepseek, pattern, length):
    """DeepSeek's vocabulary along a string up to its bound under a class: every mask equals a
    whole trie walk's."""
    schema = {"type": "array", "items": {"type": "string", "pattern": pattern, "maxLength": length}}
    words = "azure blob table é 中文 test-case data_2 x" if "^" not in pattern[1:3] else "AzureBlob Table é中 x"
    value = [(words * 12)[:length], (words * 12)[:length // 3]]
    if pattern != "^[^<>*#.%&:\\+?/]*$":
        value = [re.sub(r"[^a-z ]" if "_" not in pattern else r"[^A-Za-z0-9_-]", "", v)[:length] or "a" for v in value]
    masks_as_full_walk(deepseek, schema, value)


# Patterns that some plain text kills beside a count (an anchored count of words, a slug, groups
# of digits: Lexer::killed_slack, Deriver::alive_slack), and a class beside a pattern with a slack
# (whose shortest completions the class may refuse: `a|bbbb` without `a` needs four characters).
KILLED = ["^(?:\\S+\\s+){0,%d}\\S+$", "^[a-z0-9]+(?:-[a-z0-9]+){0,%d}$", "^(?:[0-9]{3}-){0,%d}[0-9]{3}$",
          "^[A-Z][a-z]*(?: [A-Z][a-z]*){0,%d}$"]
KILLED_TOKENS = [b"<eos>", b'"', b'",', b'"]', b"[", b"]", b",", b"\\n", b"\\t", b"\\u00e9", b"\xc3\xa9", b"\xc3",
                 b"\xa9", b"a", b"b", b"z", b"A", b"Q", b"0", b"7", b"-", b" ", b"  ", b"ab", b"bb", b"bbbb", b"Ab",
                 b"a b", b"ab c", b" a", b"a ", b"-a", b"a-", b"12", b"123", b"123-", b"-456", b"123-456", b"Qa Qb",
                 b" Qa", b"a-b-c", b"0-1", b"abcdefgh", b"a b c d e", b"1 2", b"\xc3\xa9 a", b"a\xc3\xa9"]


@pytest.mark.parametrize("seed", range(40))
def test_patterns_that_text_kills_beside_counts_mask_as_a_full_walk(seed):
    """Random killed patterns (a count of 0 to 12 of their groups) beside random lengths and
    minimums (a minimum alone too), and classes beside unanchored patterns under allOf: along random walks that take
    multi-character tokens first, every mask equals a whole trie walk's without the cache's
    shortcuts."""
    rng = random.Random(seed)
    if seed % 4 == 3:
        string = {"allOf": [{"pattern": "^[^a]*$"}, {"pattern": rng.choice(["a|bbbb", "[ab]b{3}", "(?:a|bb)b"])}]}
    else:
        string = {"pattern": rng.choice(KILLED) % rng.randint(0, 12)}
    string["type"] = "string"
    if rng.random() < 0.85:
        string["maxLength"] = rng.choice([3, 6, 9, 14, 20, 30])
    if rng.random() < 0.4 or "maxLength" not in string:
        string["minLength"] = rng.choice([1, 2, 4])
    schema = {"type": "array", "items": string, "maxItems": 3}

    def choose(allowed):
        several = [t for t in allowed if len(KILLED_TOKENS[t]) > 1]
        return rng.choice(several if several and rng.random() < 0.8 else allowed)
    steps = sum(1 for _ in walks_alike(KILLED_TOKENS, schema, choose, walks=8, steps=40, string_spelling="plain"))
    assert steps > 12  # (walks end early where EOS is taken)
