"""Reading one schema object's keywords into its normalized form (:class:`~.model.Typed`).

Each group of keywords gives one conjunct (types, enum/const, number keywords, string keywords,
array keywords, object keywords, in-place applicators); the schema is their intersection. Which
keywords are annotations, which are understood, and which are known but not enforceable is listed
here; any other keyword is unknown and, as the specification says, ignored (``stencil check``
lists them).

Example::

    ctx = Context(Resolver(schema), Options())
    typed = ctx.loc_typed(ctx.resolver.root)
"""
from __future__ import annotations

from decimal import Decimal

from stencil._core import GrammarError
from stencil.grammar.deadline import check_deadline
from stencil.grammar.json_schema.formats import UNSUPPORTED_FORMATS, format_spec
from stencil.grammar.json_schema.formulas import TRUE, f_and
from stencil.grammar.json_schema.model import (ANY, ANY_ARR, ANY_OBJ, BOTH_BOOLS, FALSE_SUB, NONE, TRUE_SUB,
                                               Algebra, Either, Neg, Typed, Unsupported, atom_order,
                                               to_decimal)
from stencil.grammar.json_schema.strings import pattern_formula

__all__ = ["Context", "ANNOTATIONS", "UNDERSTOOD", "NOT_ENFORCEABLE", "read_schema"]

#: keywords that never change which instances are valid
ANNOTATIONS = frozenset("""
    $schema $id id $anchor $dynamicAnchor $recursiveAnchor $defs definitions $comment $vocabulary
    title description
    default examples example deprecated readOnly writeOnly contentMediaType contentEncoding
    contentSchema
""".split())

#: validation keywords this compiler enforces
UNDERSTOOD = frozenset("""
    type enum const multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength
    minLength pattern format items prefixItems additionalItems maxItems minItems uniqueItems
    contains maxContains minContains properties patternProperties additionalProperties required
    propertyNames maxProperties minProperties dependentRequired dependentSchemas dependencies allOf
    anyOf oneOf not if then else $ref unevaluatedItems unevaluatedProperties
""".split())

#: the 2020-12 validation vocabulary (off under a metaschema whose $vocabulary leaves it out)
VALIDATION_VOCABULARY = frozenset("""
    type enum const multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength
    pattern maxItems minItems uniqueItems maxContains minContains maxProperties minProperties
    required dependentRequired
""".split())

#: keywords a declared older draft does not have (unknown there, so ignored as the validators do)
_NEWER_THAN = {
    4: frozenset("const contains propertyNames if then else dependentRequired dependentSchemas "
                 "unevaluatedItems unevaluatedProperties minContains maxContains prefixItems".split()),
    6: frozenset("if then else dependentRequired dependentSchemas unevaluatedItems unevaluatedProperties "
                 "minContains maxContains prefixItems".split()),
    7: frozenset("dependentRequired dependentSchemas unevaluatedItems unevaluatedProperties minContains "
                 "maxContains prefixItems".split()),
    2019: frozenset(["prefixItems"]),
}

#: keywords with a validation meaning that are not enforced (an error unless lenient)
NOT_ENFORCEABLE = {
    "$dynamicRef": "dynamic references (resolution depends on the evaluation path) are not supported",
    "$recursiveRef": "recursive references (resolution depends on the evaluation path) are not supported",
    "disallow": "draft-03 keyword, not supported",
    "extends": "draft-03 keyword, not supported",
    "divisibleBy": "draft-03 keyword, not supported",
}

_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")

#: keywords read by each group below: a schema without any of them skips the group (most schema
#: objects use two or three keywords, and this runs once per schema object)
_KNOWN = UNDERSTOOD | ANNOTATIONS
_NUMBER_KEYS = frozenset(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"))
_STRING_KEYS = frozenset(("minLength", "maxLength", "pattern", "format", "contentEncoding"))
_ARRAY_KEYS = frozenset(("prefixItems", "items", "additionalItems", "minItems", "maxItems", "uniqueItems",
                         "contains"))
_OBJECT_KEYS = frozenset(("properties", "patternProperties", "additionalProperties", "required",
                          "propertyNames", "minProperties", "maxProperties", "dependentRequired",
                          "dependentSchemas", "dependencies"))
_APPLICATOR_KEYS = frozenset(("$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if"))
_type_parts: dict = {}


def _type_part(name: str, draft: int) -> Typed:
    """The Typed of one type name (shared: Typed values are never mutated)."""
    t = _type_parts.get((name, draft))
    if t is None:
        t = _type_parts[(name, draft)] = _make_type_part(name, draft)
    return t


def _make_type_part(name: str, draft: int) -> Typed:
    if name == "null":
        return Typed(null=True)
    if name == "boolean":
        return Typed(bools=BOTH_BOOLS)
    if name == "integer":
        # draft 4: "a JSON number without a fraction or exponent part"; later: any integral value
        return Typed(num=("int4",) if draft == 4 else ("int",))
    if name == "number":
        return Typed(num=TRUE)
    if name == "string":
        return Typed(str=TRUE)
    if name == "array":
        return Typed(arr=(ANY_ARR,))
    return Typed(obj=(ANY_OBJ,))


def only_num(f) -> Typed:
    """Numbers constrained by ``f``, every other type unconstrained."""
    return Typed(True, BOTH_BOOLS, f, TRUE, (ANY_ARR,), (ANY_OBJ,))


def only_str(f) -> Typed:
    return Typed(True, BOTH_BOOLS, TRUE, f, (ANY_ARR,), (ANY_OBJ,))


def only_arr(specs) -> Typed:
    return Typed(True, BOTH_BOOLS, TRUE, TRUE, tuple(specs), (ANY_OBJ,))


def only_obj(specs) -> Typed:
    return Typed(True, BOTH_BOOLS, TRUE, TRUE, (ANY_ARR,), tuple(specs))


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
        self._active: set = set()
        self.alg.simplify = self.simplify

    def unsupported(self, keyword: str, where: str, reason: str) -> None:
        """Fail, or (lenient) record that a keyword is ignored."""
        if self.options.lenient:
            self.ignored.append((keyword, where, reason))
            return
        err = GrammarError(f"{keyword} at {where}: {reason}")
        err.keyword, err.pointer = keyword, where
        raise err

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
            t = read_schema(self, loc, exact)
        finally:
            self._active.discard(key)
        self._loc_memo[key] = t
        return t

    def sub_typed(self, sub: frozenset) -> Typed:
        t = self._sub_memo.get(sub)
        if t is not None:
            return t
        t = ANY
        for atom in sorted(sub, key=atom_order):
            t = self.alg.t_and(t, self.atom_typed(atom))
            if t is NONE:
                break
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
        try:   # (a schema being normalized may be met: that is an error here, and no answer)
            return self.sub_typed(sub)
        except (GrammarError, Unsupported):
            return None

    def simplify(self, sub: frozenset) -> frozenset:
        """Simplify a conjunction with complements, so that alternatives built by oneOf and not
        collapse where they mean the same: a complement the rest already implies is dropped
        ("a" and not "b" is "a"); a complement of something the rest implies empties it ("a" and
        not string, or S and not S for two copies of one schema)."""
        negs = [a for a in sub if isinstance(a, Neg)]
        if not negs or len(negs) == len(sub):
            return sub
        positive = frozenset(a for a in sub if not isinstance(a, Neg))
        canon = {self._canon(a) for a in positive}
        if any(None not in canon and all(self._canon(a) in canon for a in n.sub) for n in negs):
            return FALSE_SUB
        pos = self.known_typed(positive)
        if pos is None:
            return sub
        from stencil.grammar.json_schema.disjoint import typed_disjoint, typed_within
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
        memo = self.__dict__.setdefault("_canon_memo", {})
        key = memo.get(atom)
        if key is None:
            import json
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


def read_schema(ctx: Context, loc, exact: bool = False) -> Typed:
    check_deadline()
    s = loc.schema
    if s is True:
        return ANY
    if s is False:
        return NONE
    if not isinstance(s, dict):
        raise GrammarError(f"schema at {loc.where()}: must be an object or a boolean, got {type(s).__name__}")
    if loc.base in ctx.resolver.no_validation:
        s = {k: v for k, v in s.items() if k not in VALIDATION_VOCABULARY}
    newer = _NEWER_THAN.get(loc.draft)
    if newer is not None and not newer.isdisjoint(s):
        for k in newer.intersection(s):
            ctx.unknown.setdefault(f"{k} (not in draft {loc.draft})", _where(loc, k))
        s = {k: v for k, v in s.items() if k not in newer}
    if not s:
        return ANY
    if "$ref" in s and loc.draft <= 7:
        # before 2019-09, $ref replaces the whole schema object
        return ctx.loc_typed(ctx.resolver.resolve(s["$ref"], loc), exact)
    from stencil.grammar.json_schema import arrays, compose, objects
    alg = ctx.alg
    if not _KNOWN.issuperset(s):
        for key in s:
            if key in _KNOWN:
                continue
            if key in NOT_ENFORCEABLE:
                if key == "$recursiveRef" or key == "$dynamicRef":
                    continue  # compose decides (plain references are resolved)
                ctx.unsupported(key, _where(loc, key), NOT_ENFORCEABLE[key])
            else:
                ctx.unknown.setdefault(key, loc.where())
    unevaluated = "unevaluatedProperties" in s or "unevaluatedItems" in s
    inner = exact or unevaluated
    t = _types(ctx, loc, s) if "type" in s else ANY
    if t is NONE:
        return t
    if "enum" in s or "const" in s:
        t = alg.t_and(t, _values(ctx, loc, s))
        if t is NONE:
            return t
    if not _NUMBER_KEYS.isdisjoint(s):
        t = alg.t_and(t, _numbers(ctx, loc, s))
        if t is NONE:
            return t
    if not _STRING_KEYS.isdisjoint(s):
        t = alg.t_and(t, _strings(ctx, loc, s))
        if t is NONE:
            return t
    if not _ARRAY_KEYS.isdisjoint(s):
        t = alg.t_and(t, arrays.read(ctx, loc, s))
        if t is NONE:
            return t
    if not _OBJECT_KEYS.isdisjoint(s):
        t = alg.t_and(t, objects.read(ctx, loc, s, inner))
        if t is NONE:
            return t
    if not _APPLICATOR_KEYS.isdisjoint(s):
        t = compose.read(ctx, loc, s, inner, t)
    if unevaluated:
        t = compose.unevaluated(ctx, loc, s, t)
    return t


def _where(loc, key: str) -> str:
    return f"{loc.pointer}/{key}" if loc.doc == "" else f"{loc.doc}#{loc.pointer}/{key}"


def _types(ctx, loc, s) -> Typed:
    if "type" not in s:
        return ANY
    v = s["type"]
    if isinstance(v, str) and v in _TYPES:
        return _type_part(v, loc.draft)
    names = [v] if isinstance(v, str) else v
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise GrammarError(f"type at {_where(loc, 'type')}: must be a type name or a list of them")
    t = NONE
    for n in names:
        if n not in _TYPES:
            if n == "any":  # draft 3
                return ANY
            raise GrammarError(f"type at {_where(loc, 'type')}: unknown type {n!r}")
        t = ctx.alg.t_or(t, _type_part(n, loc.draft))
    return t


def _values(ctx, loc, s) -> Typed:
    t = ANY
    if "enum" in s:
        vals = s["enum"]
        if not isinstance(vals, list):
            raise GrammarError(f"enum at {_where(loc, 'enum')}: must be a list")
        t = ctx.alg.enum(vals)
    if "const" in s:
        t = ctx.alg.t_and(t, ctx.alg.const(s["const"]))
    return t


def _number(loc, s, key) -> Decimal:
    v = s[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise GrammarError(f"{key} at {_where(loc, key)}: must be a number, got {v!r}")
    return to_decimal(v)


def _numbers(ctx, loc, s) -> Typed:
    if _NUMBER_KEYS.isdisjoint(s):
        return ANY
    lo = hi = None
    lo_x = hi_x = False
    f = TRUE
    if "minimum" in s:
        lo = _number(loc, s, "minimum")
        if s.get("exclusiveMinimum") is True:
            lo_x = True
    if "maximum" in s:
        hi = _number(loc, s, "maximum")
        if s.get("exclusiveMaximum") is True:
            hi_x = True
    if "exclusiveMinimum" in s and not isinstance(s["exclusiveMinimum"], bool):
        v = _number(loc, s, "exclusiveMinimum")
        f = f_and(f, ("range", v, True, None, False))
    if "exclusiveMaximum" in s and not isinstance(s["exclusiveMaximum"], bool):
        v = _number(loc, s, "exclusiveMaximum")
        f = f_and(f, ("range", None, False, v, True))
    if lo is not None or hi is not None:
        f = f_and(f, ("range", lo, lo_x, hi, hi_x))
    if "multipleOf" in s:
        d = _number(loc, s, "multipleOf")
        if d <= 0:
            raise GrammarError(f"multipleOf at {_where(loc, 'multipleOf')}: must be greater than 0")
        f = f_and(f, ("mult", d))
    return only_num(f)


def _count(loc, s, key) -> int:
    v = s[key]
    if isinstance(v, float) and v == int(v):
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise GrammarError(f"{key} at {_where(loc, key)}: must be a non-negative integer, got {v!r}")
    return v


def _strings(ctx, loc, s) -> Typed:
    f = TRUE
    if "minLength" in s or "maxLength" in s:
        lo = _count(loc, s, "minLength") if "minLength" in s else 0
        hi = _count(loc, s, "maxLength") if "maxLength" in s else None
        f = f_and(f, ("len", lo, hi))
    if "pattern" in s:
        p = s["pattern"]
        if not isinstance(p, str):
            raise GrammarError(f"pattern at {_where(loc, 'pattern')}: must be a string")
        try:
            f = f_and(f, pattern_formula(p))
        except GrammarError as e:
            ctx.unsupported("pattern", _where(loc, "pattern"), str(e))
    if "format" in s and isinstance(s["format"], str):
        name = s["format"]
        try:
            spec = format_spec(name)
        except KeyError:
            ctx.unsupported("format", _where(loc, "format"), f"format {name!r}: {UNSUPPORTED_FORMATS[name]}")
            spec = None
        else:
            if spec is None:
                ctx.unknown_formats.setdefault(name, _where(loc, "format"))
            else:
                f = f_and(f, ("fmt", name))
    if ctx.options.assert_content and s.get("contentEncoding") == "base64":
        f = f_and(f, ("fmt", "$contentEncoding:base64"))
    return ANY if f == TRUE else only_str(f)
