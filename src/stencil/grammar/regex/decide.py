"""Questions about regex languages, decided by the core: the GBNF front-end asks whether two
lexemes share a word (:func:`intersects`) and whether a greedy lexer could run past the end of a
lexeme (:func:`can_run_into`).

Each question is one expression of the core's regex algebra (intersection, concatenation, any
byte string) over the very expressions :func:`~stencil.grammar.regex.build_regex` gives the
grammar, and its answer is whether that expression's language is empty. The core decides
emptiness when it builds a grammar: a lexeme with an empty language is dropped. So a question
is a two-lexeme probe grammar in a scratch builder, read back through the Grammar view. The
answers are exact; where the core's work budget runs out they are "yes", the safe direction for
the caller (a "yes" makes it split a lexeme into smaller ones, which is always exact).

Example::

    can_run_into(parse_regex("[a-z]+"), ((ord("a"), ord("z")),), parse_regex("[a-z]+"))  # True
"""
from __future__ import annotations

from typing import Callable

from stencil._core import GrammarBuilder, GrammarError
from stencil.grammar.regex import ast as R
from stencil.grammar.regex.ast import first_chars
from stencil.grammar.regex import build_regex
from stencil.grammar.regex.unicode import ranges_intersect

__all__ = ["can_run_into", "intersects", "lead_bytes", "first_chars", "ranges_intersect"]

# UTF-8 lead bytes by length: (first code point, last code point, lead byte marker, payload shift)
_TIERS = ((0x80, 0x7FF, 0xC0, 6), (0x800, 0xFFFF, 0xE0, 12), (0x10000, 0x10FFFF, 0xF0, 18))


def lead_bytes(ranges) -> list[tuple[int, int]]:
    """The first UTF-8 bytes of the code points in ``ranges``, as byte ranges.

    After a complete lexeme the lexer sees the next character one byte at a time, so another
    lexeme may stay alive on that first byte alone."""
    out = []
    for lo, hi in ranges:
        if lo < 0x80:
            out.append((lo, min(hi, 0x7F)))
        for tlo, thi, mark, shift in _TIERS:
            a, b = max(lo, tlo), min(hi, thi)
            if a <= b:
                out.append((mark | (a >> shift), mark | (b >> shift)))
    return out


def _lead_byte(ch: str) -> int:
    return ch.encode("utf-8", "surrogatepass")[0]


def _nonempty(question: Callable[[GrammarBuilder], int]) -> bool:
    """Whether the expression ``question(b)`` builds has a non-empty language (True when the
    core cannot tell within its budget)."""
    b = GrammarBuilder()
    try:
        start = b.rule("question")
        b.add_alternative(start, [b.lexeme(question(b), "probe")])
        b.add_alternative(start, [b.literal("x", "other")])   # the grammar is never empty
        return any(lex["name"] == "probe" for lex in b.build(start).lexemes)
    except GrammarError:   # the core's work budget
        return True


def can_run_into(x, follow, y) -> bool:
    """Whether some non-empty word w of ``x`` and some code point c of ``follow`` make w·c, up to
    c's first UTF-8 byte, the start of a word of ``y``: whether (L(x) without "") · B · any
    bytes meets L(y), B the lead bytes of ``follow``.

    If never, a greedy lexer that has just matched a word of ``x`` and sees a character that may
    follow it cannot be kept going by ``y``: it ends the lexeme exactly where the grammar does.
    """
    lead = lead_bytes(follow)
    if not lead:
        return False
    if isinstance(x, R.Literal) and isinstance(y, R.Literal):
        t = y.text
        return (len(t) > len(x.text) and t.startswith(x.text)
                and any(lo <= _lead_byte(t[len(x.text)]) <= hi for lo, hi in lead))

    def question(b: GrammarBuilder) -> int:
        ex = build_regex(b, x)
        if b.re_nullable(ex):
            ex = b.re_and([ex, b.re_not(b.re_empty())])
        return b.re_and([b.re_concat([ex, b.re_byte_ranges(lead), b.re_any_byte_string()]), build_regex(b, y)])

    return _nonempty(question)


def intersects(x, y) -> bool:
    """Whether ``x`` and ``y`` share a non-empty word (a lexeme never matches "")."""
    if isinstance(x, R.Literal) and isinstance(y, R.Literal):
        return x.text == y.text
    return _nonempty(lambda b: b.re_and([build_regex(b, x), build_regex(b, y)]))
