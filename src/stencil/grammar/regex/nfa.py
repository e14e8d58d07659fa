"""Small code-point NFAs over regex ASTs, for one question the GBNF front-end must answer:
can a greedy lexer run past the end of a lexeme? (:func:`can_run_into`).

The automata are Thompson NFAs whose edges carry code-point range sets. Bounded repetitions with
large counts are widened (``x{2,500}`` becomes ``x{2,}``) and a work budget caps every search; both
only make the answer "yes" more often, which is the safe direction for the caller (a "yes" makes
it split a lexeme into characters, which is always exact).

Example::

    can_run_into(parse_regex("[a-z]+"), ((ord("a"), ord("z")),), parse_regex("[a-z]+"))  # True
"""
from __future__ import annotations

from collections import deque

from stencil.grammar.regex import ast as R
from stencil.grammar.regex import unicode as U

__all__ = ["can_run_into", "intersects", "lead_byte_closure", "first_chars", "ranges_intersect"]

_WIDEN_AT = 24          # repetition counts above this are widened to "or more"
_MAX_STATES = 20_000    # per automaton
_MAX_PAIRS = 400_000    # per search


class _TooBig(Exception):
    pass


class _Nfa:
    def __init__(self):
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple]] = []   # (ranges, target)

    def new(self) -> int:
        if len(self.eps) >= _MAX_STATES:
            raise _TooBig
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def frag(self, node, depth: int = 0) -> tuple[int, int]:
        if depth > 400:
            raise _TooBig
        s = self.new()
        if isinstance(node, R.Literal):
            cur = s
            for ch in node.text:
                nxt = self.new()
                self.edges[cur].append((((ord(ch), ord(ch)),), nxt))
                cur = nxt
            return s, cur
        if isinstance(node, R.CharClass):
            t = self.new()
            self.edges[s].append((node.ranges, t))
            return s, t
        if isinstance(node, R.Empty):
            return s, s
        if isinstance(node, R.Nothing):
            return s, self.new()
        if isinstance(node, R.Concat):
            cur = s
            for item in node.items:
                a, b = self.frag(item, depth + 1)
                self.eps[cur].append(a)
                cur = b
            return s, cur
        if isinstance(node, R.Alt):
            t = self.new()
            for item in node.items:
                a, b = self.frag(item, depth + 1)
                self.eps[s].append(a)
                self.eps[b].append(t)
            return s, t
        if isinstance(node, R.Repeat):
            lo, hi = node.min, node.max
            if lo > _WIDEN_AT or (hi is not None and hi > _WIDEN_AT):
                lo, hi = min(lo, _WIDEN_AT), None
            cur = s
            for _ in range(lo):
                a, b = self.frag(node.item, depth + 1)
                self.eps[cur].append(a)
                cur = b
            if hi is None:
                a, b = self.frag(node.item, depth + 1)
                self.eps[cur].append(a)
                self.eps[b].append(cur)
                return s, cur
            t = self.new()
            self.eps[cur].append(t)
            for _ in range(hi - lo):
                a, b = self.frag(node.item, depth + 1)
                self.eps[cur].append(a)
                self.eps[b].append(t)
                cur = b
            return s, t
        raise _TooBig  # anchors and anything unexpected: give up (the caller splits)

    def live(self, accept: int) -> list[bool]:
        """States from which ``accept`` can be reached."""
        rev: list[list[int]] = [[] for _ in self.eps]
        for s, ts in enumerate(self.eps):
            for t in ts:
                rev[t].append(s)
        for s, es in enumerate(self.edges):
            for _, t in es:
                rev[t].append(s)
        ok = [False] * len(self.eps)
        ok[accept] = True
        stack = [accept]
        while stack:
            for p in rev[stack.pop()]:
                if not ok[p]:
                    ok[p] = True
                    stack.append(p)
        return ok


def ranges_intersect(a, b) -> bool:
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


# UTF-8 lead byte blocks: code points sharing a first byte
_TIERS = ((0x80, 0x7FF, 6), (0x800, 0xFFFF, 12), (0x10000, U.MAX_CP, 18))


def lead_byte_closure(ranges) -> tuple:
    """All code points whose UTF-8 encoding starts with the same byte as one in ``ranges``.

    After a complete lexeme the lexer sees the next character one byte at a time, so another
    lexeme may stay alive on that first byte alone."""
    out = []
    for lo, hi in ranges:
        if lo < 0x80:
            out.append((lo, min(hi, 0x7F)))
        for tlo, thi, shift in _TIERS:
            a, b = max(lo, tlo), min(hi, thi)
            if a <= b:
                out.append(((a >> shift) << shift, min(thi, ((b >> shift) << shift) + (1 << shift) - 1)))
    return U.normalize(out)


def _first_visit(node, kids):
    if isinstance(node, R.Literal):
        c = ord(node.text[0])
        return ((c, c),), False
    if isinstance(node, R.CharClass):
        return node.ranges, False
    if isinstance(node, R.Concat):
        acc: list = []
        for f, nul in kids:
            acc.extend(f)
            if not nul:
                return U.normalize(acc), False
        return U.normalize(acc), True
    if isinstance(node, R.Alt):
        return U.normalize(r for f, _ in kids for r in f), any(n for _, n in kids)
    if isinstance(node, R.Repeat):
        f, nul = kids[0]
        return (f if node.max != 0 else ()), (node.min == 0 or nul)
    return (), isinstance(node, (R.Empty, R.AnchorStart, R.AnchorEnd))


def first_chars(node) -> tuple:
    """(code points a word of the language can start with, whether the language holds "")."""
    return R.postorder(node, _first_visit)


def can_run_into(x, follow, y) -> bool:
    """Whether some non-empty word w of ``x`` and some code point c of ``follow`` (widened to its
    UTF-8 lead byte) make w·c the start of a word of ``y``.

    If never, a greedy lexer that has just matched a word of ``x`` and sees a character that may
    follow it cannot be kept going by ``y``: it ends the lexeme exactly where the grammar does.
    Any doubt (budgets) answers True.
    """
    follow = lead_byte_closure(follow)
    if not follow:
        return False
    if isinstance(x, R.Literal) and isinstance(y, R.Literal):
        t = y.text
        return (len(t) > len(x.text) and t.startswith(x.text)
                and ranges_intersect(((ord(t[len(x.text)]),) * 2,), follow))
    try:
        nx, ny = _Nfa(), _Nfa()
        xs, xa = nx.frag(x)
        ys, ya = ny.frag(y)
    except _TooBig:
        return True
    live = ny.live(ya)
    # states (x state, y state, x has read something)
    start = (xs, ys, False)
    seen = {start}
    queue = deque([start])
    while queue:
        if len(seen) > _MAX_PAIRS:
            return True
        sx, sy, nonempty = queue.popleft()
        if sx == xa and nonempty:
            for rs, t in ny.edges[sy]:
                if live[t] and ranges_intersect(rs, follow):
                    return True
        nxt = [(t, sy, nonempty) for t in nx.eps[sx]] + [(sx, t, nonempty) for t in ny.eps[sy]]
        for rx, tx in nx.edges[sx]:
            for ry, ty in ny.edges[sy]:
                if live[ty] and ranges_intersect(rx, ry):
                    nxt.append((tx, ty, True))
        for st in nxt:
            if st not in seen:
                seen.add(st)
                queue.append(st)
    return False


def intersects(x, y) -> bool:
    """Whether ``x`` and ``y`` share a non-empty word (True when in doubt)."""
    if isinstance(x, R.Literal) and isinstance(y, R.Literal):
        return x.text == y.text
    try:
        nx, ny = _Nfa(), _Nfa()
        xs, xa = nx.frag(x)
        ys, ya = ny.frag(y)
    except _TooBig:
        return True
    start = (xs, ys, False)
    seen = {start}
    queue = deque([start])
    while queue:
        if len(seen) > _MAX_PAIRS:
            return True
        sx, sy, nonempty = queue.popleft()
        if sx == xa and sy == ya and nonempty:
            return True
        nxt = [(t, sy, nonempty) for t in nx.eps[sx]] + [(sx, t, nonempty) for t in ny.eps[sy]]
        for rx, tx in nx.edges[sx]:
            for ry, ty in ny.edges[sy]:
                if ranges_intersect(rx, ry):
                    nxt.append((tx, ty, True))
        for st in nxt:
            if st not in seen:
                seen.add(st)
                queue.append(st)
    return False
