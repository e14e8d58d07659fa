"""The normalized form of a schema: a union over JSON types of per-type constraints.

A :class:`Typed` says which nulls, booleans, numbers (a formula), strings (a formula), arrays (a
union of :class:`ArrSpec`) and objects (a union of :class:`ObjSpec`) a schema accepts. The three
set operations are computed per type:

- intersection (``allOf``, sibling keywords, ``$ref`` beside keywords): formulas are ANDed; array
  and object specs are merged pairwise (the cross product of the two unions);
- union (``anyOf``, ``enum``): formulas are ORed, spec lists concatenated;
- complement (``not``, ``oneOf``, ``if``): formulas are negated (exact: they are regular); a spec
  is negated by De Morgan into a union of specs that each break one of its constraints. A few
  constraints have no negation in this form (``uniqueItems``, ``additionalProperties``,
  ``patternProperties``, ``propertyNames`` with a non-trivial schema): :class:`Unsupported`.

Sub-schemas inside specs stay lazy: a :data:`Sub` is a frozenset of atoms that must all hold (a
schema location, a :class:`Typed`, a :class:`Neg` or an :class:`Either`), normalized only when the
grammar needs it, so recursive schemas are finite.

Example::

    alg = Algebra()
    t = alg.t_and(alg.const(3), ANY)
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Optional

from stencil.grammar.deadline import check_deadline
from stencil.grammar.json.schema.core.formulas import (FALSE, TRUE, Const, Formula, f_and, f_not, f_or, num_const,
                                                      str_eval)

__all__ = ["Typed", "ArrSpec", "ObjSpec", "Neg", "Either", "Algebra", "Unsupported", "ANY", "NONE",
           "TRUE_SUB", "FALSE_SUB", "ANY_ARR", "ANY_OBJ", "MAX_VARIANTS", "BOTH_BOOLS", "absorb", "covers",
           "cover_profile"]

#: most array or object alternatives one schema may expand to (anyOf x anyOf x ...)
MAX_VARIANTS = 256
#: most distinct products of two lists of alternatives before they are simplified (absorbed)
MAX_PRODUCT = 4 * MAX_VARIANTS


class Unsupported(Exception):
    """A construct with no exact grammar here; ``keyword`` names it."""

    def __init__(self, keyword: str, reason: str):
        super().__init__(f"{keyword}: {reason}")
        self.keyword = keyword
        self.reason = reason


#: creation order of atoms: a Sub is a set, hashed by identity, and must be read in an order that
#: does not depend on memory addresses (the first of two merged objects gives its property order)
next_serial = itertools.count().__next__


def atom_order(atom) -> int:
    """Sort key of a Sub's atoms (schema locations, Typed, Neg, Either): their creation order."""
    return atom.serial


class Typed:
    """Normalized schema (identity-hashed). ``num``/``str`` are formulas (FALSE: type excluded)."""
    __slots__ = ("null", "bools", "num", "str", "arr", "obj", "serial")

    def __init__(self, null=False, bools=frozenset(), num=FALSE, str=FALSE, arr=(), obj=()):
        self.null, self.bools, self.num, self.str, self.arr, self.obj = null, bools, num, str, arr, obj
        self.serial = next_serial()

    def is_none(self) -> bool:
        return not self.null and not self.bools and self.num == FALSE and self.str == FALSE \
            and not self.arr and not self.obj

    def __repr__(self):
        return (f"Typed(null={self.null}, bools={set(self.bools)}, num={self.num}, str={self.str}, "
                f"arr={list(self.arr)}, obj={list(self.obj)})")


TRUE_SUB: frozenset = frozenset()
BOTH_BOOLS = frozenset([True, False])
NONE = Typed()
FALSE_SUB = frozenset([NONE])


@dataclass(frozen=True)
class ArrSpec:
    prefix: tuple = ()              # Subs for the first items
    items: frozenset = TRUE_SUB     # Sub for the items past the prefix
    min: int = 0
    max: Optional[int] = None
    contains: tuple = ()            # (Sub, min, max_or_None, start index)
    unique: bool = False
    eval_upto: int = 0              # unevaluatedItems: items before this index are evaluated
    eval_contains: tuple = ()       # ... and items matching one of these Subs


@dataclass(frozen=True)
class ObjSpec:
    props: tuple = ()               # (name, Sub): if the key is present its value satisfies Sub
    required: tuple = ()            # names, in order
    rules: tuple = ()               # (key formula, Sub) for keys outside props
    names: Formula = TRUE           # formula every key satisfies (propertyNames)
    min: int = 0
    max: Optional[int] = None
    evaluated: Formula = FALSE      # unevaluatedProperties: formula of the evaluated keys
    some: tuple = ()                # (key formula, Sub): some member has such a key and value

    def prop(self, name):
        for k, s in self.props:
            if k == name:
                return s
        return None


ANY_ARR = ArrSpec()
ANY_OBJ = ObjSpec()
ANY = Typed(True, BOTH_BOOLS, TRUE, TRUE, (ANY_ARR,), (ANY_OBJ,))


class Neg:
    """Atom: the complement of a Sub."""
    __slots__ = ("sub", "serial")

    def __init__(self, sub):
        self.sub = sub
        self.serial = next_serial()


class Either:
    """Atom: the union of Subs."""
    __slots__ = ("subs", "serial")

    def __init__(self, subs):
        self.subs = subs
        self.serial = next_serial()


def sub_and(a: frozenset, *more: frozenset) -> frozenset:
    for b in more:
        if NONE in a or NONE in b:
            return FALSE_SUB
        if b and b is not a:  # (an empty Sub adds nothing: a keeps its identity and cached hash)
            a = a | b if a else b
    return FALSE_SUB if NONE in a else a


def _canon(v) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def to_decimal(v) -> Decimal:
    return Decimal(v) if isinstance(v, int) else Decimal(repr(v))


class Algebra:
    """Set operations on normalized schemas, with interned atoms for one compilation."""

    def __init__(self):
        self._negs: dict = {}
        self._eithers: dict = {}
        self._consts: dict = {}
        self.origin = None          # (keyword, where) recorded on the Negs created meanwhile
        self.neg_origin: dict = {}
        self.simplify = lambda sub: sub   # semantic simplification of property Subs (see Context)

    # -- atoms ------------------------------------------------------------------------------------
    def neg(self, sub: frozenset) -> frozenset:
        if sub == TRUE_SUB:
            return FALSE_SUB
        if sub == FALSE_SUB:
            return TRUE_SUB
        if len(sub) == 1:
            (a,) = sub
            if isinstance(a, Neg):
                return a.sub
        n = self._negs.get(sub)
        if n is None:
            n = self._negs[sub] = Neg(sub)
            if self.origin is not None:
                self.neg_origin[n] = self.origin
        return frozenset([n])

    def either(self, subs) -> frozenset:
        subs = frozenset(subs)
        if TRUE_SUB in subs:
            return TRUE_SUB
        subs = subs - {FALSE_SUB}
        if not subs:
            return FALSE_SUB
        if len(subs) == 1:
            return next(iter(subs))
        e = self._eithers.get(subs)
        if e is None:
            e = self._eithers[subs] = Either(subs)
        return frozenset([e])

    def const(self, value) -> Typed:
        """The schema accepting exactly this JSON value (numbers by value: 1 == 1.0)."""
        key = _canon(value)
        t = self._consts.get(key)
        if t is not None:
            return t
        if value is None:
            t = Typed(null=True)
        elif isinstance(value, bool):
            t = Typed(bools=frozenset([value]))
        elif isinstance(value, (int, float)):
            t = Typed(num=num_const(to_decimal(value)))
        elif isinstance(value, str):
            t = Typed(str=Const(value))
        elif isinstance(value, list):
            t = Typed(arr=(ArrSpec(prefix=tuple(frozenset([self.const(x)]) for x in value),
                                   items=FALSE_SUB, min=len(value), max=len(value)),))
        elif isinstance(value, dict):
            t = Typed(obj=(ObjSpec(props=tuple((k, frozenset([self.const(v)])) for k, v in value.items()),
                                   required=tuple(value), rules=((TRUE, FALSE_SUB),)),))
        else:
            raise Unsupported("const", f"not a JSON value: {value!r}")
        self._consts[key] = t
        return t

    def enum(self, values) -> Typed:
        """The union of the consts of ``values``, built in one pass (enums can be long)."""
        null, bools, nums, strs, arr, obj = False, set(), [], [], [], []
        for i, v in enumerate(values):
            if i % 1024 == 0:
                check_deadline()
            if v is None:
                null = True
            elif isinstance(v, bool):
                bools.add(v)
            elif isinstance(v, (int, float)):
                nums.append(num_const(to_decimal(v)))
            elif isinstance(v, str):
                strs.append(Const(v))
            else:
                c = self.const(v)
                arr.extend(c.arr)
                obj.extend(c.obj)
        return Typed(null, frozenset(bools), f_or(*nums), f_or(*strs), _dedupe(tuple(arr)), _dedupe(tuple(obj)))

    # -- union ------------------------------------------------------------------------------------
    def t_or(self, a: Typed, b: Typed) -> Typed:
        if a is NONE or b is ANY:
            return b
        if b is NONE or a is ANY:
            return a
        arr = _dedupe(a.arr + b.arr)
        obj = _dedupe(a.obj + b.obj)
        _cap(len(arr), len(obj))
        return Typed(a.null or b.null, a.bools | b.bools, f_or(a.num, b.num), f_or(a.str, b.str), arr, obj)

    # -- intersection -----------------------------------------------------------------------------
    def t_and(self, a: Typed, b: Typed) -> Typed:
        check_deadline()  # products of alternatives grow with the schema
        if a is ANY or b is NONE:
            return b
        if b is ANY or a is NONE:
            return a
        arr = absorb(_product(a.arr, b.arr, self.arr_and))
        obj = absorb(_product(a.obj, b.obj, self.obj_and))
        _cap(len(arr), len(obj))
        return Typed(a.null and b.null, a.bools & b.bools, f_and(a.num, b.num), f_and(a.str, b.str), arr, obj)

    def arr_and(self, a: ArrSpec, b: ArrSpec) -> Optional[ArrSpec]:
        if a == ANY_ARR:
            return b
        if b == ANY_ARR:
            return a
        n = max(len(a.prefix), len(b.prefix))
        prefix = tuple(sub_and(_item_at(a, i), _item_at(b, i)) for i in range(n))
        hi = a.max if b.max is None else (b.max if a.max is None else min(a.max, b.max))
        return normalize_arr(ArrSpec(prefix, sub_and(a.items, b.items), max(a.min, b.min), hi,
                                     a.contains + b.contains, a.unique or b.unique,
                                     max(a.eval_upto, b.eval_upto), a.eval_contains + b.eval_contains))

    def obj_and(self, a: ObjSpec, b: ObjSpec) -> Optional[ObjSpec]:
        if a == ANY_OBJ:
            return b
        if b == ANY_OBJ:
            return a
        names = f_and(a.names, b.names)
        props = []
        simplify = self.simplify
        # (each side's props by name, the first of a name as ObjSpec.prop reads it: a schema with
        # dozens of properties intersected many times made the lookups quadratic)
        b_props: dict = {}
        for k, sub in b.props:
            b_props.setdefault(k, sub)
        seen = set()
        for k, sub in a.props:
            other = b_props.get(k)
            props.append((k, simplify(sub_and(sub, other if other is not None else rules_sub(b, k)))))
            seen.add(k)
        for k, sub in b.props:
            if k not in seen:
                props.append((k, simplify(sub_and(sub, rules_sub(a, k)))))
        hi = a.max if b.max is None else (b.max if a.max is None else min(a.max, b.max))
        return normalize_obj(ObjSpec(tuple(props), _merge_names(a.required, b.required), a.rules + b.rules, names,
                                     max(a.min, b.min), hi, f_or(a.evaluated, b.evaluated),
                                     _dedupe(a.some + b.some)))

    # -- complement -------------------------------------------------------------------------------
    def t_not(self, a: Typed) -> Typed:
        if a is ANY:
            return NONE
        if a is NONE:
            return ANY
        arr = self._not_specs(a.arr, ANY_ARR, self._arr_negations, self.arr_and)
        obj = self._not_specs(a.obj, ANY_OBJ, self._obj_negations, self.obj_and)
        return Typed(not a.null, BOTH_BOOLS - a.bools, f_not(a.num), f_not(a.str), arr, obj)

    def _not_specs(self, specs, any_spec, negations, meet):
        if not specs:
            return (any_spec,)
        acc = (any_spec,)
        for s in specs:
            alts = negations(s)
            acc = absorb(_dedupe(tuple(x for p in acc for q in alts if (x := meet(p, q)) is not None)))
            _cap(len(acc), 0)
            if not acc:
                break
        return acc

    def _arr_negations(self, s: ArrSpec) -> list:
        out = []
        if s.min > 0:
            out.append(ArrSpec(max=s.min - 1))
        if s.max is not None:
            out.append(ArrSpec(min=s.max + 1))
        for i, sub in enumerate(s.prefix):
            if sub != TRUE_SUB:
                out.append(ArrSpec(prefix=(TRUE_SUB,) * i + (self.neg(sub),), min=i + 1))
        if s.items != TRUE_SUB:
            out.append(ArrSpec(contains=((self.neg(s.items), 1, None, len(s.prefix)),)))
        for sub, lo, hi, start in s.contains:
            if lo > 0:
                out.append(ArrSpec(contains=((sub, 0, lo - 1, start),)))
            if hi is not None:
                out.append(ArrSpec(contains=((sub, hi + 1, None, start),)))
        if s.unique:
            raise Unsupported("uniqueItems", "its negation (some item repeated) has no grammar here")
        return [x for x in (normalize_arr(o) for o in out) if x is not None]

    def _obj_negations(self, s: ObjSpec) -> list:
        out = []
        if s.min > 0:
            out.append(ObjSpec(max=s.min - 1))
        if s.max is not None:
            out.append(ObjSpec(min=s.max + 1))
        named = {k for k, _ in s.props}
        for k, sub in s.props:
            if k in s.required:
                # not (k present and its value in S) = "if k is present its value is not in S"
                out.append(ObjSpec(props=((k, self.neg(sub)),)))
            elif sub != TRUE_SUB:
                out.append(ObjSpec(props=((k, self.neg(sub)),), required=(k,)))
        for k in s.required:
            if k not in named:
                out.append(ObjSpec(props=((k, FALSE_SUB),)))
        if s.rules:
            named_keys = f_or(*[Const(k) for k, _ in s.props])
            for pred, sub in s.rules:
                if sub != TRUE_SUB:
                    out.append(ObjSpec(some=((f_and(pred, f_not(named_keys)), self.neg(sub)),)))
        if s.names != TRUE:
            out.append(ObjSpec(some=((f_not(s.names), TRUE_SUB),)))
        for key, sub in s.some:
            out.append(ObjSpec(rules=((key, self.neg(sub)),)))
        return [x for x in (normalize_obj(o) for o in out) if x is not None]


def _item_at(a: ArrSpec, i: int) -> frozenset:
    return a.prefix[i] if i < len(a.prefix) else a.items


def rules_sub(s: ObjSpec, name: str) -> frozenset:
    """The Sub a key outside ``s.props`` must satisfy: the rules that match it, and propertyNames."""
    if not s.rules and s.names == TRUE:
        return TRUE_SUB
    if not str_eval(s.names, name):
        return FALSE_SUB
    out = TRUE_SUB
    for pred, sub in s.rules:
        if sub != TRUE_SUB and str_eval(pred, name):
            out = sub_and(out, sub)
    return out


def normalize_arr(s: ArrSpec) -> Optional[ArrSpec]:
    """Tighten obvious bounds; None when the spec obviously accepts nothing."""
    hi = s.max
    if s.items == FALSE_SUB:
        hi = len(s.prefix) if hi is None else min(hi, len(s.prefix))
    for i, sub in enumerate(s.prefix):
        if sub == FALSE_SUB:
            hi = i if hi is None else min(hi, i)
            break
    if hi is not None and s.min > hi:
        return None
    for _sub, lo, chi, start in s.contains:
        if chi is not None and lo > chi:
            return None
        if hi is not None and lo > max(0, hi - start):
            return None
    prefix = s.prefix
    if hi is not None and len(prefix) > hi:
        prefix = prefix[:hi]
    while prefix and prefix[-1] == s.items:
        prefix = prefix[:-1]
    if hi != s.max or prefix is not s.prefix:
        s = replace(s, max=hi, prefix=prefix)
    return s


def normalize_obj(s: ObjSpec) -> Optional[ObjSpec]:
    """Apply propertyNames to the named properties; None when obviously empty."""
    if s.max is not None and (s.min > s.max or len(s.required) > s.max or (s.some and s.max == 0)):
        return None
    for key, sub in s.some:
        if key == FALSE or sub == FALSE_SUB:
            return None
    props = s.props
    if s.names != TRUE:
        props = tuple((k, sub if str_eval(s.names, k) else FALSE_SUB) for k, sub in props)
    named = dict(props)  # once: a dict per required key was quadratic (10,000 required keys: 3 s)
    for k in s.required:
        sub = named[k] if k in named else rules_sub(s, k)
        if sub == FALSE_SUB:
            return None
    if props is not s.props:
        s = replace(s, props=props)
    return s


def _merge_names(a: tuple, b: tuple) -> tuple:
    if not b:
        return a
    if not a:
        return b
    return a + tuple(k for k in b if k not in a)


def cover_profile(s) -> tuple:
    """What ``covers`` compares of a spec, read once per ``absorb`` (it compares every pair): its
    group (fields that must be equal), the bounds, sets and sub-schemas it orders, and last a
    64-bit signature of the elements a covering spec's sets must all find in the covered one's
    (property keys, each property's atoms, required names, rules, ...): a spec covers another only
    where its signature's bits are among the other's, a test of two integers."""
    hi = _UNBOUNDED if s.max is None else s.max
    if isinstance(s, ObjSpec):
        elements: list[tuple] = [("k", k) for k, _ in s.props]
        elements += [("a", k, atom) for k, sub in s.props for atom in sub]
        elements += [("r", k) for k in s.required] + [("u", r) for r in s.rules] + [("s", x) for x in s.some]
        return ((ObjSpec, s.evaluated), s.min, hi, s.names, s.props, dict(s.props), frozenset(s.required),
                frozenset(s.rules), frozenset(s.some), _signature(elements))
    elements = [("i", atom) for atom in s.items]
    elements += [("c", c) for c in s.contains]
    elements += [("p", i, atom) for i, sub in enumerate(s.prefix) for atom in sub]
    return ((ArrSpec, s.eval_upto, s.eval_contains), s.min, hi, s.unique, s.prefix, s.items, frozenset(s.contains),
            _signature(elements))


_UNBOUNDED = float("inf")


def _signature(elements) -> int:
    bits = 0
    for e in elements:
        bits |= 1 << (hash(e) & 63)
    return bits


def covers(a: tuple, b: tuple) -> bool:
    """Every instance of the spec profiled ``b`` is one of ``a``'s (checked field by field,
    conservatively; the groups are equal)."""
    if a[1] > b[1] or a[2] < b[2]:
        return False
    if a[0][0] is ObjSpec:
        _, _, _, names, props, _, required, rules, some, _ = a
        bp = b[5]
        # (a's rules hold for the keys outside a's properties: a key only b names is one of them,
        # free in b, so with rules a covers b only where both name the same keys)
        return ((names == TRUE or names == b[3]) and len(props) <= len(b[4]) and required <= b[6] and rules <= b[7]
                and some <= b[8] and (not rules or len(props) == len(b[4]))
                and all(k in bp and bp[k] >= sub for k, sub in props))
    _, _, _, unique, prefix, items, contains, _ = a
    # (the positions b's prefix holds past a's take a's items: each of b's there must imply them)
    return (len(prefix) <= len(b[4]) and (b[3] or not unique) and b[5] >= items and contains <= b[6]
            and all(y >= x for x, y in zip(prefix, b[4])) and all(y >= items for y in b[4][len(prefix):]))


def absorb(specs: tuple) -> tuple:
    """Drop the alternatives another alternative already covers (X or (X and Y) = X); of two that
    cover each other, the first stays. Pairs are compared within groups of equal kind only, and
    only where the signatures allow it."""
    if len(specs) < 2:
        return specs
    profiles = [cover_profile(s) for s in specs]
    groups: dict = {}
    for i, p in enumerate(profiles):
        groups.setdefault(p[0], []).append(i)
    dropped = set()
    for members in groups.values():
        sigs = [(j, profiles[j][-1]) for j in members]
        for n, i in enumerate(members):
            if n % 64 == 0:
                check_deadline()
            s = profiles[i]
            outside = ~s[-1]
            for j, sig in sigs:
                if sig & outside or j == i:
                    continue
                if covers(profiles[j], s) and not (j > i and covers(s, profiles[j])):
                    dropped.add(i)
                    break
    return specs if not dropped else tuple(s for i, s in enumerate(specs) if i not in dropped)


def _product(xs: tuple, ys: tuple, meet) -> tuple:
    """The distinct non-empty intersections of alternatives ``xs`` and ``ys``. Refused as soon as
    there are more than MAX_PRODUCT of them: absorb compares them pairwise, so an allOf of a few
    anyOf with a dozen objects each took seconds to reach the MAX_VARIANTS error."""
    if not xs or not ys:   # (one side has no arrays or no objects: most intersections)
        return ()
    if len(xs) * len(ys) <= MAX_PRODUCT:
        return _dedupe(tuple([x for s in xs for t in ys if (x := meet(s, t)) is not None]))
    out, seen = [], set()
    for s in xs:
        check_deadline()
        for t in ys:
            x = meet(s, t)
            if x is not None and x not in seen:
                seen.add(x)
                out.append(x)
                if len(out) > MAX_PRODUCT:
                    raise Unsupported("anyOf", f"the schema expands to more than {MAX_VARIANTS} array or object "
                                      f"alternatives (intersecting {len(xs)} with {len(ys)} alternatives gives "
                                      f"more than {MAX_PRODUCT} distinct ones)")
    return tuple(out)


def _dedupe(specs: tuple) -> tuple:
    if len(specs) < 2:
        return specs
    out, seen = [], set()
    for s in specs:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return tuple(out)


def _cap(n_arr: int, n_obj: int) -> None:
    if n_arr > MAX_VARIANTS or n_obj > MAX_VARIANTS:
        raise Unsupported("anyOf", f"the schema expands to more than {MAX_VARIANTS} array or object "
                          "alternatives")
