"""The Lark grammar syntax, with stencil's extensions, compiled into the grammar IR.

Rules are lowercase and terminals UPPERCASE; every terminal (named, or a string or regex written
in a rule) is one lexeme, lexed greedily among the terminals the parser allows at that point,
as Lark's contextual lexer does. A grammar is read as llguidance's Lark dialect (what OpenAI
custom tools serve) where Lark, llguidance and XGrammar differ. ``%ignore`` terminals may appear
between any two terminals, not before the first one unless ``%llguidance {"allow_initial_skip":
true}`` (or XGrammar's ``%grammar_options``) says so, as llguidance and XGrammar do, and not after
the last one where no other terminal could follow, as llguidance does (a grammar with XGrammar's
``%grammar_options`` takes XGrammar's trailing skip). Terminal regexes (``/.../``, which may run over lines, and ``%regex``) mean what
Rust's regex crate says, as in llguidance: ``\\d``, ``\\w`` and ``\\s`` are Unicode (``(?-u)``
makes them ASCII), ``.`` stops at ``\\n`` only, ``[[:alpha:]]``, ``\\x{1F600}``, nested classes and
the set operations ``&&`` ``--`` ``~~`` exist, octal escapes do not;
strings take JSON's escapes and C's (``\\n``, ``\\xhh``...), and an escape that Lark and
llguidance read apart (``"\\."``: two characters in Lark, an error in llguidance) is an error.
Extensions: special tokens ``<|name|>`` (by text, resolved through the tokenizer) and
``<[12]>`` / ``<[1,5-7]>`` (by id); ``%json {schema}`` embeds a JSON Schema as a rule;
``%regex {options}`` terminals with length bounds, forbidden substrings or llguidance's
substrings; ``name[lazy]`` and ``name[stop="</think>"]`` / ``name[stop=<|end|>]`` for free text
up to a stop string or token; ``name[max_tokens=N]``; ``&`` / ``~`` on terminals and nested
``%lark {...}`` grammars (llguidance's and XGrammar's dialects); llguidance's parametric rules
(``perm::_ : "a" perm::set_bit(0) %if bit_clear(0) | ...``, expanded per reachable parameter
value: :mod:`stencil.grammar.ebnf.lark.parametric`). See
:mod:`stencil.grammar.ebnf.lark.parser` for the full syntax.

Example::

    grammar = lark_grammar('''
        start: expr
        expr: term (("+" | "-") term)*
        term: NUMBER | "(" expr ")"
        %import common.NUMBER
        %ignore " "
    ''')
    compiled = compiler.compile_grammar(grammar)      # or compiler.compile_lark(text)
"""
from __future__ import annotations

from typing import Optional

from stencil.grammar.ebnf.ast import EbnfGrammar, TokenTable
from stencil.grammar.ebnf.lark.emit import emit_lark, emit_lark_rule
from stencil.grammar.ebnf.lark.parser import parse_lark_syntax
from stencil.grammar.ebnf.lark.terminals import resolve_checked
from stencil._core import GrammarBuilder, Symbol
from stencil.grammar.ebnf.ast import Namespaced

__all__ = ["lark_grammar", "build_lark", "parse_lark"]


def parse_lark(text: str, *, start: str = "start", unused: str = "warn") -> EbnfGrammar:
    """Parse and check Lark text into the shared grammar AST (terminals resolved to Terms)."""
    return resolve_checked(parse_lark_syntax(text), start, unused)


def build_lark(b, text: str, *, tokens: Optional[TokenTable] = None, start: str = "start",
               unused: str = "warn", json_options: Optional[dict] = None, prefix: str = "",
               scoped: bool = False) -> Symbol:
    """Add the rules of a Lark grammar to builder ``b`` and return its start rule. Rule names
    get ``prefix``, so several grammars can share one builder; ``%ignore`` terms apply to the
    whole builder's grammar, or with ``scoped`` to this grammar's rule only (a part of a larger
    grammar: a custom tool's input)."""

    g = parse_lark(text, start=start, unused=unused)
    view = Namespaced(b, prefix) if prefix else b
    return emit_lark_rule(view, g, tokens, json_options) if scoped else emit_lark(view, g, tokens, json_options)


def lark_grammar(text: str, *, tokens: Optional[TokenTable] = None, start: str = "start",
                 unused: str = "warn", json_options: Optional[dict] = None):
    """Compile Lark text into a stencil ``Grammar`` (the IR), ready for ``compile_grammar``.

    ``tokens`` resolves ``<|name|>`` references (the compiler passes its tokenizer's table);
    ``unused``: what to do about rules and terminals the start rule never uses ("warn": a
    ``GrammarWarning``, "error" or "ignore"); ``json_options`` go
    to the JSON Schema front-end for every ``%json`` block.
    """

    b = GrammarBuilder()
    return b.build(build_lark(b, text, tokens=tokens, start=start, unused=unused,
                              json_options=json_options))
