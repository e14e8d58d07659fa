"""GBNF (llama.cpp's grammar format) and the XGrammar EBNF dialect: parser and entry point.

Syntax::

    root   ::= "(" list ")" | item          # rules; `root` is the start rule
    list   ::= item ("," item)*             # ( ) groups, * + ? and {m} {m,} {m,n} {,n}
    item   ::= [a-z_] [a-z0-9_-]{0,15}      # classes [..] and [^..]; . is any character
    text   ::= "tab\\t" | 'x\\u00e9'         # strings: \\x.. \\u.... \\U........ \\t \\n \\r ...
    think  ::= <think> (!<[128822]>)* <[128822]>   # token references, by text or id, negated

Rule names take letters, digits, ``-`` and ``_``; comments run from ``#`` to the end of the line.
A rule ends where the next ``name ::=`` begins, so alternatives may continue on the next line
(a superset of llama.cpp, which ends a rule at a newline outside parentheses).

XGrammar EBNF differences handled: single-quoted strings, the escapes ``\\f \\v \\a \\b \\e \\0``,
lookahead assertions ``rule ::= body (= lookahead)`` (accepted and ignored: XGrammar treats them
as hints), names with dots (``a.b ::=``), rules written ``name: body``, rule options
``name[lazy, max_tokens=N, max_chars=N, capture, temperature=T] ::=`` (the first three make the
rule one lexeme of the core; the others do not change the language) and the macros of
:mod:`stencil.grammar.ebnf.gbnf_macros`.

Token references: ``<[id]>`` and ``<[1,5-7]>`` (ids), ``<text>`` (the token whose text is
exactly ``<text>``, e.g. ``<|im_end|>``), and ``!<...>``: any text that is not those tokens.
A special token matches only that token; an ordinary token stands for its text. Token counts are
not kept: ``!<[id]>`` matches one or more characters (grammars here are over text, not tokens).

Whole GBNF grammars are character level, which stencil's greedy lexer would get wrong if it
merged the wrong pieces; :mod:`stencil.grammar.ebnf.gbnf_lexemes` decides what becomes a lexeme so that
the language stays exactly the one written.

Example::

    grammar = gbnf_grammar('root ::= "yes" | "no"')     # a stencil Grammar
    compiled = compiler.compile_grammar(grammar)         # or compiler.compile_gbnf(text)
"""
from __future__ import annotations

from typing import Optional

from stencil._core import DEFAULT_LIMITS, Symbol
from stencil.grammar.regex import ast as regex_ast
from stencil.grammar.regex import unicode
from stencil.grammar.deadline import check_deadline
from stencil.grammar.ebnf.ast import (Alt, EbnfGrammar, Ref, Rep, RuleDef, Seq, Source, Term, TokenRef,
                                  TokenTable, check_grammar, repeat)
from stencil.grammar.ebnf.gbnf_macros import MACROS, expand_macro

__all__ = ["parse_gbnf", "gbnf_grammar", "build_gbnf", "MAX_REPEAT"]

import re
from stencil._core import GrammarBuilder
from stencil.grammar.ebnf.gbnf_lexemes import emit_character_grammar
from stencil.grammar.ebnf.ast import Namespaced

MAX_REPEAT = DEFAULT_LIMITS["max_repeat"]
_DOTTED_DEFINITION = re.compile(r"(?m)^[ \t]*([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+)[ \t]*(?:\[[^\]\n]*\])?[ \t]*::?=?")
MAX_NESTING = 100   # nested groups; deeper nesting is certainly a generated mistake
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "b": "\b", "e": "\x1b",
                   "0": "\0"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
# XGrammar rule options: these name spans or set a sampling temperature, and do not change the language
_NEUTRAL_OPTIONS = ("capture", "temperature", "stop_capture", "capture_hidden_suffix_bytes",
                    "capture_hidden_stop_bytes", "capture_hidden_body_rule_id", "capture_hidden_marker_rule_id")
# XGrammar rule options that change the language: the rule becomes one lexeme of the core
_LEXEME_OPTIONS = ("lazy", "max_tokens", "max_chars")


class _Parser:
    def __init__(self, source: Source):
        self.src = source
        self.s = source.text
        self.n = len(self.s)
        self.i = 0
        # names defined with dots (XGrammar's `a.b ::=`), so that `a.b` in a body can mean them
        self.defined = set(_DOTTED_DEFINITION.findall(self.s))

    def err(self, msg: str, pos: Optional[int] = None):
        return self.src.error(msg, self.i if pos is None else pos)

    # -- lexical helpers ------------------------------------------------------------------------
    def skip(self) -> None:
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\n":
                self.i += 1
            elif c == "#":
                j = s.find("\n", self.i)
                self.i = n if j < 0 else j + 1
            else:
                break

    def peek(self) -> str:
        return self.s[self.i] if self.i < self.n else ""

    def name_at(self, i: int, dots: bool = False) -> int:
        """End offset of the rule name starting at ``i`` (``i`` itself if there is none);
        ``dots``: with inner ``.`` (XGrammar names such as ``a.b``)."""
        start = i
        while i < self.n and (self.s[i] in _NAME_CHARS or dots and self.s[i] == "." and i > start
                              and i + 1 < self.n and self.s[i + 1] in _NAME_CHARS):
            i += 1
        return i

    def after_name(self, j: int) -> int:
        """Offset of ``::=`` (or XGrammar's ``:``) after a rule name and its ``[options]``, or -1."""
        j = self.after_space(j)
        if j < self.n and self.s[j] == "[":
            k = self.s.find("]", j)
            if k < 0 or "\n" in self.s[j:k]:
                return -1
            j = self.after_space(k + 1)
        if self.s.startswith("::=", j) or self.s.startswith(":", j) and not self.s.startswith("::", j):
            return j
        return -1

    def defines_rule_at(self, i: int) -> bool:
        """Whether ``name ::=`` (or ``name[options] ::=``, or ``name:``) starts at offset ``i``."""
        j = self.name_at(i, dots=True)
        return j > i and self.after_name(j) >= 0

    def rule_options(self) -> dict:
        """XGrammar's ``name[option, option=value] ::=``: ``lazy``, ``max_tokens=N`` and
        ``max_chars=N`` (returned) make the rule one lexeme; the others do not change the language."""
        open_pos = self.i
        self.i += 1
        found: dict = {}
        while True:
            self.i = self.after_space(self.i)
            if self.peek() == "]":
                self.i += 1
                return found
            kpos = self.i
            end = self.name_at(self.i)
            key = self.s[self.i:end]
            if not key:
                raise self.err("expected a rule option such as capture or temperature=0.7", kpos)
            self.i = self.after_space(end)
            if key not in _NEUTRAL_OPTIONS and key not in _LEXEME_OPTIONS:
                raise self.err(f"unknown rule option '{key}' (known: "
                               f"{', '.join(_LEXEME_OPTIONS + _NEUTRAL_OPTIONS)})", kpos)
            if key in found:
                raise self.err(f"rule option '{key}' is given twice", kpos)
            if key == "lazy":
                found[key] = kpos
            elif key in _LEXEME_OPTIONS:
                if self.peek() != "=":
                    raise self.err(f"{key} takes a number: {key}=N", kpos)
                self.i = self.after_space(self.i + 1)
                n = self.number(optional=True)
                if n is None or (key == "max_tokens" and not 0 < n < 1 << 32) or n >= 1 << 31:
                    raise self.err(f"{key} takes a {'positive' if key == 'max_tokens' else 'non-negative'} "
                                   f"integer, e.g. {key}=128", kpos)
                found[key] = n
            elif self.peek() == "=":
                self.i = self.after_space(self.i + 1)
                if self.peek() in "\"'":
                    self.string_value()
                else:
                    j = self.i
                    while j < self.n and (self.s[j].isalnum() or self.s[j] in ".-+"):
                        j += 1
                    if j == self.i:
                        raise self.err(f"expected a value after {key}=", self.i)
                    self.i = j
            self.i = self.after_space(self.i)
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "]":
                raise self.err("expected ',' or ']' in the rule options", open_pos)

    # -- grammar --------------------------------------------------------------------------------
    def parse(self) -> EbnfGrammar:
        rules: dict[str, RuleDef] = {}
        self.skip()
        if self.i >= self.n:
            raise self.err("the grammar is empty: it defines no rule (GBNF needs at least `root ::= ...`)")
        while self.i < self.n:
            check_deadline()
            start = self.i
            end = self.name_at(start, dots=True)
            if end == start:
                raise self.err(f"expected a rule name, found {self.peek()!r}")
            name = self.s[start:end]
            self.i = self.after_space(end)
            options = {}
            if self.peek() == "[":
                options = self.rule_options()
                self.i = self.after_space(self.i)
            if self.s.startswith("::=", self.i):
                self.i += 3
            elif self.s.startswith(":", self.i) and not self.s.startswith("::", self.i):
                self.i += 1     # `name: body`, as some XGrammar grammars write it
            else:
                raise self.err(f"expected '::=' after the rule name '{name}'")
            body = self.alternates(depth=0)
            if options:
                body = self.one_lexeme(name, body, options, start)
            if name in rules:
                line, col = self.src.line_col(rules[name].pos or 0)   # a parsed rule has its position
                raise self.err(f"rule '{name}' is defined twice (first at line {line}, column {col})", start)
            rules[name] = RuleDef(name, body, start)
        return EbnfGrammar(rules, "root", self.src)

    def alternates(self, depth: int):
        start = self.i
        if depth > MAX_NESTING:
            raise self.err(f"parentheses nest deeper than {MAX_NESTING} levels")
        seqs = [self.sequence(depth)]
        while self.peek() == "|":
            self.i += 1
            seqs.append(self.sequence(depth))
        return seqs[0] if len(seqs) == 1 else Alt(seqs, pos=start)

    def sequence(self, depth: int):
        items = []
        self.skip()
        start = self.i
        while True:
            self.skip()
            c = self.peek()
            if c == "" or c == "|":
                break
            if c == ")":
                if depth == 0:
                    raise self.err("unbalanced ')': there is no '(' to close")
                break
            if c in _NAME_CHARS and self.defines_rule_at(self.i):
                break
            if c in "*+?{":
                raise self.err(f"'{c}' has nothing to repeat")
            if c == "(" and self.s.startswith("=", self.after_space(self.i + 1)):
                self.lookahead(depth)
                continue
            items.append(self.postfix(self.element(depth)))
        return items[0] if len(items) == 1 else Seq(items, pos=start)

    def one_lexeme(self, name: str, body, options: dict, pos: int) -> Term:
        """The body of a rule with lexeme options as one Term: strings, classes, groups and
        repetitions only (XGrammar rejects the rest for lazy rules too)."""
        def regex(node):
            if isinstance(node, Term):
                return node.regex
            if isinstance(node, Seq):
                return regex_ast.concat([regex(k) for k in node.items])
            if isinstance(node, Alt):
                return regex_ast.alt([regex(k) for k in node.items])
            if isinstance(node, Rep):
                return regex_ast.repeat(regex(node.item), node.min, node.max)
            what = "a rule reference" if isinstance(node, Ref) else "a token reference"
            raise self.err(f"rule '{name}' has {', '.join(options)}, so its body must be one lexeme of "
                           f"strings and character classes, but it holds {what}", node.pos)
        return Term(regex(body), name=name, lazy="lazy" in options, max_tokens=options.get("max_tokens", 0),
                    max_chars=options.get("max_chars"), pos=pos)

    def after_space(self, i: int) -> int:
        while i < self.n and self.s[i] in " \t\r\n":
            i += 1
        return i

    def lookahead(self, depth: int) -> None:
        # XGrammar `(= ...)`: parsed for errors, then dropped (a hint there, not a constraint)
        open_pos = self.i
        self.i = self.after_space(self.i + 1) + 1
        self.alternates(depth + 1)
        if self.peek() != ")":
            raise self.err("'(' of this lookahead is never closed", open_pos)
        self.i += 1

    def element(self, depth: int):
        c = self.peek()
        pos = self.i
        if c in _NAME_CHARS:
            end = self.name_at(self.i)
            dotted = self.name_at(self.i, dots=True)
            if dotted > end and self.s[self.i:dotted] in self.defined:
                end = dotted    # `a.b` is XGrammar's rule a.b where one is defined, else llama.cpp's a . b
            name = self.s[self.i:end]
            self.i = end
            if self.peek() == "(" and name in MACROS:
                return expand_macro(self, name, pos)
            return Ref(name, pos=pos)
        if c in "\"'":
            return Term(self.string(), pos=pos)
        if c == "[":
            return Term(self.char_class(), pos=pos)
        if c == ".":
            self.i += 1
            return Term(regex_ast.CharClass(((0, 0xD7FF), (0xE000, unicode.MAX_CP))), pos=pos)
        if c == "(":
            self.i += 1
            body = self.alternates(depth + 1)
            if self.peek() != ")":
                raise self.err("'(' is never closed", pos)
            self.i += 1
            return body if not isinstance(body, Seq) or body.items else Seq([], pos=pos)
        if c == "<":
            return self.token_ref(negated=False)
        if c == "!":
            self.i += 1
            if self.peek() != "<":
                raise self.err("'!' must be followed by a token reference such as <[123]> or <|end|>")
            node = self.token_ref(negated=True)
            node.pos = pos
            return node
        raise self.err(f"unexpected character {c!r}")

    def postfix(self, node):
        while True:
            save = self.i
            self.i = self.after_space(self.i)
            c = self.peek()
            pos = self.i
            if c == "*":
                self.i += 1
                node = repeat(node, 0, None, pos=pos)
            elif c == "+":
                self.i += 1
                node = repeat(node, 1, None, pos=pos)
            elif c == "?":
                self.i += 1
                node = repeat(node, 0, 1, pos=pos)
            elif c == "{":
                lo, hi = self.braces()
                node = repeat(node, lo, hi, pos=pos)
            else:
                self.i = save
                return node

    def braces(self) -> tuple[int, Optional[int]]:
        open_pos = self.i
        self.i += 1
        lo = self.number(optional=True)
        self.i = self.after_space(self.i)
        hi: Optional[int]
        if self.peek() == ",":
            self.i += 1
            self.i = self.after_space(self.i)
            hi = self.number(optional=True)
        else:
            if lo is None:
                raise self.err("expected a repetition count such as {3}, {2,} or {1,5}", open_pos)
            hi = lo
        self.i = self.after_space(self.i)
        if self.peek() != "}":
            raise self.err("'{' of this repetition is never closed (expected '}')", open_pos)
        self.i += 1
        lo = 0 if lo is None else lo
        if hi is not None and hi < lo:
            raise self.err(f"repetition {{{lo},{hi}}}: the maximum is below the minimum", open_pos)
        if max(lo, hi or 0) > MAX_REPEAT:
            raise self.err(f"repetition count {max(lo, hi or 0)} exceeds the limit of {MAX_REPEAT}", open_pos)
        return lo, hi

    def number(self, optional: bool) -> Optional[int]:
        self.i = self.after_space(self.i)
        j = self.i
        while j < self.n and self.s[j].isascii() and self.s[j].isdigit():
            j += 1
        if j == self.i:
            if optional:
                return None
            raise self.err("expected a number")
        v = int(self.s[self.i:j])
        self.i = j
        return v

    # -- terminals ------------------------------------------------------------------------------
    def escape(self) -> int:
        """Parse the escape after a backslash at self.i (pointing at the backslash)."""
        pos = self.i
        self.i += 1
        if self.i >= self.n:
            raise self.err("a backslash ends the grammar", pos)
        c = self.s[self.i]
        self.i += 1
        if c in _HEX_ESCAPES:
            k = _HEX_ESCAPES[c]
            digits = self.s[self.i:self.i + k]
            if len(digits) != k or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise self.err(f"bad escape '\\{c}': it needs exactly {k} hex digits", pos)
            self.i += k
            cp = int(digits, 16)
            if cp > unicode.MAX_CP:
                raise self.err(f"bad escape '\\{c}{digits}': beyond the last code point U+10FFFF", pos)
            return cp
        if c in _SIMPLE_ESCAPES:
            return ord(_SIMPLE_ESCAPES[c])
        if c.isalnum() or c in "\n\r":
            raise self.err(f"bad escape '\\{c}' (known: \\x.. \\u.... \\U........ \\t \\n \\r \\f \\v "
                           "and a backslash before punctuation)", pos)
        return ord(c)

    def string(self):
        return regex_ast.literal(self.string_value())

    def string_value(self) -> str:
        quote = self.s[self.i]
        open_pos = self.i
        self.i += 1
        chars = []
        while True:
            if self.i >= self.n or self.s[self.i] == "\n":
                raise self.err("string is not closed (strings end on the same line)", open_pos)
            c = self.s[self.i]
            if c == quote:
                self.i += 1
                break
            if c == "\\":
                epos = self.i
                cp = self.escape()
                if 0xD800 <= cp <= 0xDFFF:
                    raise self.err(f"bad escape: U+{cp:04X} is a surrogate, which cannot occur in UTF-8 text", epos)
                chars.append(chr(cp))
            else:
                chars.append(c)
                self.i += 1
        return "".join(chars)

    def class_char(self) -> int:
        if self.s[self.i] == "\\":
            return self.escape()
        c = self.s[self.i]
        self.i += 1
        return ord(c)

    def char_class(self):
        open_pos = self.i
        self.i += 1
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        ranges = []
        while True:
            if self.i >= self.n:
                raise self.err("'[' is never closed: the character class has no ']'", open_pos)
            if self.s[self.i] == "]":
                self.i += 1
                break
            lo_pos = self.i
            lo = self.class_char()
            hi = lo
            if self.peek() == "-" and self.i + 1 < self.n and self.s[self.i + 1] != "]":
                self.i += 1
                if self.i >= self.n:
                    raise self.err("'[' is never closed: the character class has no ']'", open_pos)
                hi = self.class_char()
                if hi < lo:
                    raise self.err(f"bad range in character class: U+{lo:04X} comes after U+{hi:04X}", lo_pos)
            ranges.append((lo, hi))
        if not ranges and not negate:
            raise self.err("empty character class [] matches nothing", open_pos)
        rs = unicode.normalize(ranges)
        if negate:
            rs = unicode.complement(rs)
        if not rs:
            raise self.err("this character class matches no character", open_pos)
        return regex_ast.char_class(rs)

    def token_ref(self, negated: bool) -> TokenRef:
        pos = self.i
        if self.s.startswith("<[", self.i):
            end = self.s.find("]>", self.i)
            if end < 0 or "\n" in self.s[self.i:end]:
                raise self.err("token reference '<[' is not closed by ']>'", pos)
            ids = parse_id_list(self.s[self.i + 2:end], lambda m: self.err(m, pos))
            self.i = end + 2
            return TokenRef(ids=ids, negated=negated, pos=pos)
        j = self.i + 1
        while j < self.n and self.s[j] not in "> \t\r\n":
            j += 1
        if j >= self.n or self.s[j] != ">" or j == self.i + 1:
            raise self.err("'<' starts a token reference such as <[123]> or <|end|>, but it is not closed "
                           "by '>'", pos)
        self.i = j + 1
        return TokenRef(text=self.s[pos:j + 1], negated=negated, pos=pos)


def parse_id_list(text: str, err) -> tuple:
    """``"1, 5-7"`` -> (1, 5, 6, 7); ``err(message)`` builds the exception to raise."""
    ids: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo_s, dash, hi_s = part.partition("-")
        try:
            lo = int(lo_s.strip())
            hi = int(hi_s.strip()) if dash else lo
        except ValueError:
            raise err(f"bad token id list <[{text}]>: expected ids such as <[12]> or <[1,5-7]>") from None
        if lo < 0 or hi < lo:
            raise err(f"bad token id range {part!r}")
        if hi - lo > 1_000_000:
            raise err(f"token id range {part!r} is too large")
        ids.extend(range(lo, hi + 1))
    return tuple(sorted(set(ids)))


def parse_gbnf(text: str) -> EbnfGrammar:
    """Parse GBNF text into the shared grammar AST (no checks beyond syntax)."""
    if not isinstance(text, str):
        raise TypeError(f"a GBNF grammar is a str, got {type(text).__name__}")
    return _Parser(Source(text, "GBNF grammar")).parse()


def build_gbnf(b, text: str, *, tokens: Optional[TokenTable] = None, start: str = "root",
               unused: str = "warn", prefix: str = "") -> Symbol:
    """Add the rules of a GBNF grammar to builder ``b`` and return its start rule (for composing
    it with other grammars: a GBNF answer inside a tool-call wrapper, say). Rule names get
    ``prefix``, so several grammars can share one builder."""

    g = parse_gbnf(text)
    g.start = start
    check_grammar(g, unused=unused)
    return emit_character_grammar(Namespaced(b, prefix) if prefix else b, g, tokens)


def gbnf_grammar(text: str, *, tokens: Optional[TokenTable] = None, start: str = "root",
                 unused: str = "warn"):
    """Compile GBNF text into a stencil ``Grammar`` (the IR), ready for ``compile_grammar``.

    ``tokens`` resolves token references by name (the compiler passes its tokenizer's table);
    ``unused``: what to do about rules the start rule never uses ("warn": a ``GrammarWarning``,
    "error" or "ignore").

    Example::

        g = gbnf_grammar('root ::= [0-9]+ ("." [0-9]+)?')
    """

    b = GrammarBuilder()
    return b.build(build_gbnf(b, text, tokens=tokens, start=start, unused=unused))
