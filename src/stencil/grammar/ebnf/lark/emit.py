"""Emit a resolved Lark grammar into a ``stencil.GrammarBuilder``.

Each Term becomes one lexeme (the same Term object, the same lexeme), ``%ignore`` terms become
ignored lexemes, token references special tokens (or the text of ordinary tokens), and
``%json`` blocks the rules of the JSON Schema front-end, so a Lark rule can use a schema.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from stencil.grammar.ebnf.ast import (Alt, EbnfGrammar, JsonSchema, Namespaced, Node, Ref, Rep, RuleDef, Seq,
                                  SubGrammar, Term, TokenRef, TokenTable, resolve_tokens)
from stencil.grammar.ebnf.gbnf_lexemes import ANY_TEXT
from stencil.grammar.ebnf.lark.terminals import term_expr
from stencil.grammar.ebnf.lark.x_guidance import JSON_DIALECT
from stencil.grammar.regex import ast as regex_ast
from stencil.grammar.regex import build_regex
from stencil._core import ExprId, GrammarError, Symbol

__all__ = ["emit_lark", "emit_lark_rule"]


class _Emitter:
    def __init__(self, b, g: EbnfGrammar, tokens: Optional[TokenTable], json_options: dict):
        self.b, self.g, self.tokens = b, g, tokens
        self.json_options = json_options
        self.rules = {name: b.rule(name) for name in g.rules}
        self.terms: dict[int, tuple] = {}
        self.n_json = 0
        self.n_lark = 0

    def seq(self, node: Node) -> list:
        items = node.items if isinstance(node, Seq) else [node]
        out = []
        for k in items:
            if isinstance(k, Seq):
                out.extend(self.seq(k))
            else:
                out.append(self.sym(k))
        return out

    def sym(self, node: Node) -> Symbol:
        b = self.b
        if isinstance(node, Ref):
            return self.rules[node.name]
        if isinstance(node, Term):
            hit = self.terms.get(id(node))
            if hit is None:
                name = node.name or _describe(node)
                # a builder view may give a plain terminal its own symbol (a JSON string's raw runs
                # and escapes: stencil.grammar.json.string_view)
                own = getattr(b, "term", None) if node.build is None and not node.lazy and not node.max_tokens else None
                hit = (node, own(node.regex, name) if own is not None else
                       b.lexeme(term_expr(b, node), name, node.lazy, node.max_tokens))
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
        if isinstance(node, SubGrammar):
            return self.nested(node)
        raise AssertionError(type(node).__name__)

    def nested(self, node: SubGrammar) -> Symbol:
        """``%lark {...}``: its rules under their own prefix. The core applies ``%ignore`` to the
        whole grammar, so a block's own ``%ignore`` (where the outer grammar has none) becomes an
        optional lexeme before each of its terminals."""
        g = node.grammar
        self.n_lark += 1
        prefix = f"%lark{self.n_lark}/"
        if _ignore_key(g) != _ignore_key(self.g):
            if self.g.ignores:
                raise self.g.error("this %lark block's %ignore differs from the enclosing grammar's, but "
                                   "stencil applies the enclosing %ignore everywhere: give both the same "
                                   "%ignore, or move the outer %ignore into its own %lark block", node.pos)
            g = _explicit_ignores(g)
        return _Emitter(Namespaced(self.b, prefix), g, self.tokens, self.json_options).rules_only()

    def token(self, node: TokenRef) -> Symbol:
        b = self.b
        if node.negated:
            return b.lexeme(build_regex(b, ANY_TEXT), "any text")
        specials, texts = resolve_tokens(self.g, node, self.tokens)
        name = node.shown()
        alts = [b.literal(t) for t in texts]
        if specials:
            alts.append(b.special_token(specials, name))
        return alts[0] if len(alts) == 1 else b.choice(alts)

    def json(self, node: JsonSchema) -> Symbol:
        try:
            from stencil.grammar.json.schema import build_json_schema
        except ImportError:
            raise self.g.error("%json needs the JSON Schema front-end (stencil.grammar.json.schema), "
                               "which is not available in this installation", node.pos) from None
        try:
            self.n_json += 1
            return build_json_schema(Namespaced(self.b, f"%json{self.n_json}/"), node.schema,
                                     **{**JSON_DIALECT, **self.json_options, **node.options})
        except GrammarError as e:
            raise self.g.error(f"in the %json schema: {e}", node.pos) from None

    def run(self) -> Symbol:
        b = self.b
        ignores = self.g.ignores
        # no %ignore before the first lexeme unless asked for (llguidance's and XGrammar's rule),
        # nor after the last: llguidance skips only before a lexeme, and its dialect is how a Lark
        # grammar is read; a grammar with XGrammar's %grammar_options gets XGrammar's trailing skip
        initial = self.g.options.get("allow_initial_skip", False)
        final = self.g.options.get("trailing_skip", False)
        if self.g.options.get("ignore_once") and len(ignores) > 1:
            # llguidance's ignore_once: the union describes the whole skipped span
            b.ignore(b.re_or([term_expr(b, t) for t in ignores]), "%ignore", initial, final)
        else:
            for t in ignores:
                b.ignore(_ignore_expr(b, t, self.g.options.get("ignore_once", False)), t.name or "%ignore",
                         initial, final)
        return self.rules_only()

    def rules_only(self) -> Symbol:
        b = self.b
        for name, rd in self.g.rules.items():
            body = rd.body
            for alt in (body.items if isinstance(body, Alt) else [body]):
                b.add_alternative(self.rules[name], self.seq(alt))
        return self.rules[self.g.start]


def _ignore_expr(b, t: Term, once: bool) -> ExprId:
    """An ``%ignore`` term as the core's ignored lexeme. The core never lets an ignored lexeme
    follow itself (a bounded one bounds the whole run); Lark and llguidance match ``%ignore``
    repeatedly unless ``ignore_once`` is set, hence ``+``."""
    e = term_expr(b, t)
    return e if once else b.re_repeat(e, 1, -1)


def _ignore_key(g: EbnfGrammar):
    """What a grammar's ``%ignore`` is, to compare a nested grammar's with the outer one's."""
    return (tuple(repr(t.regex) if t.build is None else id(t) for t in g.ignores), bool(g.options.get("ignore_once")))


def _explicit_ignores(g: EbnfGrammar, first: bool = True, last: bool = True) -> EbnfGrammar:
    """``g`` without ``%ignore``: an optional ignore lexeme before each of its terminals, and after
    its last with ``last``; with ``first`` False, never before the first: after each terminal
    with ``last`` (XGrammar's reading), else only between two terminals (llguidance's)."""
    once = g.options.get("ignore_once", False)
    parts = [t.regex for t in g.ignores]
    if any(t.build is not None for t in g.ignores):
        raise g.error("an %ignore kept to a part of a grammar (a %lark block whose enclosing grammar has no "
                      "%ignore, or a custom tool's input) must be plain terminals (no %regex options, & or ~)", None)
    ign = regex_ast.alt(parts) if once else regex_ast.repeat(regex_ast.alt(parts), 1, None)
    skip = Term(ign, name="%ignore")

    def add(node: Node, before: bool = True) -> Node:
        if isinstance(node, Term):
            return Seq([Rep(skip, 0, 1), node] if before else [node, Rep(skip, 0, 1)])
        if isinstance(node, (Seq, Alt)):
            return type(node)([add(k, before) for k in node.items], pos=node.pos)
        if isinstance(node, Rep):
            return Rep(add(node.item, before), node.min, node.max, pos=node.pos)
        return node
    if not first and not last:
        return _skips_between(g, add)
    rules = {name: RuleDef(name, add(rd.body, first), rd.pos) for name, rd in g.rules.items()}
    if not first or not last:
        return replace(g, rules=rules, ignores=[])
    # ignored text at the block's edges: before its first terminal (above) and after its last, as
    # llguidance skips a nested grammar's own %ignore wherever its lexemes may come
    edge = g.start + "%edge"
    rules[edge] = RuleDef(edge, Seq([Ref(g.start), Rep(skip, 0, 1)]), g.rules[g.start].pos)
    return replace(g, rules=rules, ignores=[], start=edge)


def _skips_between(g: EbnfGrammar, add) -> EbnfGrammar:
    """``g`` with an ignore lexeme only between two of its terminals: each rule with the skip
    before every terminal (``add``), and a "lead" copy (``name%lead``) of each rule that can begin
    the text, which derives the rule's non-empty texts with no skip before their first terminal.
    The start is the lead copy, or empty where the start rule derives the empty text."""
    nullable: dict[str, bool] = {name: False for name in g.rules}    # derives the empty text
    filled: dict[str, bool] = {name: False for name in g.rules}      # derives a non-empty one

    def can_be_empty(node: Node) -> bool:
        if isinstance(node, Seq):
            return all(can_be_empty(k) for k in node.items)
        if isinstance(node, Alt):
            return any(can_be_empty(k) for k in node.items)
        if isinstance(node, Rep):
            return node.min == 0 or can_be_empty(node.item)
        return isinstance(node, Ref) and nullable[node.name]

    def can_be_filled(node: Node) -> bool:
        if isinstance(node, (Seq, Alt)):
            return any(can_be_filled(k) for k in node.items)
        if isinstance(node, Rep):
            return node.max != 0 and can_be_filled(node.item)
        return filled[node.name] if isinstance(node, Ref) else True
    changed = True
    while changed:   # both, to a fixed point
        changed = False
        for name, rd in g.rules.items():
            for table, test in ((nullable, can_be_empty), (filled, can_be_filled)):
                if not table[name] and test(rd.body):
                    table[name] = changed = True
    rules = {name: RuleDef(name, add(rd.body), rd.pos) for name, rd in g.rules.items()}
    pending: list[str] = []

    def lead(node: Node) -> Optional[Node]:
        """The non-empty texts of ``node`` with no skip before the first terminal; None if none."""
        if not can_be_filled(node):
            return None
        if isinstance(node, Seq):
            ways: list[Node] = []
            for i, k in enumerate(node.items):
                head = lead(k)
                if head is not None:
                    ways.append(Seq([head] + [add(x) for x in node.items[i + 1:]], pos=node.pos))
                if not can_be_empty(k):
                    break
            return None if not ways else ways[0] if len(ways) == 1 else Alt(ways, pos=node.pos)
        if isinstance(node, Alt):
            ways = [w for w in (lead(k) for k in node.items) if w is not None]
            return Alt(ways, pos=node.pos)
        if isinstance(node, Rep):
            head = lead(node.item)
            assert head is not None     # can_be_filled(node) above
            rest = Rep(add(node.item), 0 if can_be_empty(node.item) else max(node.min - 1, 0),
                       None if node.max is None else node.max - 1, pos=node.pos)
            return Seq([head, rest], pos=node.pos)
        if isinstance(node, Ref):
            name = node.name + "%lead"
            if name not in rules and name not in pending:
                pending.append(name)
                body = lead(g.rules[node.name].body)
                assert body is not None     # can_be_filled(node) above
                rules[name] = RuleDef(name, body, g.rules[node.name].pos)
            return Ref(name, pos=node.pos)
        return node
    start = lead(g.rules[g.start].body)
    name = g.start + "%between"
    ways: list[Node] = ([start] if start is not None else []) + ([Seq([])] if nullable[g.start] else [])
    rules[name] = RuleDef(name, Alt(ways), g.rules[g.start].pos)
    return replace(g, rules=rules, ignores=[], start=name)


def _describe(t: Term) -> str:
    if isinstance(t.regex, regex_ast.Literal):
        return '"' + t.regex.text + '"'
    return "regex"


def emit_lark(b, g: EbnfGrammar, tokens: Optional[TokenTable] = None, json_options: Optional[dict] = None) -> Symbol:
    """Emit the checked grammar ``g`` into builder ``b``; returns its start rule."""
    return _Emitter(b, g, tokens, json_options or {}).run()


def emit_lark_rule(b, g: EbnfGrammar, tokens: Optional[TokenTable] = None, json_options: Optional[dict] = None) -> Symbol:
    """Emit ``g`` as one rule of a larger grammar: its ``%ignore`` applies between its own
    terminals (before the first only with ``allow_initial_skip``, after the last only with
    XGrammar's ``%grammar_options``), not to the rest of the builder's grammar, as the core's
    ignored lexemes would."""
    if g.ignores:
        g = _explicit_ignores(g, first=bool(g.options.get("allow_initial_skip", False)),
                              last=bool(g.options.get("trailing_skip", False)))
    return _Emitter(b, g, tokens, json_options or {}).rules_only()
