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
"""
from stencil._core import (
    BudgetError,
    CheckKind,
    CompiledGrammar,
    CompileTimeout,
    ConcurrentUseError,
    Grammar,
    GrammarBuilder,
    GrammarError,
    Matcher,
    PendingFill,
    StencilError,
    TimeLimitExceeded,
    UsageError,
)
from stencil._version import __version__
from stencil.bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    fill_next_token_bitmasks,
    fill_next_token_bitmasks_async,
)
from stencil.compiler import GrammarCompiler
from stencil.generate import GenerationResult, generate
from stencil.memory import memory_usage, set_memory_limit
from stencil.models import ModelError, default_model_path, tokenizer_info_for
from stencil.partial import PartialResult, PartialTracker
from stencil.partial.stream import stream_partial
from stencil.schema_options import GbnfOptions, JsonSchemaOptions, LarkOptions, SchemaInfo, ToolCallOptions
from stencil.speculative import SpeculationOptions
from stencil.think import ThinkOptions
from stencil.tokenizer import TokenizerInfo

__all__ = [
    "__version__",
    "TokenizerInfo", "GrammarCompiler", "CompiledGrammar", "Grammar", "GrammarBuilder", "CheckKind", "Matcher",
    "allocate_token_bitmask", "fill_next_token_bitmasks", "fill_next_token_bitmasks_async", "PendingFill",
    "apply_token_bitmask_inplace", "JsonSchemaOptions", "LarkOptions", "GbnfOptions", "ToolCallOptions", "SchemaInfo",
    # errors: every one derives from StencilError (GrammarError and UsageError are ValueErrors too,
    # ConcurrentUseError a RuntimeError)
    "StencilError", "GrammarError", "BudgetError", "TimeLimitExceeded", "CompileTimeout", "UsageError",
    "ConcurrentUseError", "ModelError",
    "generate", "GenerationResult", "SpeculationOptions", "ThinkOptions", "default_model_path", "tokenizer_info_for",
    # partial results of JSON outputs while they are generated (stencil.partial)
    "PartialResult", "PartialTracker", "stream_partial",
    "set_memory_limit", "memory_usage",
]
