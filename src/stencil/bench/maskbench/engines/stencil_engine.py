"""stencil's own adapter: ``GrammarCompiler.compile_json_schema`` and ``stencil.Matcher``."""
from __future__ import annotations

import functools
from typing import Any

import stencil
from stencil.bench.maskbench.engines.base import CompileError, Session, package_version


class StencilEngine:
    name = "stencil"

    def __init__(self, tokenizer_name: str, info: stencil.TokenizerInfo):
        self.info = info
        self.compiler = stencil.GrammarCompiler(info)
        self.bitmask = stencil.allocate_token_bitmask(1, info.vocab_size)
        self.version = package_version("stencil")
        self.tokenizer_source = f"stencil.bench.tokenizers:{tokenizer_name}"

    def compile(self, schema: Any) -> Session:
        compile_json_schema = getattr(self.compiler, "compile_json_schema", None)
        if compile_json_schema is None:
            raise CompileError("stencil.GrammarCompiler.compile_json_schema is not available in this build")
        try:
            compiled = compile_json_schema(schema)
        except (stencil.GrammarError, ValueError, TypeError, RecursionError) as e:
            raise CompileError(f"{type(e).__name__}: {e}") from None
        matcher = stencil.Matcher(compiled)
        return Session(self.bitmask[0], functools.partial(matcher.fill_next_token_bitmask, self.bitmask, 0),
                       matcher.accept_token, matcher.reset)

    def release(self) -> None:
        # Each schema is compiled cold, as the other engines do: no hit in the compiler's cache
        # from an earlier identical schema, and memory does not grow over a long run.
        self.compiler.clear_cache()
