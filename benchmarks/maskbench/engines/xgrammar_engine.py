"""XGrammar's adapter: ``GrammarCompiler.compile_json_schema`` (defaults: any whitespace, strict
mode) and ``GrammarMatcher``, one compiler thread as in MaskBench, compiler cache off so that each
schema compiles cold.

The tokenizer is ``xgrammar.TokenizerInfo`` over the raw token byte strings of stencil's
TokenizerInfo (special tokens as empty strings, which XGrammar treats as special), with the same
vocabulary size and stop ids.
"""
from __future__ import annotations

import functools
import json
from typing import Any

from benchmarks.maskbench.engines.base import CompileError, Session, package_version


class XGrammarEngine:
    name = "xgrammar"

    def __init__(self, tokenizer_name: str, info, encode=None):
        import xgrammar as xgr
        self._xgr = xgr
        specials = set(info.special_token_ids) - set(info.eos_token_ids)
        vocab = [b"" if i in specials else info.token_bytes(i) for i in range(info.vocab_size)]
        self.tokenizer = xgr.TokenizerInfo(vocab, xgr.VocabType.RAW, vocab_size=info.vocab_size,
                                           stop_token_ids=list(info.eos_token_ids))
        self.tokenizer_source = "token bytes (VocabType.RAW)"
        self.compiler = xgr.GrammarCompiler(self.tokenizer, max_threads=1, cache_enabled=False)
        # XGrammar's own bitmask type (a torch tensor); the numpy view shares its memory.
        self.bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
        self.row = self.bitmask.numpy()[0]
        self.version = package_version("xgrammar")

    def compile(self, schema: Any) -> Session:
        try:
            compiled = self.compiler.compile_json_schema(json.dumps(schema))
        except (RuntimeError, ValueError, TypeError) as e:
            raise CompileError(f"{type(e).__name__}: {e}") from None
        matcher = self._xgr.GrammarMatcher(compiled)
        return Session(self.row, functools.partial(matcher.fill_next_token_bitmask, self.bitmask, 0),
                       matcher.accept_token, matcher.reset)

    def release(self) -> None:
        pass
