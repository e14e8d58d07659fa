"""Boolean formulas over scalar constraints (the number and string parts of a schema).

Numbers and strings are single lexemes whose languages are regular, so any boolean combination of
their constraints (``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``) is exact:
it becomes ``re_and``/``re_or``/``re_not`` of the atoms' regexes at emission. Formulas are
hashable tuples:

- ``TRUE``, ``FALSE``; ``("and", (f, ...))``, ``("or", (f, ...))``, ``("not", f)``
- number atoms: ``("range", lo, lo_excl, hi, hi_excl)`` (Decimal or None), ``("int",)`` (an
  integral value), ``("int4",)`` (draft 4: written without fraction or exponent), ``("mult", Decimal)``
- string atoms: ``("pat", pattern)``, ``("len", lo, hi_or_None)``, ``("fmt", name)``,
  ``("const", text)``

Example::

    f = f_and(("range", Decimal(0), False, None, False), ("int",))
    num_eval(f, Decimal(3))   # True
"""
from __future__ import annotations

from fractions import Fraction

from decimal import Decimal
from functools import lru_cache

from stencil.grammar.json.schema.core.formats import format_matches
from stencil.grammar.json.schema.core.patterns import node_matches, pattern_node

__all__ = ["TRUE", "FALSE", "f_and", "f_or", "f_not", "num_eval", "str_eval", "num_const", "str_consts",
           "num_consts"]

TRUE = ("T",)
FALSE = ("F",)


def _join(kind: str, items, unit, zero):
    out, seen = [], set()
    stack = list(reversed(items))
    while stack:
        f = stack.pop()
        if f == unit:
            continue
        if f == zero:
            return zero
        if f[0] == kind:
            stack.extend(reversed(f[1]))
            continue
        if f not in seen:
            seen.add(f)
            out.append(f)
    # x and not x = FALSE; x or not x = TRUE; x and not (x or y) = FALSE
    for f in out:
        if f[0] == "not":
            if f[1] in seen:
                return zero
            if kind == "and" and f[1][0] == "or" and any(x in seen for x in f[1][1]):
                return zero
    if not out:
        return unit
    if len(out) == 1:
        return out[0]
    return (kind, tuple(out))


def f_and(*fs):
    return _join("and", fs, TRUE, FALSE)


def f_or(*fs):
    return _join("or", fs, FALSE, TRUE)


def f_not(f):
    if f == TRUE:
        return FALSE
    if f == FALSE:
        return TRUE
    if f[0] == "not":
        return f[1]
    return ("not", f)


def num_const(v: Decimal):
    return ("range", v, False, v, False)


def num_eval(f, v: Decimal) -> bool:
    """Whether the number ``v`` satisfies the formula."""
    k = f[0]
    if k == "T":
        return True
    if k == "F":
        return False
    if k == "and":
        return all(num_eval(x, v) for x in f[1])
    if k == "or":
        return any(num_eval(x, v) for x in f[1])
    if k == "not":
        return not num_eval(f[1], v)
    if k == "range":
        _, lo, lo_x, hi, hi_x = f
        return (lo is None or (v > lo if lo_x else v >= lo)) and (hi is None or (v < hi if hi_x else v <= hi))
    if k == "int" or k == "int4":
        return v == v.to_integral_value()
    if k == "mult":
        return (Fraction(v) / Fraction(f[1])).denominator == 1   # exact: Decimal division rounds
    raise AssertionError(f"unknown number atom {k}")


def str_eval(f, s: str) -> bool:
    """Whether the decoded string ``s`` satisfies the formula."""
    k = f[0]
    if k == "T":
        return True
    if k == "F":
        return False
    if k == "and":
        return all(str_eval(x, s) for x in f[1])
    if k == "or":
        return any(str_eval(x, s) for x in f[1])
    if k == "not":
        return not str_eval(f[1], s)
    if k == "const":
        return s == f[1]
    if any(0xD800 <= ord(c) <= 0xDFFF for c in s):
        return False  # constrained strings never hold a lone surrogate (see strings.py)
    if k == "len":
        return len(s) >= f[1] and (f[2] is None or len(s) <= f[2])
    if k == "pat" or k == "fmt":
        return _regex_atom(f, s)
    raise AssertionError(f"unknown string atom {k}")


@lru_cache(maxsize=1 << 16)
def _regex_atom(f, s: str) -> bool:
    if f[0] == "pat":
        return node_matches(pattern_node(f[1]), s)
    return format_matches(f[1], s)


def _finite_values(f, consts, evaluate, leaf):
    """The finite set a formula allows when it is syntactically finite, else None: ``leaf`` for
    atoms, unions of ``consts`` over "or", and the first finite operand of "and" filtered by
    ``evaluate(f, value)``."""
    k = f[0]
    if k == "F":
        return frozenset()
    if k == "or":
        out = set()
        for x in f[1]:
            c = consts(x)
            if c is None:
                return None
            out |= c
        return frozenset(out)
    if k == "and":
        for x in f[1]:
            c = consts(x)
            if c is not None:
                return frozenset(v for v in c if evaluate(f, v))
        return None
    return leaf(f)


@lru_cache(maxsize=1 << 14)
def str_consts(f):
    """The finite set of strings a formula allows, if it is syntactically finite, else None."""
    return _finite_values(f, str_consts, str_eval, lambda g: frozenset([g[1]]) if g[0] == "const" else None)


def _num_leaf(f):
    if f[0] == "range" and f[1] is not None and f[1] == f[3]:
        return frozenset([f[1]]) if not (f[2] or f[4]) else frozenset()
    return None


@lru_cache(maxsize=1 << 14)
def num_consts(f):
    """The finite set of values a number formula allows, if syntactically finite, else None."""
    return _finite_values(f, num_consts, num_eval, _num_leaf)
