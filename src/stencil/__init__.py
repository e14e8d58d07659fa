"""stencil: structured generation for LLMs with exact token masks.

Installed as ``pip install stencil-llm`` (the name ``stencil`` on the package index is another
project), imported as ``stencil``.

Example::

    import stencil
    stencil.__version__                 # "0.1.0"
    tok = stencil.TokenizerInfo.from_huggingface(hf_tokenizer)
    compiler = stencil.GrammarCompiler(tok)
    g = compiler.compile_regex(r"\\d{4}-\\d{2}-\\d{2}")
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)
    m.fill_next_token_bitmask(bm, 0)

Generation over a model is the runtime's, ``stencil.runtime`` (``stencil.runtime.generate``), a
user of this library; its old names here (``stencil.generate``, ``stencil.models``, ...) still work
for one release, with a ``DeprecationWarning``.
"""
import importlib as _importlib
from typing import Any as _Any

from stencil._core import (
    BudgetError,
    CheckKind,
    CompiledGrammar,
    CompileTimeout,
    ConcurrentUseError,
    ExprId,
    Grammar,
    GrammarBuilder,
    GrammarError,
    LimitError,
    Matcher,
    PendingFill,
    StencilError,
    Symbol,
    TimeLimitExceeded,
    UsageError,
)
from stencil._moved import alias_module as _alias_module
from stencil._moved import warn_moved as _warn_moved
from stencil._version import __version__
from stencil.bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    fill_draft_bitmasks,
    fill_next_token_bitmasks,
    fill_next_token_bitmasks_async,
)
from stencil.compiler import GrammarCompiler
from stencil.memory import memory_usage, set_memory_limit
from stencil.partial import PartialResult, PartialTracker
from stencil.schema_options import GbnfOptions, JsonSchemaOptions, LarkOptions, SchemaInfo, ToolCallOptions
from stencil.tokenizer import TokenizerInfo

__all__ = [
    "__version__",
    "TokenizerInfo", "GrammarCompiler", "CompiledGrammar", "Grammar", "GrammarBuilder", "CheckKind", "Matcher",
    # GrammarBuilder's ids as the stub types them (typing.NewType over int): a regex, a lexeme or rule
    "ExprId", "Symbol",
    "allocate_token_bitmask", "fill_next_token_bitmasks", "fill_draft_bitmasks", "fill_next_token_bitmasks_async", "PendingFill",
    "apply_token_bitmask_inplace", "JsonSchemaOptions", "LarkOptions", "GbnfOptions", "ToolCallOptions", "SchemaInfo",
    # errors: every one derives from StencilError. GrammarError: the input is bad or unsupported;
    # LimitError (no GrammarError): a time (TimeLimitExceeded, CompileTimeout), work or memory
    # (BudgetError) limit ran out. GrammarError, LimitError and UsageError are ValueErrors too,
    # ConcurrentUseError a RuntimeError.
    "StencilError", "GrammarError", "LimitError", "BudgetError", "TimeLimitExceeded", "CompileTimeout", "UsageError",
    "ConcurrentUseError",
    # partial results of JSON outputs while they are generated (stencil.partial)
    "PartialResult", "PartialTracker",
    "set_memory_limit", "memory_usage",
]

#: Names and modules that moved to stencil.runtime (issue 42), kept here for one release.
_MOVED_NAMES = ("generate", "GenerationResult", "SpeculationOptions", "ThinkOptions", "default_model_path",
                "tokenizer_info_for", "ModelError", "stream_partial")
_MOVED_MODULES = ("models", "sampling", "speculative", "draft_plan", "think", "healing", "aligned", "opportunistic",
                  "stops")


def __getattr__(name: str) -> _Any:
    """``stencil.generate`` and the runtime's other old names: the runtime's object, with a warning.

    Example::

        stencil.generate(lm, g, "Hi")      # DeprecationWarning: use stencil.runtime.generate
    """
    if name in _MOVED_MODULES:
        return _alias_module(f"stencil.{name}", f"stencil.runtime.{name}")
    if name not in _MOVED_NAMES:
        raise AttributeError(f"module 'stencil' has no attribute {name!r}")
    _warn_moved(f"stencil.{name}", f"stencil.runtime.{name}")
    return getattr(_importlib.import_module("stencil.runtime"), name)
