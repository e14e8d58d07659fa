"""Shared checks for the dialect tests (llguidance's and XGrammar's documented syntax): strings
through a real tokenizer and the Matcher, and whole masks against the brute-force regex oracle
of :mod:`oracles` (every token of the vocabulary, one regex call each)."""
from __future__ import annotations

import functools

import numpy as np

import stencil
from grammar_oracle import encode_segments, feed
from oracles import RegexLanguage, Vocab, regex_mask_direct
from tokenizers_zoo import get


class Env:
    def __init__(self):
        self.entry = get("deepseek")
        self.info = self.entry.info
        self.compiler = stencil.GrammarCompiler(self.info)
        self.bitmask = stencil.allocate_token_bitmask(1, self.info.vocab_size)

    @functools.cached_property
    def vocab(self) -> Vocab:
        return Vocab.from_info(self.info)

    def accepts(self, compiled, segments) -> bool:
        """Whether the tokens of ``segments`` (text, or special ids) are accepted and complete;
        every step also checks that the mask allows exactly what accept_token accepts."""
        segments = [segments] if isinstance(segments, str) else segments
        ids = encode_segments(self.entry, segments)
        n, ok = feed(stencil.Matcher(compiled), ids, self.bitmask, self.info.eos_token_ids[0])
        return n == len(ids) and ok

    def check(self, compiled, good, bad) -> None:
        for s in good:
            assert self.accepts(compiled, s), f"rejected valid {s!r}"
        for s in bad:
            assert not self.accepts(compiled, s), f"accepted invalid {s!r}"

    def mask(self, compiled, prefix: str) -> np.ndarray:
        m = stencil.Matcher(compiled)
        ids = encode_segments(self.entry, [prefix])
        assert m.accept_tokens(ids) == len(ids), f"prefix {prefix!r} refused"
        m.fill_next_token_bitmask(self.bitmask, 0)
        bits = np.unpackbits(self.bitmask[0].view(np.uint8), bitorder="little")
        return bits[: self.info.vocab_size].astype(bool)

    def check_masks(self, compiled, python_pattern: str, prefixes) -> int:
        """The mask after each prefix equals the oracle's (``python_pattern`` is the whole
        language as a Python ``regex``); returns how many tokens the masks allowed in all."""
        lang = RegexLanguage(python_pattern)
        allowed = 0
        for p in prefixes:
            got = self.mask(compiled, p)
            want = regex_mask_direct(lang, p.encode(), self.vocab)
            diff = np.flatnonzero(got != want)
            assert not diff.size, (f"after {p!r}: {diff.size} tokens differ, e.g. "
                                   f"{[(int(t), self.info.token_bytes(int(t)), bool(got[t])) for t in diff[:5]]}")
            allowed += int(got.sum())
        return allowed


@functools.lru_cache(maxsize=1)
def env() -> Env:
    return Env()
