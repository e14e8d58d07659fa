"""The state of one compilation: resolver, options, the algebra of normalized schemas, memo tables
and what was ignored. :meth:`Context.loc_typed` is the entry of reading: the normalized form of
the schema at a location (memoized; recursion without an object or array between is an error).

Example::

    ctx = Context(Resolver(schema), Options())
    typed = ctx.loc_typed(ctx.resolver.root)
"""
from __future__ import annotations

import json

from stencil._core import BudgetError, GrammarError
from stencil.grammar.json.schema.core.model import (ANY, FALSE_SUB, NONE, TRUE_SUB, Algebra, Either, Neg, Typed,
                                                    Unsupported, atom_order)
from stencil.grammar.json.schema.read.common import keyword_error
from stencil.grammar.json.schema.read.disjoint import typed_disjoint, typed_within
from stencil.grammar.json.schema.read.types import read_schema

__all__ = ["Context"]

#: known_typed inside known_typed: past this many, no answer (simplify keeps the Sub as it is)
MAX_KNOWN_DEPTH = 8
#: Schemas read inside schemas being read (nesting, $ref chains): past this many, RecursionError,
#: which the front door reports as too deep. Compiled (mypyc) the reader's recursion is the C
#: stack's, not Python's recursion limit: about 2 KB a level, so 8 MB threads never run out.
MAX_READ_DEPTH = 1000


class Context:
    """State of one compilation: resolver, algebra, options, memo tables, what was ignored."""

    def __init__(self, resolver, options):
        self.resolver = resolver
        self.options = options
        self.alg = Algebra()
        self.ignored: list = []          # (keyword, where, reason), lenient mode
        self.unknown: dict = {}          # unknown keyword -> first place seen
        self.unknown_formats: dict = {}  # unknown format -> first place seen
        self._loc_memo: dict = {}
        self._sub_memo: dict = {}
        self._canon_memo: dict = {}      # schema location -> its canonical key (see _canon)
        self._positive_subs: set = set()  # Subs without a complement: simplify leaves them as they are
        #: (kind "num"/"str", formula) -> whether no value satisfies it (read.disjoint.formula_empty)
        self.empty_memo: dict = {}
        #: (Sub, Sub, depth) -> whether they are provably disjoint (read.disjoint._subs_disjoint)
        self.disjoint_memo: dict = {}
        self.refusals = 0                 # errors read.disjoint took as "no proof" (answers not memoized)
        self._active: set = set()
        self._depth = 0                   # loc_typed and sub_typed calls in progress
        self._known_depth = 0             # known_typed's calls in progress
        self.alg.simplify = self.simplify

    def unsupported(self, keyword: str, where: str, reason: str) -> None:
        """Fail, or (lenient) record that a keyword is ignored."""
        if self.options.lenient:
            self.ignored.append((keyword, where, reason))
            return
        raise keyword_error(keyword, where, reason)

    # -- normalization with memo ------------------------------------------------------------------
    def loc_typed(self, loc, exact: bool = False) -> Typed:
        """The normalized form of the schema at ``loc``. ``exact``: an enclosing schema uses
        unevaluatedProperties/Items, so in-place annotations must be exact (see compose)."""
        key = (loc, exact)
        t = self._loc_memo.get(key)
        if t is not None:
            return t
        if key in self._active:
            raise GrammarError(f"$ref at {loc.where()}: the schema refers to itself without an object "
                               "or array in between (infinite recursion)")
        self._active.add(key)
        try:
            self._descend()
            t = read_schema(self, loc, exact)
        finally:
            self._active.discard(key)
            self._depth -= 1
        self._loc_memo[key] = t
        return t

    def _descend(self) -> None:
        """One more schema read inside those being read (the caller's ``finally`` steps back)."""
        self._depth += 1
        if self._depth > MAX_READ_DEPTH:
            raise RecursionError("schemas nested too deeply")

    def sub_typed(self, sub: frozenset) -> Typed:
        t = self._sub_memo.get(sub)
        if t is not None:
            return t
        t = ANY
        try:
            self._descend()
            for atom in sorted(sub, key=atom_order):
                t = self.alg.t_and(t, self.atom_typed(atom))
                if t is NONE:
                    break
        finally:
            self._depth -= 1
        self._sub_memo[sub] = t
        return t

    def atom_typed(self, atom) -> Typed:
        if isinstance(atom, Typed):
            return atom
        if isinstance(atom, Neg):
            inner = self.sub_typed(atom.sub)
            try:
                return self.alg.t_not(inner)
            except Unsupported as e:
                keyword, where = self.alg.neg_origin.get(atom, ("not", "?"))
                self.unsupported(e.keyword, where, f"inside {keyword}: {e.reason}")
                return ANY
        if isinstance(atom, Either):
            t = NONE
            for s in sorted(atom.subs, key=lambda s: sorted(map(atom_order, s))):
                t = self.alg.t_or(t, self.sub_typed(s))
            return t
        return self.loc_typed(atom)

    def known_typed(self, sub: frozenset):
        """The normal form of ``sub`` if computing it cannot start a normalization, else None."""
        t = self._sub_memo.get(sub)
        if t is not None:
            return t
        if any(isinstance(a, (Neg, Either)) for a in sub):
            return None
        # A normal form asked for inside another's: a recursive schema's products reach deeper
        # properties at each level (r's property x beside a complement asks r's normal form,
        # whose property x asks it again...), which would not end. Simplifying is optional.
        if self._known_depth >= MAX_KNOWN_DEPTH:
            return None
        self._known_depth += 1
        try:   # (a schema being normalized may be met: that is an error here, and no answer)
            return self.sub_typed(sub)
        except (BudgetError, GrammarError, Unsupported):
            return None
        finally:
            self._known_depth -= 1

    def simplify(self, sub: frozenset) -> frozenset:
        """Simplify a conjunction with complements, so that alternatives built by oneOf and not
        collapse where they mean the same: a complement the rest already implies is dropped
        ("a" and not "b" is "a"); a complement of something the rest implies empties it ("a" and
        not string, or S and not S for two copies of one schema)."""
        if sub in self._positive_subs:  # (most Subs: asked again and again as objects intersect)
            return sub
        negs = [a for a in sub if isinstance(a, Neg)]
        if not negs:
            self._positive_subs.add(sub)
            return sub
        if len(negs) == len(sub):
            return sub
        positive = frozenset(a for a in sub if not isinstance(a, Neg))
        canon = {self._canon(a) for a in positive}
        if any(None not in canon and all(self._canon(a) in canon for a in n.sub) for n in negs):
            return FALSE_SUB
        pos = self.known_typed(positive)
        if pos is None:
            return sub
        drop = set()
        for n in negs:
            t = self.known_typed(n.sub)
            if t is None:
                continue
            if typed_within(pos, t):
                return FALSE_SUB
            if typed_disjoint(self, pos, t, cheap=True):
                drop.add(n)
        return sub - drop if drop else sub

    def _canon(self, atom):
        """A key equal for two schema locations with the same content and base URI."""
        if not hasattr(atom, "schema"):
            return atom
        memo = self._canon_memo
        key = memo.get(atom)
        if key is None:
            try:
                key = (atom.base, json.dumps(atom.schema, sort_keys=True))
            except (TypeError, ValueError):
                key = atom
            memo[atom] = key
        return key

    def negate(self, t: Typed, keyword: str, where: str) -> Typed:
        """The complement of ``t``; lazily negated sub-schemas remember where they came from."""
        saved, self.alg.origin = self.alg.origin, (keyword, where)
        try:
            return self.alg.t_not(t)
        except Unsupported as e:
            self.unsupported(e.keyword, where, f"inside {keyword}: {e.reason}")
            return ANY
        finally:
            self.alg.origin = saved

    def sub(self, parent, schema, *path) -> frozenset:
        """The lazy Sub for a sub-schema of ``parent``."""
        if schema is True or schema == {}:
            return TRUE_SUB
        if schema is False:
            return FALSE_SUB
        return frozenset([self.resolver.child(parent, schema, *path)])
