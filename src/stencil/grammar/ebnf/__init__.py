"""EBNF-style grammar front-ends: the shared grammar AST (:mod:`.ast`), GBNF (:mod:`.gbnf`, with
its lexeme analysis in :mod:`.gbnf_lexemes` and :mod:`.greedy`) and Lark (:mod:`.lark`).

The AST's names are re-exported here, as the module ``stencil.grammar.ebnf`` had them before it
became this package.
"""
from stencil.grammar.ebnf import ast as _ast
from stencil.grammar.ebnf.ast import *  # noqa: F403  (exactly the AST module's __all__)

__all__ = list(_ast.__all__)
