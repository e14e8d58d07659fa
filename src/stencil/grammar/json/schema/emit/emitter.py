"""From normalized schemas to grammar rules.

Every distinct sub-schema (a :data:`~.model.Sub`) becomes one rule, created on first use and filled
from a work queue, so recursive schemas give recursive rules and nothing is emitted twice. A rule's
alternatives are its type parts: ``null``, ``true``/``false``, one number lexeme, one string lexeme
(from the formulas, see :class:`~..lang.scalars.Scalars`), and one rule per array or object alternative.

Punctuation ``{ } [ ] , :`` are separate literal lexemes; whitespace is one ignored lexeme
(flexible), absent (compact), or part of the punctuation (fixed indentation, where rules depend on
the nesting depth; and flexible white space in a schema embedded in a larger grammar, where an
ignored lexeme would apply to the host grammar too).

Example::

    em = Emitter(b, ctx)
    start = em.value(frozenset([ctx.resolver.root]))
    em.run()
"""
from __future__ import annotations

import json
import re
from json.encoder import encode_basestring

from stencil.grammar.deadline import check_deadline
from stencil.grammar.json.schema.core.formulas import FALSE, TRUE, Integer
from stencil.grammar.json.schema.emit.arrays import emit_array
from stencil.grammar.json.schema.emit.objects import emit_object
from stencil.grammar.json.schema.lang.scalars import Scalars
from stencil._core import CheckKind, ExprId, GrammarError
from stencil.grammar.json.value import spaced_punctuation, whitespace_expr
from stencil.grammar.regex import build_regex

__all__ = ["Emitter", "Scalars"]


_SURROGATE = re.compile("[" + chr(0xd800) + "-" + chr(0xdfff) + "]")   # (mypyc takes no surrogate literal)


def plain_json_text(s: str) -> str:
    """``json.dumps(s, ensure_ascii=False)``, but a lone surrogate as its ``\\u`` escape (the one
    spelling it has: it is no UTF-8 character)."""
    # (json's C encoder called directly: json.dumps with an option builds an encoder per call, 9x
    # slower, and this runs for every property name)
    text = encode_basestring(s)
    return text if text.isascii() else _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def option_regex(b, name: str, pattern: str) -> ExprId:
    """A regex option (``whitespace_pattern``, the separators) as an expression; a bad regex is an
    error naming the option."""
    try:
        return build_regex(b, pattern)
    except GrammarError as e:
        raise GrammarError(f"{name} {pattern!r}: {e}") from None


def separators(b, options) -> dict:
    """The expressions of the ``item_separator`` and ``key_separator`` options, by the punctuation
    they replace."""
    seps = {",": options.item_separator, ":": options.key_separator}
    return {c: option_regex(b, name, seps[c]) for c, name in ((",", "item_separator"), (":", "key_separator"))
            if seps[c] is not None}


class Emitter:
    def __init__(self, b, ctx, scoped_whitespace: bool = False):
        self.b = b
        self.ctx = ctx
        self.options = ctx.options
        o = self.options
        # llguidance's spelling (%json) writes no -0 above a minimum of 0; the standard keeps it
        self.scalars = Scalars(b, o.string_spelling, o.number_spelling == "plain", o.escapes,
                               minus_zero=o.number_spelling != "plain_integers")
        self.strings = self.scalars.strings
        self._rules: dict = {}
        self._queue: list = []
        self._n = 0
        self._lexemes: dict = {}   # (kind, formula) -> lexeme of a number or string
        self._keys: dict = {}      # property name -> key lexeme
        self._specs: dict = {}
        self.checks = 0
        ws = self.options.whitespace
        pattern = self.options.whitespace_pattern
        if ws == "flexible" and not scoped_whitespace and pattern is None:
            around = self.options.whitespace_around   # none before or after the value by default
            b.ignore(whitespace_expr(b, self.options.max_whitespace_run), "WS", around, around)
        self._lit = {c: b.literal(c) for c in ("{", "}", "[", "]", ",", ":", "null", "true", "false")}
        seps = separators(b, self.options)
        if pattern is not None:   # the caller's white space, where punctuation allows it
            self._lit.update(spaced_punctuation(b, run=option_regex(b, "whitespace_pattern", pattern), seps=seps))
        elif ws == "flexible" and scoped_whitespace:
            self._lit.update(spaced_punctuation(b, self.options.max_whitespace_run, seps=seps))
        else:
            self._lit.update({c: b.lexeme(e, json.dumps(c)) for c, e in seps.items()})
        self._indent = self.options.indent
        self._nl: dict = {}

    # -- rules ------------------------------------------------------------------------------------
    def fresh(self, hint: str):
        self._n += 1
        return self.b.rule(f"{hint}#{self._n}")

    def value(self, sub: frozenset, depth: int = 0):
        """The rule of the values satisfying ``sub`` (filled later by :meth:`run`)."""
        if self._indent is None:
            depth = 0
        key = (sub, depth)
        r = self._rules.get(key)
        if r is None:
            t = self.ctx.sub_typed(sub)
            r = self._scalar(t)   # a lone literal or lexeme needs no rule of its own
            if r is None:
                r = self.fresh("value")
                self._queue.append((r, t, depth))
            self._rules[key] = r
        return r

    def _scalar(self, t):
        n = t.null + len(t.bools) + (t.num != FALSE) + (t.str != FALSE)
        if n != 1 or t.arr or t.obj:
            return None
        if t.null:
            return self._lit["null"]
        if t.bools:
            return self._lit["true" if True in t.bools else "false"]
        if t.num != FALSE:
            return self._lexeme("num", t.num)
        return self._lexeme("str", t.str)

    def run(self) -> None:
        while self._queue:
            check_deadline()
            rule, t, depth = self._queue.pop()
            self._fill(rule, t, depth)

    def _fill(self, rule, t, depth: int) -> None:
        b, lit = self.b, self._lit
        if t.is_none():
            self.dead(rule)
            return
        if t.null:
            b.add_alternative(rule, [lit["null"]])
        for v in (True, False):
            if v in t.bools:
                b.add_alternative(rule, [lit["true" if v else "false"]])
        if t.num != FALSE:
            b.add_alternative(rule, [self._lexeme("num", t.num)])
        if t.str != FALSE:
            b.add_alternative(rule, [self._lexeme("str", t.str)])
        if self._indent is not None and depth >= self.options.max_depth:
            if not (t.null or t.bools or t.num != FALSE or t.str != FALSE):
                self.dead(rule)   # containers only, and none opens this deep (a recursive $ref's last level)
            return
        for spec in t.arr:
            b.add_alternative(rule, [self._spec(spec, depth, emit_array)])
        for spec in t.obj:
            b.add_alternative(rule, [self._spec(spec, depth, emit_object)])

    def _spec(self, spec, depth, fn):
        key = (spec, depth)
        r = self._specs.get(key)
        if r is None:
            r = self._specs[key] = fn(self, spec, depth)
        return r

    def _lexeme(self, kind: str, f):
        key = (kind, f)
        sym = self._lexemes.get(key)
        if sym is None:
            b = self.b
            if kind == "num":
                expr = self.scalars.number(f)
                name = "number" if f == TRUE else ("integer" if type(f) is Integer else "number:constrained")
            else:
                expr, name = self.string_expr(f), "string" if f == TRUE else "string:constrained"
            sym = self._lexemes[key] = b.lexeme(expr, name)
        return sym

    def string_expr(self, f) -> ExprId:
        """The quoted JSON strings satisfying formula ``f``, as a regular expression."""
        return self.strings.quoted(self.scalars.string_body(f))   # (any_body for TRUE: no lone surrogate)

    def string_lexeme(self, f, name: str = "string"):
        """The lexeme of the JSON strings satisfying formula ``f``."""
        return self._lexeme("str", f)

    def key_literal(self, name: str):
        """The key lexeme for a property name (every JSON encoding of it, or only the plain one
        under ``key_spelling="plain"``)."""
        sym = self._keys.get(name)
        if sym is None:
            # A lone surrogate (valid in JSON text as an escape) cannot cross into the core as UTF-8.
            label = name[:40].encode("utf-8", "backslashreplace").decode("utf-8")
            sym = self._keys[name] = self.b.lexeme(self.key_text(name), f"key:{label}")
        return sym

    def key_text(self, name: str) -> ExprId:
        """The quoted spellings of one property name that the options allow."""
        if self.options.key_spelling == "plain" or self.strings.spelling == "plain":
            return self.b.re_literal(plain_json_text(name))
        return self.strings.quoted(self.strings.text(name))

    def dead(self, rule) -> None:
        """Give a rule that accepts nothing an unproductive alternative (the builder prunes it
        with its uses; a rule with no alternative at all is an error)."""
        self.b.add_alternative(rule, [rule])

    def check(self, rule, kind: CheckKind, **kw) -> None:
        """Attach one of the core's completion checks (cpp/include/stencil/check_kind.h lists them)."""
        self.checks += 1
        self.b.add_check(rule, kind, **kw)

    # -- punctuation --------------------------------------------------------------------------------
    def _newline(self, depth: int):
        sym = self._nl.get(depth)
        if sym is None:
            sym = self._nl[depth] = self.b.literal("\n" + " " * (self._indent * depth))
        return sym

    def comma(self, depth: int) -> list:
        if self._indent is None:
            return [self._lit[","]]
        return [self._lit[","], self._newline(depth + 1)]

    def colon(self) -> list:
        if self._indent is None:
            return [self._lit[":"]]
        return [self.b.literal(": ")]

    def obj_open(self, depth: int) -> list:
        return [self._lit["{"]] if self._indent is None else [self._lit["{"], self._newline(depth + 1)]

    def obj_close(self, depth: int) -> list:
        return [self._lit["}"]] if self._indent is None else [self._newline(depth), self._lit["}"]]

    def arr_open(self, depth: int) -> list:
        return [self._lit["["]] if self._indent is None else [self._lit["["], self._newline(depth + 1)]

    def arr_close(self, depth: int) -> list:
        return [self._lit["]"]] if self._indent is None else [self._newline(depth), self._lit["]"]]

    def empty_object(self) -> list:
        return [self._lit["{"], self._lit["}"]]

    def empty_array(self) -> list:
        return [self._lit["["], self._lit["]"]]
