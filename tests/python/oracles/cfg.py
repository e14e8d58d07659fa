"""Random regexes (an AST that renders both spellings and converts to a CFG) and the tiny CFG
description, built with stencil's GrammarBuilder."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from .text import LINE_TERMINATORS, MAX_CP, ranges_contain


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
