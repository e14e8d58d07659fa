"""Tokens of the Lark grammar syntax, with their offsets for error messages.

Newlines separate statements, except inside brackets and before a line that continues the
previous rule with ``|``. Comments start with ``//`` or ``#`` and run to the end of the line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from stencil.grammar.ebnf.ast import Source
from stencil.grammar.deadline import check_deadline

__all__ = ["Token", "tokenize"]


@dataclass
class Token:
    kind: str      # RULE TERMINAL STRING REGEXP NUMBER HEX OP DIRECTIVE SPECIAL GRAMMAR_REF NL BLOB LARK EOF
                   # or punctuation
    text: str
    pos: int
    inner: Optional[list] = None   # LARK: the tokens of the nested grammar


_PATTERNS = [
    # llguidance allows '-' inside names (not before '>', so `a->b` stays an alias)
    ("RULE", r"[?!]?_?[a-z](?:[_a-z0-9]|-(?!>))*"),
    ("TERMINAL", r"_?[A-Z](?:[_A-Z0-9]|-(?!>))*"),
    ("HEX", r"0[xX][0-9a-fA-F]+"),     # llguidance's parameter values (perm::0x0)
    ("NUMBER", r"[0-9]+"),
    ("DIRECTIVE", r"%[a-z_]+"),
    # <|name|>, DeepSeek's <｜name｜> (full-width bars), <[ids]>, and llguidance's any <name>
    ("SPECIAL", r"<\|[^|\s>]*\|>|<\uff5c[^\uff5c\s>]*\uff5c>|<\[[^\]\n]*\]>|<[^<>\s\[\]]+>"),
    ("GRAMMAR_REF", r"@[A-Za-z_][A-Za-z0-9_\-]*"),
    ("ARROW", r"->"),
    ("DOTDOT", r"\.\."),
    ("DCOLON", r"::"),                  # llguidance's parametric rules: name::_, name::set_bit(0)
    ("OP", r"[*+?]"),
    ("PUNCT", r"[:|()\[\]{},~.=&_]"),   # a lone `_`: the parameter of a parametric rule
]
_TOKEN_RE = re.compile("|".join(f"(?P<{k}>{p})" for k, p in _PATTERNS))
_SPACE = " \t\f\r"


def _skip_space_and_comments(s: str, i: int) -> int:
    n = len(s)
    while i < n:
        c = s[i]
        if c in _SPACE or (c == "\\" and s.startswith("\\\n", i)):
            i += 1 if c != "\\" else 2
        elif s.startswith("//", i) or c == "#":
            j = s.find("\n", i)
            i = n if j < 0 else j
        else:
            break
    return i


def _past_delimiter(s: str, i: int, close: str, classes: bool) -> int:
    """Offset just past the ``close`` that ends the literal opened at ``i`` (escapes skipped;
    inside ``[...]`` when ``classes``), or -1. A string ends on its line; a regular expression
    (``classes``) may run over lines, as Lark's and llguidance's lexers read ``/.../`` (an x-flag
    pattern with comments, one alternative a line)."""
    j, n, in_class = i + 1, len(s), False
    while j < n:
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == "\n" and not classes:
            return -1
        if classes and c == "[":
            in_class = True
        elif classes and c == "]":
            in_class = False
        elif c == close and not in_class:
            return j + 1
        j += 1
    return -1


def _string_end(src: Source, s: str, i: int) -> int:
    """End offset (after the closing quote and an optional ``i`` flag) of the string at ``i``."""
    j = _past_delimiter(s, i, '"', classes=False)
    if j < 0:
        raise src.error("string is not closed (strings end on the same line)", i)
    if j < len(s) and s[j] == "i" and not (j + 1 < len(s) and (s[j + 1].isalnum() or s[j + 1] == "_")):
        j += 1
    return j


def _regexp_end(src: Source, s: str, i: int) -> int:
    """End offset (after the closing slash and its flags) of the regular expression at ``i``."""
    j = _past_delimiter(s, i, "/", classes=True)
    if j < 0:
        raise src.error("regular expression /.../ is not closed", i)
    while j < len(s) and s[j].isalpha():
        j += 1
    return j


def _blob_end(src: Source, s: str, i: int, what: str) -> int:
    """End of a balanced ``{...}`` JSON object starting at ``i`` (strings respected)."""
    depth = 0
    j = i
    n = len(s)
    while j < n:
        c = s[j]
        if c == '"':
            j += 1
            while j < n and s[j] != '"':
                j += 2 if s[j] == "\\" else 1
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise src.error(f"the {{...}} after {what} is never closed", i)


_BLOB_DIRECTIVES = ("%json", "%regex", "%llguidance", "%grammar_options")


def tokenize(src: Source) -> list[Token]:
    return _tokenize(src, 0, None, 0)[0]


MAX_LARK_NESTING = 20   # %lark inside %lark


def _tokenize(src: Source, i: int, nested_at: Optional[int], level: int) -> tuple[list[Token], int]:
    """Tokens from offset ``i``; inside ``%lark {`` (opened at ``nested_at``) up to the ``}``
    that closes it, whose offset is returned too."""
    s = src.text
    n = len(s)
    out: list[Token] = []
    nest = _Nesting()
    while True:
        if not len(out) & 4095:   # the whole text is tokenized before parsing starts
            check_deadline()
        i = _skip_space_and_comments(s, i)
        if i >= n:
            break
        c = s[i]
        if c == "\n":
            i = _newline(s, i, not nest.brackets, out)
            continue
        j = _delimited(src, i, out, level)
        if j is not None:
            i = j
            continue
        if c == "}" and nested_at is not None and nest.braces == 0 and not nest.brackets:
            break
        i = _plain_token(src, i, out, nest)
    if nested_at is not None and i >= n:
        raise src.error("'%lark {' is never closed by '}'", nested_at)
    if nest.brackets:
        opener, pos = nest.brackets[-1]
        raise src.error(f"'{opener}' is never closed", pos)
    out.append(Token("NL", "\n", i))
    out.append(Token("EOF", "", i))
    return out, i


class _Nesting:
    """Open brackets while tokenizing: ( and [ with their offsets, and the count of open { of
    repetitions (inside a nested grammar, the } that closes the block is not one of them)."""

    def __init__(self):
        self.brackets: list[tuple[str, int]] = []
        self.braces = 0

    def punct(self, src: Source, text: str, i: int) -> None:
        if text == "{":
            self.braces += 1
        elif text == "}":
            self.braces -= 1
        if text in "([":
            self.brackets.append((text, i))
        elif text in ")]":
            if not self.brackets:
                raise src.error(f"unbalanced '{text}': nothing to close", i)
            opener, _ = self.brackets.pop()
            if (opener, text) not in (("(", ")"), ("[", "]")):
                raise src.error(f"'{text}' does not match the '{opener}' it closes", i)


def _newline(s: str, i: int, outside_brackets: bool, out: list[Token]) -> int:
    """Skip the blank and comment lines from the newline at ``i``; one NL token for them where a
    newline ends a statement. Returns the offset after them."""
    n = len(s)
    j = i
    while j < n and (s[j] == "\n" or s[j] in _SPACE or s[j] == "#" or s.startswith("//", j)):
        j = _skip_space_and_comments(s, j)
        if j < n and s[j] == "\n":
            j += 1
    # a newline inside brackets, before a `|` continuation, or between a directive and its {...}
    # object (llguidance reads that object as JSON, where a newline is space), is only space
    blob_next = j < n and s[j] == "{" and out and out[-1].kind == "DIRECTIVE" and out[-1].text in _BLOB_DIRECTIVES
    if outside_brackets and not (j < n and s[j] == "|") and not blob_next and out and out[-1].kind != "NL":
        out.append(Token("NL", "\n", i))
    return j


def _delimited(src: Source, i: int, out: list[Token], level: int) -> Optional[int]:
    """A token read to its closing delimiter (a string, a regexp, a directive's {...} blob, a
    nested %lark grammar) appended to ``out``; the offset after it, or None when none starts at ``i``."""
    s = src.text
    c = s[i]
    if c == '"':
        j = _string_end(src, s, i)
        out.append(Token("STRING", s[i:j], i))
        return j
    if c == "/" and not s.startswith("//", i):
        j = _regexp_end(src, s, i)
        out.append(Token("REGEXP", s[i:j], i))
        return j
    if c == "{" and out and out[-1].kind == "DIRECTIVE" and out[-1].text in _BLOB_DIRECTIVES:
        j = _blob_end(src, s, i, out[-1].text)
        out.append(Token("BLOB", s[i:j], i))
        return j
    if c == "{" and out and out[-1].kind == "DIRECTIVE" and out[-1].text == "%lark":
        if level >= MAX_LARK_NESTING:
            raise src.error(f"%lark blocks nest deeper than {MAX_LARK_NESTING} levels", i)
        inner, j = _tokenize(src, i + 1, i, level + 1)
        out.append(Token("LARK", s[i:j + 1], i, inner=inner))
        return j + 1
    return None


def _plain_token(src: Source, i: int, out: list[Token], nest: _Nesting) -> int:
    """The name, number, directive or punctuation at ``i`` appended to ``out``; the offset after it."""
    s = src.text
    m = _TOKEN_RE.match(s, i)
    if not m:
        if s[i] == "<":
            raise src.error("'<' starts a special token such as <|end|> or <[12]>, but is not one", i)
        raise src.error(f"unexpected character {s[i]!r}", i)
    kind = m.lastgroup or ""   # every alternative of _TOKEN_RE is a named group
    text = m.group()
    if kind == "PUNCT":
        kind = text
        nest.punct(src, text, i)
    elif kind in ("ARROW", "DOTDOT", "DCOLON"):
        kind = text
    out.append(Token(kind, text, i))
    return m.end()
