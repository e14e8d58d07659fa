"""Boolean formulas over scalar constraints (the number and string parts of a schema).

Numbers and strings are single lexemes whose languages are regular, so any boolean combination of
their constraints (``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``) is exact:
it becomes ``re_and``/``re_or``/``re_not`` of the atoms' regexes at emission. Formulas are
hashable named tuples, one class per node:

- ``TRUE``, ``FALSE``; :class:`And` ``(items)``, :class:`Or` ``(items)``, :class:`Not` ``(item)``
- number atoms: :class:`Range` ``(lo, lo_excl, hi, hi_excl)`` (Decimal or None), :data:`INTEGER`
  (an integral value), :data:`PLAIN_INTEGER` (draft 4: written without fraction or exponent),
  :class:`MultipleOf` ``(divisor)``
- string atoms: :class:`Pattern` ``(pattern)``, :class:`Length` ``(lo, hi_or_None)``,
  :class:`Format` ``(name)``, :class:`Const` ``(text)``

Each class ends with a ``head`` field that names its kind: named tuples compare and hash as
tuples, and the head keeps ``Pattern("a")`` and ``Const("a")`` apart (in sets, memo tables and
``lru_cache`` keys). It is a plain string, not an Enum, so that hashing a formula stays in C.

Example::

    f = f_and(Range(Decimal(0), False, None, False), INTEGER)
    num_eval(f, Decimal(3))   # True
"""
# The walks dispatch on ``k = type(f)`` (one lookup: the hot path of the formula algebra), which
# mypy does not narrow through (about 150 union-attr errors, none a live bug); isinstance chains
# would narrow but cost a call per node. The other checks stay on.
# mypy: disable-error-code="union-attr"
from __future__ import annotations

import math
import re
from fractions import Fraction

from decimal import Decimal
from functools import lru_cache
from typing import NamedTuple, Optional, Union

from stencil.grammar.json.schema.core.formats import format_matches
from stencil.grammar.json.schema.core.patterns import node_matches, node_words, pattern_node
from stencil.grammar.deadline import check_deadline

__all__ = ["TRUE", "FALSE", "INTEGER", "PLAIN_INTEGER", "Truth", "And", "Or", "Not", "Range", "Integer",
           "MultipleOf", "Pattern", "Length", "Format", "Const", "Formula", "f_and", "f_or", "f_not", "f_contains",
           "num_eval", "num_at", "num_spellings", "str_eval", "num_const", "str_consts", "num_consts", "small_integers"]


class Truth(NamedTuple):
    """``TRUE`` (every value) or ``FALSE`` (none)."""
    head: str


class And(NamedTuple):
    """All of ``items`` (two or more, none an And: see :func:`f_and`)."""
    items: tuple
    head: str = "and"


class Or(NamedTuple):
    """Any of ``items`` (two or more, none an Or: see :func:`f_or`)."""
    items: tuple
    head: str = "or"


class Not(NamedTuple):
    """Not ``item`` (never a Not or a Truth: see :func:`f_not`)."""
    item: "Formula"
    head: str = "not"


class Range(NamedTuple):
    """A number between ``lo`` and ``hi`` (None: unbounded), each bound exclusive or not."""
    lo: Optional[Decimal]
    lo_excl: bool
    hi: Optional[Decimal]
    hi_excl: bool
    head: str = "range"


class Integer(NamedTuple):
    """An integral number: ``head`` "int" (any spelling) or "int4" (draft 4's: no fraction or
    exponent); the two instances are :data:`INTEGER` and :data:`PLAIN_INTEGER`."""
    head: str


class MultipleOf(NamedTuple):
    """A number that is ``divisor`` times an integer."""
    divisor: Decimal
    head: str = "mult"


class Pattern(NamedTuple):
    """A string that a JSON Schema (ECMA-262) ``pattern`` matches somewhere."""
    pattern: str
    head: str = "pat"


class Length(NamedTuple):
    """A string of ``lo`` to ``hi`` (None: any) code points."""
    lo: int
    hi: Optional[int]
    head: str = "len"


class Format(NamedTuple):
    """A string of the JSON Schema ``format`` ``name`` (core/formats.py)."""
    name: str
    head: str = "fmt"


class Const(NamedTuple):
    """Exactly the string ``text``."""
    text: str
    head: str = "const"


Formula = Union[Truth, And, Or, Not, Range, Integer, MultipleOf, Pattern, Length, Format, Const]

TRUE = Truth("T")
FALSE = Truth("F")
INTEGER = Integer("int")
PLAIN_INTEGER = Integer("int4")


def _join(kind: type, items, unit: Truth, zero: Truth) -> Formula:
    """``kind`` (And or Or) of ``items``, flattened, deduplicated and folded: ``unit`` dropped,
    ``zero`` absorbing."""
    out: dict = {}   # (a dict keeps the first of equal items, in order)
    for f in items:
        if type(f) is kind:   # And or Or: mypy does not narrow through a type held in a variable
            out.update(dict.fromkeys(f.items))  # type: ignore[attr-defined]  # (flat: built here)
        else:
            out[f] = None
    if len(out) > 1024:
        check_deadline()   # (an enum of 100,000 numbers: each of its joins takes milliseconds)
    if zero in out:
        return zero
    out.pop(unit, None)
    # x and not x = FALSE; x or not x = TRUE; x and not (x or y) = FALSE
    for f in out:
        if type(f) is Not:
            if f.item in out:
                return zero
            if kind is And and type(f.item) is Or and any(x in out for x in f.item.items):
                return zero
    if not out:
        return unit
    if len(out) == 1:
        return next(iter(out))
    return kind(tuple(out))


def f_and(*fs: Formula) -> Formula:
    if len(fs) == 2:   # most intersections meet a TRUE, a FALSE or the same formula (t_and of every schema pair)
        a, b = fs
        if a is TRUE or a is b or b is FALSE:
            return b
        if b is TRUE or a is FALSE:
            return a
    return _join(And, fs, TRUE, FALSE)


def f_or(*fs: Formula) -> Formula:
    if len(fs) == 2:   # (as f_and's)
        a, b = fs
        if a is FALSE or a is b or b is TRUE:
            return b
        if b is FALSE or a is TRUE:
            return a
    return _join(Or, fs, FALSE, TRUE)


def f_not(f: Formula) -> Formula:
    if f == TRUE:
        return FALSE
    if f == FALSE:
        return TRUE
    if type(f) is Not:
        return f.item
    return Not(f)


def f_contains(f: Formula, atom: Formula) -> bool:
    """Whether ``atom`` occurs in ``f`` (under any And, Or or Not)."""
    if f == atom:
        return True
    k = type(f)
    if k is And or k is Or:
        return any(f_contains(x, atom) for x in f.items)
    return k is Not and f_contains(f.item, atom)


def num_const(v: Decimal) -> Range:
    return Range(v, False, v, False)


def num_eval(f: Formula, v: Decimal) -> bool:
    """Whether the number ``v`` satisfies the formula."""
    k = type(f)
    if k is Truth:
        return f == TRUE
    if k is And:
        return all(num_eval(x, v) for x in f.items)
    if k is Or:
        return any(num_eval(x, v) for x in f.items)
    if k is Not:
        return not num_eval(f.item, v)
    if k is Range:
        lo, lo_x, hi, hi_x = f.lo, f.lo_excl, f.hi, f.hi_excl
        return (lo is None or (v > lo if lo_x else v >= lo)) and (hi is None or (v < hi if hi_x else v <= hi))
    if k is Integer:
        return v == v.to_integral_value()
    if k is MultipleOf:
        return (Fraction(v) / Fraction(f.divisor)).denominator == 1   # exact: Decimal division rounds
    raise AssertionError(f"not a number formula: {f!r}")


def num_at(f: Formula, v: Decimal) -> Formula:
    """``f`` at the one value ``v`` (see :func:`num_spellings`)."""
    return num_spellings(f, (v,))[v]


def num_spellings(f: Formula, values) -> dict:
    """``f`` at each of the ``values``: the atoms a value decides are TRUE or FALSE, and what is
    left says how the value may be spelled: :data:`PLAIN_INTEGER` (draft 4: an integral value
    without fraction or exponent, or under a Not with one), and :data:`INTEGER` where ``f`` asks
    for an integer of an integral value (``number_spelling="plain"`` writes it without a fraction;
    under a Not, where it decides nothing, it is TRUE). FALSE where no spelling of the value
    satisfies ``f``. A part of ``f`` without those atoms is read once (a finite one as its set of
    values), so an enum of n values costs n lookups, not n walks of the enum."""
    spelled: dict = {}
    finite: dict = {}

    def has_integer(x) -> bool:
        r = spelled.get(id(x))
        if r is None:
            k = type(x)
            r = k is Integer or (k is Not and has_integer(x.item)) or \
                ((k is And or k is Or) and any([has_integer(y) for y in x.items]))
            spelled[id(x)] = r
        return r

    def at(x, v: Decimal, positive: bool) -> Formula:
        if not has_integer(x):
            if id(x) not in finite:
                finite[id(x)] = num_consts(x)
            c = finite[id(x)]
            return TRUE if (v in c if c is not None else num_eval(x, v)) else FALSE
        k = type(x)
        if k is And:
            return f_and(*[at(y, v, positive) for y in x.items])
        if k is Or:
            return f_or(*[at(y, v, positive) for y in x.items])
        if k is Not:
            return f_not(at(x.item, v, not positive))
        if v != v.to_integral_value():
            return FALSE
        return x if x == PLAIN_INTEGER or positive else TRUE

    return {v: at(f, v, True) for v in values}


def str_eval(f: Formula, s: str) -> bool:
    """Whether the decoded string ``s`` satisfies the formula."""
    # (the string is scanned for lone surrogates once, not at each atom: the formulas of
    # additionalProperties are unions of every property name, asked for each name)
    return _str_eval(f, s, not s.isascii() and _LONE_SURROGATE.search(s) is not None)


_LONE_SURROGATE = re.compile("[" + chr(0xd800) + "-" + chr(0xdfff) + "]")   # (mypyc takes no surrogate literal)
#: id(Or) -> (the Or, its Const texts, its other items): a union of many names is asked once per
#: name (quadratic as a scan); the Or is held so that its id stays its own. Cleared when it holds
#: more than _OR_ITEMS items in all (the unions of a long-running server's schemas stay bounded).
_OR_SPLITS: dict[int, tuple] = {}
_OR_ITEMS = 1 << 18
_or_held = 0


def _or_split(f: Or) -> tuple:
    global _or_held
    hit = _OR_SPLITS.get(id(f))
    if hit is not None and hit[0] is f:
        return hit
    if _or_held + len(f.items) > _OR_ITEMS:
        _OR_SPLITS.clear()
        _or_held = 0
    texts = frozenset(x.text for x in f.items if type(x) is Const)
    hit = _OR_SPLITS[id(f)] = (f, texts, tuple(x for x in f.items if type(x) is not Const))
    _or_held += len(f.items)
    return hit


def _str_eval(f: Formula, s: str, lone: bool) -> bool:
    k = type(f)
    if k is Truth:
        return f == TRUE
    if k is And:
        return all(_str_eval(x, s, lone) for x in f.items)
    if k is Or:
        if len(f.items) < 8:
            return any(_str_eval(x, s, lone) for x in f.items)
        _, texts, others = _or_split(f)  # type: ignore[arg-type]  # (k is Or: see the note at the top)
        return s in texts or any(_str_eval(x, s, lone) for x in others)
    if k is Not:
        return not _str_eval(f.item, s, lone)
    if k is Const:
        return s == f.text
    if lone:
        return False  # constrained strings never hold a lone surrogate (see strings.py)
    if k is Length:
        return len(s) >= f.lo and (f.hi is None or len(s) <= f.hi)  # type: ignore[operator]  # Length.lo: int
    if k is Pattern or k is Format:
        return _regex_atom(f, s)
    raise AssertionError(f"not a string formula: {f!r}")


@lru_cache(maxsize=1 << 16)
def _regex_atom(f: Pattern | Format, s: str) -> bool:
    if type(f) is Pattern:
        return node_matches(pattern_node(f.pattern), s)
    return format_matches(f.name, s)


def _finite_values(f: Formula, consts, evaluate, leaf):
    """The finite set a formula allows when it is syntactically finite, else None: ``leaf`` for
    atoms, unions of ``consts`` over Or, and the first finite operand of And filtered by
    ``evaluate(f, value)``."""
    if f == FALSE:
        return frozenset()
    if type(f) is Or:
        out = set()
        for x in f.items:
            c = consts(x)
            if c is None:
                return None
            out |= c
        return frozenset(out)
    if type(f) is And:   # each finite operand as its set (evaluating the And per value was quadratic)
        sets = [consts(x) for x in f.items]
        finite = sorted((c for c in sets if c is not None), key=len)
        if not finite:
            return None
        rest = [x for x, c in zip(f.items, sets) if c is None]
        return frozenset(v for v in finite[0] if all(v in c for c in finite[1:]) and all(evaluate(x, v) for x in rest))
    return leaf(f)


@lru_cache(maxsize=1 << 14)
def str_consts(f: Formula):
    """The finite set of strings a formula allows, if it is syntactically finite, else None."""
    return _finite_values(f, str_consts, str_eval, lambda g: frozenset([g.text]) if type(g) is Const else None)


#: str_words' bound on the strings of one pattern (object keys spelled out one by one).
KEY_WORDS_LIMIT = 256


@lru_cache(maxsize=1 << 12)
def str_words(f: Formula):
    """:func:`str_consts`, with a pattern whose language is finite (at most ``KEY_WORDS_LIMIT``
    strings: `^[a-e]$`) read as its strings too: the keys a formula of patterns allows, where
    they are few."""
    def leaf(g):
        if type(g) is Const:
            return frozenset([g.text])
        return node_words(pattern_node(g.pattern), KEY_WORDS_LIMIT) if type(g) is Pattern else None
    return _finite_values(f, str_words, str_eval, leaf)


def _num_leaf(f: Formula):
    if type(f) is Range and f.lo is not None and f.lo == f.hi:
        return frozenset([f.lo]) if not (f.lo_excl or f.hi_excl) else frozenset()
    return None


@lru_cache(maxsize=1 << 14)
def num_consts(f: Formula):
    """The finite set of values a number formula allows in some spelling, if syntactically finite,
    else None (draft 4's ``not: {type: integer}`` allows 2 as 2.0, which num_eval's reading by
    value refuses)."""
    return _finite_values(f, num_consts, _num_spelled, _num_leaf)


def _num_spelled(f: Formula, v: Decimal) -> bool:
    return num_at(f, v) != FALSE


def small_integers(f: Formula, limit: int):
    """The integers a number formula allows, when it asks for an integer (any spelling) within a
    bounded range that holds at most ``limit`` of them; else None. (A unique array of such items
    can then list its values: README, uniqueItems.)"""
    atoms = f.items if type(f) is And else (f,)
    if INTEGER not in atoms:
        return None
    lo = hi = None
    for a in atoms:
        if type(a) is not Range:
            continue
        if a.lo is not None:
            first = math.floor(a.lo) + 1 if a.lo_excl or a.lo != math.floor(a.lo) else math.floor(a.lo)
            lo = first if lo is None else max(lo, first)
        if a.hi is not None:
            last = math.ceil(a.hi) - 1 if a.hi_excl or a.hi != math.ceil(a.hi) else math.ceil(a.hi)
            hi = last if hi is None else min(hi, last)
    if lo is None or hi is None or hi - lo + 1 > limit:
        return None
    return frozenset(Decimal(v) for v in range(lo, hi + 1) if num_eval(f, Decimal(v)))
