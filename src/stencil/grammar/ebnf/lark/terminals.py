"""Resolve a parsed Lark grammar's terminals: every terminal becomes one Term (one lexeme).

A terminal defined from other terminals, strings and regexes is inlined into a single regex
(``NUMBER: INT ("." INT)?`` is one lexeme), cycles and references to rules are errors, and rule
bodies get the Term in place of each terminal name. Rules with ``[lazy]`` or ``[stop=...]`` are
turned into terminals the same way: their bodies may only hold terminal material.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from stencil._core import ExprId
from stencil.grammar.regex import ast as regex_ast
from stencil.grammar.ebnf.ast import (Alt, And, EbnfGrammar, JsonSchema, Node, Not, Ref, Rep, RuleDef, Seq,
                                  SubGrammar, Term, TokenRef, check_grammar, report_unused, walk)
from stencil.grammar.ebnf.lark.common import COMMON
from stencil.grammar.ebnf.lark.parser import LarkSyntax
from stencil.grammar.ebnf.lark.parametric import expand_parametric
from stencil.grammar.regex import build_regex, parse_regex

__all__ = ["resolve", "resolve_checked", "term_expr"]


def term_expr(b, term: Term) -> ExprId:
    """The builder expression of a Term."""
    return term.build(b) if term.build is not None else build_regex(b, term.regex)


def _combine(kind: str, parts: list, extra=None) -> Term:
    """One Term from ``parts``: "seq", "alt", "rep" (``extra`` = (min, max)), "and", "not"
    (llguidance's ``&`` and ``~``, which only the core's expressions state) or "chars" (at
    most ``extra`` code points, XGrammar's max_chars)."""
    if kind in ("seq", "alt", "rep") and all(p.build is None for p in parts):
        if kind == "seq":
            return Term(regex_ast.concat([p.regex for p in parts]))
        if kind == "alt":
            return Term(regex_ast.alt([p.regex for p in parts]))
        return Term(regex_ast.repeat(parts[0].regex, *extra))

    def build(b) -> ExprId:
        exprs = [term_expr(b, p) for p in parts]
        if kind == "seq":
            return b.re_concat(exprs)
        if kind == "alt":
            return b.re_or(exprs)
        if kind == "and":
            return b.re_and(exprs)
        if kind == "not":
            return b.re_not(exprs[0])
        if kind == "chars":
            any_char = b.re_char_ranges([(0, 0x10FFFF)], False)
            return b.re_and([exprs[0], b.re_repeat(any_char, 0, extra)])
        return b.re_repeat(exprs[0], extra[0], -1 if extra[1] is None else extra[1])
    return Term(None, build=build)


class _Resolver:
    def __init__(self, syn: LarkSyntax, unused: str = "warn"):
        self.syn = syn
        self.unused = unused
        self.src = syn.source
        self.defs: dict[str, RuleDef] = dict(syn.terminals)
        self.imported: set[str] = set()
        for name, local, pos in syn.imports:
            if name not in COMMON:
                raise self.src.error(f"the common library has no terminal {name} "
                                     f"(it has: {', '.join(sorted(COMMON))})", pos)
            if local in self.defs:
                raise self.src.error(f"terminal {local} is both imported and defined", pos)
            self.defs[local] = RuleDef(local, Term(parse_regex(COMMON[name]), pos=pos), pos)
            self.imported.add(local)
        self.done: dict[str, Node] = {}
        self.active: list[str] = []
        self.used: set[str] = set()

    def terminal(self, name: str, pos: Optional[int]) -> Node:
        if name in self.done:
            return self.done[name]
        if name not in self.defs:
            raise self.src.error(f"terminal {name} is used but never defined", pos)
        if name in self.active:
            cycle = " -> ".join(self.active[self.active.index(name):] + [name])
            raise self.src.error(f"terminal {name} is defined in terms of itself ({cycle}); "
                                 "terminals must be regular: use a rule for recursion", pos)
        self.active.append(name)
        rd = self.defs[name]
        node = self.finish(self.to_term(rd.body, name), rd)
        self.active.pop()
        if isinstance(node, Term):
            node.name = name
        self.done[name] = node
        return node

    def finish(self, term: Term, rd: RuleDef) -> Node:
        """Apply ``[max_chars=N]``, then ``[lazy]`` / ``[stop=...]`` (a string, a regex, a
        terminal or a special token ends the text; the lexeme ends at its first end) and
        ``[max_tokens=N]`` (the lexeme spans at most N tokens, then must end: the core counts)."""
        if rd.max_chars is not None:
            term = _combine("chars", [term], rd.max_chars)
        if rd.stop is not None and not isinstance(rd.stop, TokenRef):
            stop = Term(regex_ast.literal(rd.stop)) if isinstance(rd.stop, str) else self.to_term(rd.stop, rd.name)
            term = _combine("seq", [term, stop])
        if rd.lazy or rd.stop is not None or rd.max_tokens:
            # a copy: the body may be a named terminal, used elsewhere without these options
            term = replace(term, lazy=term.lazy or rd.lazy or (rd.stop is not None and not isinstance(rd.stop, TokenRef)),
                           max_tokens=rd.max_tokens or term.max_tokens)
        if isinstance(rd.stop, TokenRef):
            return Seq([term, rd.stop], pos=rd.pos)
        return term

    def to_term(self, node: Node, owner: str) -> Term:
        if isinstance(node, Term):
            return node
        if isinstance(node, Ref):
            if not node.name.lstrip("_")[:1].isupper():
                raise self.src.error(f"'{owner}' must be made of strings, regexes and terminals, but refers to "
                                     f"the rule '{node.name}'", node.pos)
            self.used.add(node.name)
            t = self.terminal(node.name, node.pos)
            if not isinstance(t, Term):
                raise self.src.error(f"terminal {node.name} ends with a special token and cannot be part of "
                                     f"'{owner}'", node.pos)
            return t
        if isinstance(node, Seq):
            return _combine("seq", [self.to_term(k, owner) for k in node.items])
        if isinstance(node, Alt):
            return _combine("alt", [self.to_term(k, owner) for k in node.items])
        if isinstance(node, Rep):
            return _combine("rep", [self.to_term(node.item, owner)], (node.min, node.max))
        if isinstance(node, And):
            return _combine("and", [self.to_term(k, owner) for k in node.items])
        if isinstance(node, Not):
            return _combine("not", [self.to_term(node.item, owner)])
        what = {TokenRef: "a special token", SubGrammar: "%lark"}.get(type(node), "%json")
        raise self.src.error(f"{what} cannot be part of '{owner}', which must be one lexeme "
                             "(strings, regexes and terminals)", node.pos)

    def in_rule(self, node: Node) -> Node:
        """A rule body with terminal names replaced by their Terms."""
        if isinstance(node, Ref) and node.name.lstrip("_")[:1].isupper():
            self.used.add(node.name)
            return self.terminal(node.name, node.pos)
        if isinstance(node, (Seq, Alt)):
            return type(node)([self.in_rule(k) for k in node.items], pos=node.pos)
        if isinstance(node, Rep):
            return Rep(self.in_rule(node.item), node.min, node.max, pos=node.pos)
        if isinstance(node, (And, Not)):
            # `&` and `~` act on lexemes: the operands must be terminal material
            what = "&" if isinstance(node, And) else "~"
            return self.to_term(node, f"the operands of '{what}'")
        if isinstance(node, SubGrammar):
            return SubGrammar(resolve_checked(node.grammar, "start", self.unused), pos=node.pos)
        return node


def resolve_checked(syn: LarkSyntax, start: str, unused: str = "warn") -> EbnfGrammar:
    """``resolve`` and ``check_grammar``: a grammar ready to emit."""
    g = resolve(syn, start, unused)
    check_grammar(g, unused=unused)
    return g


def resolve(syn: LarkSyntax, start: str, unused: str = "warn") -> EbnfGrammar:
    r = _Resolver(syn, unused)
    rules: dict[str, RuleDef] = {}
    given: set = set()   # parametric rules given some value
    source_rules = syn.rules
    if syn.parametric or syn.has_params:
        source_rules, given = expand_parametric(syn)
    for name, rd in source_rules.items():
        if rd.lazy or rd.stop is not None or rd.max_chars is not None or rd.max_tokens:
            body = r.finish(r.to_term(rd.body, name), rd)
        else:
            body = r.in_rule(rd.body)
        rules[name] = RuleDef(name, body, rd.pos)
    ignores = []
    for node, pos in syn.ignores:
        t = r.to_term(node, "%ignore")
        if t.name == "":
            t = Term(t.regex, build=t.build, pos=pos)
        ignores.append(t)
    for name in r.defs:   # resolve every definition, used or not, so errors are not hidden
        r.terminal(name, r.defs[name].pos)
    g = EbnfGrammar(rules, start, syn.source, ignores=ignores, terminals=dict(r.defs), options=dict(syn.options))
    for name, rd in syn.terminals.items():
        if name not in r.used:
            report_unused(g, f"terminal {name} is never used", rd.pos, unused)
    for name, pos in syn.parametric.items():
        if name not in given:
            report_unused(g, f"the parametric rule '{name}' is never given a value (name::0 in an ordinary rule)",
                          pos, unused)
    for rd in rules.values():
        for n in walk(rd.body):
            if isinstance(n, JsonSchema) and not isinstance(n.schema, (dict, bool)):
                raise syn.source.error("%json takes a JSON Schema object", n.pos)
    return g
