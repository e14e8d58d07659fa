"""stencil.testing: the counters tests read instead of private attributes, checked against what
can be counted independently (a trie's distinct prefixes, tokens accepted, grammars compiled)."""
from __future__ import annotations

import random

import pytest

import stencil
from stencil.grammar.ebnf.gbnf import parse_gbnf
from stencil.testing import alphabet, compiler_stats, matcher_stats, mutate, sample, vocab_stats

TOKENS = [b"a", b"b", b"ab", b"[", b"]", b",", b"1", b"</s>"]


@pytest.fixture()
def tok():
    return stencil.TokenizerInfo.from_vocab(TOKENS, eos_token_ids=[7])


def test_vocab_stats_counts_the_trie_and_the_shared_masks(tok):
    stats = vocab_stats(tok)
    prefixes = {t[:k] for t in TOKENS[:-1] for k in range(1, len(t) + 1)}   # </s> is special: not in the trie
    assert stats.trie_nodes == 1 + len(prefixes)
    assert stats.memory_bytes >= stats.trie_memory_bytes > 0 and stats.trie_build_seconds >= 0
    assert stats.shared_mask_entries == 0 and stats.shared_mask_bytes == 0
    # a mask inside a JSON string body is cached per vocabulary: read again, the count has grown
    m = stencil.Matcher(stencil.GrammarCompiler(tok).compile_json_schema({"type": "array", "items": {"type": "string"}}))
    assert m.accept_string('["')
    m.fill_next_token_bitmask(stencil.allocate_token_bitmask(1, tok.vocab_size), 0)
    assert vocab_stats(tok).shared_mask_entries > 0 and stats.shared_mask_entries == 0


def test_matcher_stats_follow_the_matcher(tok):
    m = stencil.Matcher(stencil.GrammarCompiler(tok).compile_regex(r"\[1(,1)*\]"), max_rollback=4)
    start = matcher_stats(m)
    assert (start.tokens, start.terminated) == (0, False) and start.parser_rows >= 1 and start.parser_items >= 1
    assert m.accept_tokens([3, 6, 5, 6]) == 4
    assert matcher_stats(m).tokens == 4
    assert m.accept_token(4) and m.accept_token(7)
    end = matcher_stats(m)
    assert end.terminated and end.tokens == 6
    m.rollback(2)
    assert matcher_stats(m) == matcher_stats(m) and matcher_stats(m).tokens == 4 and not matcher_stats(m).terminated


def test_matcher_stats_say_what_debug_state_says(tok):
    """Matcher.stats() (numbers) and debug_state() (words) read the same state."""
    m = stencil.Matcher(stencil.GrammarCompiler(tok).compile_regex(r"\[1(,1)*\]"))
    for t in [3, 6, 5, 6, 4, 7]:
        s = m.stats()
        assert m.debug_state().startswith(f"lexer state {s['lexer_state']} ")
        assert f"{s['parser_rows']} parser rows ({s['parser_items']} items), {s['tokens']} tokens" in m.debug_state()
        assert m.accept_token(t)
    assert m.stats()["terminated"] and m.debug_state().endswith(", terminated")


def test_compiler_stats_count_the_cache(tok):
    compiler = stencil.GrammarCompiler(tok)
    assert compiler_stats(compiler).cached_grammars == 0
    compiler.compile_regex("a+")
    compiler.compile_regex("a+")
    compiler.compile_regex("b+")
    assert compiler_stats(compiler).cached_grammars == 2
    compiler.clear_cache()
    assert compiler_stats(compiler).cached_grammars == 0


def test_samples_and_near_misses():
    g = parse_gbnf('root ::= "ab" [0-9]')
    assert alphabet(g) == "09ab"
    rng = random.Random(0)
    texts = {"".join(sample(g, rng)) for _ in range(30)}
    assert texts <= {f"ab{d}" for d in range(10)} and len(texts) > 3
    near = {mutate("ab1", rng, "09ab") for _ in range(200)}
    assert len(near) > 10 and all(len(n) in (2, 3, 4) or "ab1".startswith(n) for n in near)
    assert mutate("", rng, "x") == "x"
