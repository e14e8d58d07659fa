"""What each of a regex's first (or last) code points can be: a cheap, sound test that two regexes
share no string.

Deciding that two patterns never match one string needs the core's emptiness search on their
intersection (a grammar build, about a millisecond). Most pairs met in practice differ in a fixed
part that every string of each has at the same place: ``^name:(en|nl)$`` against
``^url:(en|nl)$``, or ``^contacts:[0-3]:surName$`` against ``^contacts:[0-3]:givenName$``. Such
pairs are told apart here without building anything; the others are left to the core.

Example::

    surely_disjoint(pattern_node("^a[0-9]$"), pattern_node("^b"))   # True
    surely_disjoint(pattern_node("a"), pattern_node("b"))           # False (unsure: "ab" has both)
"""
from __future__ import annotations

from stencil.grammar.regex.ast import (Alt, AnchorEnd, AnchorStart, CharClass, Concat, Empty, Literal, Nothing,
                                       Repeat, RegexNode, postorder)
from stencil.grammar.regex.unicode import ranges_intersect
from stencil.grammar.regex.unicode import normalize

__all__ = ["positions", "surely_disjoint", "ends", "ends_disjoint"]

#: positions followed from each end; a difference further in is left to the core
LIMIT = 32

# A node's summary: None when its language is empty, else (sets, fixed): every string of the
# language has at least len(sets) code points, its i-th (from the chosen end) in sets[i]; fixed
# means every string has exactly len(sets) code points.
_Summary = tuple | None


def _join_alternatives(kids: list) -> _Summary:
    live = [k for k in kids if k is not None]
    if not live:
        return None
    lengths = {len(s) for s, _ in live}
    fixed = all(f for _, f in live) and len(lengths) == 1
    n = min(lengths)
    sets = tuple(normalize(r for s, _ in live for r in s[i]) for i in range(n))
    return sets, fixed


def _visit(reverse: bool):
    def visit(node, kids) -> _Summary:
        if isinstance(node, Nothing):
            return None
        if isinstance(node, (Empty, AnchorStart, AnchorEnd)):
            return (), True
        if isinstance(node, Literal):
            text = node.text[::-1] if reverse else node.text
            return tuple(((ord(c), ord(c)),) for c in text[:LIMIT]), len(text) <= LIMIT
        if isinstance(node, CharClass):
            return (node.ranges,), True
        if isinstance(node, Concat):
            if any(k is None for k in kids):
                return None
            sets: list = []
            for s, fixed in (reversed(kids) if reverse else kids):
                sets.extend(s)
                if not fixed or len(sets) > LIMIT:
                    return tuple(sets[:LIMIT]), False
            return tuple(sets), True
        if isinstance(node, Alt):
            return _join_alternatives(kids)
        if isinstance(node, Repeat):
            item = kids[0]
            if item is None:
                return ((), True) if node.min == 0 else None
            s, fixed = item
            if node.min == 0:
                return (), node.max == 0 or (fixed and not s)
            if not fixed:
                return s, False
            count = min(node.min, LIMIT // max(1, len(s)) + 1)
            sets = (s * count)[:LIMIT]
            return sets, node.max == node.min and len(s) * node.min <= LIMIT
        raise AssertionError(f"unexpected node {type(node).__name__}")
    return visit


_FORWARD, _BACKWARD = _visit(False), _visit(True)


def positions(node: RegexNode, from_end: bool = False) -> _Summary:
    """``(sets, fixed)`` for ``node``'s first (or, ``from_end``, last) code points, or None when its
    language is empty; see the module's docstring."""
    return postorder(node, _BACKWARD if from_end else _FORWARD)


def ends(node: RegexNode) -> tuple:
    """``(positions(node), positions(node, from_end=True))``: what :func:`ends_disjoint` compares
    (a caller that tests one regex against many computes it once)."""
    return positions(node), positions(node, True)


def surely_disjoint(a: RegexNode, b: RegexNode) -> bool:
    """True only if no string matches both ``a`` and ``b`` (anchor-free nodes, whole strings);
    False when unsure."""
    return ends_disjoint(ends(a), ends(b))


def ends_disjoint(ea: tuple, eb: tuple) -> bool:
    """:func:`surely_disjoint` of two regexes given by their :func:`ends`."""
    for pa, pb in zip(ea, eb):
        if pa is None or pb is None:
            return True
        (sa, fa), (sb, fb) = pa, pb
        if (fa and fb and len(sa) != len(sb)) or (fa and len(sb) > len(sa)) or (fb and len(sa) > len(sb)):
            return True   # every string of one is shorter than every string of the other
        if any(not ranges_intersect(x, y) for x, y in zip(sa, sb)):
            return True
    return False
