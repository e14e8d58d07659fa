"""Questions about regex languages, decided by the core: the GBNF front-end asks whether two
lexemes share a word (:func:`intersects`) and whether a greedy lexer could run past the end of a
lexeme (:func:`can_run_into`).

Each question is one expression of the core's regex algebra (intersection, concatenation, any
byte string) over the very expressions :func:`~stencil.grammar.regex.build_regex` gives the
grammar, and its answer is whether that expression's language is empty. The core decides
emptiness when it builds a grammar: a lexeme with an empty language is dropped. So a question
is a probe lexeme; a batch of questions is one grammar in a scratch builder (each regex emitted
once), and the lexemes its build keeps, read through the Grammar view, are the "yes" answers.
The answers are exact; where the core's work limit is reached they are "yes", the safe direction for
the caller (a "yes" makes it split a lexeme into smaller ones, which is always exact).

Example::

    can_run_into(parse_regex("[a-z]+"), ((ord("a"), ord("z")),), parse_regex("[a-z]+"))  # True
"""
from __future__ import annotations

from typing import Callable

from stencil._core import BudgetError, GrammarBuilder, GrammarError
from stencil.grammar.deadline import check_deadline
from stencil.grammar.regex import ast as regex_ast
from stencil.grammar.regex.ast import first_chars
from stencil.grammar.regex import build_regex
from stencil.grammar.regex.unicode import ranges_intersect

__all__ = ["can_run_into", "can_run_into_all", "intersects", "intersects_all", "lead_bytes", "first_chars",
           "ranges_intersect"]

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


#: questions answered by one scratch build: its emptiness searches share the core's work limit
BATCH = 1024


class _Scratch:
    """A scratch builder in which each front-end regex is emitted once (by node identity)."""

    def __init__(self):
        self.b = GrammarBuilder()
        self._memo: dict = {}

    def expr(self, node) -> int:
        hit = self._memo.get(id(node))
        if hit is None:
            hit = self._memo[id(node)] = (node, build_regex(self.b, node))   # the node kept alive
        return hit[1]


def _probe(questions: list) -> list[bool]:
    """Whether each question's expression (``question(scratch)``) has a non-empty language: one
    probe lexeme per question in one grammar, whose build drops the empty ones."""
    s = _Scratch()
    b = s.b
    start = b.rule("questions")
    names = []
    first_name: dict = {}   # equal expressions are one lexeme, under the first probe's name
    for i, question in enumerate(questions):
        e = question(s)
        if b.re_nullable(e):   # keeps each probe one lexeme (a nullable one becomes optional)
            e = b.re_and([e, b.re_not(b.re_empty())])
        sym = b.lexeme(e, f"probe{i}")
        if sym not in first_name:
            first_name[sym] = f"probe{i}"
            b.add_alternative(start, [sym])
        names.append(first_name[sym])
    b.add_alternative(start, [b.literal("x", "other")])   # the grammar is never empty
    kept = {lex["name"] for lex in b.build(start).lexemes}
    return [name in kept for name in names]


def _nonempty_all(questions: list) -> list[bool]:
    """:func:`_probe` in batches of BATCH; a batch the core cannot finish within its work limit
    is asked question by question, and a question it cannot finish alone answers True. The
    compilation's deadline (CompileTimeout, no BudgetError) is not a work limit: it ends the
    compilation."""
    out: list[bool] = []
    for k in range(0, len(questions), BATCH):
        check_deadline()
        batch = questions[k:k + BATCH]
        try:
            out.extend(_probe(batch))
        except (BudgetError, GrammarError):
            for question in batch:
                try:
                    out.extend(_probe([question]))
                except (BudgetError, GrammarError):   # the core's work limit
                    out.append(True)
    return out


def _runs_into_question(x, lead: list, y) -> Callable[[_Scratch], int]:
    def question(s: _Scratch) -> int:
        b = s.b
        ex = s.expr(x)
        if b.re_nullable(ex):
            ex = b.re_and([ex, b.re_not(b.re_empty())])
        return b.re_and([b.re_concat([ex, b.re_byte_ranges(lead), b.re_any_byte_string()]), s.expr(y)])
    return question


def can_run_into_all(triples: list) -> list[bool]:
    """:func:`can_run_into` for each ``(x, follow, y)``, answered in a few scratch builds."""
    out: list = [None] * len(triples)
    asked, questions = [], []
    for i, (x, follow, y) in enumerate(triples):
        lead = lead_bytes(follow)
        if not lead:
            out[i] = False
        elif isinstance(x, regex_ast.Literal) and isinstance(y, regex_ast.Literal):
            t = y.text
            out[i] = (len(t) > len(x.text) and t.startswith(x.text)
                      and any(lo <= _lead_byte(t[len(x.text)]) <= hi for lo, hi in lead))
        else:
            asked.append(i)
            questions.append(_runs_into_question(x, lead, y))
    for i, answer in zip(asked, _nonempty_all(questions)):
        out[i] = answer
    return out


def can_run_into(x, follow, y) -> bool:
    """Whether some non-empty word w of ``x`` and some code point c of ``follow`` make w·c, up to
    c's first UTF-8 byte, the start of a word of ``y``: whether (L(x) without "") · B · any
    bytes meets L(y), B the lead bytes of ``follow``.

    If never, a greedy lexer that has just matched a word of ``x`` and sees a character that may
    follow it cannot be kept going by ``y``: it ends the lexeme exactly where the grammar does.
    """
    return can_run_into_all([(x, follow, y)])[0]


def intersects_all(pairs: list) -> list[bool]:
    """:func:`intersects` for each ``(x, y)``, answered in a few scratch builds."""
    out: list = [None] * len(pairs)
    asked, questions = [], []
    for i, (x, y) in enumerate(pairs):
        if isinstance(x, regex_ast.Literal) and isinstance(y, regex_ast.Literal):
            out[i] = x.text == y.text
        else:
            asked.append(i)
            questions.append(lambda s, x=x, y=y: s.b.re_and([s.expr(x), s.expr(y)]))
    for i, answer in zip(asked, _nonempty_all(questions)):
        out[i] = answer
    return out


def intersects(x, y) -> bool:
    """Whether ``x`` and ``y`` share a non-empty word (a lexeme never matches "")."""
    return intersects_all([(x, y)])[0]
