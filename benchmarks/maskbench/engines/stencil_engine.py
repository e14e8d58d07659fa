"""stencil's own adapter: ``GrammarCompiler.compile_json_schema`` and ``stencil.Matcher``.

Schemas compile with ``property_order="any"``: MaskBench's valid instances list properties in any
order, and a valid instance must be accepted (stencil's default, definition order, is the natural
order for a model generating, not for checking given documents). And with
``string_spelling="plain"``: strings and property names as ``json.dumps(ensure_ascii=False)``
spells them, which is how the harness serializes every instance and how a model is asked to write
them (``stencil generate`` does the same); llguidance and XGrammar match property names and
pattern characters literally too. stencil's default also accepts every escaped spelling
(``"\\u0061"`` for ``"a"``), which multiplies the lexer's expressions for patterns and formats
for nothing here.

Other options stay at their defaults (flexible whitespace, unsupported keywords are errors).
"""
from __future__ import annotations

import functools
from typing import Any

import stencil
from benchmarks.maskbench.engines.base import CompileError, Session


#: how stencil compiles a MaskBench schema (recorded in the report beside its version)
COMPILE_OPTIONS = {"property_order": "any", "string_spelling": "plain"}


class StencilEngine:
    name = "stencil"

    def __init__(self, tokenizer_name: str, info: stencil.TokenizerInfo):
        # Loaded at setup, as the other engines load theirs: the first schema's TTFM is then
        # compile work, not the JSON Schema front-end's import.
        import stencil.grammar.json.schema  # noqa: F401
        self.info = info
        self.compiler = stencil.GrammarCompiler(info)
        self.bitmask = stencil.allocate_token_bitmask(1, info.vocab_size)
        self._compile = functools.partial(self.compiler.compile_json_schema, **COMPILE_OPTIONS)
        self.version = stencil.__version__ + " (compile_json_schema, " + \
            ", ".join(f"{k}={v}" for k, v in COMPILE_OPTIONS.items()) + ")"
        self.tokenizer_source = f"tests.support.tokenizers:{tokenizer_name}"

    def compile(self, schema: Any) -> Session:
        return self._session(self._matcher(schema))

    def _matcher(self, schema: Any) -> stencil.Matcher:
        try:
            return stencil.Matcher(self._compile(schema))
        except (stencil.GrammarError, ValueError, TypeError, RecursionError) as e:
            raise CompileError(f"{type(e).__name__}: {e}") from None

    def _session(self, matcher: stencil.Matcher) -> Session:
        # fill is partial(fill_next_token_bitmask, bitmask, 0): one more argument is
        # remaining_tokens (the budget engines), with no adapter frame in the timed loop
        return Session(self.bitmask[0], functools.partial(matcher.fill_next_token_bitmask, self.bitmask, 0),
                       matcher.accept_token, matcher.reset)

    def release(self) -> None:
        # Each schema is compiled cold, as the other engines do: no hit in the compiler's cache
        # from an earlier identical schema, and memory does not grow over a long run.
        self.compiler.clear_cache()


class StencilBudgetEngine(StencilEngine):
    """stencil's budget-aware masks: ``fill_next_token_bitmask(..., remaining_tokens=r)`` with r
    fixed (``fixed``) or the instance's tokens left + 32 (see ``measure.measure_schema``).

    Its TTFM includes ``Matcher.min_completion_tokens()``, which builds the bound's tables: a
    budgeted generation asks it before its first token (``stencil serve`` and ``stencil
    generate`` check that max_tokens fits the shortest output), so the first mask finds them."""

    SLACK = 32

    def __init__(self, tokenizer_name: str, info: stencil.TokenizerInfo, fixed: int | None = None):
        super().__init__(tokenizer_name, info)
        self.fixed = fixed
        self.name = f"stencil-budget{fixed or ''}"
        self.version += f" (remaining_tokens={fixed if fixed else f'tokens left + {self.SLACK}'})"

    def compile(self, schema: Any) -> Session:
        matcher = self._matcher(schema)
        try:
            matcher.min_completion_tokens()
        except (stencil.GrammarError, ValueError) as e:
            raise CompileError(f"{type(e).__name__}: {e}") from None
        session = self._session(matcher)
        session.budget = (self.fixed, self.SLACK)
        return session
