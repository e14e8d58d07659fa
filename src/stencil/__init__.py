"""stencil: structured generation for LLMs with exact token masks."""
from stencil._core import GrammarError
from stencil.tokenizer import TokenizerInfo

__all__ = ["GrammarError", "TokenizerInfo"]
