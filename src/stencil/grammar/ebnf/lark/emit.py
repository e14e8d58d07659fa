"""Emit a resolved Lark grammar into a ``stencil.GrammarBuilder``.

Each Term becomes one lexeme (the same Term object, the same lexeme), ``%ignore`` terms become
ignored lexemes, token references special tokens (or the text of ordinary tokens), and
``%json`` blocks the rules of the JSON Schema front-end, so a Lark rule can use a schema.
"""
from __future__ import annotations

from typing import Optional

from stencil.grammar.ebnf.ast import (Alt, EbnfGrammar, JsonSchema, Namespaced, Node, Ref, Rep, Seq, Term,
                                  TokenRef, TokenTable, resolve_tokens)
from stencil.grammar.ebnf.gbnf_lexemes import ANY_TEXT
from stencil.grammar.ebnf.lark.terminals import term_expr
from stencil.grammar.regex import build_regex

__all__ = ["emit_lark"]


class _Emitter:
    def __init__(self, b, g: EbnfGrammar, tokens: Optional[TokenTable], json_options: dict):
        self.b, self.g, self.tokens = b, g, tokens
        self.json_options = json_options
        self.rules = {name: b.rule(name) for name in g.rules}
        self.terms: dict[int, tuple] = {}
        self.n_json = 0

    def seq(self, node: Node) -> list:
        items = node.items if isinstance(node, Seq) else [node]
        out = []
        for k in items:
            if isinstance(k, Seq):
                out.extend(self.seq(k))
            else:
                out.append(self.sym(k))
        return out

    def sym(self, node: Node) -> int:
        b = self.b
        if isinstance(node, Ref):
            return self.rules[node.name]
        if isinstance(node, Term):
            hit = self.terms.get(id(node))
            if hit is None:
                name = node.name or _describe(node)
                hit = (node, b.lexeme(term_expr(b, node), name, node.lazy))
                self.terms[id(node)] = hit
            return hit[1]
        if isinstance(node, Seq):
            items = self.seq(node)
            return b.seq(items) if items else b.empty()
        if isinstance(node, Alt):
            alts = [self.seq(k) for k in node.items]
            n = b.rule("")
            for a in alts:
                b.add_alternative(n, a)
            return n
        if isinstance(node, Rep):
            return b.repeat(self.sym(node.item), node.min, -1 if node.max is None else node.max)
        if isinstance(node, TokenRef):
            return self.token(node)
        if isinstance(node, JsonSchema):
            return self.json(node)
        raise AssertionError(type(node).__name__)

    def token(self, node: TokenRef) -> int:
        b = self.b
        if node.negated:
            return b.lexeme(build_regex(b, ANY_TEXT), "any text")
        specials, texts = resolve_tokens(self.g, node, self.tokens)
        name = node.text or f"<[{','.join(map(str, node.ids))}]>"
        alts = [b.literal(t) for t in texts]
        if specials:
            alts.append(b.special_token(specials, name))
        return alts[0] if len(alts) == 1 else b.choice(alts)

    def json(self, node: JsonSchema) -> int:
        try:
            from stencil.grammar.json.schema import build_json_schema
        except ImportError:
            raise self.g.error("%json needs the JSON Schema front-end (stencil.grammar.json.schema), "
                               "which is not available in this installation", node.pos) from None
        from stencil._core import GrammarError
        try:
            self.n_json += 1
            return build_json_schema(Namespaced(self.b, f"%json{self.n_json}/"), node.schema,
                                     **{**self.json_options, **node.options})
        except GrammarError as e:
            raise self.g.error(f"in the %json schema: {e}", node.pos) from None

    def run(self) -> int:
        b = self.b
        for t in self.g.ignores:
            b.ignore(term_expr(b, t), t.name or "%ignore")
        for name, rd in self.g.rules.items():
            body = rd.body
            for alt in (body.items if isinstance(body, Alt) else [body]):
                b.add_alternative(self.rules[name], self.seq(alt))
        return self.rules[self.g.start]


def _describe(t: Term) -> str:
    from stencil.grammar.regex import ast as R
    if isinstance(t.regex, R.Literal):
        return '"' + t.regex.text + '"'
    return "regex"


def emit_lark(b, g: EbnfGrammar, tokens: Optional[TokenTable] = None, json_options: Optional[dict] = None) -> int:
    """Emit the checked grammar ``g`` into builder ``b``; returns its start rule."""
    return _Emitter(b, g, tokens, json_options or {}).run()
