"""Proofs that two array or object alternatives share no instance (sound, not complete).

``oneOf`` keeps branches as they are when they are disjoint, which is both exact and much smaller
than intersecting each branch with the complements of the others. A proof uses:

- sizes: disjoint [minItems, maxItems] or [minProperties, maxProperties] ranges;
- a key one side requires that the other forbids (``additionalProperties: false``, a ``false``
  property schema, ``propertyNames``);
- a key one side requires, or an index both have, whose value schemas are disjoint (recursively, to a
  small depth): different types, different constants, or number/string constraints whose
  intersection is empty;
- for objects that must have a member, key sets that do not meet.

Emptiness of a number or string formula is asked of the core: the formula's regex is built in a
scratch builder, whose ``build`` drops lexemes with an empty language.

Example::

    disjoint(ctx, ObjSpec(required=("a",)), ObjSpec(props=(("a", FALSE_SUB),)))   # True
"""
from __future__ import annotations

from functools import lru_cache

from stencil._core import BudgetError, GrammarBuilder, GrammarError
from stencil.grammar.json.schema.core.formulas import (FALSE, PLAIN_INTEGER, TRUE, And, Const, Pattern, f_and,
                                                       f_contains, f_not, f_or, num_consts, num_eval, str_consts,
                                                       str_eval)
from stencil.grammar.json.schema.core.model import FALSE_SUB, TRUE_SUB, ObjSpec, Typed, Unsupported, rules_sub
from stencil.grammar.json.schema.core.patterns import pattern_node
from stencil.grammar.json.schema.lang.scalars import Scalars
from stencil.grammar.regex.positions import ends, ends_disjoint

__all__ = ["disjoint", "typed_disjoint", "typed_within", "formula_empty"]

_MAX_DEPTH = 4


def formula_empty(ctx, kind: str, f) -> bool:
    """Whether no number (``kind`` "num") or string ("str") satisfies ``f``; False when unsure."""
    if f == FALSE:
        return True
    if f == TRUE:
        return False
    memo = ctx.empty_memo
    key = (kind, f)
    hit = memo.get(key)
    if hit is None and kind == "str" and _patterns_apart(f):
        hit = memo[key] = True
    if hit is None:
        b = GrammarBuilder()
        sc = Scalars(b)
        try:
            expr = sc.number(f) if kind == "num" else sc.string_body(f)
            start = b.rule("probe")
            b.add_alternative(start, [b.lexeme(expr, "probe")])
            b.add_alternative(start, [b.literal("x")])
            hit = b.build(start).num_lexemes == 1
        except (BudgetError, GrammarError):   # work limit, or a pattern the regex front-end rejects
            hit = False
        memo[key] = hit
    return hit


@lru_cache(maxsize=4096)
def _pattern_ends(pattern: str):
    """The first and last code points of a pattern's strings (regex.positions.ends), or None for
    a pattern the regex front-end rejects: worked out once per pattern, as a oneOf of n
    discriminator patterns (``^Abs$``, ``^Add$``...) compares each with the n - 1 others."""
    try:
        return ends(pattern_node(pattern, False))
    except GrammarError:
        return None


def _patterns_apart(f) -> bool:
    """Whether two ``pattern`` atoms of the conjunction ``f`` surely match no string together, told
    by their fixed first or last code points (no grammar built; see regex_positions)."""
    if type(f) is not And:
        return False
    found = [e for x in f.items if type(x) is Pattern and (e := _pattern_ends(x.pattern)) is not None]
    return any(ends_disjoint(a, b) for i, a in enumerate(found) for b in found[i + 1:])


def _is_false(ctx, sub) -> bool:
    if sub == FALSE_SUB:
        return True
    try:
        return ctx.sub_typed(sub).is_none()
    except (BudgetError, GrammarError, Unsupported):   # (a work limit: no answer, as a refusal)
        ctx.refusals += 1
        return False


def _subs_disjoint(ctx, sa, sb, depth) -> bool:
    """Memoized per (sa, sb, depth): a property's pair of schemas recurs in every pair of oneOf
    branches that require the property (a discriminator: n branches, n * (n - 1) / 2 pairs)."""
    key = (sa, sb, depth)
    memo = ctx.disjoint_memo
    hit = memo.get(key)
    if hit is not None:
        return hit
    refusals = ctx.refusals
    try:
        ta, tb = ctx.sub_typed(sa), ctx.sub_typed(sb)
    except (BudgetError, GrammarError, Unsupported):   # (a work limit: no answer, as a refusal)
        ctx.refusals += 1
        return False
    hit = typed_disjoint(ctx, ta, tb, depth + 1)
    # (not where an error decided it: a schema met while it is being read refuses only then)
    if ctx.refusals == refusals:
        memo[key] = hit
    return hit


def typed_disjoint(ctx, a: Typed, b: Typed, depth: int = 0, cheap: bool = False) -> bool:
    """``cheap``: constants and types only (no emptiness oracle, no nested specs)."""
    if (a.null and b.null) or (a.bools & b.bools):
        return False
    for kind, fa, fb, consts in (("num", a.num, b.num, num_consts), ("str", a.str, b.str, str_consts)):
        if fa == FALSE or fb == FALSE:
            continue
        ca, cb = consts(fa), consts(fb)
        if ca is not None and cb is not None:
            if ca & cb:
                return False
            continue
        if cheap or not formula_empty(ctx, kind, f_and(fa, fb)):
            return False
    if cheap:
        return not (a.arr and b.arr) and not (a.obj and b.obj)
    for la, lb in ((a.arr, b.arr), (a.obj, b.obj)):
        for x in la:
            for y in lb:
                if not disjoint(ctx, x, y, depth):
                    return False
    return True


def typed_within(a: Typed, b: Typed) -> bool:
    """True only if every instance of ``a`` is one of ``b`` (for finite scalar ``a``: constants)."""
    if a.arr or a.obj or (a.null and not b.null) or not (a.bools <= b.bools):
        return False
    for fa, fb, consts, ev in ((a.num, b.num, num_consts, num_eval), (a.str, b.str, str_consts, str_eval)):
        if fa == FALSE or fb == TRUE:
            continue
        if fb is b.num and f_contains(fb, PLAIN_INTEGER):
            return False   # draft-4 integers depend on the spelling, not only on the value
        ca = consts(fa)
        if ca is None or not all(ev(fb, v) for v in ca):
            return False
    return True


def _nonempty(s: ObjSpec) -> bool:
    return bool(s.min > 0 or s.required or s.some)


def _keys(s: ObjSpec):
    """A formula of the keys an object of ``s`` may have."""
    forbidden = f_or(*[pred for pred, sub in s.rules if sub == FALSE_SUB])
    named = [k for k, sub in s.props if sub != FALSE_SUB]
    others = f_and(s.names, f_not(forbidden), f_not(f_or(*[Const(k) for k, _ in s.props])))
    return f_or(*[Const(k) for k in named], others)


def disjoint(ctx, a, b, depth: int = 0) -> bool:
    """True only if no instance satisfies both specs (two ArrSpecs or two ObjSpecs)."""
    if depth > _MAX_DEPTH:
        return False
    if a.max is not None and b.min > a.max or b.max is not None and a.min > b.max:
        return True
    if isinstance(a, ObjSpec):
        for x, y in ((a, b), (b, a)):
            for k in x.required:
                sy = y.prop(k)
                if sy is None:
                    sy = rules_sub(y, k)
                if _is_false(ctx, sy):
                    return True
                # x requires k, so a common instance has k: the two value schemas must meet
                sx = x.prop(k)
                if sx is None:
                    sx = rules_sub(x, k)
                if sx != TRUE_SUB and sy != TRUE_SUB and _subs_disjoint(ctx, sx, sy, depth):
                    return True
        if _nonempty(a) and _nonempty(b) and depth == 0:
            ka, kb = _keys(a), _keys(b)
            ca, cb = str_consts(ka), str_consts(kb)
            if ca is not None and cb is not None:
                return not (ca & cb)
            return formula_empty(ctx, "str", f_and(ka, kb))
        return False
    for i in range(min(max(a.min, b.min), max(len(a.prefix), len(b.prefix)))):
        sa = a.prefix[i] if i < len(a.prefix) else a.items
        sb = b.prefix[i] if i < len(b.prefix) else b.items
        if sa != TRUE_SUB and sb != TRUE_SUB and _subs_disjoint(ctx, sa, sb, depth):
            return True
    return False
