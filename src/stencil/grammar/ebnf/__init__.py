"""EBNF-style grammar front-ends: the shared grammar AST (:mod:`.ast`), GBNF (:mod:`.gbnf`, with
its lexeme analysis in :mod:`.gbnf_lexemes` and :mod:`.greedy`) and Lark (:mod:`.lark`).

The AST's names are available here too, as they were when ``stencil.grammar.ebnf`` was that
module: its ``__all__`` by import, any other name on first use (code written against the old
module keeps working).
"""
from stencil.grammar.ebnf import ast as _ast
from stencil.grammar.ebnf.ast import *  # noqa: F403  (exactly the AST module's __all__)

__all__ = list(_ast.__all__)


def __getattr__(name: str):
    try:
        return getattr(_ast, name)
    except AttributeError:
        raise AttributeError(f"module 'stencil.grammar.ebnf' has no attribute {name!r}") from None
