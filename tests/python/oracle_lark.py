"""The grammar oracle's own reading of Lark text (oracle_grammars.OGrammar): nothing of stencil.

Written from Lark's grammar reference: rules (lower case, ``?``/``!``/``_`` prefixes and
``.priority`` change no language) and terminals (upper case, ``.priority``), alternatives on
continuation lines starting with ``|``, ``-> alias``, ``[x]``, ``x?`` ``x*`` ``x+`` ``x ~ n``
``x ~ n..m``, ``"lit"`` and ``"lit"i``, ``"a".."z"``, ``/regex/flags`` (Python ``re`` meaning,
read by oracle_grammars.parse_regex), ``%import common.X [-> Y]``, ``%import common (X, Y)`` from
the table below (Lark's common.lark), ``%ignore``, ``//`` comments. Every literal, regex or
terminal used in a rule is one terminal that ``%ignore`` matches may precede; not at position 0
and not after the last terminal (stencil follows llguidance there; ``initial_skip=True,
final_skip=True`` gives Lark's own reading).
"""
from __future__ import annotations

from oracle_grammars import OGrammar, OracleSyntaxError, TextReader, lit, parse_regex, with_cases

# Lark's common.lark, the terminals the tests import (ESCAPED_STRING needs a lookbehind: left out).
COMMON = r'''
DIGIT: "0".."9"
HEXDIGIT: "a".."f" | "A".."F" | DIGIT
INT: DIGIT+
SIGNED_INT: ["+"|"-"] INT
DECIMAL: INT "." INT? | "." INT
_EXP: ("e"|"E") SIGNED_INT
FLOAT: INT _EXP | DECIMAL _EXP?
SIGNED_FLOAT: ["+"|"-"] FLOAT
NUMBER: FLOAT | INT
SIGNED_NUMBER: ["+"|"-"] NUMBER
LCASE_LETTER: "a".."z"
UCASE_LETTER: "A".."Z"
LETTER: UCASE_LETTER | LCASE_LETTER
WORD: LETTER+
CNAME: ("_"|LETTER) ("_"|LETTER|DIGIT)*
WS_INLINE: (" "|/\t/)+
WS: /[ \t\f\r\n]/+
CR: /\r/
LF: /\n/
NEWLINE: (CR? LF)+
SH_COMMENT: /#[^\n]*/
CPP_COMMENT: /\/\/[^\n]*/
SQL_COMMENT: /--[^\n]*/
'''

# Lark evaluates \n \t \r \f \x \u \U, reads \\ and \" as the character, and keeps any other
# backslash as written: "\." is two characters, a backslash and a dot.
_STR_ESC = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "\\": "\\", '"': '"'}


def _t(name: str) -> str:
    return "$" + name   # terminals live among the rules under a name no rule can have


def _is_name(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_")


class _Lark(TextReader):
    def __init__(self, text: str, g: OGrammar):
        super().__init__(text, _is_name)
        self.depth, self.g = 0, g
        self.ignores: list = []

    def blank(self, newlines: bool) -> None:
        s = self.s
        while self.i < len(s):
            if s.startswith("//", self.i):
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            elif s[self.i] in " \t\r" or (newlines and s[self.i] == "\n"):
                self.i += 1
            else:
                return

    def space(self) -> None:
        """Blanks; a newline ends the statement unless inside brackets or before a ``|`` line."""
        self.blank(self.depth > 0)
        if self.s.startswith("\n", self.i):
            j = self.i
            self.blank(True)
            if not self.s.startswith("|", self.i):
                self.i = j

    def statements(self) -> None:
        while True:
            self.blank(True)
            if self.i >= len(self.s):
                return
            if self.s[self.i] == "%":
                self.directive()
            else:
                self.definition()
            self.blank(False)
            if self.i < len(self.s) and self.s[self.i] != "\n":
                self.fail("expected the end of the line")

    def definition(self) -> None:
        while self.s[self.i] in "?!":
            self.i += 1
        name = self.name()
        if self.s.startswith(".", self.i):
            self.i += 1
            self.name()   # priority
        if self.s.startswith("{", self.i):
            self.fail("templates")
        self.space()
        if not self.s.startswith(":", self.i):
            self.fail("expected ':'")
        self.i += 1
        terminal = name.lstrip("_")[:1].isupper()
        key = _t(name) if terminal else name
        if key in self.g.rules:
            self.fail(f"{name} defined twice")
        self.g.rules[key] = self.alternatives(in_rule=not terminal)

    def directive(self) -> None:
        self.i += 1
        what = self.name()
        self.blank(False)
        if what == "ignore":
            self.ignores.append(self.alternatives(in_rule=False))
        elif what == "import":
            self.import_common()
        else:
            self.fail(f"%{what}")

    def import_common(self) -> None:
        if not self.s.startswith("common", self.i):
            self.fail("only the common library")
        self.i += len("common")
        if self.s.startswith(".", self.i):
            self.i += 1
            name = self.name()
            self.blank(False)
            alias = name
            if self.s.startswith("->", self.i):
                self.i += 2
                self.blank(False)
                alias = self.name()
            self.copy_common(name, alias)
            return
        self.blank(False)
        end = self.s.index(")", self.i)
        for name in self.s[self.i + 1:end].replace(" ", "").split(","):
            self.copy_common(name, name)
        self.i = end + 1

    def copy_common(self, name: str, alias: str) -> None:
        common = _common()
        if _t(name) not in common.rules:
            self.fail(f"common has no {name}")
        stack = [("ref", _t(name))]
        while stack:   # the terminals it is made of come along under their own names
            x = stack.pop()
            if x[0] == "ref" and x[1] not in self.g.rules:
                self.g.rules[x[1]] = common.rules[x[1]]
                stack.append(common.rules[x[1]])
            elif x[0] in ("cat", "alt"):
                stack.extend(x[1])
            elif x[0] in ("rep", "term"):
                stack.append(x[1])
        self.g.rules[_t(alias)] = common.rules[_t(name)]

    def alternatives(self, in_rule: bool) -> tuple:
        alts = [self.sequence(in_rule)]
        while self.s.startswith("|", self.i):
            self.i += 1
            alts.append(self.sequence(in_rule))
        return alts[0] if len(alts) == 1 else ("alt", tuple(alts))

    def sequence(self, in_rule: bool) -> tuple:
        items = []
        while True:
            self.space()
            if self.s.startswith("->", self.i):
                self.i += 2
                self.space()
                self.name()   # an alias names the tree node only
                self.space()
            if self.i >= len(self.s) or self.s[self.i] in "|)]\n":
                return ("cat", tuple(items))
            items.append(self.postfix(self.atom(in_rule), in_rule))

    def atom(self, in_rule: bool) -> tuple:
        c = self.s[self.i]
        if c in "([":
            self.i += 1
            self.depth += 1
            body = self.alternatives(in_rule)
            self.depth -= 1
            self.space()
            if not self.s.startswith(")" if c == "(" else "]", self.i):
                self.fail("unclosed bracket")
            self.i += 1
            return body if c == "(" else ("rep", body, 0, 1)
        if c == '"':
            e = self.string()
        elif c == "/":
            e = self.regex()
        elif _is_name(c):
            name = self.name()
            if not name.lstrip("_")[:1].isupper():
                return ("ref", name)
            e = ("ref", _t(name))
        else:
            self.fail("unexpected character")
        return ("term", e) if in_rule else e

    def string(self) -> tuple:
        text = self.quoted()
        if self.s.startswith("i", self.i) and not _is_name(self.s[self.i + 1:self.i + 2] or " "):
            self.i += 1
            return ("cat", tuple(("cls", with_cases([(ord(c), ord(c))])) for c in text))
        self.blank(False)
        if self.s.startswith("..", self.i):
            self.i += 2
            self.blank(False)
            hi = self.quoted()
            if len(text) != 1 or len(hi) != 1 or hi < text:
                self.fail("bad range")
            return ("cls", ((ord(text), ord(hi)),))
        return lit(text)

    def quoted(self) -> str:
        s = self.s
        self.i += 1
        out = []
        while self.i < len(s) and s[self.i] != '"':
            if s[self.i] != "\\":
                out.append(s[self.i])
                self.i += 1
                continue
            e = s[self.i + 1]
            n = {"x": 2, "u": 4, "U": 8}.get(e)
            if n:
                out.append(chr(int(s[self.i + 2:self.i + 2 + n], 16)))
                self.i += 2 + n
            else:
                out.append(_STR_ESC.get(e, "\\" + e))   # Python keeps unknown escapes as written
                self.i += 2
        if self.i >= len(s):
            self.fail("unclosed string")
        self.i += 1
        return "".join(out)

    def regex(self) -> tuple:
        s = self.s
        j = self.i + 1
        while j < len(s) and s[j] != "/":
            j += 2 if s[j] == "\\" else 1
        body = s[self.i + 1:j]
        k = j + 1
        while k < len(s) and s[k] in "imslux":
            k += 1
        self.i = k
        return parse_regex(body, s[j + 1:k])

    def postfix(self, e: tuple, in_rule: bool) -> tuple:
        s = self.s
        while True:
            self.blank(False)
            c = s[self.i:self.i + 1]
            if c in ("*", "+", "?"):
                self.i += 1
                e = ("rep", e, 1 if c == "+" else 0, 1 if c == "?" else None)
            elif c == "~":
                self.i += 1
                self.blank(False)
                lo = hi = int(self.name())
                if s.startswith("..", self.i):
                    self.i += 2
                    hi = int(self.name())
                if hi < lo:
                    self.fail("bad repeat")
                e = ("rep", e, lo, hi)
            else:
                return e


_COMMON: list = []


def _common() -> OGrammar:
    if not _COMMON:
        g = OGrammar({}, "start")
        _Lark(COMMON, g).statements()
        _COMMON.append(g)
    return _COMMON[0]


def lark(text: str, *, initial_skip: bool = False, final_skip: bool = False) -> OGrammar:
    """An OGrammar from Lark text, read by the oracle's own parser (start rule ``start``)."""
    g = OGrammar({}, "start", initial_skip=initial_skip, final_skip=final_skip)
    p = _Lark(text, g)
    p.statements()
    if "start" not in g.rules:
        raise OracleSyntaxError("no rule 'start'")
    if p.ignores:
        g.ignore = p.ignores[0] if len(p.ignores) == 1 else ("alt", tuple(p.ignores))
    return g
