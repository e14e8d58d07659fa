"""Number and string formulas (:mod:`..core.formulas`) as regular expressions in the core's
builder: the one lexeme of each scalar type part of a schema.

Example::

    sc = Scalars(b)
    num = sc.number(Range(Decimal(0), False, None, False))   # a regex id: numbers >= 0
"""
from __future__ import annotations

from stencil.grammar.json.schema.core.formats import format_spec
from stencil.grammar.json.schema.core.formulas import (FALSE, INTEGER, PLAIN_INTEGER, TRUE, And, Const, Format, Integer,
                                                       Length, MultipleOf, Not, Or, Pattern, Range, num_consts,
                                                       num_spellings, str_consts)
from stencil._core import ExprId, GrammarError
from stencil.grammar.deadline import check_deadline
from stencil.grammar.ebnf.ast import shared_expr
from stencil.grammar.json.schema.lang.numbers import MAX_RESIDUES_BESIDE, JsonNumbers, multiple_parts, range_union
from stencil.grammar.json.schema.lang.strings import JsonStrings

__all__ = ["Scalars", "length_set"]

#: values per number-set expression: a state's canonical form and its serialized key list the values
#: it can still reach (every one in the first states), so a huge enum is an Or of sets of this size
_SET_CHUNK = 4096
#: draft 4's integers in a set are written out as text below this many digits (longer ones take
#: the range forms)
_PLAIN_DIGITS = 1000


def _shared(b, kind, *args):
    """``kind(b, *args)`` once for builder ``b``'s views that share their memos: a format's encoded
    language, the number expressions, are built once for every schema of a tool set (both build
    builder-level expressions only, never rules)."""
    return shared_expr(b, (kind.__name__, *args), lambda: kind(b, *args))


class Scalars:
    """Number and string formulas as regular expressions (memoized per builder)."""

    def __init__(self, b, string_spelling: str = "any", plain_numbers: bool = False, escapes: str | None = None,
                 minus_zero: bool = True):
        self.b = b
        self.strings = _shared(b, JsonStrings, string_spelling, escapes)
        self.plain_numbers = plain_numbers
        self.numbers = _shared(b, JsonNumbers, minus_zero)
        self._num: dict = {}
        self._str: dict = {}

    # -- numbers ----------------------------------------------------------------------------------
    def number(self, f, exact: bool = True) -> ExprId:
        """The number lexeme of formula ``f``. ``exact``: a formula of ranges, integrality (both
        drafts') and their complements is a union of the core's number-range expressions (every
        spelling compared exactly); other formulas (multipleOf) take the regex forms, under whose
        complements and intersections emptiness stays decidable, exact on the numbers written
        without exponent (and zero)."""
        key = (f, exact)
        e = self._num.get(key)
        if e is None:
            e = self._num[key] = self._number(f, exact)
        return e

    def _number(self, f, exact: bool) -> ExprId:
        b, nums = self.b, self.numbers
        if exact and not self.plain_numbers:
            e = self._number_set(f)
            if e is not None:
                return e
        alts = range_union(f) if exact else None
        if alts is not None:   # ranges, integrality and their complements: exact in every spelling
            make = nums.plain_range if self.plain_numbers else nums.exact_range
            exprs = []
            for i, a in enumerate(alts):   # an enum of 100,000 numbers: seconds of expressions
                if i % 256 == 0:
                    check_deadline()
                exprs.append(make(*a))
            return b.re_or(exprs) if exprs else b.re_nothing()
        k = type(f)
        if f == TRUE:
            return nums.any()
        if f == FALSE:
            return b.re_nothing()
        if k is Or:
            return b.re_or([self.number(x, exact) for x in f.items])
        if k is Not:   # among the texts the regex forms decide exactly (see numbers.py)
            universe = nums.plain_number() if self.plain_numbers else nums.exponent_free()
            return b.re_and([universe, b.re_not(self.number(f.item, False))])
        items = f.items if k is And else (f,)
        lo = hi = None
        lo_x = hi_x = False
        integer = plain = False
        mults, others = [], []
        for x in items:
            if type(x) is Range:
                low, lx, h, hx = x.lo, x.lo_excl, x.hi, x.hi_excl
                if low is not None and (lo is None or low > lo or (low == lo and lx)):
                    lo, lo_x = low, lx
                if h is not None and (hi is None or h < hi or (h == hi and hx)):
                    hi, hi_x = h, hx
            elif type(x) is Integer:
                integer = True
                plain = plain or x == PLAIN_INTEGER
            elif type(x) is MultipleOf:
                mults.append(x.divisor)
            else:
                others.append(x)
        plain = plain or self.plain_numbers
        if mults and (lo is not None or hi is not None or len(mults) > 1 or others or plain):
            _check_residues(mults)
        # a multipleOf alone is its own number syntax (integral with integer): no intersection
        base = [] if mults and lo is None and hi is None and not plain else [nums.range(lo, lo_x, hi, hi_x, integer, plain)]
        parts = base + [nums.multiple_of(d, integer) for d in mults] + [self.number(x, False) for x in others]
        return parts[0] if len(parts) == 1 else b.re_and(parts)

    def _number_set(self, f) -> ExprId | None:
        """A formula that allows a finite set of values (an enum, with or without ``type``) as the
        core's number-set expressions, each value in every spelling: one lexer state whatever the
        count, where an Or of one range per value had the lexer derive every value at each byte.
        Values that draft 4's ``integer`` allows only as plain integers are those texts. None where
        ``f`` is not such a set (or is one value: its range serves)."""
        values = num_consts(f)
        if values is None or len(values) < 2:
            return None
        every, plain = [], []
        for v, x in num_spellings(f, sorted(values)).items():
            if x == TRUE or x == INTEGER:
                every.append(v)
            elif x == PLAIN_INTEGER and v.adjusted() < _PLAIN_DIGITS:
                plain.append(v)
            elif x != FALSE:
                return None   # a spelling rule the set cannot say (under a Not)
        b = self.b
        parts = []
        for i in range(0, len(every), _SET_CHUNK):
            check_deadline()
            parts.append(b.re_number_set([str(v) for v in every[i:i + _SET_CHUNK]], self.numbers.minus_zero))
        texts = [str(int(v)) for v in plain] + (["-0"] if 0 in plain and self.numbers.minus_zero else [])
        parts += [b.re_literal(t) for t in texts]
        return b.re_or(parts) if len(parts) != 1 else parts[0]

    # -- strings (the body between the quotes) ----------------------------------------------------
    def string_body(self, f) -> ExprId:
        e = self._str.get(f)
        if e is None:
            e = self._str[f] = self._string(f)
        return e

    def _string(self, f) -> ExprId:
        b, s = self.b, self.strings
        k = type(f)
        if f == TRUE:
            return s.any_body()
        if f == FALSE:
            return b.re_nothing()
        if k is Const:
            return s.text(f.text)
        if k is Pattern:
            return s.pattern(f.pattern)
        if k is Length:
            return s.length(f.lo, f.hi)
        if k is Format:
            node, max_len = format_spec(f.name)
            e = s.node(node)
            return e if max_len is None else b.re_and([e, s.length(0, max_len)])
        consts = str_consts(f)
        if consts is not None:   # a finite set (enum, const): no regex algebra needed
            return b.re_or([s.text(c) for c in sorted(consts)]) if consts else b.re_nothing()
        if k is not And:
            lengths = length_set(f)
            if lengths is not None:   # lengths alone (oneOf's branches that differ by maxLength): counted bodies
                return b.re_or([s.length(lo, hi) for lo, hi in lengths]) if lengths else b.re_nothing()
            if k is Or:
                return b.re_or([self.string_body(x) for x in f.items])
            return b.re_and([s.any_body(), b.re_not(self.string_body(f.item))])   # Not
        spans: Spans = [(0, None)]
        parts = []
        for x in f.items:  # the items of lengths alone as one set of ranges, the rest intersected
            got = length_set(x)
            if got is None:
                parts.append(self.string_body(x))
            else:
                spans = _meet(spans, got)
        if not spans:
            return b.re_nothing()
        if spans != [(0, None)] or not parts:
            parts.append(b.re_or([s.length(lo, hi) for lo, hi in spans]))
        return parts[0] if len(parts) == 1 else b.re_and(parts)


#: a set of string lengths: sorted disjoint ranges (lo, hi), hi None for unbounded
Spans = list[tuple[int, int | None]]


def length_set(f) -> Spans | None:
    """The lengths a formula of Length atoms alone admits (under And, Or, Not), as ranges; None
    where another atom takes part. A length excluded from another (a oneOf's branches that
    differ by maxLength: at most 2048 and not at most 255) is then one counted body, not an
    intersection with a complement, whose every length is a lexer state of its own, each costly.

    >>> length_set(And((Length(0, 2048), Not(Length(0, 255)))))
    [(256, 2048)]
    """
    k = type(f)
    if k is Length:
        return [(f.lo, f.hi)] if f.hi is None or f.lo <= f.hi else []
    if k is Not:
        inner = length_set(f.item)
        return None if inner is None else _complement(inner)
    if k is And or k is Or:
        out: Spans = [(0, None)] if k is And else []
        for item in f.items:
            x = length_set(item)
            if x is None:
                return None
            out = _meet(out, x) if k is And else _complement(_meet(_complement(out), _complement(x)))
        return out
    return None


def _complement(a: Spans) -> Spans:
    out: Spans = []
    at: int | None = 0
    for lo, hi in a:
        if at is not None and lo > at:
            out.append((at, lo - 1))
        at = None if hi is None else hi + 1
    if at is not None:
        out.append((at, None))
    return out


def _meet(a: Spans, b: Spans) -> Spans:
    out: Spans = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo = max(lo1, lo2)
            hi = hi1 if hi2 is None else (hi2 if hi1 is None else min(hi1, hi2))
            if hi is None or lo <= hi:
                out.append((lo, hi))
    return sorted(out)


def _check_residues(mults) -> None:
    """Refuse multipleOf values whose residues, beside a range or each other, are too many for
    the lexer's search of which prefixes can still end in the language (see MAX_RESIDUES_BESIDE)."""
    n = 1
    for d in mults:
        n *= multiple_parts(d)[0]
    if n > MAX_RESIDUES_BESIDE:
        raise GrammarError(f"multipleOf {', '.join(map(str, mults))} beside a range or another constraint: "
                           f"{n} residues, more than {MAX_RESIDUES_BESIDE} can be enforced exactly there "
                           f"(a multipleOf alone has no such limit)")
