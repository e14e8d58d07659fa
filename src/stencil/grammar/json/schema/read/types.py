"""Reading one schema object's keywords into its normalized form (:class:`~..core.model.Typed`).

Each group of keywords gives one conjunct (types, enum/const, number keywords, string keywords,
array keywords, object keywords, in-place applicators); the schema is their intersection. Which
keywords are annotations, which are understood, and which are known but not enforceable is listed
in :mod:`.common`; any other keyword is unknown and, as the specification says, ignored
(``stencil check`` lists them). ``ctx`` is the compilation's :class:`~.context.Context`.

Example::

    typed = read_schema(ctx, ctx.resolver.root)
"""
from __future__ import annotations

from decimal import Decimal

from stencil._core import GrammarError
from stencil.grammar.deadline import check_deadline
from stencil.grammar.json.schema.core.formats import UNSUPPORTED_FORMATS, format_spec
from stencil.grammar.json.schema.core.formulas import (INTEGER, PLAIN_INTEGER, TRUE, Format, Formula, Length,
                                                       MultipleOf, Range, f_and)
from stencil.grammar.json.schema.core.model import ANY, ANY_ARR, ANY_OBJ, BOTH_BOOLS, NONE, Typed, to_decimal
from stencil.grammar.json.schema.read import arrays, compose, objects
from stencil.grammar.json.schema.read.common import (ANNOTATIONS, KEYWORD_GROUPS, NEWER_THAN, NOT_ENFORCEABLE,
                                                     UNDERSTOOD, VALIDATION_VOCABULARY, check_values, count,
                                                     only_num, only_str, pattern_formula, where)

__all__ = ["read_schema"]

_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")

_KNOWN = UNDERSTOOD | ANNOTATIONS
# (contentEncoding is an annotation the string reader asserts under assert_content; $dynamicRef and
# $recursiveRef are not enforced, but compose resolves them where it can)
_NUMBER_KEYS = KEYWORD_GROUPS["number"]
_STRING_KEYS = KEYWORD_GROUPS["string"] | {"contentEncoding"}
_ARRAY_KEYS = KEYWORD_GROUPS["array"]
_OBJECT_KEYS = KEYWORD_GROUPS["object"]
_APPLICATOR_KEYS = KEYWORD_GROUPS["applicator"] | {"$dynamicRef", "$recursiveRef"}
_type_parts: dict = {}


def _type_part(name: str, plain_int: bool) -> Typed:
    """The Typed of one type name (shared: Typed values are never mutated)."""
    t = _type_parts.get((name, plain_int))
    if t is None:
        t = _type_parts[(name, plain_int)] = _make_type_part(name, plain_int)
    return t


def _make_type_part(name: str, plain_int: bool) -> Typed:
    if name == "null":
        return Typed(null=True)
    if name == "boolean":
        return Typed(bools=BOTH_BOOLS)
    if name == "integer":
        # draft 4: "a JSON number without a fraction or exponent part" (and so llguidance, under
        # number_spelling="plain_integers"); later drafts: any integral value
        return Typed(num=PLAIN_INTEGER if plain_int else INTEGER)
    if name == "number":
        return Typed(num=TRUE)
    if name == "string":
        return Typed(str=TRUE)
    if name == "array":
        return Typed(arr=(ANY_ARR,))
    return Typed(obj=(ANY_OBJ,))


def read_schema(ctx, loc, exact: bool = False) -> Typed:
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
    newer = NEWER_THAN.get(loc.draft)
    if newer is not None and not newer.isdisjoint(s):
        for k in newer.intersection(s):
            ctx.unknown.setdefault(f"{k} (not in draft {loc.draft})", where(loc, k))
        s = {k: v for k, v in s.items() if k not in newer}
    if not s:
        return ANY
    if "$ref" in s and loc.draft <= 7:
        # before 2019-09, $ref replaces the whole schema object
        return ctx.loc_typed(ctx.resolver.resolve(s["$ref"], loc), exact)
    # every value of a known keyword is of its kind from here on (the readers rely on it)
    check_values(loc, s)
    alg = ctx.alg
    if not _KNOWN.issuperset(s):
        for key in s:
            if key in _KNOWN:
                continue
            if key in NOT_ENFORCEABLE:
                if key == "$recursiveRef" or key == "$dynamicRef":
                    continue  # compose decides (plain references are resolved)
                ctx.unsupported(key, where(loc, key), NOT_ENFORCEABLE[key])
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


def _types(ctx, loc, s) -> Typed:
    if "type" not in s:
        return ANY
    v = s["type"]
    plain_int = loc.draft == 4 or ctx.options.number_spelling == "plain_integers"
    if isinstance(v, str) and v in _TYPES:
        return _type_part(v, plain_int)
    names = [v] if isinstance(v, str) else v
    t = NONE
    for n in names:
        if n not in _TYPES:
            if n == "any":  # draft 3
                return ANY
            raise GrammarError(f"type at {where(loc, 'type')}: unknown type {n!r}")
        t = ctx.alg.t_or(t, _type_part(n, plain_int))
    return t


def _values(ctx, loc, s) -> Typed:
    t = ANY
    if "enum" in s:
        t = ctx.alg.enum(s["enum"])
    if "const" in s:
        t = ctx.alg.t_and(t, ctx.alg.const(s["const"]))
    return t


def _number(s, key) -> Decimal:
    return to_decimal(s[key])   # a finite number (check_values)


def _numbers(ctx, loc, s) -> Typed:
    if _NUMBER_KEYS.isdisjoint(s):
        return ANY
    lo = hi = None
    lo_x = hi_x = False
    f: Formula = TRUE
    if "minimum" in s:
        lo = _number(s, "minimum")
        if s.get("exclusiveMinimum") is True:
            lo_x = True
    if "maximum" in s:
        hi = _number(s, "maximum")
        if s.get("exclusiveMaximum") is True:
            hi_x = True
    if "exclusiveMinimum" in s and not isinstance(s["exclusiveMinimum"], bool):
        v = _number(s, "exclusiveMinimum")
        f = f_and(f, Range(v, True, None, False))
    if "exclusiveMaximum" in s and not isinstance(s["exclusiveMaximum"], bool):
        v = _number(s, "exclusiveMaximum")
        f = f_and(f, Range(None, False, v, True))
    if lo is not None or hi is not None:
        f = f_and(f, Range(lo, lo_x, hi, hi_x))
    if "multipleOf" in s:
        f = f_and(f, MultipleOf(_number(s, "multipleOf")))
    return only_num(f)


def _strings(ctx, loc, s) -> Typed:
    f: Formula = TRUE
    if "minLength" in s or "maxLength" in s:
        lo = count(s, "minLength") if "minLength" in s else 0
        hi = count(s, "maxLength") if "maxLength" in s else None
        f = f_and(f, Length(lo, hi))
    if "pattern" in s:
        try:
            f = f_and(f, pattern_formula(s["pattern"]))
        except GrammarError as e:
            ctx.unsupported("pattern", where(loc, "pattern"), str(e))
    if "format" in s and loc.base not in ctx.resolver.format_annotations:
        name = s["format"]
        try:
            spec = format_spec(name)
        except KeyError:
            ctx.unsupported("format", where(loc, "format"), f"format {name!r}: {UNSUPPORTED_FORMATS[name]}")
            spec = None
        else:
            if spec is None:
                ctx.unknown_formats.setdefault(name, where(loc, "format"))
            else:
                f = f_and(f, Format(name))
    if ctx.options.assert_content and s.get("contentEncoding") == "base64":
        f = f_and(f, Format("$contentEncoding:base64"))
    return ANY if f == TRUE else only_str(f)
