"""Parser for the regex dialect of stencil: ECMA-262 (as in JSON Schema ``pattern``) plus the
Python-only forms. Produces the AST of :mod:`stencil.grammar.regex.ast`.

The parser is a single left-to-right loop with an explicit stack of open groups, so nesting depth
never turns into Python recursion; input size, nesting depth and repetition counts are capped.
"""
from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import Optional

from stencil._core import DEFAULT_LIMITS, GrammarError
from stencil.grammar.deadline import check_deadline
from stencil.grammar.regex import unicode
from stencil.grammar.regex.ast import (ANCHOR_END, ANCHOR_START, NOTHING, Literal, alt,
                                       char_class, concat, repeat)

MAX_PATTERN_LENGTH = 1_000_000
MAX_NESTING_DEPTH = 1_000
MAX_REPEAT = DEFAULT_LIMITS["max_repeat"]

_SUPPORTED_FLAGS = "isxau"
#: what the escapes and "." mean: "ecma" (JSON Schema's ECMA-262: \d \w ASCII, "." stops at
#: every line terminator), or "rust" (Rust's regex crate, llguidance's Lark terminals: \d \w \s
#: Unicode unless (?-u), "." stops at "\n" only, [[:alpha:]], \x{...}, nested classes and the set
#: operations && -- ~~, no octal escapes)
DIALECTS = ("ecma", "rust")
_VERBOSE_SPACE = " \t\n\r\v\f"
_HEX = "0123456789abcdefABCDEF"
_OCT = "01234567"


def _show(pattern: str, pos: int) -> str:
    """The pattern (a window of it if long) with a caret under position ``pos``."""
    lo, hi = max(0, pos - 40), min(len(pattern), pos + 40)
    head, tail = ("..." if lo > 0 else ""), ("..." if hi < len(pattern) else "")
    parts, caret = [head], len(head)
    for k in range(lo, hi):
        ch = pattern[k]
        shown = ch if ch.isprintable() else ascii(ch)[1:-1]
        if k < pos:
            caret += len(shown)
        parts.append(shown)
    parts.append(tail)
    return "  " + "".join(parts) + "\n  " + " " * caret + "^"


def regex_error(pattern: str, pos: int, message: str) -> GrammarError:
    err = GrammarError(f"regex: {message} at position {pos}\n{_show(pattern, pos)}")
    # the core's exception class declares no attributes: the context rides on the instance
    err.position = pos  # type: ignore[attr-defined]
    err.pattern = pattern  # type: ignore[attr-defined]
    return err


@lru_cache(maxsize=4096)
def _case_node(cp: int, ascii_only: bool):
    """The class of a code point's case variants, or None if it has none."""
    rs = unicode.case_variants(cp, ascii_only)
    return char_class(rs) if len(rs) > 1 or rs[0][0] != rs[0][1] else None


class _Frame:
    """An open group: finished alternatives, the current branch, pending literal text."""
    __slots__ = ("alts", "items", "lit", "last", "flags", "start")

    def __init__(self, flags: frozenset, start: int):
        self.alts: list = []
        self.items: list = []
        self.lit: list[str] = []   # literal characters not yet turned into a node
        self.last: Optional[str] = None  # what the last atom is: "lit", "node", "quant", None
        self.flags = flags
        self.start = start

    def flush(self):
        if self.lit:
            self.items.append(Literal("".join(self.lit)))
            self.lit.clear()

    def add(self, node, quantifiable: bool = True):
        self.flush()
        self.items.append(node)
        self.last = "node" if quantifiable else None

    def finish(self):
        self.flush()
        self.alts.append(concat(self.items))
        return alt(self.alts)


class _Parser:
    def __init__(self, pattern: str, flags: str, dialect: str = "ecma"):
        self.p = pattern
        self.n = len(pattern)
        self.i = 0
        if dialect not in DIALECTS:
            raise GrammarError(f"regex: unknown dialect {dialect!r} (known: {', '.join(DIALECTS)})")
        self.rust = dialect == "rust"
        fl = set()
        for f in flags:
            self._check_flag(f, 0, "flags argument: ")
            fl.add(f)
        self.flags0 = frozenset(fl)

    def error(self, pos: int, message: str) -> GrammarError:
        return regex_error(self.p, pos, message)

    def _check_flag(self, f: str, pos: int, where: str = ""):
        if f == "m":
            raise self.error(pos, f"{where}the multiline flag 'm' is not supported "
                             "(^ and $ only match at the start and end of the input)")
        if f not in _SUPPORTED_FLAGS:
            raise self.error(pos, f"{where}unsupported regex flag {f!r} "
                             "(supported: i, s, x, a, u)")

    # --- main loop -----------------------------------------------------------------------------------

    def parse(self):
        if self.n > MAX_PATTERN_LENGTH:
            raise self.error(MAX_PATTERN_LENGTH, f"pattern longer than {MAX_PATTERN_LENGTH} "
                             "characters")
        p, n = self.p, self.n
        stack = [_Frame(self.flags0, -1)]
        steps = 0
        while True:
            steps += 1
            if not steps & 4095:   # a pattern may be a megabyte long
                check_deadline()
            fr = stack[-1]
            if "x" in fr.flags:
                self._skip_verbose()
            if self.i >= n:
                break
            c = p[self.i]
            if c == "(":
                self._open_group(stack)
            elif c == ")":
                if len(stack) == 1:
                    raise self.error(self.i, "unbalanced parenthesis ')'")
                self.i += 1
                node = stack.pop().finish()
                stack[-1].add(node)
            elif c == "|":
                self.i += 1
                fr.flush()
                fr.alts.append(concat(fr.items))
                fr.items = []
                fr.last = None
            elif c in "*+?":
                self._quantify(fr, self.i, 0 if c != "+" else 1, None if c != "?" else 1, 1)
            elif c == "{":
                q = self._brace_quantifier()
                if q is None:
                    self._char(fr, ord(c))
                    self.i += 1
                else:
                    self._quantify(fr, self.i, q[0], q[1], q[2])
            elif c == "[":
                fr.add(self._parse_class(fr.flags))
            elif c == ".":
                self.i += 1
                fr.add(char_class(unicode.ANY if "s" in fr.flags else unicode.RUST_DOT if self.rust else unicode.DOT))
            elif c == "^":
                self.i += 1
                fr.add(ANCHOR_START, quantifiable=False)
            elif c == "$":
                self.i += 1
                fr.add(ANCHOR_END, quantifiable=False)
            elif c == "\\":
                self._escape_atom(fr)
            else:
                self._char(fr, ord(c))
                self.i += 1
        if len(stack) > 1:
            raise self.error(stack[-1].start, "missing ')': unbalanced parenthesis '('")
        return stack[0].finish()

    def _skip_verbose(self):
        p, n = self.p, self.n
        while self.i < n:
            c = p[self.i]
            if c in _VERBOSE_SPACE:
                self.i += 1
            elif c == "#":
                j = p.find("\n", self.i)
                self.i = n if j < 0 else j + 1
            else:
                break

    def _char(self, fr: _Frame, cp: int):
        """Append one literal code point to the current branch (case-expanded under i)."""
        if unicode.SURR_LO <= cp <= unicode.SURR_HI:
            fr.add(NOTHING)
            return
        if "i" in fr.flags:
            node = _case_node(cp, "a" in fr.flags)
            if node is not None:
                fr.add(node)
                return
        fr.lit.append(chr(cp))
        fr.last = "lit"

    # --- quantifiers ---------------------------------------------------------------------------------

    def _brace_quantifier(self):
        """Parse ``{m}``, ``{m,}``, ``{m,n}`` or ``{,n}`` at self.i: (min, max, length) or None."""
        p, i, n = self.p, self.i + 1, self.n
        j = i
        while j < n and p[j] in "0123456789":
            j += 1
        lo_s = p[i:j]
        if j < n and p[j] == "}":
            if not lo_s:
                return None
            hi_s, end, comma = lo_s, j, False
        elif j < n and p[j] == ",":
            k = j + 1
            while k < n and p[k] in "0123456789":
                k += 1
            if k >= n or p[k] != "}" or (not lo_s and k == j + 1):
                return None
            hi_s, end, comma = p[j + 1:k], k, True
        else:
            return None
        for s, at in ((lo_s, i), (hi_s, j + 1 if comma else i)):
            if len(s) > 7 or (s and int(s) > MAX_REPEAT):
                raise self.error(at, f"repetition count {s[:20]} is larger than the maximum "
                                 f"{MAX_REPEAT}")
        lo = int(lo_s) if lo_s else 0
        hi = int(hi_s) if hi_s else None
        if hi is not None and hi < lo:
            raise self.error(self.i, f"bad repetition {{{lo},{hi}}}: minimum above maximum")
        return lo, hi, end + 1 - self.i

    def _quantify(self, fr: _Frame, pos: int, lo: int, hi: Optional[int], length: int):
        quant = self.p[pos:pos + length]
        if fr.last == "quant":
            raise self.error(pos, f"quantifier {quant!r} follows another quantifier "
                             "(nothing to repeat)")
        if fr.last is None:
            raise self.error(pos, f"nothing to repeat before quantifier {quant!r}")
        if fr.last == "lit":
            atom = Literal(fr.lit.pop())
            fr.flush()
        else:
            atom = fr.items.pop()
        fr.items.append(repeat(atom, lo, hi))
        fr.last = "quant"
        self.i = pos + length
        if self.i < self.n and self.p[self.i] == "?":
            self.i += 1  # lazy: same language
        elif self.i < self.n and self.p[self.i] == "+":
            raise self.error(pos, f"possessive quantifier {quant + '+'!r} is not supported "
                             "(it changes the language; use the greedy form)")

    # --- groups -----------------------------------------------------------------------------------

    def _open_group(self, stack: list):
        p, n, start = self.p, self.n, self.i
        fr = stack[-1]
        flags = fr.flags
        if p.startswith("(?", start):
            j = start + 2
            c = p[j] if j < n else ""
            c2 = p[j + 1] if j + 1 < n else ""
            if c == ":":
                self.i = j + 1
            elif c == "=":
                raise self.error(start, "lookahead assertion (?=...) is not supported")
            elif c == "!":
                raise self.error(start, "negative lookahead assertion (?!...) is not supported")
            elif c == "<" and c2 == "=":
                raise self.error(start, "lookbehind assertion (?<=...) is not supported")
            elif c == "<" and c2 == "!":
                raise self.error(start, "negative lookbehind assertion (?<!...) is not supported")
            elif c == "<":
                self.i = self._group_name(j + 1)
            elif c == "P" and c2 == "<":
                self.i = self._group_name(j + 2)
            elif c == "P" and c2 == "=":
                raise self.error(start, "backreference (?P=name) is not supported")
            elif c == "P" and c2 == ">":
                raise self.error(start, "recursion (?P>name) is not supported")
            elif c == "P":
                raise self.error(start, "unknown group syntax '(?P'")
            elif c == "#":
                k = p.find(")", j)
                if k < 0:
                    raise self.error(start, "missing ')' after comment (?#...")
                self.i = k + 1
                return
            elif c == ">":
                raise self.error(start, "atomic group (?>...) is not supported")
            elif c == "(":
                raise self.error(start, "conditional group (?(...)...) is not supported")
            elif c == "|":
                raise self.error(start, "branch reset group (?|...) is not supported")
            elif c.isalpha() or c == "-":
                flags, scoped = self._inline_flags(j, flags)
                if not scoped:  # (?i): applies to the rest of the enclosing group
                    fr.flags = flags
                    fr.flush()
                    fr.last = None  # a quantifier cannot follow it
                    return
            else:
                raise self.error(start, f"unknown group syntax '(?{c}'" if c else
                                 "missing group syntax after '(?'")
        else:
            self.i = start + 1
        if len(stack) > MAX_NESTING_DEPTH:
            raise self.error(start, f"groups nested deeper than {MAX_NESTING_DEPTH} levels")
        stack.append(_Frame(flags, start))

    def _group_name(self, j: int) -> int:
        p = self.p
        k = p.find(">", j)
        name = p[j:k] if k >= 0 else ""
        if k < 0 or not (name.isidentifier() or
                         (name and name.replace("$", "_").isidentifier())):
            raise self.error(j, "bad or unterminated group name")
        return k + 1

    def _inline_flags(self, j: int, flags: frozenset):
        """Parse ``i-s`` up to ':' (scoped) or ')' (to the end of the group) at p[j]."""
        p, n = self.p, self.n
        on: set[str] = set()
        off: set[str] = set()
        neg = False
        while j < n and p[j] not in ":)":
            f = p[j]
            if f == "-" and not neg:
                neg = True
            else:
                self._check_flag(f, j, "inline ")
                (off if neg else on).add(f)
            j += 1
        if j >= n:
            raise self.error(j, "missing ':' or ')' after inline flags")
        self.i = j + 1
        if self.rust and "u" in on | off:
            # Rust's u is on by default; (?-u) makes \d \w \s and case folding ASCII's, which
            # stencil's a flag means
            (on if "u" in off else off).add("a")
        return frozenset((set(flags) | on) - off), p[j] == ":"

    # --- escapes -----------------------------------------------------------------------------------

    def _escape_atom(self, fr: _Frame):
        pos = self.i
        kind, val = self._parse_escape(in_class=False, flags=fr.flags)
        if kind == "char":
            self._char(fr, val)
        elif kind == "anchor":
            fr.add(val, quantifiable=False)
        else:
            ranges, foldable = val
            if foldable and "i" in fr.flags:
                ranges = unicode.case_closure(ranges, "a" in fr.flags)
            fr.add(char_class(ranges))
        assert self.i > pos

    def _hex(self, j: int, count: int, what: str) -> int:
        s = self.p[j:j + count]
        if len(s) != count or any(c not in _HEX for c in s):
            raise self.error(j - 2, f"bad escape {what}: expected {count} hex digits")
        return int(s, 16)

    def _parse_escape(self, in_class: bool, flags: frozenset = frozenset()):
        """Parse an escape at self.i (the backslash). Returns ("char", cp), ("anchor", node) or
        ("class", (ranges, foldable))."""
        p, n, pos = self.p, self.n, self.i
        if pos + 1 >= n:
            raise self.error(pos, "trailing backslash at end of pattern")
        c = p[pos + 1]
        self.i = pos + 2
        simple = {"n": 10, "r": 13, "t": 9, "f": 12, "v": 11, "a": 7, "e": 27}   # \e: ESC (PCRE, Rust)
        if c in simple:
            return "char", simple[c]
        if c in "dDwWsS":
            ascii_only = "a" in flags
            if self.rust and not ascii_only:
                base = unicode.rust_class(c.lower())
            else:
                base = {"d": unicode.DIGIT, "w": unicode.WORD,
                        "s": unicode.ASCII_SPACE if ascii_only else unicode.SPACE}[c.lower()]
            return "class", (base if c.islower() else unicode.complement(base), False)
        if c in "pP":
            return "class", (self._property(pos, c == "P"), True)
        if c == "b":
            if in_class:
                return "char", 8
            raise self.error(pos, "word boundary \\b is not supported")
        if c == "B":
            if in_class:
                raise self.error(pos, "bad escape \\B in character class")
            raise self.error(pos, "non-word boundary \\B is not supported")
        if c in "AZz":
            if in_class:
                raise self.error(pos, f"bad escape \\{c} in character class")
            return "anchor", (ANCHOR_START if c == "A" else ANCHOR_END)
        if c == "x" and self.rust and pos + 2 < n and p[pos + 2] == "{":   # Rust's \x{1F600}
            k = p.find("}", pos + 3)
            if k < 0 or not 0 < k - pos - 3 <= 8 or any(h not in _HEX for h in p[pos + 3:k]):
                raise self.error(pos, "bad escape \\x{...}: expected 1 to 8 hex digits and '}'")
            v = int(p[pos + 3:k], 16)
            if v > unicode.MAX_CP:
                raise self.error(pos, "bad escape \\x{...}: code point above 10FFFF")
            self.i = k + 1
            return "char", v
        if c == "x":
            v = self._hex(pos + 2, 2, "\\x")
            self.i = pos + 4
            return "char", v
        if c == "u":
            return "char", self._u_escape(pos)
        if c == "U":
            v = self._hex(pos + 2, 8, "\\U")
            if v > unicode.MAX_CP:
                raise self.error(pos, "bad escape \\U: code point above 10FFFF")
            self.i = pos + 10
            return "char", v
        if c == "N":
            return "char", self._named_escape(pos)
        if c == "c":
            if pos + 2 < n and p[pos + 2].isascii() and p[pos + 2].isalpha():
                self.i = pos + 3
                return "char", ord(p[pos + 2]) % 32
            raise self.error(pos, "bad escape \\c: expected a letter A-Z or a-z")
        if c == "k" and not in_class:
            raise self.error(pos, "backreference \\k<name> is not supported")
        if c in "0123456789":
            return self._digit_escape(pos, in_class)
        if c.isascii() and c.isalnum():
            raise self.error(pos, f"bad escape \\{c}")
        return "char", ord(c)  # identity escape: \. \/ \- \\ \é ...

    def _u_escape(self, pos: int) -> int:
        """The code point of ``\\uXXXX`` (a surrogate pair of two such escapes joined) or ``\\u{X...}`` at pos."""
        p, n = self.p, self.n
        if pos + 2 < n and p[pos + 2] == "{":
            k = p.find("}", pos + 3)
            digits = p[pos + 3:k] if k >= 0 else ""
            if not digits or len(digits) > 8 or any(d not in _HEX for d in digits) \
                    or int(digits, 16) > unicode.MAX_CP:
                raise self.error(pos, "bad escape \\u{...}: expected 1 to 6 hex digits "
                                 "up to 10FFFF")
            self.i = k + 1
            return int(digits, 16)
        v = self._hex(pos + 2, 4, "\\u")
        self.i = pos + 6
        if 0xD800 <= v <= 0xDBFF and p.startswith("\\u", self.i):  # surrogate pair
            try:
                lo = self._hex(self.i + 2, 4, "\\u")
            except GrammarError:
                lo = -1
            if 0xDC00 <= lo <= 0xDFFF:
                self.i += 6
                return 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)
        return v

    def _named_escape(self, pos: int) -> int:
        """The code point of ``\\N{CHARACTER NAME}`` at pos."""
        p, n = self.p, self.n
        k = p.find("}", pos + 3)
        if pos + 2 >= n or p[pos + 2] != "{" or k < 0:
            raise self.error(pos, "bad escape \\N: expected \\N{CHARACTER NAME}")
        try:
            ch = unicodedata.lookup(p[pos + 3:k])
        except KeyError:
            raise self.error(pos, f"unknown character name {p[pos + 3:k]!r}") from None
        self.i = k + 1
        return ord(ch)

    def _digit_escape(self, pos: int, in_class: bool):
        p, n = self.p, self.n
        if self.rust:   # Rust's regex crate reads neither octal (off by default) nor backreferences
            raise self.error(pos, f"bad escape \\{p[pos + 1]}: Rust's regex (llguidance's Lark) has no octal "
                             "escapes or backreferences; write \\x00 or \\x{...}")
        j = pos + 1
        k = j
        while k < n and k < j + 3 and p[k] in _OCT:
            k += 1
        digits = p[j:k]
        if p[j] == "0" or (in_class and digits) or len(digits) == 3:
            if p[j] == "0":
                digits = digits[:3]
            v = int(digits, 8)
            if v > 0o377:
                raise self.error(pos, f"octal escape \\{digits} above \\377")
            self.i = k
            return "char", v
        if in_class:
            raise self.error(pos, f"bad escape \\{p[j]}")
        raise self.error(pos, f"backreference \\{p[j]} is not supported")

    def _property(self, pos: int, negate: bool):
        p, n = self.p, self.n
        if pos + 2 < n and p[pos + 2] == "{":
            k = p.find("}", pos + 3)
            if k < 0:
                raise self.error(pos, "missing '}' after \\p{")
            spec, self.i = p[pos + 3:k], k + 1
        elif pos + 2 < n and p[pos + 2].isascii() and p[pos + 2].isalpha():
            spec, self.i = p[pos + 2], pos + 3
        else:
            raise self.error(pos, "bad escape \\p: expected \\p{Property}")
        ranges = unicode.property_ranges(spec)
        if ranges is None:
            raise self.error(pos, f"unsupported Unicode property \\{p[pos + 1]}{{{spec}}} "
                             "(supported: general categories such as L, Lu, Letter, Nd, and "
                             "Any, ASCII, Assigned)")
        return unicode.complement(ranges) if negate else ranges

    # --- character classes ----------------------------------------------------------------------

    def _parse_class(self, flags: frozenset):
        p, n, start = self.p, self.n, self.i
        j = start + 1
        negate = j < n and p[j] == "^"
        if negate:
            j += 1
        if j < n and p[j] == "]":
            # Python reads a leading ']' as a literal; ECMA reads "[]" as the empty class and "[^]"
            # as any character. Take the first reading unless it leaves the class unterminated.
            try:
                return self._class_body(start, j, negate, flags, leading_bracket=True)
            except GrammarError as e:
                if not getattr(e, "unterminated", False):
                    raise
            self.i = j + 1
            return char_class(unicode.ANY) if negate else NOTHING
        return self._class_body(start, j, negate, flags, leading_bracket=False)

    def _class_body(self, start: int, j: int, negate: bool, flags: frozenset,
                    leading_bracket: bool):
        if self.rust:
            ranges = self._rust_class_ranges(start, j, negate, flags)
            return char_class(ranges)
        p, n = self.p, self.n
        fold: list = []     # code points and ranges: case-expanded under i
        fixed: list = []    # \d \w \s and their negations: never case-expanded
        first = True
        self.i = j
        while True:
            if self.i >= n:
                err = self.error(start, "unterminated character class '['")
                err.unterminated = True  # type: ignore[attr-defined]  # read above (getattr); see regex_error
                raise err
            if p[self.i] == "]" and not (first and leading_bracket):
                self.i += 1
                break
            first = False
            self._class_item(flags, fold, fixed, "]")
        ranges = self._class_set(fold, fixed, flags)
        return char_class(unicode.complement(ranges) if negate else ranges)

    def _class_item(self, flags: frozenset, fold: list, fixed: list, range_stops: str) -> None:
        """One item of a class at p[self.i]: a character or a range ``a-z`` into ``fold`` (case
        folded under i), a class escape into ``fold`` or ``fixed``. A ``-`` before one of
        ``range_stops`` is a literal, not a range."""
        p, n, apos = self.p, self.n, self.i
        kind, val = self._class_atom(flags)
        if self.i + 1 < n and p[self.i] == "-" and p[self.i + 1] not in range_stops:
            self.i += 1
            kind2, val2 = self._class_atom(flags)
            if kind != "char" or kind2 != "char":
                raise self.error(apos, "bad character range: a class escape cannot be a range endpoint")
            if val > val2:
                raise self.error(apos, f"bad character range {p[apos:self.i]}: start above end")
            fold.append((val, val2))
        elif kind == "char":
            fold.append((val, val))
        else:
            ranges, foldable = val
            (fold if foldable else fixed).extend(ranges)

    @staticmethod
    def _class_set(fold: list, fixed: list, flags: frozenset) -> unicode.Ranges:
        ranges = unicode.normalize(fold)
        if "i" in flags:
            ranges = unicode.case_closure(ranges, "a" in flags)
        return unicode.union(ranges, unicode.normalize(fixed))

    def _rust_class_ranges(self, start: int, j: int, negate: bool, flags: frozenset) -> unicode.Ranges:
        """The set of a Rust class whose body starts at p[j] (after ``[`` and ``^``): unions of
        items (ranges bind tighter), nested classes ``[a[bc]]``, and the set operations ``&&``,
        ``--`` and ``~~`` at one precedence, left to right, below the union and above ``^``."""
        p, n = self.p, self.n
        ops = {"&&": unicode.intersect, "--": unicode.difference, "~~": unicode.symmetric_difference}
        result: Optional[unicode.Ranges] = None
        op = None
        fold: list = []
        fixed: list = []
        first = True
        self.i = j
        while True:
            if self.i >= n:
                err = self.error(start, "unterminated character class '['")
                err.unterminated = True  # type: ignore[attr-defined]  # read by _parse_class
                raise err
            two = p[self.i:self.i + 2]
            if (p[self.i] == "]" and not first) or two in ops:
                ranges = self._class_set(fold, fixed, flags)
                result = ranges if op is None or result is None else ops[op](result, ranges)
                fold, fixed = [], []
                if p[self.i] == "]":
                    self.i += 1
                    return unicode.complement(result) if negate else result
                op = two
                self.i += 2
                continue
            first = False
            if p[self.i] == "[" and not p.startswith("[:", self.i):
                fixed.extend(self._rust_nested_class(flags))
                continue
            self._class_item(flags, fold, fixed, "]-")

    def _rust_nested_class(self, flags: frozenset) -> unicode.Ranges:
        """A class nested in a Rust class, ``[...]`` at p[self.i], its case folding done."""
        start = self.i
        j = start + 1
        negate = j < self.n and self.p[j] == "^"
        return self._rust_class_ranges(start, j + negate, negate, flags)

    def _class_atom(self, flags: frozenset):
        c = self.p[self.i]
        if c == "\\":
            return self._parse_escape(in_class=True, flags=flags)
        if c == "[" and self.rust and self.p.startswith("[:", self.i):   # Rust's [[:alpha:]], [[:^digit:]]
            k = self.p.find(":]", self.i + 2)
            name = self.p[self.i + 2:k] if k >= 0 else ""
            negate = name.startswith("^")
            ranges = unicode.POSIX.get(name[1:] if negate else name)
            if ranges is None:
                raise self.error(self.i, f"unknown ASCII class [:{name}:] (known: {', '.join(unicode.POSIX)})")
            self.i = k + 2
            return "class", (unicode.complement(ranges) if negate else ranges, True)
        self.i += 1
        return "char", ord(c)


def parse(pattern: str, flags: str = "", dialect: str = "ecma"):
    if not isinstance(pattern, str):
        raise GrammarError(f"regex: pattern must be a str, not {type(pattern).__name__}")
    parser = _Parser(pattern, flags, dialect)
    return parser.parse()
