"""outlines-core's adapter: ``build_regex_from_schema``, ``Index`` (the automaton over the
vocabulary, built at compile time) and ``Guide``.

The vocabulary is ``outlines_core.Vocabulary`` over the token byte strings of stencil's
TokenizerInfo, without special tokens, with the first EOS id.
"""
from __future__ import annotations

import functools
import json
from typing import Any

from benchmarks.maskbench.engines.base import CompileError, Session, mask_row, package_version


class OutlinesEngine:
    name = "outlines"

    def __init__(self, tokenizer_name: str, info, encode=None):
        import outlines_core
        from outlines_core.json_schema import build_regex_from_schema
        self._oc = outlines_core
        self._regex = build_regex_from_schema
        specials = set(info.special_token_ids) | set(info.eos_token_ids)
        tokens: dict[bytes, list[int]] = {}
        for i in range(info.vocab_size):
            if i not in specials:
                tokens.setdefault(info.token_bytes(i), []).append(i)
        self.vocabulary = outlines_core.Vocabulary(info.eos_token_ids[0], tokens)
        self.tokenizer_source = "token bytes"
        self.row = mask_row(info.vocab_size)
        self.version = package_version("outlines-core")

    def compile(self, schema: Any) -> Session:
        try:
            regex = self._regex(json.dumps(schema))
            index = self._oc.Index(regex, self.vocabulary)
        except (ValueError, TypeError, RuntimeError) as e:
            raise CompileError(f"{type(e).__name__}: {e}") from None
        guide = self._oc.Guide(index)
        advance = guide.advance

        def accept(token: int) -> bool:
            # Guide.advance raises on a token it has no transition for.
            try:
                advance(token, return_tokens=False)
            except ValueError:
                return False
            return True

        row = self.row
        return Session(row, functools.partial(guide.write_mask_into, row.ctypes.data, row.size, 4), accept, guide.reset)

    def release(self) -> None:
        pass
