"""The grammar oracle's own reading of GBNF text, and its own samples: nothing of stencil here.

grammar_oracle.CharEarley recognizes the language of an :class:`OGrammar`; this module builds one
from GBNF text written to llama.cpp's grammars/README (``name ::= ...``, ``|``, grouping, ``*``
``+`` ``?`` ``{m}`` ``{m,}`` ``{m,n}`` ``{,n}``, strings with ``\\n \\t \\r \\\\ \\" \\[ \\]
\\xHH \\uHHHH \\UHHHHHHHH``, classes with ranges and ``^``, ``.`` for any character, ``#``
comments, token references ``<[id,...]>`` and ``!<[id]>``), and draws random strings of an
OGrammar (:func:`sample`) and near-misses (:func:`mutate`). oracle_lark.py reads Lark text into
the same structures, with :func:`parse_regex` for its ``/regex/`` terminals.

An expression is a tuple:
  ("cat", items)  ("alt", items)  ("rep", item, lo, hi|None)  ("cls", ((lo, hi), ...))
  ("ref", rule)  ("special", ids)  ("term", item): one terminal, which ``%ignore`` may precede.
"""
from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from typing import Callable, NoReturn

MAX_CP = 0x10FFFF
ANY = ("cls", ((0, 0xD7FF), (0xE000, MAX_CP)))
EMPTY = ("cat", ())
NOTHING = ("alt", ())


class OracleSyntaxError(ValueError):
    """The oracle's parser refuses the text (it knows only the documented syntax)."""


@dataclass
class OGrammar:
    rules: dict                  # name -> expression
    start: str
    ignore: tuple | None = None  # expression of one ignored match (Lark %ignore)
    initial_skip: bool = False   # may an ignored match start at position 0?
    final_skip: bool = False     # may one follow the last terminal? (Lark's reading; not llguidance's)
    terminals: dict = field(default_factory=dict)


def lit(text: str) -> tuple:
    return ("cat", tuple(("cls", ((ord(c), ord(c)),)) for c in text))


def negate(ranges) -> tuple:
    out, nxt = [], 0
    for lo, hi in sorted(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    if nxt <= MAX_CP:
        out.append((nxt, MAX_CP))
    return tuple(out)


# --- GBNF ----------------------------------------------------------------------------------------

_ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_HEX = {"x": 2, "u": 4, "U": 8}


def _is_name(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c in "-_")


class TextReader:
    """A cursor over grammar text (``s``, offset ``i``) for the oracle's GBNF and Lark readers:
    ``fail`` names the offset, ``name`` reads a name of the characters ``is_name`` accepts."""

    def __init__(self, text: str, is_name: Callable[[str], bool]):
        self.s, self.i, self.is_name = text, 0, is_name

    def fail(self, what: str) -> NoReturn:
        raise OracleSyntaxError(f"{what} at offset {self.i}: {self.s[self.i:self.i + 20]!r}")

    def name(self) -> str:
        j = self.i
        while self.i < len(self.s) and self.is_name(self.s[self.i]):
            self.i += 1
        if j == self.i:
            self.fail("expected a name")
        return self.s[j:self.i]


class _Gbnf(TextReader):
    def __init__(self, text: str):
        super().__init__(text, _is_name)
        self.rules: dict = {}

    def space(self) -> None:
        s = self.s
        while self.i < len(s):
            if s[self.i] == "#":
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            elif s[self.i] in " \t\r\n":
                self.i += 1
            else:
                return

    def rule_starts_here(self) -> bool:
        j = self.i
        while j < len(self.s) and _is_name(self.s[j]):
            j += 1
        k = j
        while k < len(self.s) and self.s[k] in " \t":
            k += 1
        return j > self.i and self.s.startswith("::=", k)

    def grammar(self) -> OGrammar:
        self.space()
        while self.i < len(self.s):
            name = self.name()
            self.space()
            if not self.s.startswith("::=", self.i):
                self.fail("expected ::=")
            self.i += 3
            if name in self.rules:
                self.fail(f"rule {name} defined twice")
            self.rules[name] = self.alternatives(top=True)
        if "root" not in self.rules:
            raise OracleSyntaxError("no rule 'root'")
        return OGrammar(self.rules, "root")

    def alternatives(self, top: bool) -> tuple:
        alts = [self.sequence(top)]
        while self.i < len(self.s) and self.s[self.i] == "|":
            self.i += 1
            alts.append(self.sequence(top))
        return alts[0] if len(alts) == 1 else ("alt", tuple(alts))

    def sequence(self, top: bool) -> tuple:
        items = []
        while True:
            self.space()
            if self.i >= len(self.s) or self.s[self.i] in "|)" or (top and self.rule_starts_here()):
                return ("cat", tuple(items))
            items.append(self.postfix(self.atom()))

    def atom(self) -> tuple:
        s, c = self.s, self.s[self.i]
        if c == '"':
            self.i += 1
            out = []
            while self.i < len(s) and s[self.i] != '"':
                out.append(self.char())
            if self.i >= len(s):
                self.fail("unclosed string")
            self.i += 1
            return ("cat", tuple(("cls", ((ord(x), ord(x)),)) for x in out))
        if c == "[":
            return self.char_class()
        if c == ".":
            self.i += 1
            return ANY
        if c == "(":
            self.i += 1
            body = self.alternatives(top=False)
            if self.i >= len(s) or s[self.i] != ")":
                self.fail("expected )")
            self.i += 1
            return body
        if c == "<" or (c == "!" and s.startswith("<", self.i + 1)):
            return self.token_ref()
        if _is_name(c):
            return ("ref", self.name())
        self.fail("unexpected character")

    def char(self) -> str:
        s = self.s
        if s[self.i] != "\\":
            self.i += 1
            return s[self.i - 1]
        e = s[self.i + 1:self.i + 2]
        if e in _ESC:
            self.i += 2
            return _ESC[e]
        if e in _HEX:
            digits = s[self.i + 2:self.i + 2 + _HEX[e]]
            if len(digits) != _HEX[e] or any(d not in "0123456789abcdefABCDEF" for d in digits):
                self.fail("bad hex escape")
            self.i += 2 + _HEX[e]
            return chr(int(digits, 16))
        self.fail("unknown escape")

    def char_class(self) -> tuple:
        s = self.s
        self.i += 1
        neg = s.startswith("^", self.i)
        self.i += neg
        ranges = []
        while self.i < len(s) and s[self.i] != "]":
            lo = self.char()
            hi = lo
            if s.startswith("-", self.i) and not s.startswith("-]", self.i):
                self.i += 1
                hi = self.char()
            if ord(hi) < ord(lo):
                self.fail("bad range")
            ranges.append((ord(lo), ord(hi)))
        if self.i >= len(s):
            self.fail("unclosed [")
        self.i += 1
        return ("cls", negate(ranges) if neg else tuple(sorted(ranges)))

    def token_ref(self) -> tuple:
        neg = self.s[self.i] == "!"
        self.i += neg + 1
        end = self.s.find(">", self.i)
        body = self.s[self.i:end]
        self.i = end + 1
        if body.startswith("[") and body.endswith("]"):
            ref = ("special", tuple(int(x) for x in body[1:-1].split(",")))
        elif body.startswith("|") and body.endswith("|"):
            ref = ("special_name", "<" + body + ">")
        else:
            self.fail("bad token reference")
        return ("rep", ANY, 1, None) if neg else ref

    def postfix(self, e: tuple) -> tuple:
        s = self.s
        while True:
            self.space()
            c = s[self.i:self.i + 1]
            if c in ("*", "+", "?"):
                self.i += 1
                e = ("rep", e, 1 if c == "+" else 0, 1 if c == "?" else None)
            elif c == "{":
                end = s.find("}", self.i)
                parts = s[self.i + 1:end].replace(" ", "").split(",")
                self.i = end + 1
                lo = int(parts[0] or 0)
                hi = lo if len(parts) == 1 else (int(parts[1]) if parts[1] else None)
                e = ("rep", e, lo, hi)
            else:
                return e


def parse_gbnf(text: str) -> OGrammar:
    """An OGrammar from GBNF text, read by the oracle's own parser (start rule ``root``)."""
    return _Gbnf(text).grammar()


# --- regular expressions (Lark /.../ terminals, Python ``re`` meaning) ----------------------------

_CLASS_CACHE: dict = {}


def _unicode_class(letter: str) -> tuple:
    """\\d \\s \\w as Python's ``re`` reads them in str patterns (Unicode-wide)."""
    if letter not in _CLASS_CACHE:
        test = {"d": lambda c: c.isdecimal(), "s": lambda c: c.isspace(),
                "w": lambda c: c.isalnum() or c == "_"}[letter]
        ranges, start = [], None
        for cp in range(sys.maxunicode + 2):
            ok = cp <= sys.maxunicode and test(chr(cp))
            if ok and start is None:
                start = cp
            elif not ok and start is not None:
                ranges.append((start, cp - 1))
                start = None
        _CLASS_CACHE[letter] = tuple(ranges)
    return _CLASS_CACHE[letter]


_RE_ESC = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "0": "\0"}


class _Regex:
    def __init__(self, pattern: str, flags: str):
        self.s, self.i = pattern, 0
        self.icase, self.dotall = "i" in flags, "s" in flags
        if set(flags) - set("ismu"):
            raise OracleSyntaxError(f"regex flags {flags!r}")

    def fail(self, what: str):
        raise OracleSyntaxError(f"{what} in /{self.s}/ at {self.i}")

    def alternatives(self) -> tuple:
        alts = [self.sequence()]
        while self.s.startswith("|", self.i):
            self.i += 1
            alts.append(self.sequence())
        return alts[0] if len(alts) == 1 else ("alt", tuple(alts))

    def sequence(self) -> tuple:
        items = []
        while self.i < len(self.s) and self.s[self.i] not in "|)":
            items.append(self.quantified(self.atom()))
        return ("cat", tuple(items))

    def quantified(self, e: tuple) -> tuple:
        s = self.s
        while self.i < len(s) and s[self.i] in "*+?{":
            c = s[self.i]
            if c == "{":
                end = s.find("}", self.i)
                parts = s[self.i + 1:end].split(",")
                if end < 0 or not all(p.isdigit() or p == "" for p in parts) or len(parts) > 2:
                    return e   # Python reads a malformed {..} as literal text: not in the oracle
                self.i = end + 1
                lo = int(parts[0] or 0)
                hi = lo if len(parts) == 1 else (int(parts[1]) if parts[1] else None)
                e = ("rep", e, lo, hi)
            else:
                self.i += 1
                e = ("rep", e, 1 if c == "+" else 0, 1 if c == "?" else None)
            if s.startswith("?", self.i):   # lazy: the same language
                self.i += 1
        return e

    def atom(self) -> tuple:
        s, c = self.s, self.s[self.i]
        self.i += 1
        if c == "(":
            if s.startswith("?:", self.i):
                self.i += 2
            elif s.startswith("?", self.i):
                self.fail("lookaround or group flags")
            body = self.alternatives()
            if not s.startswith(")", self.i):
                self.fail("unclosed (")
            self.i += 1
            return body
        if c == "[":
            return self.char_class()
        if c == ".":
            return ANY if self.dotall else ("cls", negate([(10, 10), (0xD800, 0xDFFF)]))
        if c in "^$":
            self.fail("anchor")
        if c == "\\":
            ranges = self.escape(in_class=False)
            return ("cls", ranges)
        return self.one(ord(c))

    def one(self, cp: int) -> tuple:
        return ("cls", self.cased([(cp, cp)]))

    def cased(self, ranges) -> tuple:
        return with_cases(ranges) if self.icase else tuple(sorted(ranges))

    def escape(self, in_class: bool) -> tuple:
        s = self.s
        e = s[self.i]
        self.i += 1
        if e.lower() in "dsw":
            r = _unicode_class(e.lower())
            return negate(r) if e.isupper() else r
        if e in _RE_ESC:
            cp = ord(_RE_ESC[e])
        elif e in "xuU":
            n = {"x": 2, "u": 4, "U": 8}[e]
            cp = int(s[self.i:self.i + n], 16)
            self.i += n
        elif e == "b" and in_class:
            cp = 8
        elif e.isalnum():
            self.fail(f"escape \\{e}")
        else:
            cp = ord(e)
        return self.cased([(cp, cp)])

    def class_item(self) -> tuple:
        s = self.s
        if s[self.i] == "\\":
            self.i += 1
            r = self.escape(in_class=True)
        else:
            r = ((ord(s[self.i]), ord(s[self.i])),)
            self.i += 1
        return r

    def char_class(self) -> tuple:
        s = self.s
        neg = s.startswith("^", self.i)
        self.i += neg
        ranges, first = [], True
        while self.i < len(s) and (s[self.i] != "]" or first):
            first = False
            lo = self.class_item()
            if s.startswith("-", self.i) and not s.startswith("-]", self.i) and len(lo) == 1 and lo[0][0] == lo[0][1]:
                self.i += 1
                hi = self.class_item()
                ranges.append((lo[0][0], hi[0][1]))
            else:
                ranges.extend(lo)
        if self.i >= len(s):
            self.fail("unclosed [")
        self.i += 1
        ranges = list(self.cased(ranges))
        return ("cls", negate(ranges) if neg else _merge(ranges))


_CASES: dict = {}


def with_cases(ranges) -> tuple:
    """``ranges`` with every code point that Python's ``re`` IGNORECASE matches to one of them
    (so ``(?i:k)`` takes the Kelvin sign, as it does in Lark)."""
    import re
    if not _CASES:   # code points grouped by their lower and upper forms, built once
        for cp in range(sys.maxunicode + 1):
            c = chr(cp)
            for key in (c.lower(), c.upper()):
                _CASES.setdefault(key, set()).add(cp)
    extra = []
    for lo, hi in ranges:
        for cp in range(lo, min(hi, lo + 0x3000) + 1):
            c = chr(cp)
            pattern = re.compile(re.escape(c), re.IGNORECASE)
            for other in _CASES.get(c.lower(), set()) | _CASES.get(c.upper(), set()):
                if pattern.fullmatch(chr(other)):
                    extra.append((other, other))
    return _merge(list(ranges) + extra)


def _merge(ranges) -> tuple:
    out: list = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def parse_regex(pattern: str, flags: str = "") -> tuple:
    """An oracle expression for a Python ``re`` pattern (no anchors, lookarounds or backrefs)."""
    r = _Regex(pattern, flags)
    e = r.alternatives()
    if r.i != len(pattern):
        r.fail("unbalanced )")
    return e


# --- samples -------------------------------------------------------------------------------------

_INF = float("inf")


def _heights(g: OGrammar) -> dict:
    """Per rule, the least derivation depth; infinite for rules that can never finish."""
    h = {name: _INF for name in g.rules}
    changed = True
    while changed:
        changed = False
        for name, e in g.rules.items():
            v = _height(e, h) + 1
            if v < h[name]:
                h[name], changed = v, True
    return h


def _height(e: tuple, h: dict) -> float:
    kind = e[0]
    if kind == "ref":
        return h[e[1]]
    if kind == "cat":
        return max((_height(k, h) for k in e[1]), default=0)
    if kind == "alt":
        return min((_height(k, h) for k in e[1]), default=_INF)
    if kind == "rep":
        return 0 if e[2] == 0 else _height(e[1], h)
    if kind == "term":
        return _height(e[1], h)
    if kind == "cls":
        return 0 if e[1] else _INF
    return 0


def dead_rules(g: OGrammar) -> set:
    """Rules reachable from the start that can never finish (an empty language if the start is
    one): grammars a compiler is right to refuse."""
    h, seen, stack = _heights(g), set(), [g.start]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        todo = [g.rules[name]]
        while todo:
            e = todo.pop()
            if e[0] == "ref":
                stack.append(e[1])
            elif e[0] in ("cat", "alt"):
                todo.extend(e[1])
            elif e[0] in ("rep", "term"):
                todo.append(e[1])
    return {name for name in seen if h[name] == _INF}


class _Sampler:
    def __init__(self, g: OGrammar, rng, max_depth, max_repeat, ignore_prob, max_len):
        self.g, self.rng, self.h = g, rng, _heights(g)
        self.max_depth, self.max_repeat = max_depth, max_repeat
        self.ignore_prob, self.max_len = ignore_prob, max_len
        self.out: list = []
        self.size = 0

    def emit(self, x) -> None:
        self.out.append(x)
        self.size += 1

    def run(self, e: tuple, depth: int) -> None:
        kind, rng = e[0], self.rng
        short = depth > self.max_depth or self.size > self.max_len
        if kind == "cls":
            self.emit(chr(_pick(e[1], rng)))
        elif kind == "cat":
            for k in e[1]:
                self.run(k, depth)
        elif kind == "alt":
            live = [k for k in e[1] if _height(k, self.h) < _INF]
            if short:
                best = min(_height(k, self.h) for k in live)
                live = [k for k in live if _height(k, self.h) == best]
            self.run(rng.choice(live), depth)
        elif kind == "rep":
            lo, hi = e[2], e[3]
            top = lo if short else (lo + self.max_repeat if hi is None else min(hi, lo + self.max_repeat))
            for _ in range(rng.randint(lo, top)):
                self.run(e[1], depth)
        elif kind == "ref":
            self.run(self.g.rules[e[1]], depth + 1)
        elif kind == "term":
            started = self.size > 0 or self.g.initial_skip
            if self.g.ignore is not None and started and rng.random() < self.ignore_prob:
                self.run(self.g.ignore, self.max_depth + 1)
            self.run(e[1], depth)
        elif kind == "special":
            self.emit(rng.choice(e[1]))
        else:
            raise OracleSyntaxError(f"cannot sample {kind}")


def _pick(ranges, rng) -> int:
    # mostly printable ASCII where the class allows it, sometimes the edges and anything else
    ascii_part = [(max(lo, 0x20), min(hi, 0x7E)) for lo, hi in ranges if lo <= 0x7E and hi >= 0x20]
    r = rng.random()
    if ascii_part and r < 0.8:
        lo, hi = rng.choice(ascii_part)
        return rng.randint(lo, hi)
    lo, hi = rng.choice(ranges)
    cp = rng.choice((lo, hi)) if r < 0.9 else rng.randint(lo, min(hi, lo + 0x3000))
    return cp if not 0xD800 <= cp <= 0xDFFF else 0xE000


def sample(g: OGrammar, rng: random.Random, *, max_depth: int = 8, max_repeat: int = 3,
           ignore_prob: float = 0.3, max_len: int = 200) -> list:
    """One random string of ``g``'s language as segments (str characters, int special ids);
    past ``max_depth`` or ``max_len`` the derivation takes the alternatives that finish soonest."""
    s = _Sampler(g, rng, max_depth, max_repeat, ignore_prob, max_len)
    s.run(("ref", g.start), 0)
    if g.ignore is not None and g.final_skip and s.size and rng.random() < ignore_prob:
        s.run(g.ignore, max_depth + 1)
    return s.out


def mutate(text: str, rng: random.Random, chars: str) -> str:
    """A near-miss of ``text``: a character dropped, doubled, replaced or inserted, or a cut."""
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


def alphabet(g: OGrammar) -> str:
    """Characters that the grammar's literals and small classes name (for mutants)."""
    seen: set = set()
    stack = list(g.rules.values()) + ([g.ignore] if g.ignore else [])
    while stack:
        e = stack.pop()
        if e[0] == "cls":
            for lo, hi in e[1][:4]:
                seen.update(chr(c) for c in {lo, min(hi, lo + 2), hi} if not 0xD800 <= c <= 0xDFFF)
        elif e[0] in ("cat", "alt"):
            stack.extend(e[1])
        elif e[0] in ("rep", "term"):
            stack.append(e[1])
    return "".join(sorted(seen))
