"""JSON number lexemes for numeric constraints.

A range alone (``minimum``/``maximum``/``exclusive*``, with or without ``integer``) is the core's
number-range expression (:meth:`JsonNumbers.exact_range`, ``GrammarBuilder.re_number_range``):
every spelling is compared with the bounds exactly, exponent forms included (``minimum: 5``
accepts ``1e1`` and ``50e-1``, rejects ``4.9e0``; ``minimum: 1e308`` accepts ``1.5e308``). That
language is not regular (``123456e-5`` < 5 <= ``1234567e-5`` compares a digit count with an
exponent), so it is not a regex but a recognizer whose state summarizes the number read so far;
it never allows a prefix that no number in range completes. Bounds are taken as the decimal the
schema spells (``0.1`` is one tenth, not the nearest double). ``-0`` is zero.

``integer`` (draft 6+) is value-based as the specification says: ``1.0``, ``1e3`` and ``1.5e1``
are integers; draft 4's integers are written without fraction or exponent (``plain``).

Unions, intersections and complements of ranges and of both drafts' ``integer`` (``anyOf``,
``not: {minimum: 5}``, ``oneOf``, ``not: {type: integer}``) are unions of ranges, each holding
some of three kinds of spelling (:func:`range_union`; integers written plain, integral values
written otherwise, fractional values), exact as well: the fractional numbers of a range are the
range's recognizer beside the complement of the core's integer recognizer (``1.5e1`` is refused,
``15e-1`` taken), except in a range whose numbers are all 10^6 or more away from zero, whose
fractional numbers take the regex forms below (written without exponent: the core's search for a
completion over the complement would have to write out more digits than that).

Where a range meets ``multipleOf`` (or the union grows past its limit), the digit-level regular
languages below are used instead (:meth:`JsonNumbers.range`), under whose complements and
intersections emptiness stays decidable: a range becomes comparisons of the integer part and of
the fraction digits with the bound's decimal digits, exact on plain decimals; there exponent forms
are accepted only where no comparison is needed: a zero mantissa (the value 0) when 0 is in range,
and any positive (negative) mantissa when the range holds every positive (negative) number.
``multipleOf`` rejects exponent forms except zero, so beside it the regex range loses nothing; a
complement there is taken among the numbers written without exponent and zero
(:meth:`JsonNumbers.exponent_free`), so ``not: {multipleOf: 3}`` refuses ``3e0`` as well.

``multipleOf`` (d = p / 10^q): the fraction digits past the q-th must be zero and the digits of
the number shifted by q places must be divisible by p: the core's residue automaton over the text
(``GrammarBuilder.re_multiple_of``), whose states are built as a text reaches them.

Example::

    nums = JsonNumbers(b)
    e = nums.exact_range(Decimal("0.5"), False, Decimal(12), False)   # every kind of spelling
    lexeme = b.lexeme(e, "number")
"""
from __future__ import annotations

from math import gcd
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from typing import Optional

from stencil._core import ExprId, GrammarError
from stencil.grammar.deadline import check_deadline
from stencil.grammar.json.schema.core.formulas import FALSE, INTEGER, PLAIN_INTEGER, TRUE, And, Not, Or, Range
from stencil.grammar.json.value import number_expr

__all__ = ["JsonNumbers", "decimal_parts", "range_union", "multiple_parts", "MAX_RESIDUES_BESIDE", "PLAIN", "SPELLED",
           "FRACTIONAL", "INTEGRAL", "EVERY"]

#: the most residues of a multipleOf beside a range or another multipleOf (1024 and 4096 pass, 7919
#: does not): the lexer decides which prefixes can still end in range by searching the product of
#: the residues and the range's states, whose first masks take ~5 ms at 1,000 residues, ~60 ms at
#: 8,000 and seconds at 100,000. A multipleOf alone has no such search, at any size.
MAX_RESIDUES_BESIDE = 5000


def multiple_parts(d: Decimal) -> tuple[int, int]:
    """(m, e) with d = m * 10^e, m without trailing zeros: m is the count of residues the core's
    automaton for d can reach (a power of ten is read off the trailing zeros instead). More than
    19 significant digits is a GrammarError."""
    _, digs, exp = d.as_tuple()   # (not normalize(): it rounds to the context's 28 digits)
    if not isinstance(exp, int):   # "n", "N", "F": NaN or infinity (the reader lets none through)
        raise GrammarError(f"multipleOf {d}: not a finite number")
    while len(digs) > 1 and digs[-1] == 0:
        digs, exp = digs[:-1], exp + 1
    if len(digs) > 19:
        raise GrammarError(f"multipleOf {d}: more than 19 significant digits, too many to enforce "
                           f"exactly (the divisibility automaton would need that many residues)")
    return int("".join(map(str, digs))), exp


def decimal_parts(v: Decimal) -> tuple[str, str]:
    """(integer digits without leading zeros, fraction digits without trailing zeros) of |v|."""
    s = format(v.copy_abs(), "f")   # (abs() rounds to the context's 28 digits: 10^30 + 1 became 10^30)
    if "." in s:
        i, f = s.split(".")
        f = f.rstrip("0")
    else:
        i, f = s, ""
    i = i.lstrip("0") or "0"
    return i, f


#: The spellings of a number, as the bits of a range alternative's ``kinds``: PLAIN, an integer
#: written without fraction or exponent (draft 4's integers); SPELLED, an integral value written
#: with one (``1.0``, ``1e2``, ``1.5e1``); FRACTIONAL, a value that is no integer. Each atom and
#: each complement is a set of them: ``int`` is PLAIN | SPELLED, ``not int`` is FRACTIONAL.
PLAIN, SPELLED, FRACTIONAL = 1, 2, 4
INTEGRAL, EVERY = PLAIN | SPELLED, PLAIN | SPELLED | FRACTIONAL

#: one alternative of range_union: (lo, lo_excl, hi, hi_excl, kinds), None for no bound
RangeAlt = tuple[Optional[Decimal], bool, Optional[Decimal], bool, int]
_ALL: RangeAlt = (None, False, None, False, EVERY)


def _intersect(a: tuple, b: tuple) -> tuple:
    """Two alternatives (lo, lo_excl, hi, hi_excl, kinds) met: the tighter bound on each side."""
    lo, lx, hi, hx = a[:4]
    lo2, lo2_x, h, h_x = b[:4]
    if lo2 is not None and (lo is None or lo2 > lo or (lo2 == lo and lo2_x)):
        lo, lx = lo2, lo2_x
    if h is not None and (hi is None or h < hi or (h == hi and h_x)):
        hi, hx = h, h_x
    return (lo, lx, hi, hx, a[4] & b[4])


def _tidy(a: tuple) -> Optional[tuple]:
    """The alternative with the kinds its range can hold (no integer between 0.2 and 0.8, no
    fraction in [3, 3]), EVERY where it holds fractions only, a fractional one's integral bounds
    made exclusive (an integer bound is no fractional value); None when it holds nothing. (A
    fractional lexeme over a range that holds none, or whose digits can only reach an integer,
    would leave the core's search for a completion nothing to find, forever.)"""
    lo, lx, hi, hx, kinds = a
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lx or hx))):
        return None
    if lo is not None and lo == hi:
        present = INTEGRAL if _integral(lo) else FRACTIONAL
    elif lo is not None and hi is not None and hi - lo < 2 and \
            _integral_bound(lo, True, lx) > _integral_bound(hi, False, hx):
        present = FRACTIONAL
    else:
        present = EVERY
    if not kinds & present:
        return None
    if present == FRACTIONAL:   # every number of the range is fractional
        return (lo, lx, hi, hx, EVERY)
    if kinds & present != present:   # (kinds that hold all it has stay: plain spelling writes INTEGRAL's
        kinds &= present             # integers without a fraction, EVERY's any way)
    if kinds == FRACTIONAL:
        lx = lx or (lo is not None and _integral(lo))
        hx = hx or (hi is not None and _integral(hi))
    return (lo, lx, hi, hx, kinds)


#: the magnitude from which a range's fractional numbers take the regex forms (see _far_from_zero)
FAR_FROM_ZERO = Decimal(10) ** 6


def _far_from_zero(lo, hi) -> bool:
    """Whether every number of the range is at least FAR_FROM_ZERO away from 0. A fractional one
    is then written with more digits than that has (1000000.5, or 1.0000005e6), and the core
    decides whether a state of the complemented integer recognizer can still end by a search over
    texts, level by level: masks took ~3 ms (DeepSeek's vocabulary) just past 10^6, ~8 ms just
    below 10^9, and past 10^25 the search gave up."""
    return (lo is not None and lo >= FAR_FROM_ZERO) or (hi is not None and hi <= -FAR_FROM_ZERO)


def _integral(v: Decimal) -> bool:
    return v == v.to_integral_value()


def _complement(alts: list[RangeAlt], limit: int) -> Optional[list[RangeAlt]]:
    """The numbers no alternative holds: below or above each one's range, or inside it with
    the kinds it leaves out; None past ``limit`` alternatives."""
    out = [_ALL]
    for lo, lx, hi, hx, kinds in alts:
        rest: list[RangeAlt] = [] if lo is None else [(None, False, lo, not lx, EVERY)]
        rest += [] if hi is None else [(hi, not hx, None, False, EVERY)]
        rest += [(lo, lx, hi, hx, EVERY & ~kinds)] if EVERY & ~kinds else []
        out = [m for a in out for b in rest if (m := _tidy(_intersect(a, b))) is not None]
        if len(out) > limit:
            return None
    return out


def range_union(f, limit: int = 16) -> Optional[list[RangeAlt]]:
    """The number formula ``f`` (see formulas.py) as a union of ranges, each alternative
    ``(lo, lo_excl, hi, hi_excl, kinds)`` (kinds: the spellings it holds, see PLAIN), when it is
    built from ranges, ``int`` (both drafts') and their complements by unions and intersections
    (at most ``limit`` alternatives); None otherwise (``multipleOf``). Each alternative is then one
    exact number-range expression (:meth:`JsonNumbers.exact_range`): ``not: {minimum: 5}``
    rejects ``50e-1``, ``not: {type: integer}`` rejects ``1.5e1`` (15)."""
    k = type(f)
    if f == TRUE:
        return [_ALL]
    if f == FALSE:
        return []
    if k is Range:
        a = _tidy((f.lo, f.lo_excl, f.hi, f.hi_excl, EVERY))
        return [] if a is None else [a]
    if f == INTEGER:
        return [(None, False, None, False, INTEGRAL)]
    if f == PLAIN_INTEGER:
        return [(None, False, None, False, PLAIN)]
    if k is Not:
        inner = range_union(f.item, limit)
        return None if inner is None else _complement(inner, limit)
    if k is not Or and k is not And:
        return None
    parts = []
    for i, x in enumerate(f.items):
        if i % 1024 == 0:
            check_deadline()
        p = range_union(x, limit)
        if p is None:
            return None
        parts.append(p)
    out: list[RangeAlt]
    if k is Or:
        out = [a for p in parts for a in p]
    else:
        out = [_ALL]
        for p in parts:
            out = [m for a in out for b in p if (m := _tidy(_intersect(a, b))) is not None]
            if len(out) > limit:
                return None
    return out if len(out) <= limit else None


def _integral_bound(v: Decimal, lower: bool, exclusive: bool) -> Decimal:
    """The integer bound equivalent to ``v`` for integral values: the least integer above (at
    least) a lower bound, the greatest below (at most) an upper one. Exact for any exponent up to
    _MAX_INT_DIGITS digits (Decimal arithmetic rounds past its context's precision)."""
    if v.is_zero():
        v = Decimal(0)
    digits = v.adjusted() + 3
    if digits > _MAX_INT_DIGITS:
        raise GrammarError(f"integer bound {v} has more than {_MAX_INT_DIGITS} digits")
    with localcontext() as ctx:
        ctx.prec = max(28, digits)
        r = v.to_integral_value(rounding=ROUND_CEILING if lower else ROUND_FLOOR)
        if exclusive and r == v:
            r = r + 1 if lower else r - 1
        return r


#: integer bounds longer than this are refused (rounding them exactly takes that many digits)
_MAX_INT_DIGITS = 100_000


class JsonNumbers:
    """Builds number expressions in one builder (memoized per builder)."""

    def __init__(self, b, minus_zero: bool = True):
        self.b = b
        # False: no -0 (nor -0.0, -0e1) where the minimum is 0 or more, as llguidance and XGrammar
        # write numbers; the standard's default keeps it (-0 equals 0)
        self.minus_zero = minus_zero
        self._memo: dict = {}
        d = self.digits(0, 9)
        self.D, self.D19 = d, self.digits(1, 9)
        self.Dstar = b.re_repeat(d, 0, -1)
        self.DOT, self.MINUS = b.re_literal("."), b.re_literal("-")
        self.INT = b.re_or([b.re_literal("0"), b.re_concat([self.D19, self.Dstar])])
        self.FRAC_ANY = b.re_repeat(b.re_concat([self.DOT, b.re_repeat(d, 1, -1)]), 0, 1)
        self.ZEROS1 = b.re_repeat(b.re_literal("0"), 1, -1)
        self.FRAC_INT = b.re_repeat(b.re_concat([self.DOT, self.ZEROS1]), 0, 1)
        e = b.re_char_ranges([(ord("e"), ord("e")), (ord("E"), ord("E"))], False)
        sign = b.re_repeat(b.re_char_ranges([(ord("+"), ord("+")), (ord("-"), ord("-"))], False), 0, 1)
        digits1 = b.re_repeat(d, 1, -1)
        self.EXP = b.re_concat([e, sign, digits1])
        self.EXP_NONNEG = b.re_concat([e, b.re_repeat(b.re_literal("+"), 0, 1), digits1])
        self.OPT_MINUS = b.re_repeat(self.MINUS, 0, 1)

    def digits(self, lo: int, hi: int) -> ExprId:
        return self.b.re_char_ranges([(48 + lo, 48 + hi)], False)

    # -- whole-number expressions -------------------------------------------------------------------
    def any(self) -> ExprId:
        """Any JSON number."""
        if "any" not in self._memo:
            self._memo["any"] = number_expr(self.b)
        return self._memo["any"]

    def integer(self) -> ExprId:
        """Any JSON number whose value is an integer (in the forms accepted, see module doc)."""
        if "int" not in self._memo:
            b = self.b
            self._memo["int"] = b.re_or([
                b.re_concat([self.OPT_MINUS, self.INT, self.FRAC_INT, b.re_repeat(self.EXP_NONNEG, 0, 1)]),
                self._zero_exp()])
        return self._memo["int"]

    def exact_range(self, lo, lo_excl: bool, hi, hi_excl: bool, kinds: int = EVERY) -> ExprId:
        """Numbers in the range in every spelling, compared exactly (``lo``/``hi`` Decimal or None
        for unbounded), of the ``kinds`` of spelling (see PLAIN; ``INTEGRAL``: integral values,
        draft 6+: ``1.5e1`` is 15; ``FRACTIONAL``: the others), as :func:`range_union` leaves
        them (:func:`_tidy`: never empty)."""
        if kinds == EVERY or kinds == INTEGRAL:
            return self._exact(lo, lo_excl, hi, hi_excl, kinds == INTEGRAL)
        key = ("kinds", lo, lo_excl, hi, hi_excl, kinds)
        e = self._memo.get(key)
        if e is None:
            b = self.b
            parts = []
            if kinds & PLAIN:
                parts.append(self.range(lo, lo_excl, hi, hi_excl, True, plain=True))
            if kinds & SPELLED:   # with FRACTIONAL: every value, each written with a fraction or exponent
                whole = self._exact(lo, lo_excl, hi, hi_excl, not kinds & FRACTIONAL)
                parts.append(b.re_and([whole, self._spelled_text()]))
            elif kinds & FRACTIONAL and _far_from_zero(lo, hi):
                # (its non-integers are all longer than the core's search for a completion reaches:
                # the regex forms, exact on the numbers written without exponent)
                parts.append(b.re_and([self.range(lo, lo_excl, hi, hi_excl, False), self._fraction_text(True)]))
            elif kinds & FRACTIONAL:
                # the value in range and no integer: the core's integer recognizer complemented. A
                # zero mantissa is left out first (0e5 is an integer, and its exponents never end)
                parts.append(b.re_and([self._exact(lo, lo_excl, hi, hi_excl, False), self._nonzero_text(),
                                       b.re_not(self._exact(None, False, None, False, True))]))
            e = self._memo[key] = parts[0] if len(parts) == 1 else b.re_or(parts)
        return e

    def _exact(self, lo, lo_excl: bool, hi, hi_excl: bool, integer: bool) -> ExprId:
        """The core's number-range recognizer (integral values only with ``integer``)."""
        if lo is None and hi is None and not integer:
            return self.any()
        key = ("exact", lo, lo_excl, hi, hi_excl, integer)
        e = self._memo.get(key)
        if e is None:
            if integer:   # the core takes inclusive integral bounds
                lo = None if lo is None else _integral_bound(lo, True, lo_excl)
                hi = None if hi is None else _integral_bound(hi, False, hi_excl)
                lo_excl = hi_excl = False
            no_minus = not self.minus_zero and lo is not None and lo >= 0
            e = self.b.re_number_range(
                None if lo is None else str(lo), lo_excl, None if hi is None else str(hi), hi_excl, integer)
            if no_minus:   # the minus signs of the range are those of -0: not written above a minimum of 0
                e = self.b.re_and([e, self._unsigned_text()])
            self._memo[key] = e
        return e

    def _spelled_text(self) -> ExprId:
        """-?(0|[1-9][0-9]*)(\\.[0-9]+ | (\\.[0-9]+)?[eE][+-]?[0-9]+): a number written with a
        fraction or an exponent."""
        if "spelled" not in self._memo:
            b = self.b
            frac = b.re_concat([self.DOT, b.re_repeat(self.D, 1, -1)])
            tail = b.re_or([b.re_concat([frac, b.re_repeat(self.EXP, 0, 1)]), self.EXP])
            self._memo["spelled"] = b.re_concat([self.OPT_MINUS, self.INT, tail])
        return self._memo["spelled"]

    def _nonzero_text(self) -> ExprId:
        """A number whose mantissa has a non-zero digit."""
        if "nonzero" not in self._memo:
            b = self.b
            self._memo["nonzero"] = b.re_concat([self.OPT_MINUS, self._nonzero_mantissa(False),
                                                 b.re_repeat(self.EXP, 0, 1)])
        return self._memo["nonzero"]

    def _fraction_text(self, nonzero: bool) -> ExprId:
        """-?(0|[1-9][0-9]*)\\.[0-9]*[1-9][0-9]* (``nonzero``: a fractional value written without
        exponent), or -?(0|[1-9][0-9]*)\\.0+ (an integral one written with a fraction)."""
        key = ("fraction", nonzero)
        if key not in self._memo:
            b = self.b
            digits = b.re_concat([self.Dstar, self.D19, self.Dstar]) if nonzero else self.ZEROS1
            self._memo[key] = b.re_concat([self.OPT_MINUS, self.INT, self.DOT, digits])
        return self._memo[key]

    def _unsigned_text(self) -> ExprId:
        """Texts that start with a digit (a number without minus sign)."""
        if "unsigned" not in self._memo:
            b = self.b
            self._memo["unsigned"] = b.re_concat([self.D, b.re_repeat(b.re_char_ranges([(0, 0x10FFFF)], False), 0, -1)])
        return self._memo["unsigned"]

    def plain_range(self, lo, lo_excl: bool, hi, hi_excl: bool, kinds: int = EVERY) -> ExprId:
        """Numbers in the range written without exponent, integers without fraction (the
        ``number_spelling="plain"`` option), of the ``kinds`` of spelling (see PLAIN; an integral
        value is written with a fraction only where SPELLED goes without PLAIN, or beside
        FRACTIONAL): a subset of the valid texts, exact on those forms."""
        if not kinds & FRACTIONAL and kinds & PLAIN:
            return self.range(lo, lo_excl, hi, hi_excl, True, plain=True)
        e = self.range(lo, lo_excl, hi, hi_excl, False, plain=True)
        if kinds == EVERY:
            return e
        b = self.b
        spellings = [x for bit, x in ((PLAIN, self.plain_integer), (SPELLED, lambda: self._fraction_text(False)),
                                      (FRACTIONAL, lambda: self._fraction_text(True))) if kinds & bit]
        return b.re_and([e, b.re_or([x() for x in spellings])])

    def plain_number(self) -> ExprId:
        """-?(0|[1-9][0-9]*)(\\.[0-9]+)?: a number written without exponent."""
        if "plain_num" not in self._memo:
            self._memo["plain_num"] = self.b.re_concat([self.OPT_MINUS, self.INT, self.FRAC_ANY])
        return self._memo["plain_num"]

    def exponent_free(self) -> ExprId:
        """The numbers written without exponent, and zero in any spelling: where the regex forms
        are exact (the universe of their complements)."""
        if "exp_free" not in self._memo:
            self._memo["exp_free"] = self.b.re_or([self.plain_number(), self._zero_exp()])
        return self._memo["exp_free"]

    def plain_integer(self) -> ExprId:
        """-?(0|[1-9][0-9]*): an integer written without fraction or exponent (draft 4)."""
        if "plain" not in self._memo:
            self._memo["plain"] = self.b.re_concat([self.OPT_MINUS, self.INT])
        return self._memo["plain"]

    def _zero_exp(self, unsigned: bool = False) -> ExprId:
        return self.b.re_concat([self.b.re_empty() if unsigned else self.OPT_MINUS, self.b.re_literal("0"),
                                 self.FRAC_INT, self.EXP])

    # -- comparisons of canonical integer digit strings -------------------------------------------
    def _int_gt(self, i: str) -> ExprId:
        b, n = self.b, len(i)
        if i == "0":
            return b.re_concat([self.D19, self.Dstar])
        parts = [b.re_concat([self.D19, b.re_repeat(self.D, n, -1)])]
        for k in range(n):
            d = int(i[k])
            if d < 9:
                parts.append(b.re_concat([b.re_literal(i[:k]), self.digits(d + 1, 9), b.re_repeat(self.D, n - k - 1, n - k - 1)]))
        return b.re_or(parts)

    def _int_lt(self, i: str) -> ExprId:
        b, n = self.b, len(i)
        if i == "0":
            return b.re_nothing()
        parts = []
        if n >= 2:
            parts.append(b.re_literal("0"))
            parts.append(b.re_concat([self.D19, b.re_repeat(self.D, 0, n - 2)]))
        for k in range(n):
            lo = 1 if (k == 0 and n > 1) else 0
            d = int(i[k])
            if d - 1 >= lo:
                parts.append(b.re_concat([b.re_literal(i[:k]), self.digits(lo, d - 1), b.re_repeat(self.D, n - k - 1, n - k - 1)]))
        return b.re_or(parts)

    def _int_interval_text(self, lo: int, hi: int, tail) -> ExprId:
        e = self.int_interval(lo, hi)
        return e if tail is None else self.b.re_concat([e, tail])

    def int_interval(self, lo: int, hi: int) -> ExprId:
        """Canonical digit strings of the integers in [lo, hi] (0 <= lo <= hi), built directly:
        the same language as "ge lo" AND "le hi", without a boolean lexeme (an And makes the
        builder search for emptiness and the lexer take intersected derivatives)."""
        b = self.b
        parts = []
        lo_s, hi_s = str(lo), str(hi)
        for n in range(len(lo_s), len(hi_s) + 1):
            a = lo_s if n == len(lo_s) else "1" + "0" * (n - 1)
            z = hi_s if n == len(hi_s) else "9" * n
            parts.append(self._same_length(a, z))
        return parts[0] if len(parts) == 1 else b.re_or(parts)

    def _same_length(self, a: str, z: str) -> ExprId:
        """Digit strings s with len(s) == len(a) == len(z) and a <= s <= z."""
        b = self.b
        k = 0
        while k < len(a) and a[k] == z[k]:
            k += 1
        if k == len(a):
            return b.re_literal(a)
        prefix, n = a[:k], len(a) - k - 1
        da, dz = int(a[k]), int(z[k])
        if a[k + 1:] == "0" * n and z[k + 1:] == "9" * n:
            return b.re_concat([b.re_literal(prefix), self.digits(da, dz), b.re_repeat(self.D, n, n)])
        parts = [b.re_concat([b.re_literal(a[:k + 1]), self._suffix_cmp(a[k + 1:], True)])]
        if da + 1 <= dz - 1:
            parts.append(b.re_concat([b.re_literal(prefix), self.digits(da + 1, dz - 1), b.re_repeat(self.D, n, n)]))
        parts.append(b.re_concat([b.re_literal(z[:k + 1]), self._suffix_cmp(z[k + 1:], False)]))
        return b.re_or(parts)

    def _suffix_cmp(self, s: str, ge: bool) -> ExprId:
        """Digit strings t of len(s) (leading zeros allowed) with t >= s (``ge``) or t <= s."""
        b, n = self.b, len(s)
        parts = [b.re_literal(s)]
        for k in range(n):
            d = int(s[k])
            lo, hi = (d + 1, 9) if ge else (0, d - 1)
            if lo <= hi:
                parts.append(b.re_concat([b.re_literal(s[:k]), self.digits(lo, hi), b.re_repeat(self.D, n - k - 1, n - k - 1)]))
        return parts[0] if len(parts) == 1 else b.re_or(parts)

    # -- comparisons of fraction digit strings (non-empty) with a bound's fraction ----------------
    def _frac_gt(self, f: str) -> ExprId:
        b = self.b
        if not f:
            return b.re_concat([self.Dstar, self.D19, self.Dstar])
        parts = []
        for k in range(len(f)):
            d = int(f[k])
            if d < 9:
                parts.append(b.re_concat([b.re_literal(f[:k]), self.digits(d + 1, 9), self.Dstar]))
        parts.append(b.re_concat([b.re_literal(f), b.re_repeat(b.re_literal("0"), 0, -1), self.D19, self.Dstar]))
        return b.re_or(parts)

    def _frac_eq(self, f: str) -> ExprId:
        b = self.b
        if not f:
            return self.ZEROS1
        return b.re_concat([b.re_literal(f), b.re_repeat(b.re_literal("0"), 0, -1)])

    def _frac_lt(self, f: str) -> ExprId:
        b = self.b
        if not f:
            return b.re_nothing()
        parts = []
        for k in range(len(f)):
            d = int(f[k])
            if d > 0:
                parts.append(b.re_concat([b.re_literal(f[:k]), self.digits(0, d - 1), self.Dstar]))
            if k >= 1:
                parts.append(b.re_literal(f[:k]))
        return b.re_or(parts)

    # -- magnitudes (unsigned number text) compared with a non-negative bound --------------------
    def mag_cmp(self, op: str, bound: Decimal, integer: bool, plain: bool = False) -> ExprId:
        """Number text (no sign) whose value is `op` ("gt", "ge", "lt", "le") `bound`; `integer`:
        integers only; `plain`: no exponent."""
        key = ("mag", op, bound, integer, plain)
        e = self._memo.get(key)
        if e is not None:
            return e
        b = self.b
        if integer:
            # integer bounds only reach here (converted by the caller)
            i = decimal_parts(bound)[0]
            cmp = {"gt": self._int_gt(i), "lt": self._int_lt(i),
                   "ge": b.re_or([self._int_gt(i), b.re_literal(i)]),
                   "le": b.re_or([self._int_lt(i), b.re_literal(i)])}[op]
            e = cmp if plain else b.re_concat([cmp, self.FRAC_INT])
        else:
            i, f = decimal_parts(bound)
            lit_i = b.re_literal(i)
            dot = self.DOT
            if op == "gt":
                e = b.re_or([b.re_concat([self._int_gt(i), self.FRAC_ANY]),
                             b.re_concat([lit_i, dot, self._frac_gt(f)])])
            elif op == "ge":
                tail = self.FRAC_ANY if not f else b.re_concat([dot, b.re_or([self._frac_gt(f), self._frac_eq(f)])])
                e = b.re_or([b.re_concat([self._int_gt(i), self.FRAC_ANY]), b.re_concat([lit_i, tail])])
            elif op == "lt":
                parts = [b.re_concat([self._int_lt(i), self.FRAC_ANY])]
                if f:
                    parts += [lit_i, b.re_concat([lit_i, dot, self._frac_lt(f)])]
                e = b.re_or(parts)
            else:  # le
                parts = [b.re_concat([self._int_lt(i), self.FRAC_ANY]),
                         b.re_concat([lit_i, b.re_repeat(b.re_concat([dot, b.re_or([self._frac_lt(f), self._frac_eq(f)])]), 0, 1)])]
                e = b.re_or(parts)
        self._memo[key] = e
        return e

    def range(self, lo, lo_excl: bool, hi, hi_excl: bool, integer: bool, plain: bool = False) -> ExprId:
        """Numbers in the range (``lo``/``hi`` Decimal or None for unbounded). ``plain``: only
        texts without exponent, and integers without fraction (draft 4), the same language as the
        range AND -?(0|[1-9][0-9]*) but with no boolean lexeme."""
        if lo is None and hi is None:
            if plain:
                return self.plain_integer() if integer else self.plain_number()
            return self.integer() if integer else self.any()
        key = ("range", lo, lo_excl, hi, hi_excl, integer, plain)
        e = self._memo.get(key)
        if e is not None:
            return e
        b = self.b
        no_minus = not self.minus_zero and lo is not None and lo >= 0   # see minus_zero
        # exponent forms: only where the sign alone decides (see the module docstring)
        zero_in = (lo is None or lo < 0 or (lo == 0 and not lo_excl)) and \
                  (hi is None or hi > 0 or (hi == 0 and not hi_excl))
        pos_all = hi is None and (lo is None or lo <= 0)
        neg_all = lo is None and (hi is None or hi >= 0)
        if integer:
            if lo is not None:
                lo = Decimal(int(lo.to_integral_value(rounding="ROUND_FLOOR")) + 1) if lo_excl else \
                    Decimal(int(lo.to_integral_value(rounding="ROUND_CEILING")))
                lo_excl = False
            if hi is not None:
                hi = Decimal(int(hi.to_integral_value(rounding="ROUND_CEILING")) - 1) if hi_excl else \
                    Decimal(int(hi.to_integral_value(rounding="ROUND_FLOOR")))
                hi_excl = False
        parts = []
        if lo is None or hi is None or lo < hi or (lo == hi and not (lo_excl or hi_excl)):
            tail = (self.FRAC_INT if not plain else None) if integer else self.FRAC_ANY
            unsigned = b.re_concat([self.INT, tail]) if tail is not None else self.INT
            # non-negative text: value m in [lo, hi]
            if not (hi is not None and (hi < 0 or (hi == 0 and hi_excl))):
                conds = []
                if lo is not None and (lo > 0 or (lo == 0 and lo_excl)):
                    conds.append(self.mag_cmp("gt" if lo_excl else "ge", lo, integer, plain))
                if hi is not None:
                    conds.append(self.mag_cmp("lt" if hi_excl else "le", hi, integer, plain))
                if integer and len(conds) == 2:   # (integer bounds are inclusive here)
                    conds = [self._int_interval_text(int(lo), int(hi), tail)]
                parts.append(b.re_and(conds) if conds else unsigned)
            # "-" m: value -m in [lo, hi], i.e. m in [-hi, -lo]
            if not no_minus and not (lo is not None and (lo > 0 or (lo == 0 and lo_excl))):
                conds = []
                if hi is not None and (hi < 0 or (hi == 0 and hi_excl)):
                    conds.append(self.mag_cmp("gt" if hi_excl else "ge", hi.copy_negate(), integer, plain))
                if lo is not None:
                    conds.append(self.mag_cmp("lt" if lo_excl else "le", lo.copy_negate(), integer, plain))
                if integer and len(conds) == 2:
                    conds = [self._int_interval_text(-int(hi), -int(lo), tail)]
                parts.append(b.re_concat([self.MINUS, b.re_and(conds) if conds else unsigned]))
        if plain:   # exponent forms are not plain
            e = b.re_or(parts) if parts else b.re_nothing()
            self._memo[key] = e
            return e
        if zero_in:
            parts.append(self._zero_exp(no_minus))
        if pos_all or neg_all:
            mant = b.re_concat([self._nonzero_mantissa(integer), self.EXP_NONNEG if integer else self.EXP])
            if pos_all:
                parts.append(mant)
            if neg_all:
                parts.append(b.re_concat([self.MINUS, mant]))
        e = b.re_or(parts)
        self._memo[key] = e
        return e

    def _nonzero_mantissa(self, integer: bool) -> ExprId:
        b = self.b
        if integer:
            return b.re_concat([self.D19, self.Dstar, self.FRAC_INT])
        return b.re_or([b.re_concat([self.D19, self.Dstar, self.FRAC_ANY]),
                        b.re_concat([b.re_literal("0."), self.Dstar, self.D19, self.Dstar])])

    # -- multipleOf ---------------------------------------------------------------------------------
    def multiple_of(self, d: Decimal, integer: bool) -> ExprId:
        """Numbers that are an integer multiple of ``d`` (> 0), without exponent unless zero: the
        core's residue automaton (``re_multiple_of``), built lazily, so 0.123456789 (123,456,789
        residues) costs only the states a text reaches. ``d`` = m * 10^e with m past the core's
        19 digits or 2^64 is refused; a power of ten past it (1e30) is m's multiples followed by e
        zeros."""
        key = ("mult", d, integer)
        e = self._memo.get(key)
        if e is None:
            if integer:   # the integral multiples of m / 10^q are the multiples of m / gcd(m, 10^q)
                m, exp = multiple_parts(d)
                d = d if exp >= 0 else Decimal(m // gcd(m, 10 ** -exp))
            e = self._memo[key] = self.b.re_or([self._multiple_body(d), self._zero_exp()])
        return e

    def _multiple_body(self, d: Decimal) -> ExprId:
        m, exp = multiple_parts(d)
        if exp <= 0:
            return self.b.re_multiple_of(format(d, "f"))
        if exp > _MAX_INT_DIGITS:
            raise GrammarError(f"multipleOf {d}: its multiples have more than {_MAX_INT_DIGITS} digits")
        # m * 10^exp divides N exactly where N is (a non-zero multiple of m) followed by exp zeros
        b = self.b
        head = b.re_and([b.re_concat([self.D19, self.Dstar]), b.re_multiple_of(str(m))])
        zeros = b.re_repeat(b.re_literal("0"), exp, exp)
        return b.re_concat([self.OPT_MINUS, b.re_or([b.re_concat([head, zeros]), b.re_literal("0")]), self.FRAC_INT])
