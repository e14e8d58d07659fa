"""The tokens that end a generation under a grammar (stencil.runtime.stops): end-of-sequence ids, but those
the grammar writes as its own text (gpt-oss's <|call|> closes a call and is one of its EOS ids)."""
from __future__ import annotations

import numpy as np

import stencil
from stencil.runtime.stops import other_token_words, stop_token_ids

TOKENS = [b"a", b"b", b"<|call|>", b"<|return|>", b"</s>"]


def _info():
    return stencil.TokenizerInfo.from_vocab(TOKENS, eos_token_ids=[2, 3, 4],
                                            special_token_ids={2: "<|call|>", 3: "<|return|>", 4: "</s>"})


def test_a_grammar_that_writes_an_eos_token_keeps_it_as_text():
    info = _info()
    compiler = stencil.GrammarCompiler(info)
    m = stencil.Matcher(compiler.compile_lark('start: "a"+ <|call|>'))
    assert m.grammar.grammar.special_token_ids == [2]
    assert stop_token_ids(info.eos_token_ids, m) == {3, 4}
    # the matcher takes it as text (not as the end): the output is complete after it, not terminated
    assert m.accept_token(0) and m.accept_token(2) and not m.is_terminated() and m.is_accepting()
    plain = stencil.Matcher(compiler.compile_regex("a+"))
    assert plain.grammar.grammar.special_token_ids == [] and stop_token_ids(info.eos_token_ids, plain) == {2, 3, 4}
    assert stop_token_ids(info.eos_token_ids, None) == {2, 3, 4}


def test_other_token_words_clear_the_stops_alone():
    words = other_token_words({2, 4, 33}, 2).view(np.uint32)
    assert words[0] == 0xFFFFFFFF & ~((1 << 2) | (1 << 4)) and words[1] == 0xFFFFFFFF & ~(1 << 1)
    bm = stencil.allocate_token_bitmask(1, 40)
    bm[0] = 0
    bm[0, 0] = (1 << 2) | (1 << 4)
    assert not np.any(bm[0] & other_token_words({2, 4}, 2))     # nothing but stops
    bm[0, 0] |= 1
    assert np.any(bm[0] & other_token_words({2, 4}, 2))
