"""JSON Schema ``pattern`` as a language: a regex parsed by the regex front-end with its anchors
removed (:func:`pattern_node`), lookaheads right after a leading ``^`` lifted out
(:func:`lift_lookaheads`), and a direct matcher of decoded strings against such a node
(:func:`node_matches`, for property names and consts, where building a lexeme would cost more),
and the strings of a node whose language is small and finite (:func:`node_words`).

Example::

    node = pattern_node("^[a-z]+$")
    node_matches(node, "abc")   # True
"""
from __future__ import annotations

from functools import lru_cache

from stencil.grammar.regex import (ANY_STRING, CharClass, Empty, Literal, Nothing, Repeat, parse_regex,
                                   split_anchors)
from stencil.grammar.regex import unicode
from stencil.grammar.regex.ast import Alt, Concat, alt, concat, has_anchors, nullable

__all__ = ["pattern_node", "node_matches", "node_words", "lift_lookaheads"]


@lru_cache(maxsize=8192)
def pattern_node(pattern: str, anchored: bool = False):
    """Parse a regex and remove its anchors: the anchor-free language of the whole string when
    ``anchored``, else (JSON Schema ``pattern``) of strings containing a match anywhere."""
    node = parse_regex(pattern)
    if not has_anchors(node):
        l00 = node
        l10 = l01 = l11 = None
    else:
        l00, l10, l01, l11 = split_anchors(node)
    if anchored:
        return alt([x for x in (l00, l10, l01, l11) if x is not None], flatten=False)
    if not isinstance(l00, Nothing) and nullable(l00):
        return ANY_STRING
    parts = [concat([ANY_STRING, l00, ANY_STRING], flatten=False)]
    if l10 is not None and l01 is not None and l11 is not None:   # all three or none
        parts += [concat([l10, ANY_STRING], flatten=False), concat([ANY_STRING, l01], flatten=False), l11]
    return alt(parts, flatten=False)


def _class_end(p: str, i: int) -> int:
    """Index just past the class opened at ``p[i] == "["`` (a ``]`` right after ``[`` or ``[^`` is
    a literal, as in the regex front-end)."""
    j = i + 1
    if p.startswith("^", j):
        j += 1
    if p.startswith("]", j):
        j += 1
    while j < len(p):
        if p[j] == "\\":
            j += 2
            continue
        if p[j] == "]":
            return j + 1
        j += 1
    return len(p)


def _scan(p: str, i: int, stop):
    """Walk ``p`` from ``i`` skipping escapes and classes, tracking group depth; return the first
    index where ``stop(char, depth after it)`` holds, or -1."""
    depth = 0
    while i < len(p):
        c = p[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(p, i)
            continue
        depth += (c == "(") - (c == ")")
        if stop(c, depth):
            return i
        i += 1
    return -1


def lift_lookaheads(p: str):
    """("^" + rest, [(negative, inner), ...]) for a pattern ``^(?!A)(?=B)...rest`` whose rest has
    no top-level alternation (which would put the lookaheads in one branch only); else None."""
    if not p.startswith("^("):
        return None
    conds, i = [], 1
    while p.startswith("(?!", i) or p.startswith("(?=", i):
        end = _scan(p, i, lambda c, d: c == ")" and d == 0)
        if end < 0:
            return None
        conds.append((p[i + 2] == "!", p[i + 3:end]))
        i = end + 1
    rest = p[i:]
    if not conds or "(?=" in rest or "(?!" in rest or "(?<" in rest:
        return None
    if _scan(rest, 0, lambda c, d: c == "|" and d == 0) >= 0:
        return None
    return "^" + rest, conds


# --- matching a decoded string against an anchor-free node (used to merge property names) -------

def _ends(node, text: str, starts: frozenset) -> frozenset:
    if not starts:
        return starts
    if isinstance(node, Literal):
        t = node.text
        return frozenset(i + len(t) for i in starts if text.startswith(t, i))
    if isinstance(node, CharClass):
        n = len(text)
        return frozenset(i + 1 for i in starts if i < n and unicode.contains(node.ranges, ord(text[i])))
    if isinstance(node, Concat):
        for it in node.items:
            starts = _ends(it, text, starts)
        return starts
    if isinstance(node, Alt):
        out: set[int] = set()
        for it in node.items:
            out |= _ends(it, text, starts)
        return frozenset(out)
    if isinstance(node, Repeat):
        cur, k = starts, 0
        result = set(cur) if node.min == 0 else set()
        while node.max is None or k < node.max:
            nxt = _ends(node.item, text, cur)
            k += 1
            if not nxt:
                break
            if k >= node.min:
                if nxt <= result:
                    break
                result |= nxt
            elif nxt == cur:  # a nullable item that does not advance: jump to the minimum count
                k = node.min - 1
            cur = nxt
        return frozenset(result)
    if isinstance(node, Empty):
        return starts
    if isinstance(node, Nothing):
        return frozenset()
    raise AssertionError(f"unexpected node {type(node).__name__}")


def node_matches(node, text: str) -> bool:
    """Whether the whole of ``text`` is in the anchor-free node's language."""
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return False
    return len(text) in _ends(node, text, frozenset([0]))


def node_words(node, limit: int):
    """The strings of an anchor-free node's language when it is finite with at most ``limit`` of
    them (a key pattern `^[a-e]$`: five keys), else None.

    Example::

        node_words(pattern_node("^(ab|c)[xy]$"), 10)   # frozenset({'abx', 'aby', 'cx', 'cy'})
    """
    if isinstance(node, Nothing):
        return frozenset()
    if isinstance(node, Empty):
        return frozenset([""])
    if isinstance(node, Literal):
        return frozenset([node.text])
    if isinstance(node, CharClass):
        if sum(hi - lo + 1 for lo, hi in node.ranges) > limit:
            return None
        return frozenset(chr(c) for lo, hi in node.ranges for c in range(lo, hi + 1))
    if isinstance(node, Alt):
        out: set[str] = set()
        for it in node.items:
            w = node_words(it, limit)
            if w is None or len(out | w) > limit:
                return None
            out |= w
        return frozenset(out)
    if isinstance(node, Concat):
        parts = [node_words(it, limit) for it in node.items]
        if any(w is not None and not w for w in parts):   # a part with no string: none at all
            return frozenset()
        return _product(parts, limit)
    if isinstance(node, Repeat):
        item = node_words(node.item, limit)
        if item is None:
            return None
        if not item or item == {""}:   # no string, or the empty one alone: only a count of 0 differs
            return frozenset([""]) if node.min == 0 else item
        if node.max is None or node.max > limit:   # (past `limit` counts, as many strings or more)
            return None
        out = set()
        cur = frozenset([""])
        for k in range(node.max + 1):
            if k >= node.min:
                out |= cur
            if len(out) > limit:
                return None
            if k < node.max:
                nxt = _product([cur, item], limit)
                if nxt is None:
                    return None
                cur = nxt
        return frozenset(out)
    raise AssertionError(f"unexpected node {type(node).__name__}")


def _product(parts: list, limit: int):
    """Every concatenation of one string of each part (None: a part unknown, or past ``limit``)."""
    out = frozenset([""])
    for w in parts:
        if w is None or len(out) * len(w) > limit:
            return None
        out = frozenset(a + b for a in out for b in w)
    return out
