"""Random strings from a grammar: test data for any grammar a user brings.

:func:`sample` walks a parsed Lark or GBNF grammar (:mod:`stencil.grammar.ebnf.ast`) and returns one
string of its language as a list of segments: text (``str``) and special-token ids (``int``).
Recursion is kept finite by switching, past ``max_depth``, to the alternatives that finish
soonest; repetitions draw counts near their minimum. :func:`mutate` makes near-misses (one
character dropped, doubled, replaced or inserted, or the text cut short), which are mostly
outside the language: a test must still check each with an independent recognizer.

Example::

    g = parse_gbnf(open("json.gbnf").read())
    rng = random.Random(0)
    text = "".join(sample(g, rng))
"""
from __future__ import annotations

import random
from typing import Optional

from stencil.grammar.regex import ast as regex_ast
from stencil.grammar.ebnf.ast import Alt, EbnfGrammar, JsonSchema, Ref, Rep, Seq, Term, TokenRef, children

__all__ = ["sample", "sample_regex", "mutate", "alphabet"]

_INF = float("inf")


def sample_regex(node, rng: random.Random, max_repeat: int = 3) -> str:
    """One random word of a regex AST (anchors match the empty string)."""
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, regex_ast.Literal):
            out.append(n.text)
        elif isinstance(n, regex_ast.CharClass):
            out.append(chr(_pick_code_point(n.ranges, rng)))
        elif isinstance(n, regex_ast.Concat):
            stack.extend(reversed(n.items))
        elif isinstance(n, regex_ast.Alt):
            live = [k for k in n.items if not isinstance(k, regex_ast.Nothing)]
            stack.append(rng.choice(live))
        elif isinstance(n, regex_ast.Repeat):
            hi = n.min + max_repeat if n.max is None else min(n.max, n.min + max_repeat)
            stack.extend([n.item] * rng.randint(n.min, hi))
        elif isinstance(n, regex_ast.Nothing):
            raise ValueError("cannot sample from an empty language")
    return "".join(out)


def _pick_code_point(ranges, rng: random.Random) -> int:
    # Mostly printable ASCII where the class allows it (readable, tokenizes like real text),
    # sometimes range edges and anything else.
    ascii_part = [(max(lo, 0x20), min(hi, 0x7E)) for lo, hi in ranges if lo <= 0x7E and hi >= 0x20]
    r = rng.random()
    if ascii_part and r < 0.8:
        lo, hi = rng.choice(ascii_part)
        return rng.randint(lo, hi)
    lo, hi = rng.choice(ranges)
    if r < 0.9:
        return rng.choice((lo, hi))
    return rng.randint(lo, min(hi, lo + 0x3000))


class _Sampler:
    def __init__(self, g: EbnfGrammar, rng: random.Random, max_depth: int, max_repeat: int,
                 ignore_prob: float, max_len: int):
        self.g, self.rng = g, rng
        self.max_len = max_len
        self.max_depth, self.max_repeat = max_depth, max_repeat
        self.ignore_prob = ignore_prob
        self.height = self._heights()
        self._node_h: dict = {}

    def _heights(self) -> dict:
        """Per rule, the least derivation depth (how soon it can finish)."""
        h = {name: _INF for name in self.g.rules}
        changed = True
        while changed:
            changed = False
            for name, rd in self.g.rules.items():
                v = self.node_height(rd.body, h) + 1
                if v < h[name]:
                    h[name] = v
                    changed = True
        return h

    def node_height(self, node, h=None) -> float:
        if h is None:
            key = id(node)
            if key not in self._node_h:
                self._node_h[key] = (node, self.node_height(node, self.height))
            return self._node_h[key][1]
        if isinstance(node, Ref):
            return h.get(node.name, _INF)
        if isinstance(node, Seq):
            return max((self.node_height(k, h) for k in node.items), default=0)
        if isinstance(node, Alt):
            return min(self.node_height(k, h) for k in node.items)
        if isinstance(node, Rep):
            return 0 if node.min == 0 else self.node_height(node.item, h)
        return 0

    def run(self) -> list:
        out: list = []
        self.size = 0
        self.emit(Ref(self.g.start), 0, out)
        return _merge(out)

    def emit(self, node, depth: int, out: list) -> None:
        rng = self.rng
        # past the depth or size budget, take the ways out that finish soonest
        deep = depth > self.max_depth or self.size > self.max_len
        if isinstance(node, Ref):
            self.emit(self.g.rules[node.name].body, depth + 1, out)
        elif isinstance(node, Seq):
            for k in node.items:
                self.emit(k, depth, out)
        elif isinstance(node, Alt):
            if deep:
                best = min(self.node_height(k) for k in node.items)
                choices = [k for k in node.items if self.node_height(k) == best]
            else:
                choices = [k for k in node.items if self.node_height(k) < _INF]
            self.emit(rng.choice(choices), depth, out)
        elif isinstance(node, Rep):
            hi = node.min + self.max_repeat if node.max is None else min(node.max, node.min + self.max_repeat)
            n = node.min if deep else rng.randint(node.min, hi)
            for _ in range(n):
                self.emit(node.item, depth, out)
        elif isinstance(node, Term):
            self.emit_term(node, out)
        elif isinstance(node, TokenRef):
            if node.ids is None or node.negated:
                raise ValueError("sampling a token reference by name or a negated one needs the tokenizer")
            out.append(rng.choice(node.ids))
        elif isinstance(node, JsonSchema):
            raise ValueError("sampling from an embedded JSON Schema is not supported")
        else:
            raise AssertionError(type(node).__name__)

    def emit_term(self, node: Term, out: list) -> None:
        # no ignored text before the first terminal unless the grammar allows it (llguidance's rule)
        started = self.size > 0 or self.g.options.get("allow_initial_skip", False)
        if self.g.ignores and started and self.rng.random() < self.ignore_prob:
            out.append(sample_regex(self.rng.choice(self.g.ignores).regex, self.rng, 1))
            self.size += len(out[-1])
        if node.build is not None:
            raise ValueError(f"cannot sample the %regex terminal {node.name or ''}")
        out.append(sample_regex(node.regex, self.rng, 1 if self.size > self.max_len else self.max_repeat))
        self.size += len(out[-1])


def _merge(parts: list) -> list:
    out: list = []
    for p in parts:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        elif p != "":
            out.append(p)
    return out


def sample(g: EbnfGrammar, rng: Optional[random.Random] = None, *, max_depth: int = 8,
           max_repeat: int = 3, ignore_prob: float = 0.0, max_len: int = 300) -> list:
    """One random string of the grammar's language, as segments: ``str`` text and ``int``
    special-token ids. Past ``max_depth`` nested rules or about ``max_len`` characters the walk
    heads for the end. ``ignore_prob`` (Lark): how often to put an ``%ignore`` match before a
    terminal."""
    return _Sampler(g, rng or random.Random(), max_depth, max_repeat, ignore_prob, max_len).run()


def alphabet(g: EbnfGrammar) -> str:
    """Characters the grammar's literals and classes mention (for mutations that stay close)."""
    chars: set[str] = set()
    stack = [rd.body for rd in g.rules.values()]
    while stack:
        n = stack.pop()
        if isinstance(n, Term):
            rs = [n.regex]
            while rs:
                r = rs.pop()
                if isinstance(r, regex_ast.Literal):
                    chars.update(r.text)
                elif isinstance(r, regex_ast.CharClass):
                    for lo, hi in r.ranges[:4]:
                        chars.add(chr(lo))
                        chars.add(chr(hi))
                else:
                    rs.extend(regex_ast.children(r))
        else:
            stack.extend(children(n))
    return "".join(sorted(chars)) or "a"


def mutate(text: str, rng: random.Random, chars: str) -> str:
    """A near-miss of ``text``: drop, double, replace or insert one character, or cut it short."""
    if not text:
        return rng.choice(chars)
    i = rng.randrange(len(text))
    op = rng.randrange(5)
    if op == 0:
        return text[:i] + text[i + 1:]
    if op == 1:
        return text[:i] + text[i] + text[i:]
    if op == 2:
        return text[:i] + rng.choice(chars) + text[i + 1:]
    if op == 3:
        return text[:i] + rng.choice(chars) + text[i:]
    return text[:i]
