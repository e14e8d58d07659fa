"""The regex AST: small frozen dataclasses, smart constructors and non-recursive traversal.

Nodes are built through :func:`concat`, :func:`alt` and :func:`repeat`, which keep the tree in a
canonical, compact shape (adjacent literal characters merged, single-character alternatives merged
into one class, ``Nothing`` and ``Empty`` simplified away). Deep trees are fine: every pass over the
tree uses an explicit stack (:func:`postorder`), never Python recursion. Note that the generated
``__eq__``/``__hash__``/``__repr__`` are recursive; use them on small trees only (tests, debugging).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

from stencil.grammar.regex.unicode import Ranges, lone_surrogate, normalize


@dataclass(frozen=True, slots=True)
class Nothing:
    """The empty language (matches no string at all)."""


@dataclass(frozen=True, slots=True)
class Empty:
    """The language holding only the empty string."""


@dataclass(frozen=True, slots=True)
class Literal:
    """Exactly this non-empty text (no surrogate code points)."""
    text: str


@dataclass(frozen=True, slots=True)
class CharClass:
    """One code point in these sorted, merged, non-empty inclusive ranges (never surrogates)."""
    ranges: Ranges


@dataclass(frozen=True, slots=True)
class Concat:
    items: tuple


@dataclass(frozen=True, slots=True)
class Alt:
    items: tuple


@dataclass(frozen=True, slots=True)
class Repeat:
    """``item{min,max}``; ``max`` None means unbounded."""
    item: "RegexNode"
    min: int
    max: Optional[int]


@dataclass(frozen=True, slots=True)
class AnchorStart:
    """``^`` / ``\\A``: only matches at the start of the whole input."""


@dataclass(frozen=True, slots=True)
class AnchorEnd:
    """``$`` / ``\\Z`` / ``\\z``: only matches at the end of the whole input."""


RegexNode = Union[Nothing, Empty, Literal, CharClass, Concat, Alt, Repeat, AnchorStart, AnchorEnd]

NOTHING = Nothing()
EMPTY = Empty()
ANCHOR_START = AnchorStart()
ANCHOR_END = AnchorEnd()


def char_class(ranges) -> RegexNode:
    """A class from arbitrary ranges; a single code point becomes a Literal, no code point Nothing."""
    rs = normalize(ranges)
    if not rs:
        return NOTHING
    if len(rs) == 1 and rs[0][0] == rs[0][1]:
        return Literal(chr(rs[0][0]))
    return CharClass(rs)


def literal(text: str) -> RegexNode:
    if not text:
        return EMPTY
    if lone_surrogate(text) is not None:
        return NOTHING  # a lone surrogate cannot occur in UTF-8 text
    return Literal(text)


def concat(items, flatten: bool = True) -> RegexNode:
    out: list = []
    pending: list[str] = []  # literal text not yet emitted

    def add(node):
        if isinstance(node, Literal):
            pending.append(node.text)
            return
        if pending:
            out.append(Literal("".join(pending)))
            pending.clear()
        out.append(node)

    for it in items:
        if isinstance(it, Nothing):
            return NOTHING
        if isinstance(it, Empty):
            continue
        if flatten and isinstance(it, Concat):
            for sub in it.items:
                add(sub)
        else:
            add(it)
    if pending:
        out.append(Literal("".join(pending)))
    if not out:
        return EMPTY
    if len(out) == 1:
        return out[0]
    return Concat(tuple(out))


def _single_char_ranges(node) -> Optional[Ranges]:
    if isinstance(node, CharClass):
        return node.ranges
    if isinstance(node, Literal) and len(node.text) == 1:
        c = ord(node.text)
        return ((c, c),)
    return None


def alt(items, flatten: bool = True) -> RegexNode:
    out: list = []
    chars: list = []  # ranges of single-character alternatives, merged into one class
    char_pos = -1
    has_empty = False
    stack = list(reversed(list(items)))
    while stack:
        it = stack.pop()
        if isinstance(it, Nothing):
            continue
        if isinstance(it, Empty):
            if not has_empty:
                has_empty = True
                out.append(it)
            continue
        if flatten and isinstance(it, Alt):
            stack.extend(reversed(it.items))
            continue
        rs = _single_char_ranges(it)
        if rs is not None:
            if char_pos < 0:
                char_pos = len(out)
                out.append(None)
            chars.extend(rs)
            continue
        out.append(it)
    if char_pos >= 0:
        out[char_pos] = char_class(chars)
    if not out:
        return NOTHING
    if len(out) == 1:
        return out[0]
    return Alt(tuple(out))


def repeat(item, lo: int, hi: Optional[int]) -> RegexNode:
    if hi is not None and hi < lo:
        return NOTHING
    if hi == 0:
        return EMPTY
    if lo == 1 and hi == 1:
        return item
    if isinstance(item, Empty):
        return EMPTY
    if isinstance(item, Nothing):
        return EMPTY if lo == 0 else NOTHING
    if isinstance(item, Repeat) and item.max is None and item.min <= 1:
        # (x*){m,n} = x*, (x+){m,n} = x{m,}: every count from m upwards is reachable
        return Repeat(item.item, lo * item.min, None)
    return Repeat(item, lo, hi)


def children(node) -> tuple:
    if isinstance(node, (Concat, Alt)):
        return node.items
    if isinstance(node, Repeat):
        return (node.item,)
    return ()


def postorder(root, visit: Callable, memo: Optional[dict] = None, kids_fn: Callable = children):
    """Compute ``visit(node, [results of children])`` bottom-up without recursion.

    Results are memoized by node identity in ``memo`` (which keeps the nodes alive), so a DAG with
    shared sub-trees is visited once per distinct node.
    """
    if memo is None:
        memo = {}
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in memo:
            continue
        kids = kids_fn(node)
        if expanded or not kids:
            memo[key] = (node, visit(node, [memo[id(k)][1] for k in kids]))
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(kids) if id(k) not in memo)
    return memo[id(root)][1]


def _nullable_visit(node, kids) -> bool:
    if isinstance(node, (Empty, AnchorStart, AnchorEnd)):
        return True
    if isinstance(node, Concat):
        return all(kids)
    if isinstance(node, Alt):
        return any(kids)
    if isinstance(node, Repeat):
        return node.min == 0 or kids[0]
    return False


def nullable(node, memo: Optional[dict] = None) -> bool:
    """Whether the empty string is in the language (anchors counted as empty)."""
    return postorder(node, _nullable_visit, memo)


def _first_visit(node, kids):
    if isinstance(node, Literal):
        c = ord(node.text[0])
        return ((c, c),), False
    if isinstance(node, CharClass):
        return node.ranges, False
    if isinstance(node, Concat):
        acc: list = []
        for f, nul in kids:
            acc.extend(f)
            if not nul:
                return normalize(acc), False
        return normalize(acc), True
    if isinstance(node, Alt):
        return normalize(r for f, _ in kids for r in f), any(n for _, n in kids)
    if isinstance(node, Repeat):
        f, nul = kids[0]
        return (f if node.max != 0 else ()), (node.min == 0 or nul)
    return (), isinstance(node, (Empty, AnchorStart, AnchorEnd))


def first_chars(node) -> tuple:
    """(code points a word of the language can start with, whether the language holds "")."""
    return postorder(node, _first_visit)


def has_anchors(node) -> bool:
    return postorder(node, lambda n, kids: isinstance(n, (AnchorStart, AnchorEnd)) or any(kids))
