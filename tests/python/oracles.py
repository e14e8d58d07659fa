"""Brute-force oracles for the token-mask tests (test_mask_oracle.py).

Nothing here uses stencil's engine: the oracles decide, from first principles, whether a byte
string is a viable prefix of a language (some string of the language starts with it) and whether
it is complete (in the language). A token mask is then "try every token": token t is allowed iff
accepted bytes + bytes(t) is viable; EOS iff the accepted bytes are complete.

* UTF-8: the languages are over Unicode code points. A byte string is viable iff it is valid
  UTF-8 except possibly for an incomplete last character, and some completion of that character
  gives a viable code-point string. The completions of a partial character form a code-point
  interval (computed arithmetically, minus surrogates and overlongs); within an interval, all
  code points between two consecutive "boundaries" of the grammar (the ends of every class range
  and every literal character) behave identically, so trying one representative per
  boundary-delimited sub-interval is exact.
* Regexes: the third-party ``regex`` module, ``fullmatch(text, partial=True)``. Patterns are given
  in ECMA-262 syntax for stencil and rewritten for Python (``\\d`` -> ``[0-9]``, ``.`` ->
  ``[^\\n\\r\\u2028\\u2029]``, named groups, lazy quantifiers made greedy: same language, and
  the ``regex`` module's partial matching gets lazy ones wrong, e.g.
  ``regex.fullmatch("a??9", "az", partial=True)`` matches); ``\\s`` is refused (Unicode white
  space differs between the two). Random regexes (``random_regex``) come as an AST that renders
  both spellings, samples strings of the language, and converts to a CFG (``regex_to_cfg``) so
  that the Earley oracle gives a second, independent verdict. Nested unbounded repetition is
  kept out of random regexes (the ``regex`` module backtracks exponentially on it).
* Context-free grammars: a tiny description (``CFG`` with the lexemes ``Lit``, ``Cls``, ``Plus``,
  ``StarCls`` (nullable), ``Delim`` (greedy or lazy), ``Word`` (re_and/re_not: a class run minus
  keywords), ``RegexLex`` (a random regex between delimiters), ``Special``, ``Ref`` and the
  composite ``Opt/Star/Many/Rep/Seq/Choice``) that is built once with ``stencil.GrammarBuilder``
  and, independently, desugared into a character-level CFG recognized by a Python Earley parser.
  Each lexeme becomes a character-level rule; ignored white space becomes ``W -> eps | W ws``
  after every lexeme and at the start. stencil lexes greedily; the oracle does NOT model greedy
  lexing. Instead ``greedy_safe`` checks that greedy lexing cannot change the language: whenever
  a complete lexeme string u could be extended by a character c (uc a prefix of some lexeme), c
  must not start any lexeme that can follow (FOLLOW sets at the lexeme level) nor be ignored
  white space; a lazy lexeme must have no such extension at all; and ignored white space must not
  start any lexeme. Under that condition the greedy lexer cuts exactly where every
  character-level parse cuts, so both define the same language and the same viable prefixes.
  Every test grammar (hand-written or random) is checked with it.
* Masks over a vocabulary are computed either token by token (``regex_mask_direct``,
  ``mask_direct_states``) or by walking the
  tokens in sorted byte order and reusing the oracle state of the shared prefix
  (``mask_prefix_walk``); the latter skips a token only when one of its prefixes is not viable,
  which is sound because viable prefixes are closed under taking prefixes. Tokens with empty
  bytes (padding ids) are never allowed (they cannot make progress).
"""
from __future__ import annotations

import bisect
import random
import re
import re._parser as sre_parse
from dataclasses import dataclass, field
from re._constants import (ANY, ASSERT, ASSERT_NOT, AT, ATOMIC_GROUP, BRANCH, CATEGORY, GROUPREF, IN, LITERAL,
                           MAX_REPEAT, MIN_REPEAT, NEGATE, NOT_LITERAL, POSSESSIVE_REPEAT, RANGE, SUBPATTERN)
from typing import Iterable, Sequence

import numpy as np
import regex

MAX_CP = 0x10FFFF
LINE_TERMINATORS = (0x0A, 0x0D, 0x2028, 0x2029)
# Edges that any pattern may depend on implicitly (ASCII categories, line terminators, UTF-8
# length classes, surrogates). Extra boundaries only add representatives, never lose exactness.
DEFAULT_BOUNDARIES = frozenset(
    [0, 0x09, 0x0E, 0x20, 0x21, 0x30, 0x3A, 0x41, 0x5B, 0x5F, 0x60, 0x61, 0x7B, 0x80, 0x800, 0xD800,
     0xE000, 0x10000, MAX_CP + 1]
    + [c for t in LINE_TERMINATORS for c in (t, t + 1)])


# ----------------------------------------------------------------------------------- UTF-8

def char_prefix(seq: bytes):
    """Classify 1..4 bytes meant as (the start of) one UTF-8 character.

    Returns ``("char", cp)`` for a complete valid character, ``("partial", [(lo, hi), ...])`` with
    the code points whose encoding starts with ``seq``, or None when no valid character starts so.
    """
    lead = seq[0]
    if lead < 0x80:
        n, bits = 1, lead
    elif 0xC0 <= lead < 0xE0:
        n, bits = 2, lead & 0x1F
    elif 0xE0 <= lead < 0xF0:
        n, bits = 3, lead & 0x0F
    elif 0xF0 <= lead < 0xF8:
        n, bits = 4, lead & 0x07
    else:
        return None
    if len(seq) > n:
        return None
    for c in seq[1:]:
        if not 0x80 <= c <= 0xBF:
            return None
        bits = (bits << 6) | (c & 0x3F)
    rest = n - len(seq)
    lo = bits << (6 * rest)
    hi = lo | ((1 << (6 * rest)) - 1)
    vlo, vhi = {1: (0, 0x7F), 2: (0x80, 0x7FF), 3: (0x800, 0xFFFF), 4: (0x10000, MAX_CP)}[n]
    lo, hi = max(lo, vlo), min(hi, vhi)
    ivs = []
    for a, b in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), hi)):
        if a <= b:
            ivs.append((a, b))
    if not ivs:
        return None
    if rest == 0:
        return ("char", ivs[0][0])
    return ("partial", ivs)


def split_utf8(data: bytes):
    """``(text, partial_intervals)`` for valid UTF-8 with a possibly incomplete last character
    (``partial_intervals`` is None when the text is complete); None when the bytes can never be
    valid UTF-8."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    for k in (1, 2, 3):
        if len(data) < k:
            break
        r = char_prefix(data[-k:])
        if r is not None and r[0] == "partial":
            try:
                return data[:-k].decode("utf-8"), r[1]
            except UnicodeDecodeError:
                return None
    return None


def representatives(intervals, boundaries: Sequence[int]) -> list[int]:
    """One code point from every piece of ``intervals`` cut at ``boundaries`` (sorted)."""
    out = []
    for lo, hi in intervals:
        cp = lo
        while cp <= hi:
            out.append(cp)
            j = bisect.bisect_right(boundaries, cp)
            if j >= len(boundaries):
                break
            cp = boundaries[j]
    return out


def sorted_boundaries(extra: Iterable[int]) -> list[int]:
    return sorted(DEFAULT_BOUNDARIES | set(extra))


def ranges_contain(ranges, negate: bool, cp: int) -> bool:
    inside = any(lo <= cp <= hi for lo, hi in ranges)
    return inside != negate


# ------------------------------------------------------------------------------ vocabularies

@dataclass
class Vocab:
    """Token bytes and kinds, with the sorted order the prefix walk needs (built once)."""
    token_bytes: list          # bytes per id (b"" for padding ids)
    special: frozenset         # special ids (EOS included)
    eos: frozenset
    vocab_size: int
    order: list = field(default_factory=list)   # normal token ids, sorted by bytes
    lcp: list = field(default_factory=list)     # common prefix length with the previous in order

    def __post_init__(self):
        normal = [i for i in range(self.vocab_size) if i not in self.special and self.token_bytes[i]]
        normal.sort(key=lambda i: self.token_bytes[i])
        self.order = normal
        lcp, prev = [], b""
        for i in normal:
            cur = self.token_bytes[i]
            n, m = 0, min(len(cur), len(prev))
            while n < m and cur[n] == prev[n]:
                n += 1
            lcp.append(n)
            prev = cur
        self.lcp = lcp
        self.normal = normal

    @classmethod
    def from_info(cls, info) -> "Vocab":
        tb = [info.token_bytes(i) for i in range(info.vocab_size)]
        return cls(tb, frozenset(info.special_token_ids) | frozenset(info.eos_token_ids), frozenset(info.eos_token_ids),
                   info.vocab_size)


# -------------------------------------------------------------------- generic byte-level oracle

class Language:
    """A language over code points and special-token ids, stepped one symbol at a time.

    ``step(state, sym)`` returns the next state or None when the prefix is no longer viable;
    ``sym`` is an int code point or ``("special", id)``."""
    boundaries: list

    def start(self):
        raise NotImplementedError

    def step(self, state, sym):
        raise NotImplementedError

    def accepting(self, state) -> bool:
        raise NotImplementedError


class ByteOracle:
    """Lifts a code-point Language to bytes: state = (language state, pending partial char)."""

    def __init__(self, lang: Language):
        self.lang = lang

    def start(self):
        s = self.lang.start()
        return None if s is None else (s, b"")

    def push_byte(self, st, b: int):
        s, pend = st
        seq = pend + bytes((b,))
        r = char_prefix(seq)
        if r is None:
            return None
        if r[0] == "char":
            ns = self.lang.step(s, r[1])
            return None if ns is None else (ns, b"")
        for cp in representatives(r[1], self.lang.boundaries):
            if self.lang.step(s, cp) is not None:
                return (s, seq)
        return None

    def push_bytes(self, st, data: bytes):
        for b in data:
            if st is None:
                return None
            st = self.push_byte(st, b)
        return st

    def push_special(self, st, token_id: int):
        s, pend = st
        if pend:
            return None
        ns = self.lang.step(s, ("special", token_id))
        return None if ns is None else (ns, b"")

    def accepting(self, st) -> bool:
        return not st[1] and self.lang.accepting(st[0])


def mask_prefix_walk(oracle: ByteOracle, st, vocab: Vocab) -> np.ndarray:
    """The allowed tokens at byte-level state ``st`` (None = terminated: only EOS)."""
    mask = np.zeros(vocab.vocab_size, dtype=bool)
    if st is None:
        mask[list(vocab.eos)] = True
        return mask
    stack = [st]
    tb = vocab.token_bytes
    for tid, lcp in zip(vocab.order, vocab.lcp):
        if len(stack) > lcp + 1:
            del stack[lcp + 1:]
        elif len(stack) < lcp + 1:
            continue  # shares a prefix that is not viable with the previous token
        data = tb[tid]
        ok = True
        for d in range(len(stack) - 1, len(data)):
            ns = oracle.push_byte(stack[-1], data[d])
            if ns is None:
                ok = False
                break
            stack.append(ns)
        if ok:
            mask[tid] = True
    _specials(oracle, st, vocab, mask)
    return mask


def mask_direct_states(oracle: ByteOracle, st, vocab: Vocab) -> np.ndarray:
    """Same as mask_prefix_walk, token by token from ``st`` (slow; used to check the walk)."""
    mask = np.zeros(vocab.vocab_size, dtype=bool)
    if st is None:
        mask[list(vocab.eos)] = True
        return mask
    for tid in vocab.normal:
        mask[tid] = oracle.push_bytes(st, vocab.token_bytes[tid]) is not None
    _specials(oracle, st, vocab, mask)
    return mask


def _specials(oracle: ByteOracle, st, vocab: Vocab, mask):
    for tid in vocab.special:
        if tid in vocab.eos:
            mask[tid] = oracle.accepting(st)
        else:
            mask[tid] = oracle.push_special(st, tid) is not None


# ------------------------------------------------------------------------------ regex oracle

def ecma_to_python(pattern: str) -> str:
    """Rewrite an ECMA-262 pattern (stencil's dialect) for the ``regex`` module with the same
    language: ``\\d``/``\\w`` ASCII, ``.`` excluding the four line terminators."""
    out, i, in_class, after_quantifier = [], 0, False, False
    while i < len(pattern):
        c = pattern[i]
        if not in_class:
            if c == "?" and after_quantifier:
                # a lazy quantifier: same language as the greedy one, and the regex module's
                # partial matching mishandles lazy ones (fullmatch("a??9", "az", partial=True)
                # matches), so the oracle uses the greedy form
                after_quantifier = False
                i += 1
                continue
            q = re.match(r"\*|\+|\?|\{\d+(?:,\d*)?\}", pattern[i:])
            if q and not (c == "?" and i > 0 and pattern[i - 1] == "(" and not _escaped(pattern, i - 1)):
                out.append(q.group())
                i += len(q.group())
                after_quantifier = True
                continue
            after_quantifier = False
        if c == "\\":
            e = pattern[i + 1]
            i += 2
            if e in "sS":
                raise ValueError("\\s differs between ECMA-262 and Python: not usable with the oracle")
            if e == "d":
                out.append("0-9" if in_class else "[0-9]")
            elif e == "w":
                out.append("a-zA-Z0-9_" if in_class else "[a-zA-Z0-9_]")
            elif e in "DW" and not in_class:
                out.append("[^0-9]" if e == "D" else "[^a-zA-Z0-9_]")
            elif e == "u" and pattern[i:i + 1] == "{":
                j = pattern.index("}", i)
                out.append("\\U%08x" % int(pattern[i + 1:j], 16))
                i = j + 1
            else:
                out.append("\\" + e)
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
        elif c == "[":
            in_class = True
            out.append(c)
            if pattern[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1:i + 2] == "]":  # a literal ] first in a class (Python) is not ECMA
                raise ValueError("']' first in a class is not portable")
        elif c == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif pattern.startswith("(?<", i) and pattern[i + 3:i + 4] not in ("=", "!"):
            out.append("(?P<")  # a named group (ECMA) in Python's spelling
            i += 3
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _escaped(pattern: str, i: int) -> bool:
    n = 0
    while i - 1 - n >= 0 and pattern[i - 1 - n] == "\\":
        n += 1
    return n % 2 == 1


def python_pattern_boundaries(pattern: str) -> list[int]:
    """Every code point edge the (Python-syntax) pattern mentions, via the stdlib's re parser."""
    edges = set()

    def walk(items):
        for op, av in items:
            if op in (LITERAL, NOT_LITERAL):
                edges.update((av, av + 1))
            elif op == RANGE:
                edges.update((av[0], av[1] + 1))
            elif op == IN:
                walk(av)
            elif op == SUBPATTERN:
                walk(av[-1])
            elif op == BRANCH:
                for p in av[1]:
                    walk(p)
            elif op in (MAX_REPEAT, MIN_REPEAT, POSSESSIVE_REPEAT):
                walk(av[2])
            elif op == ATOMIC_GROUP:
                walk(av)
            elif op in (ASSERT, ASSERT_NOT, GROUPREF):
                raise ValueError("lookarounds and backreferences have no place in oracle patterns")
            elif op in (ANY, CATEGORY, NEGATE, AT):
                pass  # covered by DEFAULT_BOUNDARIES
            else:
                raise ValueError(f"unexpected regex node {op}")

    walk(sre_parse.parse(pattern))
    return sorted_boundaries(e for e in edges if 0 <= e <= MAX_CP + 1)


class RegexLanguage(Language):
    """State = the text so far (str); viable iff ``regex.fullmatch(text, partial=True)``."""

    def __init__(self, python_pattern: str):
        self.pattern = python_pattern
        self.rx = regex.compile(python_pattern)
        self.boundaries = python_pattern_boundaries(python_pattern)

    def start(self):
        return "" if self.rx.fullmatch("", partial=True) else None

    def step(self, text, sym):
        if not isinstance(sym, int):
            return None  # regex grammars name no special tokens
        t = text + chr(sym)
        return t if self.rx.fullmatch(t, partial=True) is not None else None

    def accepting(self, text) -> bool:
        return self.rx.fullmatch(text) is not None

    # Direct, token-by-token checks on whole byte strings (no incremental state at all).
    def viable_bytes(self, data: bytes) -> bool:
        r = split_utf8(data)
        if r is None:
            return False
        text, partial = r
        if partial is None:
            return self.rx.fullmatch(text, partial=True) is not None
        return any(self.rx.fullmatch(text + chr(cp), partial=True) is not None
                   for cp in representatives(partial, self.boundaries))

    def complete_bytes(self, data: bytes) -> bool:
        r = split_utf8(data)
        return r is not None and r[1] is None and self.rx.fullmatch(r[0]) is not None


def regex_mask_direct(lang: RegexLanguage, accepted: bytes | None, vocab: Vocab, ids=None) -> np.ndarray:
    """Brute force: every token id (or those in ``ids``), one regex call each (plus one per
    representative completion of a trailing partial character). ``accepted=None``: terminated."""
    mask = np.zeros(vocab.vocab_size, dtype=bool)
    if accepted is None:
        mask[list(vocab.eos)] = True
        return mask
    tb = vocab.token_bytes
    for tid in (vocab.normal if ids is None else ids):
        mask[tid] = lang.viable_bytes(accepted + tb[tid])
    complete = lang.complete_bytes(accepted)
    for tid in vocab.special:
        mask[tid] = complete if tid in vocab.eos else False
    return mask


# ---------------------------------------------------------------------- random regex generator

# Characters for literals: ASCII, regex metacharacters (escaped when rendered), and 2-, 3- and
# 4-byte UTF-8 characters including the edges of each length class.
LIT_CHARS = (list("abcxy019 -_/,:") + list(".+*()[]?|{}\\^$") + ["\n", "\t"]
             + ["é", "ß", "ÿ", "\u07ff", "α", "ω", "\u0800", "中", "文", "\uffff", "😀", "\U0010ffff"])
CLASS_RANGES = [
    [("a", "z")], [("0", "9")], [("α", "ω")], [("一", "龥")], [("😀", "😂")], [("A", "F"), ("0", "9")],
    [("a", "c"), ("x", "z")], [("é", "é")], [(" ", " "), ("-", "-")], [("\u0080", "\u07ff")],
    [("\u0800", "\uffff")], [("a", "a"), ("中", "中"), ("😀", "😀")], [("\\", "\\"), ("]", "]"), ("^", "^")],
]
# Characters a negated class or `.` can produce when sampling.
SAMPLE_CHARS = LIT_CHARS + ["A", "Z", "q", "\r", "\u2028", "\x7f", "\u0080", "ω", "龥", "\U00010000", "😂"]
ESCAPE_OUT = set(".+*()[]?|{}\\^$")
ESCAPE_IN = set("\\]^-[")


def _esc_char(c: str, in_class: bool) -> str:
    if c == "\n":
        return "\\n"
    if c == "\t":
        return "\\t"
    if c == "\r":
        return "\\r"
    if c in (ESCAPE_IN if in_class else ESCAPE_OUT):
        return "\\" + c
    return c


@dataclass
class RNode:
    kind: str                 # lit, cls, dot, digit, cat, alt, rep, group
    value: object = None      # lit: char; cls: (ranges, negate); rep: (min, max, lazy); group: style
    kids: list = field(default_factory=list)

    def render(self, python: bool) -> str:
        k = self.kind
        if k == "lit":
            return _esc_char(self.value, False)
        if k == "cls":
            ranges, neg = self.value
            body = "".join(_esc_char(a, True) if a == b else _esc_char(a, True) + "-" + _esc_char(b, True)
                           for a, b in ranges)
            return "[" + ("^" if neg else "") + body + "]"
        if k == "dot":
            return "[^\\n\\r\\u2028\\u2029]" if python else "."
        if k == "digit":
            return "[0-9]" if python else "\\d"
        if k == "cat":
            return "".join(self._atom(c, python) if c.kind == "alt" else c.render(python) for c in self.kids)
        if k == "alt":
            return "|".join(c.render(python) for c in self.kids)
        if k == "group":
            inner = self.kids[0].render(python)
            style = self.value
            if style == "cap":
                return "(" + inner + ")"
            if style.startswith("name:"):
                return ("(?P<%s>" if python else "(?<%s>") % style[5:] + inner + ")"
            return "(?:" + inner + ")"
        if k == "rep":
            lo, hi, lazy = self.value
            if (lo, hi) == (0, -1):
                q = "*"
            elif (lo, hi) == (1, -1):
                q = "+"
            elif (lo, hi) == (0, 1):
                q = "?"
            elif hi == -1:
                q = "{%d,}" % lo
            elif lo == hi:
                q = "{%d}" % lo
            else:
                q = "{%d,%d}" % (lo, hi)
            # lazy forms have the same language; the oracle's copy uses the greedy form (see
            # ecma_to_python)
            return self._atom(self.kids[0], python) + q + ("?" if lazy and not python else "")
        raise AssertionError(k)

    @staticmethod
    def _atom(node: "RNode", python: bool) -> str:
        s = node.render(python)
        if node.kind in ("lit", "cls", "dot", "digit", "group"):
            return s
        return "(?:" + s + ")"

    def sample(self, rng: random.Random, room: list) -> str:
        k = self.kind
        if k == "lit":
            return self.value
        if k in ("cls", "dot", "digit"):
            return sample_char(rng, self)
        if k == "cat":
            return "".join(c.sample(rng, room) for c in self.kids)
        if k == "alt":
            return rng.choice(self.kids).sample(rng, room)
        if k == "group":
            return self.kids[0].sample(rng, room)
        if k == "rep":
            lo, hi, _ = self.value
            top = lo + 3 if hi == -1 else hi
            n = rng.randint(lo, top) if room[0] > 0 else lo
            room[0] -= n
            return "".join(self.kids[0].sample(rng, room) for _ in range(n))
        raise AssertionError(k)


def regex_to_cfg(node: RNode) -> "CFG":
    """The same language as a CFG description of single-character classes, for the Earley
    oracle: a second, independent opinion on random regexes."""
    return CFG("regex as CFG", {"S": [[regex_expr(node)]]}, "S")


def regex_expr(node: RNode):
    """The regex AST as a (hashable) expression of Cls/Seq/Choice/Rep."""
    def conv(n: RNode):
        if n.kind == "lit":
            return Cls(((ord(n.value), ord(n.value)),))
        if n.kind == "cls":
            ranges, neg = n.value
            return Cls(tuple((ord(a), ord(b)) for a, b in ranges), neg)
        if n.kind == "dot":
            return Cls(tuple((t, t) for t in LINE_TERMINATORS), True)
        if n.kind == "digit":
            return Cls(((0x30, 0x39),))
        if n.kind == "cat":
            return Seq(tuple(conv(k) for k in n.kids))
        if n.kind == "alt":
            return Choice(tuple(conv(k) for k in n.kids))
        if n.kind == "group":
            return conv(n.kids[0])
        lo, hi, _ = n.value
        return Rep(conv(n.kids[0]), lo, hi)
    return conv(node)


def exclude_chars(node: RNode, chars: str) -> RNode:
    """The AST with every character of ``chars`` removed from its classes and literals."""
    k = node.kind
    if k == "lit":
        return RNode("lit", "q") if node.value in chars else node
    if k == "dot":
        return RNode("cls", ([(chr(t), chr(t)) for t in LINE_TERMINATORS] + [(c, c) for c in chars], True))
    if k == "cls":
        ranges, neg = node.value
        if neg:
            return RNode("cls", (list(ranges) + [(c, c) for c in chars], True))
        out = []
        for a, b in ranges:
            pieces = [(ord(a), ord(b))]
            for c in map(ord, chars):
                pieces = [p for lo, hi in pieces for p in ((lo, min(hi, c - 1)), (max(lo, c + 1), hi)) if p[0] <= p[1]]
            out += [(chr(lo), chr(hi)) for lo, hi in pieces]
        return RNode("cls", (out, False)) if out else RNode("lit", "q")
    return RNode(k, node.value, [exclude_chars(c, chars) for c in node.kids])


REGEX_LEXEME_DELIMS = [("<", ">"), ("«", "»"), ("<", "»")]
REGEX_LEXEME_EXCLUDED = "<>«»"


def random_regex_lexeme(rng: random.Random) -> "RegexLex":
    """open + random regex + close, with no delimiter character inside the regex."""
    o, c = rng.choice(REGEX_LEXEME_DELIMS)
    node = exclude_chars(random_regex(rng, depth=rng.choice([1, 2])), REGEX_LEXEME_EXCLUDED)
    return RegexLex(o, c, node.render(False), regex_expr(node), node)


def node_matches(node: RNode, cp: int) -> bool:
    if node.kind == "dot":
        return cp not in LINE_TERMINATORS
    if node.kind == "digit":
        return 0x30 <= cp <= 0x39
    ranges, neg = node.value
    return ranges_contain([(ord(a), ord(b)) for a, b in ranges], neg, cp)


def sample_char(rng: random.Random, node: RNode) -> str:
    if node.kind == "cls" and not node.value[1] and rng.random() < 0.7:
        a, b = rng.choice(node.value[0])
        cp = rng.randint(ord(a), ord(b))
        if not 0xD800 <= cp < 0xE000:
            return chr(cp)
    for _ in range(200):
        c = rng.choice(SAMPLE_CHARS)
        if node_matches(node, ord(c)):
            return c
    cands = [c for c in SAMPLE_CHARS if node_matches(node, ord(c))]
    return rng.choice(cands)


def _has_unbounded(node: RNode) -> bool:
    if node.kind == "rep" and node.value[1] == -1:
        return True
    return any(_has_unbounded(k) for k in node.kids)


def random_regex(rng: random.Random, depth: int = 3) -> RNode:
    names = iter("nmopqrst")

    def atom() -> RNode:
        r = rng.random()
        if r < 0.5:
            return RNode("lit", rng.choice(LIT_CHARS))
        if r < 0.8:
            ranges = rng.choice(CLASS_RANGES)
            neg = rng.random() < 0.3
            if not neg and rng.random() < 0.3:
                ranges = ranges + [(c, c) for c in rng.sample(LIT_CHARS, 2)]
            return RNode("cls", (ranges, neg))
        return RNode("dot") if r < 0.9 else RNode("digit")

    def gen(d: int) -> RNode:
        r = rng.random()
        if d == 0 or r < 0.3:
            return atom()
        if r < 0.6:
            return RNode("cat", None, [gen(d - 1) for _ in range(rng.randint(2, 3))])
        if r < 0.75:
            return RNode("alt", None, [gen(d - 1) for _ in range(rng.randint(2, 3))])
        if r < 0.82:
            style = rng.choice(["cap", "nc", "name:" + next(names, "z")])
            return RNode("group", style, [gen(d - 1)])
        q = rng.random()
        if q < 0.2:
            lo, hi = 0, -1
        elif q < 0.4:
            lo, hi = 1, -1
        elif q < 0.55:
            lo, hi = 0, 1
        elif q < 0.7:
            lo = rng.randint(0, 3)
            hi = lo
        elif q < 0.8:
            lo, hi = rng.randint(0, 2), -1
        else:
            lo = rng.randint(0, 2)
            hi = lo + rng.randint(1, 3)
        kid = gen(d - 1)
        if _has_unbounded(kid):
            # nested unbounded repetition makes the regex module backtrack exponentially on
            # non-viable texts: keep the outer one small and bounded
            lo, hi = min(lo, 1), min(lo, 1) + 1
        return RNode("rep", (lo, hi, rng.random() < 0.2), [kid])

    return RNode("cat", None, [gen(depth), gen(depth - 1)])


# ------------------------------------------------------------------------- CFG description

@dataclass(frozen=True)
class Lit:       # a literal string lexeme
    text: str


@dataclass(frozen=True)
class Cls:       # one character of a class
    ranges: tuple
    negate: bool = False


@dataclass(frozen=True)
class Plus:      # one or more characters of a class
    ranges: tuple
    negate: bool = False


@dataclass(frozen=True)
class Delim:     # open, any characters but close, close (close is one character)
    open: str
    close: str
    lazy: bool = False   # built as open .*? close with a lazy lexeme instead of [^close]*


@dataclass(frozen=True)
class StarCls:   # zero or more characters of a class: a nullable lexeme; GrammarBuilder turns it
    ranges: tuple   # into an optional lexeme of its non-empty strings, which is what the oracle
    negate: bool = False   # desugars it to: Opt(Plus(ranges))


@dataclass(frozen=True)
class Word:      # one or more characters of a class, except the given words: built with re_and and
    ranges: tuple    # re_not; the oracle spells the same language out as right-linear rules
    exclude: tuple


@dataclass(frozen=True)
class RegexLex:  # open, a random regex (no `close` character in it), close: built with stencil's
    open: str    # regex front-end; the oracle reads the same regex AST as character-level rules
    close: str
    pattern: str             # ECMA-262 text of the body
    expr: object             # the body as a character-level expression (regex_to_cfg)
    node: object = field(default=None, compare=False, hash=False)   # RNode, for sampling


@dataclass(frozen=True)
class Special:   # special tokens by id
    ids: tuple


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Opt:
    item: object


@dataclass(frozen=True)
class Star:
    item: object


@dataclass(frozen=True)
class Many:      # one or more (GrammarBuilder.plus)
    item: object


@dataclass(frozen=True)
class Rep:
    item: object
    lo: int
    hi: int


@dataclass(frozen=True)
class Seq:
    items: tuple


@dataclass(frozen=True)
class Choice:
    items: tuple


LEXEME_TYPES = (Lit, Cls, Plus, Delim, RegexLex, Word)


@dataclass
class CFG:
    name: str
    rules: dict               # name -> list of alternatives (lists of symbols)
    start: str
    ignore: tuple | None = None   # ranges of ignored white space (a run of them is one lexeme)

    def __str__(self):
        lines = [f"# {self.name}" + (f" ignore={self.ignore}" if self.ignore else "")]
        for n, alts in self.rules.items():
            lines.append(f"{n} -> " + " | ".join(" ".join(_sym_str(s) for s in a) or "ε" for a in alts))
        return "\n".join(lines)


def _sym_str(s) -> str:
    if isinstance(s, Lit):
        return repr(s.text)
    if isinstance(s, (Cls, Plus)):
        body = "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in s.ranges)
        return f"[{'^' if s.negate else ''}{body}]" + ("+" if isinstance(s, Plus) else "")
    if isinstance(s, Delim):
        return f"{s.open}…{s.close}" + ("(lazy)" if s.lazy else "")
    if isinstance(s, StarCls):
        return _sym_str(Cls(s.ranges, s.negate)) + "*"
    if isinstance(s, RegexLex):
        return f"/{s.open}(?:{s.pattern}){s.close}/"
    if isinstance(s, Word):
        return _sym_str(Plus(s.ranges)) + " - {" + ", ".join(map(repr, s.exclude)) + "}"
    if isinstance(s, Special):
        return f"<special {list(s.ids)}>"
    if isinstance(s, Ref):
        return s.name
    if isinstance(s, Opt):
        return f"({_sym_str(s.item)})?"
    if isinstance(s, Star):
        return f"({_sym_str(s.item)})*"
    if isinstance(s, Many):
        return f"({_sym_str(s.item)})+"
    if isinstance(s, Rep):
        return f"({_sym_str(s.item)}){{{s.lo},{s.hi}}}"
    if isinstance(s, Seq):
        return "(" + " ".join(_sym_str(x) for x in s.items) + ")"
    if isinstance(s, Choice):
        return "(" + " | ".join(_sym_str(x) for x in s.items) + ")"
    return str(s)


def R(spec: str) -> tuple:
    """Class ranges from a compact spec: ``R("a-z0-9_")``; a '-' first or last is literal."""
    out, i = [], 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            out.append((ord(spec[i]), ord(spec[i + 2])))
            i += 3
        else:
            out.append((ord(spec[i]), ord(spec[i])))
            i += 1
    return tuple(out)


ANY_CHAR = ((0, 0xD7FF), (0xE000, MAX_CP))


def build_stencil(cfg: CFG, builder_cls):
    """The stencil Grammar for ``cfg``, built with GrammarBuilder."""
    b = builder_cls()
    rules = {name: b.rule(name) for name in cfg.rules}
    memo = {}

    def sym(s):
        if isinstance(s, Ref):
            return rules[s.name]
        if s in memo:
            return memo[s]
        if isinstance(s, Lit):
            r = b.literal(s.text)
        elif isinstance(s, Cls):
            r = b.lexeme(b.re_char_ranges(list(s.ranges), s.negate))
        elif isinstance(s, Plus):
            r = b.lexeme(b.re_repeat(b.re_char_ranges(list(s.ranges), s.negate), 1, -1))
        elif isinstance(s, Delim):
            if s.lazy:
                body = b.re_repeat(b.re_char_ranges(list(ANY_CHAR), False), 0, -1)
                r = b.lexeme(b.re_concat([b.re_literal(s.open), body, b.re_literal(s.close)]), lazy=True)
            else:
                c = ord(s.close)
                body = b.re_repeat(b.re_char_ranges([(c, c)], True), 0, -1)
                r = b.lexeme(b.re_concat([b.re_literal(s.open), body, b.re_literal(s.close)]))
        elif isinstance(s, StarCls):
            r = b.lexeme(b.re_repeat(b.re_char_ranges(list(s.ranges), s.negate), 0, -1))
        elif isinstance(s, Word):
            r = b.lexeme(b.re_and([b.re_repeat(b.re_char_ranges(list(s.ranges), False), 1, -1),
                                   b.re_not(b.re_or([b.re_literal(w) for w in s.exclude]))]))
        elif isinstance(s, RegexLex):
            from stencil.grammar.regex import build_regex
            r = b.lexeme(b.re_concat([b.re_literal(s.open), build_regex(b, s.pattern, anchored=True),
                                      b.re_literal(s.close)]))
        elif isinstance(s, Special):
            r = b.special_token(list(s.ids))
        elif isinstance(s, Opt):
            r = b.optional(sym(s.item))
        elif isinstance(s, Star):
            r = b.star(sym(s.item))
        elif isinstance(s, Many):
            r = b.plus(sym(s.item))
        elif isinstance(s, Rep):
            r = b.repeat(sym(s.item), s.lo, s.hi)
        elif isinstance(s, Seq):
            r = b.seq([sym(x) for x in s.items])
        elif isinstance(s, Choice):
            r = b.choice([sym(x) for x in s.items])
        else:
            raise TypeError(s)
        memo[s] = r
        return r

    for name, alts in cfg.rules.items():
        for alt in alts:
            b.add_alternative(rules[name], [sym(s) for s in alt])
    if cfg.ignore:
        b.ignore(b.re_repeat(b.re_char_ranges(list(cfg.ignore), False), 1, -1))
    return b.build(rules[cfg.start])


# ------------------------------------------------------------------ desugaring (oracle side)

def desugar(cfg: CFG):
    """Plain lexeme-level rules: ``(rules, start)`` with rules = list of (lhs, tuple rhs) where
    rhs symbols are nonterminal names (str) or lexeme / Special objects."""
    rules = []
    fresh = {}

    def sym(s):
        if isinstance(s, Ref):
            return s.name
        if isinstance(s, LEXEME_TYPES) or isinstance(s, Special):
            return s
        if isinstance(s, StarCls):
            return sym(Opt(Plus(s.ranges, s.negate)))
        if s in fresh:
            return fresh[s]
        n = f"_{len(fresh)}"
        fresh[s] = n
        if isinstance(s, Opt):
            rules.extend([(n, ()), (n, (sym(s.item),))])
        elif isinstance(s, Star):
            rules.extend([(n, ()), (n, (n, sym(s.item)))])
        elif isinstance(s, Many):
            x = sym(s.item)
            rules.extend([(n, (x,)), (n, (n, x))])
        elif isinstance(s, Rep):
            x = sym(s.item)
            if s.hi < 0:
                tail = sym(Star(s.item))
                rules.append((n, (x,) * s.lo + (tail,)))
            else:
                for k in range(s.lo, s.hi + 1):
                    rules.append((n, (x,) * k))
        elif isinstance(s, Seq):
            rules.append((n, tuple(sym(x) for x in s.items)))
        elif isinstance(s, Choice):
            for x in s.items:
                rules.append((n, (sym(x),)))
        else:
            raise TypeError(s)
        return n

    for name, alts in cfg.rules.items():
        for alt in alts:
            rules.append((name, tuple(sym(s) for s in alt)))
    return rules, cfg.start


def _nullable_and_first(rules):
    nts = {lhs for lhs, _ in rules}
    nullable = set()
    first = {n: set() for n in nts}   # lexeme-level FIRST (lexemes / Special)
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            all_null = True
            for s in rhs:
                add = first[s] if isinstance(s, str) else {s}
                if not add <= first[lhs]:
                    first[lhs] |= add
                    changed = True
                if not (isinstance(s, str) and s in nullable):
                    all_null = False
                    break
            if all_null and lhs not in nullable:
                nullable.add(lhs)
                changed = True
    return nullable, first


def productive_rules(rules):
    """Drop the rules that use a nonterminal deriving no terminal string."""
    productive = set()
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            if lhs not in productive and all(not isinstance(s, str) or s in productive for s in rhs):
                productive.add(lhs)
                changed = True
    kept = [(lhs, r) for lhs, r in rules if lhs in productive and all(not isinstance(s, str) or s in productive for s in r)]
    return kept, productive


def lexeme_follow(rules, start):
    """FOLLOW at the lexeme level: for each lexeme, the lexemes/specials that can come next
    ("$" for the end of input)."""
    nullable, first = _nullable_and_first(rules)
    follow = {}

    def fol(x):
        return follow.setdefault(x, set())

    fol(start).add("$")
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            for i, s in enumerate(rhs):
                acc = set()
                rest_null = True
                for t in rhs[i + 1:]:
                    acc |= first[t] if isinstance(t, str) else {t}
                    if not (isinstance(t, str) and t in nullable):
                        rest_null = False
                        break
                if rest_null:
                    acc |= fol(lhs)
                if not acc <= fol(s):
                    fol(s).update(acc)
                    changed = True
    return {k: v for k, v in follow.items() if not isinstance(k, str)}


def lexeme_nfa(lx):
    """(transitions, accepting): transitions[state] = list of (ranges, negate, next).

    A RegexLex is over-approximated by open [^<>«»]* close (its regex has none of the delimiter
    characters), which only makes greedy_safe more cautious (a larger language can only add
    extensions and first characters)."""
    if isinstance(lx, Word):
        lx = Plus(lx.ranges)  # a superset
    if isinstance(lx, RegexLex):
        n = len(lx.open)
        body = tuple((ord(c), ord(c)) for c in REGEX_LEXEME_EXCLUDED)
        c = ord(lx.close)
        trans = [[(((ord(ch), ord(ch)),), False, i + 1)] for i, ch in enumerate(lx.open)]
        trans.append([(body, True, n), (((c, c),), False, n + 1)])
        trans.append([])
        return trans, {n + 1}
    if isinstance(lx, Lit):
        trans = [[(((ord(c), ord(c)),), False, i + 1)] for i, c in enumerate(lx.text)] + [[]]
        return trans, {len(lx.text)}
    if isinstance(lx, Cls):
        return [[(lx.ranges, lx.negate, 1)], []], {1}
    if isinstance(lx, Plus):
        return [[(lx.ranges, lx.negate, 1)], [(lx.ranges, lx.negate, 1)]], {1}
    if isinstance(lx, Delim):
        n = len(lx.open)
        c = ord(lx.close)
        trans = [[(((ord(ch), ord(ch)),), False, i + 1)] for i, ch in enumerate(lx.open)]
        trans.append([(((c, c),), True, n), (((c, c),), False, n + 1)])
        trans.append([])
        return trans, {n + 1}
    raise TypeError(lx)


def _lexeme_edges(lx) -> set:
    out = set()
    if isinstance(lx, Lit):
        for c in lx.text:
            out.update((ord(c), ord(c) + 1))
    elif isinstance(lx, (Cls, Plus, Word)):
        for a, b in lx.ranges:
            out.update((a, b + 1))
        for w in getattr(lx, "exclude", ()):
            for c in w:
                out.update((ord(c), ord(c) + 1))
    elif isinstance(lx, (Delim, RegexLex)):
        for c in lx.open + lx.close + (REGEX_LEXEME_EXCLUDED if isinstance(lx, RegexLex) else ""):
            out.update((ord(c), ord(c) + 1))
    return out


def _nfa_step(nfa, states, cp):
    trans = nfa[0]
    return frozenset(t for s in states for ranges, neg, t in trans[s] if ranges_contain(ranges, neg, cp))


def greedy_safe(cfg: CFG) -> str | None:
    """None when greedy lexing cannot change the language of ``cfg`` (see the module docstring),
    else the reason."""
    rules, _ = productive_rules(desugar(cfg)[0])
    lexemes = {s for _, rhs in rules for s in rhs if isinstance(s, LEXEME_TYPES)}
    for lx in lexemes:
        if isinstance(lx, Lit) and not lx.text:
            return "empty literal"
        if isinstance(lx, Delim) and (len(lx.close) != 1 or not lx.open):
            return f"unsupported delimited lexeme {lx}"
    edges = set()
    for lx in lexemes:
        edges |= _lexeme_edges(lx)
    for a, b in cfg.ignore or ():
        edges.update((a, b + 1))
    reps = [cp for cp in representatives([(0, 0xD7FF), (0xE000, MAX_CP)], sorted_boundaries(edges))]
    nfas = {lx: lexeme_nfa(lx) for lx in lexemes}
    first_chars = {lx: {c for c in reps if _nfa_step(nfas[lx], {0}, c)} for lx in lexemes}
    ws = {c for c in reps if ranges_contain(cfg.ignore or (), False, c)}
    for lx in lexemes:
        if first_chars[lx] & ws:
            return f"ignored white space can start lexeme {_sym_str(lx)}"
    follow = lexeme_follow(rules, cfg.start)
    for x in lexemes:
        nx = nfas[x]
        ext = set()
        for y in lexemes:
            ny = nfas[y]
            seen = set()
            todo = [(frozenset({0}), frozenset({0}))]
            while todo:
                pair = todo.pop()
                if pair in seen:
                    continue
                seen.add(pair)
                xs, ys = pair
                if xs & nx[1]:
                    ext |= {c for c in reps if _nfa_step(ny, ys, c)}
                for c in reps:
                    a, b = _nfa_step(nx, xs, c), _nfa_step(ny, ys, c)
                    if a and b:
                        todo.append((a, b))
        if isinstance(x, Delim) and x.lazy and ext:
            return (f"lazy lexeme {_sym_str(x)} ends at once where another lexeme could go on "
                    f"with {chr(min(ext))!r}")
        starts = set(ws)
        for z in follow.get(x, ()):
            if isinstance(z, LEXEME_TYPES):
                starts |= first_chars[z]
        bad = ext & starts
        if bad:
            return (f"lexeme {_sym_str(x)} can be extended by {chr(min(bad))!r}, which can also start "
                    f"what follows it: greedy lexing would change the language")
    return None


# --------------------------------------------------------------------- character-level Earley

@dataclass(frozen=True)
class Term:
    ranges: tuple = ()
    negate: bool = False
    special: frozenset | None = None

    def matches(self, sym) -> bool:
        if self.special is not None:
            return not isinstance(sym, int) and sym[1] in self.special
        return isinstance(sym, int) and ranges_contain(self.ranges, self.negate, sym)


def _subtract(ranges, cps) -> tuple:
    pieces = list(ranges)
    for c in cps:
        pieces = [p for lo, hi in pieces for p in ((lo, min(hi, c - 1)), (max(lo, c + 1), hi)) if p[0] <= p[1]]
    return tuple(pieces)


class EarleyLanguage(Language):
    """A character-level Earley recognizer for a CFG description.

    State = tuple of Earley sets; each set is a frozenset of items (prod, dot, origin). A prefix
    is viable iff its last set is non-empty (all nonterminals are productive, every lexeme
    non-empty); it is complete iff the last set holds a finished start production from 0."""

    START = "$start"

    def __init__(self, cfg: CFG):
        rules, productive = productive_rules(desugar(cfg)[0])
        if cfg.start not in productive:
            raise ValueError(f"{cfg.name}: the start rule derives no string")
        prods = []
        lex_nt = {}
        ws_nt = None
        if cfg.ignore:
            ws_nt = "$W"
            prods.append((ws_nt, ()))
            prods.append((ws_nt, (ws_nt, Term(tuple(cfg.ignore)))))

        char_nt = {}

        def char_expr(e):
            """A character-level expression (Cls/Seq/Choice/Rep from regex_to_cfg) as rules."""
            if isinstance(e, Cls):
                return Term(e.ranges, e.negate)
            if e in char_nt:
                return char_nt[e]
            n = f"$C{len(char_nt)}"
            char_nt[e] = n
            if isinstance(e, Seq):
                prods.append((n, tuple(char_expr(x) for x in e.items)))
            elif isinstance(e, Choice):
                for x in e.items:
                    prods.append((n, (char_expr(x),)))
            elif isinstance(e, Rep):
                x = char_expr(e.item)
                if e.hi < 0:
                    star = n + "*"
                    prods.extend([(star, ()), (star, (star, x))])
                    prods.append((n, (x,) * e.lo + (star,)))
                else:
                    for k in range(e.lo, e.hi + 1):
                        prods.append((n, (x,) * k))
            else:
                raise TypeError(e)
            return n

        def lexeme_nt(lx):
            if lx in lex_nt:
                return lex_nt[lx]
            n = f"$L{len(lex_nt)}"
            lex_nt[lx] = n
            body = n + "b"
            if isinstance(lx, Special):
                prods.append((body, (Term(special=frozenset(lx.ids)),)))
            elif isinstance(lx, Lit):
                prods.append((body, tuple(Term(((ord(c), ord(c)),)) for c in lx.text)))
            elif isinstance(lx, Cls):
                prods.append((body, (Term(lx.ranges, lx.negate),)))
            elif isinstance(lx, Plus):
                t = Term(lx.ranges, lx.negate)
                prods.extend([(body, (t,)), (body, (body, t))])
            elif isinstance(lx, Delim):
                c = ord(lx.close)
                inner = n + "i"
                prods.extend([(inner, ()), (inner, (inner, Term(((c, c),), True)))])
                prods.append((body, tuple(Term(((ord(ch), ord(ch)),)) for ch in lx.open) + (inner, Term(((c, c),)))))
            elif isinstance(lx, Word):
                # states: prefixes of excluded words, then "free" (F) once no excluded word fits
                t_all = Term(lx.ranges)
                free = n + "F"
                prods.extend([(free, ()), (free, (free, t_all))])
                prefixes = {w[:k] for w in lx.exclude for k in range(len(w) + 1)
                            if all(ranges_contain(lx.ranges, False, ord(ch)) for ch in w[:k])}
                for p in prefixes:
                    nt = body if p == "" else f"{n}w{p}"
                    if p and p not in lx.exclude:
                        prods.append((nt, ()))
                    conts = sorted({q[len(p)] for q in prefixes if len(q) == len(p) + 1 and q.startswith(p)})
                    for ch in conts:
                        prods.append((nt, (Term(((ord(ch), ord(ch)),)), f"{n}w{p + ch}")))
                    rest = _subtract(lx.ranges, [ord(ch) for ch in conts])
                    if rest:
                        prods.append((nt, (Term(rest), free)))
            elif isinstance(lx, RegexLex):
                c = ord(lx.close)
                prods.append((body, tuple(Term(((ord(ch), ord(ch)),)) for ch in lx.open)
                              + (char_expr(lx.expr), Term(((c, c),)))))
            prods.append((n, (body, ws_nt) if ws_nt else (body,)))
            return n

        for lhs, rhs in rules:
            prods.append((lhs, tuple(s if isinstance(s, str) else lexeme_nt(s) for s in rhs)))
        prods.append((self.START, ((ws_nt,) if ws_nt else ()) + (cfg.start,)))
        self.prods = prods
        self.by_lhs = {}
        for i, (lhs, _) in enumerate(prods):
            self.by_lhs.setdefault(lhs, []).append(i)
        nullable = set()
        changed = True
        while changed:
            changed = False
            for lhs, rhs in prods:
                if lhs not in nullable and all(isinstance(s, str) and s in nullable for s in rhs):
                    nullable.add(lhs)
                    changed = True
        self.nullable = nullable
        edges = set()
        for _, rhs in prods:
            for s in rhs:
                if isinstance(s, Term) and s.special is None:
                    for a, b in s.ranges:
                        edges.update((a, b + 1))
        self.boundaries = sorted_boundaries(edges)
        self.start_prods = set(self.by_lhs[self.START])
        self._start = (self._close([(p, 0, 0) for p in self.start_prods], (), 0),)

    def _close(self, seed, chart, k):
        """The Earley set at position k from its scanned items ``seed``; ``chart`` = sets 0..k-1."""
        items = set()
        agenda = list(seed)
        prods, by_lhs, nullable = self.prods, self.by_lhs, self.nullable
        while agenda:
            it = agenda.pop()
            if it in items:
                continue
            items.add(it)
            p, d, o = it
            lhs, rhs = prods[p]
            if d == len(rhs):
                if o == k:
                    continue  # nullable completions are advanced at prediction time
                for (p2, d2, o2) in chart[o]:
                    r2 = prods[p2][1]
                    if d2 < len(r2) and r2[d2] == lhs:
                        agenda.append((p2, d2 + 1, o2))
            else:
                s = rhs[d]
                if isinstance(s, str):
                    for q in by_lhs.get(s, ()):
                        agenda.append((q, 0, k))
                    if s in nullable:
                        agenda.append((p, d + 1, o))
        return frozenset(items)

    def start(self):
        return self._start

    def step(self, chart, sym):
        last = chart[-1]
        seed = []
        for (p, d, o) in last:
            rhs = self.prods[p][1]
            if d < len(rhs):
                s = rhs[d]
                if isinstance(s, Term) and s.matches(sym):
                    seed.append((p, d + 1, o))
        if not seed:
            return None
        return chart + (self._close(seed, chart, len(chart)),)

    def accepting(self, chart) -> bool:
        return any(p in self.start_prods and o == 0 and d == len(self.prods[p][1]) for (p, d, o) in chart[-1])


# ------------------------------------------------------------------ CFG sampling and generation

def sample_cfg(cfg: CFG, rng: random.Random, max_depth: int = 6, ws_prob: float = 0.3) -> list:
    """A random string of the language as a list of segments: str text or ("special", id)."""
    rules = {}
    for lhs, rhs in productive_rules(desugar(cfg)[0])[0]:
        rules.setdefault(lhs, []).append(rhs)
    # height: the least derivation depth of each nonterminal, to steer towards termination
    height = {}
    changed = True
    while changed:
        changed = False
        for lhs, alts in rules.items():
            for rhs in alts:
                if all(not isinstance(s, str) or s in height for s in rhs):
                    h = 1 + max([height[s] for s in rhs if isinstance(s, str)], default=0)
                    if h < height.get(lhs, 1 << 30):
                        height[lhs] = h
                        changed = True
    out = []
    ws_chars = [chr(rng.randint(a, b)) for a, b in (cfg.ignore or ()) for _ in range(2)]

    def ws():
        if ws_chars and rng.random() < ws_prob:
            out.append("".join(rng.choice(ws_chars) for _ in range(rng.randint(1, 2))))

    def lexeme(lx):
        if isinstance(lx, Special):
            out.append(("special", rng.choice(lx.ids)))
        elif isinstance(lx, Lit):
            out.append(lx.text)
        elif isinstance(lx, Cls):
            out.append(_class_char(rng, lx.ranges, lx.negate))
        elif isinstance(lx, Plus):
            out.append("".join(_class_char(rng, lx.ranges, lx.negate) for _ in range(rng.randint(1, 3))))
        elif isinstance(lx, Delim):
            body = "".join(_class_char(rng, ((ord(lx.close), ord(lx.close)),), True) for _ in range(rng.randint(0, 3)))
            out.append(lx.open + body + lx.close)
        elif isinstance(lx, RegexLex):
            out.append(lx.open + lx.node.sample(rng, [4]) + lx.close)
        elif isinstance(lx, Word):
            w = rng.choice(list(lx.exclude)) if rng.random() < 0.3 else ""
            w = w[:rng.randint(0, len(w))] if w else w
            while not w or w in lx.exclude or rng.random() < 0.3:
                w += _class_char(rng, lx.ranges, False)
            out.append(w)
        ws()

    def expand(n, depth):
        alts = rules[n]
        if depth >= max_depth:
            best = min(1 + max([height[s] for s in rhs if isinstance(s, str)], default=0) for rhs in alts)
            alts = [rhs for rhs in alts
                    if 1 + max([height[s] for s in rhs if isinstance(s, str)], default=0) == best]
        for s in rng.choice(alts):
            if isinstance(s, str):
                expand(s, depth + 1)
            else:
                lexeme(s)

    ws()
    expand(cfg.start, 0)
    merged = []
    for seg in out:
        if isinstance(seg, str) and merged and isinstance(merged[-1], str):
            merged[-1] += seg
        else:
            merged.append(seg)
    return merged


def _class_char(rng: random.Random, ranges, negate: bool) -> str:
    if not negate and rng.random() < 0.8:
        a, b = rng.choice(ranges)
        cp = rng.randint(a, b)
        if not 0xD800 <= cp < 0xE000:
            return chr(cp)
    cands = [c for c in SAMPLE_CHARS if ranges_contain(ranges, negate, ord(c)) and c not in " \t\u3000"]
    return rng.choice(cands)


LEXEME_POOL = [
    Lit("a"), Lit("b"), Lit("("), Lit(")"), Lit("+"), Lit(","), Lit("if"), Lit("then"), Lit("é"), Lit("中文"),
    Lit("→"), Lit("😀"), Lit("xy"), Lit("xz"), Lit("ab"), Lit("a+"), Cls(R("0-9")), Cls(R("α-ω")), Cls(R("a-c")),
    Cls(R("a-z"), True), Plus(R("0-9")), Plus(R("α-ω")), Plus(R("a-z")), Delim('"', '"'), Delim("<!", ">", True),
    Delim("'", "'", True), StarCls(R("0-9")), StarCls(R("é")), Lit(";"), Lit("=="), Lit("="),
    Word(R("a-z"), ("if", "then", "a")), Word(R("α-ω"), ("αβ", "ω")),
]
IGNORE_POOL = [R(" "), R(" \t"), R(" \u3000")]


def random_cfg(rng: random.Random, index: int, specials: Sequence[int] = (), regex_lexemes: int = 0) -> CFG:
    """A random greedy-safe CFG over a few lexemes from LEXEME_POOL plus up to ``regex_lexemes``
    random regex lexemes (retries until safe)."""
    for _attempt in range(200):
        lexemes = rng.sample(LEXEME_POOL, rng.randint(2, 5))
        lexemes += [random_regex_lexeme(rng) for _ in range(rng.randint(0, regex_lexemes))]
        if specials and rng.random() < 0.25:
            lexemes.append(Special((rng.choice(specials),)))
        names = ["S", "A", "B", "C"][: rng.randint(2, 4)]
        rules = {}
        for n in names:
            alts = []
            for _ in range(rng.randint(1, 3)):
                alt = []
                for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 3])):
                    r = rng.random()
                    if r < 0.55:
                        alt.append(rng.choice(lexemes))
                    elif r < 0.88:
                        alt.append(Ref(rng.choice(names)))
                    else:
                        inner = rng.choice(lexemes) if rng.random() < 0.6 else Ref(rng.choice(names))
                        alt.append(rng.choice([Opt(inner), Star(inner), Many(inner), Rep(inner, 1, 2)]))
                alts.append(alt)
            rules[n] = alts
        ignore = rng.choice(IGNORE_POOL) if rng.random() < 0.4 else None
        cfg = CFG(f"random-cfg-{index}", rules, "S", ignore)
        prules, productive = productive_rules(desugar(cfg)[0])
        if "S" not in productive:
            continue
        # want a language with more than the empty string
        reach, todo = {"S"}, ["S"]
        while todo:
            n = todo.pop()
            for lhs, rhs in prules:
                if lhs == n:
                    for x in rhs:
                        if isinstance(x, str) and x not in reach:
                            reach.add(x)
                            todo.append(x)
        if not any(isinstance(x, (LEXEME_TYPES, Special)) for lhs, rhs in prules if lhs in reach for x in rhs):
            continue
        if greedy_safe(cfg) is None:
            return cfg
    raise RuntimeError("no greedy-safe random grammar found")


def remap_specials(cfg: CFG, mapping: dict) -> CFG:
    """The same grammar with its special-token ids renamed (to use it with another vocabulary)."""
    def m(s):
        if isinstance(s, Special):
            return Special(tuple(mapping.get(i, i) for i in s.ids))
        if isinstance(s, (Opt, Star, Many)):
            return type(s)(m(s.item))
        if isinstance(s, Rep):
            return Rep(m(s.item), s.lo, s.hi)
        if isinstance(s, (Seq, Choice)):
            return type(s)(tuple(m(x) for x in s.items))
        return s
    return CFG(cfg.name, {n: [[m(s) for s in alt] for alt in alts] for n, alts in cfg.rules.items()},
               cfg.start, cfg.ignore)


# -------------------------------------------------------------------------------- segments

def segments_to_units(segments) -> list:
    """Text/special segments -> list of bytes objects and ("special", id) items."""
    out = []
    for s in segments:
        out.append(s.encode("utf-8") if isinstance(s, str) else s)
    return out
