"""In-place applicators: ``$ref`` (2019-09 on: beside other keywords), ``allOf``, ``anyOf``, ``oneOf``,
``not``, ``if``/``then``/``else``, and ``unevaluatedProperties``/``unevaluatedItems``.

- ``allOf`` and ``$ref`` intersect; ``anyOf`` unites.
- ``oneOf`` is computed per type. For numbers and strings "exactly one branch" is a formula, so it
  is always exact. For arrays and objects, the branches that allow the type are kept as they are
  when they are provably disjoint (different required constants, disjoint types of a required
  property, disjoint size ranges...), and otherwise each is intersected with the complement of the
  others it may overlap; when a complement is not expressible the keyword is unsupported (an
  error, or with ``lenient`` treated as ``anyOf`` and listed).
- ``not`` and ``if`` use the complement (see :mod:`.model`).
- ``unevaluatedProperties``/``unevaluatedItems`` use the annotations each object/array alternative
  carries (which keys and items its in-place keywords evaluated). Under them, ``anyOf`` is expanded
  into "exactly this set of branches matches" alternatives so that the annotations are exact.

Example::

    typed = read(ctx, loc, {"anyOf": [{"type": "string"}, {"type": "null"}]})
"""
from __future__ import annotations

from dataclasses import replace
from itertools import combinations

from stencil.grammar.json.schema.core.formulas import (FALSE, PLAIN_INTEGER, TRUE, Const, f_and, f_contains, f_not,
                                                       f_or, num_const, num_consts, num_spellings, str_consts, str_eval)
from stencil.grammar.json.schema.core.model import (ANY, NONE, Typed, normalize_arr, normalize_obj,
                                                    sub_and)
from stencil.grammar.json.schema.read.common import NOT_ENFORCEABLE, where
from stencil.grammar.json.schema.read.disjoint import disjoint

__all__ = ["read", "unevaluated", "exactly_one"]

_EXACT_ANYOF_BRANCHES = 6


def read(ctx, loc, s, exact: bool = False, base: Typed = ANY) -> Typed:
    """``base`` (the schema's other keywords) intersected with its in-place applicators."""
    alg = ctx.alg
    t = base
    res = ctx.resolver
    if "$ref" in s:
        t = alg.t_and(t, ctx.loc_typed(res.resolve(s["$ref"], loc), exact))
    for key in ("$dynamicRef", "$recursiveRef"):
        if key in s:
            target = _dynamic_target(ctx, loc, s, key)
            if target is not None:
                t = alg.t_and(t, ctx.loc_typed(target, exact))
    if "allOf" in s:
        # A member that is a oneOf alone comes last, under the others: exactly one of (the others
        # and branch i), where what they require (a discriminator property) often proves the
        # branches disjoint, which saves each branch the complements of all the others.
        ones = []
        for i, x in enumerate(s["allOf"]):
            member = res.child(loc, x, "allOf", i)
            bare = _bare_one_of(ctx, member)
            if bare is not None:
                ones.append(bare)
            else:
                t = alg.t_and(t, ctx.loc_typed(member, exact))
        for member in ones:
            t = _one_of(ctx, member, t, exact)
    if "anyOf" in s:
        branches = [ctx.loc_typed(res.child(loc, x, "anyOf", i), exact)
                    for i, x in enumerate(s["anyOf"])]
        if exact and _annotates(branches):
            u = _exact_any_of(ctx, branches, where(loc, "anyOf"))
        else:
            u = NONE
            for x in branches:
                u = alg.t_or(u, x)
        t = alg.t_and(t, u)
    if "oneOf" in s:
        t = _one_of(ctx, loc, t, exact)
    if "not" in s:
        inner = ctx.loc_typed(res.child(loc, s["not"], "not"))
        t = alg.t_and(t, ctx.negate(inner, "not", where(loc, "not")))
    if "if" in s and ("then" in s or "else" in s or exact):
        # (alone, "if" only matters for the annotations it gives unevaluated* when it matches)
        cond = ctx.loc_typed(res.child(loc, s["if"], "if"), exact)
        then = ctx.loc_typed(res.child(loc, s["then"], "then"), exact) if "then" in s else ANY
        other = ctx.loc_typed(res.child(loc, s["else"], "else"), exact) if "else" in s else ANY
        neg = ctx.negate(cond, "if", where(loc, "if"))
        t = alg.t_and(t, alg.t_or(alg.t_and(cond, then), alg.t_and(neg, other)))
    return t


#: keywords beside a oneOf that leave an allOf member "a oneOf alone" (annotations)
_ANNOTATIONS = frozenset({"title", "description", "$comment", "examples", "default", "deprecated", "readOnly",
                          "writeOnly"})


def _one_of(ctx, loc, t: Typed, exact: bool) -> Typed:
    """``t`` (the schema's other keywords) and exactly one of the oneOf branches at ``loc``."""
    alg = ctx.alg
    raw = [ctx.loc_typed(ctx.resolver.child(loc, x, "oneOf", i), exact) for i, x in enumerate(loc.schema["oneOf"])]
    return exactly_one(ctx, [alg.t_and(t, x) for x in raw], where(loc, "oneOf"), raw)


def _bare_one_of(ctx, loc):
    """``loc``, or the schema its lone ``$ref`` points to, where that is a non-empty oneOf list
    beside annotations only (read as the others' keywords are: the same checks apply); else None."""
    s = loc.schema
    if isinstance(s, dict) and set(s) == {"$ref"} and isinstance(s["$ref"], str):
        loc = ctx.resolver.resolve(s["$ref"], loc)
        s = loc.schema
    if not isinstance(s, dict) or "oneOf" not in s or not _ANNOTATIONS.issuperset(s.keys() - {"oneOf"}):
        return None
    if not isinstance(s["oneOf"], list) or not s["oneOf"] or loc.base in ctx.resolver.no_validation:
        return None
    return loc


def _dynamic_target(ctx, loc, s, key):
    """Where a dynamic reference leads: its static target when that does not declare the
    dynamic anchor; else the outermost declaration in the dynamic scope (tracked per location
    when the documents declare dynamic anchors, see resolve.py). $recursiveRef (2019-09) only
    where it provably resolves like a plain reference."""
    ref = s[key]
    res = ctx.resolver
    target = res.resolve(ref, loc)
    if not isinstance(target.schema, dict):
        return target
    if key == "$dynamicRef":
        frag = ref.split("#", 1)[1] if "#" in ref else ""
        if not frag or "/" in frag or target.schema.get("$dynamicAnchor") != frag:
            return target
        if res.dynamic:
            return res.dynamic_target(frag, target, loc)
    elif target.schema.get("$recursiveAnchor") is not True:
        return target
    ctx.unsupported(key, where(loc, key), NOT_ENFORCEABLE[key])
    return None


# --- oneOf -------------------------------------------------------------------------------------------

def _exactly_one_formula(fs):
    if sum(1 for f in fs if f != FALSE) <= 1:
        return f_or(*fs)
    consts = [str_consts(f) for f in fs]
    if all(c is not None for c in consts):
        return _count_consts(consts)
    nconsts = [num_consts(f) for f in fs]
    if all(c is not None for c in nconsts):
        # each branch at each of its values keeps how it spells the value (an integer-typed branch's
        # 2 stays an integer: number_spelling="plain" writes it without a fraction; draft 4's 2 is
        # not 2.0): a value is exactly one branch's in the spellings exactly one of them holds
        at = [num_spellings(f, sorted(c)) for f, c in zip(fs, nconsts)]
        out = []
        for v in dict.fromkeys(v for c in at for v in c):
            gs = [g for c in at if (g := c.get(v, FALSE)) != FALSE]
            if len(gs) == 1 or any(f_contains(g, PLAIN_INTEGER) for g in gs):
                out.append(f_and(num_const(v), _exactly_one_fold(gs)))
        return f_or(*out)
    return _exactly_one_fold(fs)


def _exactly_one_fold(fs):
    exact, some = FALSE, FALSE
    for f in fs:
        exact = f_or(f_and(exact, f_not(f)), f_and(f_not(some), f))
        some = f_or(some, f)
    return exact


def _count_consts(sets):
    seen: dict = {}
    for c in sets:
        for v in c:
            seen[v] = seen.get(v, 0) + 1
    return f_or(*[Const(v) for v, n in seen.items() if n == 1])


def exactly_one(ctx, branches, where: str, raw=None) -> Typed:
    """Instances satisfying exactly one branch. ``branches`` may already be intersected with the
    schema's other keywords (``raw`` are the branches alone): under them, "branch i and no other"
    is "(base and branch i) and not branch j for every j", so the complements are of the raw
    branches, while disjointness is proved on the intersected ones (more often true)."""
    alg = ctx.alg
    raw = branches if raw is None else raw
    nulls = sum(1 for b in branches if b.null)
    bools = frozenset(v for v in (True, False) if sum(1 for b in branches if v in b.bools) == 1)
    num = _exactly_one_formula([b.num for b in branches])
    st = _exactly_one_formula([b.str for b in branches])
    parts = {}
    for kind in ("arr", "obj"):
        lists = [getattr(b, kind) for b in branches]
        idx = [i for i, specs in enumerate(lists) if specs]
        if len(idx) <= 1:
            parts[kind] = lists[idx[0]] if idx else ()
            continue
        out = []
        apart: dict = {}   # (i, j), i < j: whether branches i and j are provably disjoint (symmetric)
        for i in idx:
            acc = only(kind, lists[i])
            for j in idx:
                if j == i:
                    continue
                pair = (i, j) if i < j else (j, i)
                if pair not in apart:
                    apart[pair] = all(disjoint(ctx, x, y) for x in lists[i] for y in lists[j])
                if apart[pair]:
                    continue
                acc = alg.t_and(acc, ctx.negate(only(kind, getattr(raw[j], kind)), "oneOf", where))
            out.extend(getattr(acc, kind))
        parts[kind] = tuple(dict.fromkeys(out))
    return Typed(nulls == 1, bools, num, st, parts["arr"], parts["obj"])


def only(kind: str, specs) -> Typed:
    """A Typed with only arrays or only objects."""
    return Typed(arr=tuple(specs)) if kind == "arr" else Typed(obj=tuple(specs))


# --- unevaluatedProperties / unevaluatedItems -------------------------------------------------------

def _annotates(branches) -> bool:
    return any(o.evaluated != FALSE for b in branches for o in b.obj) or \
        any(a.eval_upto > 0 or a.eval_contains for b in branches for a in b.arr)


def _exact_any_of(ctx, branches, where: str) -> Typed:
    """anyOf as the union over non-empty sets M of "exactly the branches in M match", so that each
    alternative carries the annotations of every matching branch."""
    alg = ctx.alg
    n = len(branches)
    if n > _EXACT_ANYOF_BRANCHES:
        ctx.unsupported("anyOf", where, f"under unevaluatedProperties/Items, at most {_EXACT_ANYOF_BRANCHES} "
                        "branches are supported")
        u = NONE
        for x in branches:
            u = alg.t_or(u, x)
        return u
    negs = [ctx.negate(x, "anyOf", where) for x in branches]
    u = NONE
    for size in range(1, n + 1):
        for chosen in combinations(range(n), size):
            t = ANY
            for i in range(n):
                t = alg.t_and(t, branches[i] if i in chosen else negs[i])
                if t is NONE:
                    break
            u = alg.t_or(u, t)
    return u


def unevaluated(ctx, loc, s, t: Typed) -> Typed:
    """Apply unevaluatedProperties/unevaluatedItems of schema ``s`` to its normalized form ``t``."""
    obj, arr = t.obj, t.arr
    if "unevaluatedProperties" in s:
        sub = ctx.sub(loc, s["unevaluatedProperties"], "unevaluatedProperties")
        out = []
        for o in obj:
            if o.evaluated == TRUE:
                out.append(o)
                continue
            props = tuple((k, ps if str_eval(o.evaluated, k) else sub_and(ps, sub)) for k, ps in o.props)
            rules = o.rules + ((f_not(o.evaluated), sub),)
            x = normalize_obj(replace(o, props=props, rules=rules, evaluated=TRUE))
            if x is not None:
                out.append(x)
        obj = tuple(out)
    if "unevaluatedItems" in s:
        sub = ctx.sub(loc, s["unevaluatedItems"], "unevaluatedItems")
        arrs = []
        for a in arr:
            if a.eval_upto >= 1 << 40:
                arrs.append(a)
                continue
            cond = sub if not a.eval_contains else ctx.alg.either([sub] + list(a.eval_contains))
            padded = list(a.prefix) + [a.items] * max(0, a.eval_upto - len(a.prefix))
            prefix = tuple(p if i < a.eval_upto else sub_and(p, cond) for i, p in enumerate(padded))
            y = normalize_arr(replace(a, prefix=prefix, items=sub_and(a.items, cond), eval_upto=1 << 40,
                                      eval_contains=()))
            if y is not None:
                arrs.append(y)
        arr = tuple(arrs)
    return Typed(t.null, t.bools, t.num, t.str, arr, obj)
