"""Parse Lark grammar text into the shared grammar AST (:mod:`stencil.grammar.ebnf.ast`).

Statements: rule and terminal definitions (``name: ...``, ``NAME: ...``, with ``?``/``!``
prefixes, ``.N`` priorities and ``-> alias`` accepted and ignored; ``-`` may appear in names),
``%ignore``, ``%import common.X`` / ``%import common (X, Y)`` / ``%import common.X -> Y``,
``%llguidance {...}`` and ``%grammar_options {...}`` (llguidance's and XGrammar's options).
Expansions: ``|``, ``&`` (intersection of terminals, binding tighter than ``|``), juxtaposition,
``( )``, ``[ ]`` (optional), ``? * +``, ``~ n``, ``~ n..m`` and ``{n}``, ``{m,}``, ``{,n}``,
``{m,n}``, prefix ``~`` (complement of a terminal), ``"literal"`` and ``"literal"i``,
``"a".."z"``, ``/regex/flags``, special tokens ``<|name|>``, ``<name>``, ``<[1,5-7]>``,
``<[^ids]>`` and ``<[*]>``, ``%json {schema}``, ``%regex {options}`` and ``%lark {grammar}``.
Rule attributes: ``lazy``; ``stop=`` / ``suffix=`` with a string, regex, TERMINAL or special
token; ``max_tokens=N`` and ``max_chars=N``; ``capture``, ``stop_capture`` and ``temperature``
(accepted: they do not change the language). Parametric rules (llguidance): ``name::_ : ...``
declares one, ``name::ARG`` refers to one and ``ALTERNATIVE %if COND`` guards an alternative
(:mod:`stencil.grammar.ebnf.lark.parametric` parses ARG and COND and expands the rules).
"""
from __future__ import annotations

import json
import warnings
from typing import Optional

from stencil._core import DEFAULT_LIMITS
from stencil.grammar.regex import ast as regex_ast
from stencil.grammar.regex import unicode
from stencil.grammar.deadline import check_deadline
from stencil.grammar.ebnf.ast import (Alt, And, GrammarWarning, JsonSchema, Not, Ref, Rep, RuleDef, Seq, Source,
                                  SubGrammar, Term, TokenRef, repeat)
from stencil.grammar.ebnf.gbnf import parse_id_list
from stencil.grammar.ebnf.lark.lexer import Token, tokenize
from stencil.grammar.regex import parse_regex
from stencil._core import GrammarError
from stencil.grammar.ebnf.lark.regex_ext import regex_options_term
from stencil.grammar.ebnf.lark.parametric import parse_call, parse_guard
from stencil.grammar.ebnf.lark.x_guidance import x_guidance

__all__ = ["parse_lark_syntax", "LarkSyntax", "MAX_REPEAT"]

MAX_REPEAT = DEFAULT_LIMITS["max_repeat"]
MAX_NESTING = 100   # nested ( ) and [ ]
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "b": "\b", "0": "\0",
            "e": "\x1b", "\\": "\\", '"': '"', "'": "'"}
_HEX = {"x": 2, "u": 4, "U": 8}
# Attributes that do not change the language: captures name spans, temperature is for sampling.
_IGNORED_ATTRS = ("capture", "stop_capture", "temperature")
_KNOWN_ATTRS = ("lazy", "stop", "suffix", "capture", "stop_capture", "temperature", "max_chars", "max_tokens")
# %llguidance options (llguidance's LLGuidanceOptions and the Lark `ignore_once`) and
# %grammar_options (XGrammar's); all are booleans.
_GRAMMAR_OPTIONS = {
    "%llguidance": ("no_forcing", "allow_invalid_utf8", "allow_initial_skip", "ignore_once"),
    "%grammar_options": ("allow_initial_skip",),
}


_ATOM_START = ("RULE", "TERMINAL", "STRING", "REGEXP", "(", "[", "SPECIAL", "DIRECTIVE", "GRAMMAR_REF")


class _Number(str):
    """An attribute's numeric value, as written."""


class LarkSyntax:
    """What the parser found, before terminals are resolved."""

    def __init__(self, source: Source):
        self.source = source
        self.rules: dict[str, RuleDef] = {}
        self.terminals: dict[str, RuleDef] = {}
        self.ignores: list = []          # (expansion node, pos)
        self.imports: list = []          # (common name, local name, pos)
        self.options: dict = {}          # merged %llguidance / %grammar_options
        self.parametric: dict = {}       # rules declared name::_ (llguidance) -> offset
        self.has_params = False          # some name::ARG or %if was written


class _Parser:
    def __init__(self, src: Source, toks: Optional[list] = None):
        self.src = src
        self.toks = tokenize(src) if toks is None else toks
        self.k = 0
        self.depth = 0
        self.out = LarkSyntax(src)
        self.param_at: Optional[int] = None   # the first `::` or `%if` read, for errors in terminals

    # -- helpers --------------------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.k]

    def next(self) -> Token:
        t = self.toks[self.k]
        self.k += 1
        return t

    def err(self, msg: str, pos: Optional[int] = None):
        return self.src.error(msg, self.tok.pos if pos is None else pos)

    def expect(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            found = "the end of the line" if self.tok.kind == "NL" else repr(self.tok.text or "end of grammar")
            raise self.err(f"expected {what}, found {found}")
        return self.next()

    # -- statements -----------------------------------------------------------------------------
    def parse(self) -> LarkSyntax:
        while self.tok.kind != "EOF":
            check_deadline()
            t = self.tok
            if t.kind == "NL":
                self.next()
            elif t.kind in ("RULE", "TERMINAL"):
                self.definition()
            elif t.kind == "DIRECTIVE":
                self.directive()
            else:
                raise self.err(f"expected a rule, a terminal or a %directive, found {t.text!r}")
        return self.out

    def definition(self) -> None:
        t = self.next()
        is_rule = t.kind == "RULE"
        name = t.text.lstrip("?!")
        if not is_rule and t.text != t.text.lstrip("?!"):
            raise self.err("'?' and '!' only go before rule names", t.pos)
        if self.tok.kind == "{":
            raise self.err(f"template rules such as {name}{{...}} are not supported", self.tok.pos)
        parametric = self.tok.kind == "::"
        if parametric:
            if not is_rule:
                raise self.err(f"terminal {name} cannot take a parameter: only rules can (name::_)")
            self.next()
            self.expect("_", f"'_' after '{name}::' (a parametric rule is declared as {name}::_)")
        attrs = self.attributes() if self.tok.kind == "[" else {}
        if self.tok.kind == ".":
            self.next()
            if self.tok.kind == "NUMBER":
                self.next()
            else:
                raise self.err("expected a priority number after '.'")
        self.expect(":", f"':' after the {'rule' if is_rule else 'terminal'} name '{name}'")
        self.param_at = None
        body = self.expansions()
        if not is_rule:
            self.no_parameters(f"terminal {name}")
        if self.tok.kind not in ("NL", "EOF"):
            raise self.err(f"unexpected {self.tok.text!r} in the definition of '{name}'")
        table = self.out.rules if is_rule else self.out.terminals
        if name in table:
            line, col = self.src.line_col(table[name].pos or 0)   # a parsed definition has its position
            raise self.err(f"'{name}' is defined twice (first at line {line}, column {col})", t.pos)
        rd = RuleDef(name, body, t.pos, lazy=attrs.get("lazy", False), stop=attrs.get("stop"),
                     max_chars=attrs.get("max_chars"), max_tokens=attrs.get("max_tokens", 0))
        table[name] = rd
        if parametric:
            self.out.parametric[name] = t.pos

    def mark_parametric(self, pos: int) -> None:
        self.out.has_params = True
        if self.param_at is None:
            self.param_at = pos

    def no_parameters(self, where: str) -> None:
        if self.param_at is not None:
            raise self.err(f"{where} is one lexeme: parametric references (name::...) and %if go only in rules",
                           self.param_at)

    def attributes(self) -> dict:
        open_pos = self.next().pos
        attrs: dict = {}
        while self.tok.kind != "]":
            key_tok = self.next()
            key = key_tok.text
            if key_tok.kind != "RULE":
                raise self.err(f"expected an attribute name, found {key!r}", key_tok.pos)
            if key not in _KNOWN_ATTRS:
                raise self.err(f"unknown attribute '{key}' (known: {', '.join(_KNOWN_ATTRS)})", key_tok.pos)
            value = self.attribute_value(key) if self.tok.kind == "=" else None
            if key == "lazy":
                attrs["lazy"] = True
            elif key in ("stop", "suffix"):
                if value is None:
                    raise self.err(f"attribute '{key}' needs a value: {key}=\"...\", {key}=/regex/, "
                                   f"{key}=NAME or {key}=<|token|>", key_tok.pos)
                if "stop" in attrs:
                    raise self.err("a rule has at most one stop or suffix", key_tok.pos)
                if isinstance(value, _Number):
                    raise self.err(f"{key}= takes a string, a /regex/, a TERMINAL name or a special token",
                                   key_tok.pos)
                if isinstance(value, str) and value == "":
                    attrs["lazy"] = True   # stop="": the end of the text (EOS) ends it
                elif isinstance(value, (str, Term, TokenRef)) or isinstance(value, Ref) and value.name[:1].isupper():
                    attrs["stop"] = value
                else:
                    raise self.err(f"{key}= takes a string, a /regex/, a TERMINAL name or a special token",
                                   key_tok.pos)
            elif key == "max_chars":
                if not (isinstance(value, str) and value.isdigit() and isinstance(value, _Number)):
                    raise self.err("max_chars takes a non-negative integer, e.g. max_chars=128", key_tok.pos)
                attrs["max_chars"] = int(value)
            elif key == "max_tokens":
                if not (isinstance(value, _Number) and value.isdigit() and int(value) > 0):
                    raise self.err("max_tokens takes a positive integer, e.g. max_tokens=10", key_tok.pos)
                if int(value) >= 1 << 32:
                    raise self.err("max_tokens is too large (the limit is 4294967295)", key_tok.pos)
                attrs["max_tokens"] = int(value)
            elif key == "temperature" and value is not None and not isinstance(value, _Number):
                raise self.err("temperature takes a number, e.g. temperature=0.7", key_tok.pos)
            elif key in ("capture", "stop_capture") and value is not None and (
                    not isinstance(value, str) or isinstance(value, _Number)):
                raise self.err(f"{key} takes a string, e.g. {key}=\"name\"", key_tok.pos)
            if self.tok.kind == ",":
                self.next()
            elif self.tok.kind != "]":
                raise self.err("expected ',' or ']' in the attribute list", open_pos)
        self.next()
        return attrs

    def attribute_value(self, key: str):
        """The value after ``key=``: a string, a number (a ``_Number`` string), a regex or a
        TERMINAL name (as nodes), or a special token."""
        self.next()
        v = self.next()
        if v.kind == "STRING":
            if v.text.endswith("i"):   # "END"i: a case-insensitive marker, as a terminal would be
                return Term(_string_regex(self.src, v), pos=v.pos)
            return _string_value(self.src, v)
        if v.kind == "SPECIAL":
            return _special(self.src, v)
        if v.kind == "REGEXP":
            return Term(_regexp(self.src, v), pos=v.pos)
        if v.kind == "TERMINAL":
            return Ref(v.text, pos=v.pos)
        if v.kind == "NUMBER":
            text = v.text
            if self.tok.kind == "." and self.toks[self.k + 1].kind == "NUMBER":
                self.next()
                text += "." + self.next().text
            return _Number(text)
        raise self.err(f"bad value for attribute '{key}'", v.pos)

    def directive(self) -> None:
        t = self.next()
        d = t.text
        if d == "%ignore":
            self.param_at = None
            node = self.expansions()
            self.no_parameters("%ignore")
            self.out.ignores.append((node, t.pos))
        elif d == "%import":
            self.import_()
        elif d in _GRAMMAR_OPTIONS:
            self.grammar_options(t)
        elif d in ("%declare", "%override", "%extend"):
            raise self.err(f"{d} is not supported", t.pos)
        elif d in ("%json", "%regex"):
            raise self.err(f"{d} goes inside a rule or terminal body, e.g. `start: {d} {{...}}`", t.pos)
        else:
            raise self.err(f"unknown directive {d}", t.pos)
        if self.tok.kind not in ("NL", "EOF"):
            raise self.err(f"unexpected {self.tok.text!r} after {d}")

    def grammar_options(self, t: Token) -> None:
        """``%llguidance {...}`` / ``%grammar_options {...}``: merged into ``options``."""
        blob = self.expect("BLOB", f"a {{...}} options object after {t.text}")
        value = _json_blob(self.src, blob)
        if not isinstance(value, dict):
            raise self.err(f"{t.text} takes a JSON object of options", blob.pos)
        known = _GRAMMAR_OPTIONS[t.text]
        if t.text == "%grammar_options":
            # XGrammar's Lark dialect: %ignore matches may also follow the last lexeme, which
            # llguidance's (the default reading of a Lark grammar) refuses
            self.out.options["trailing_skip"] = True
        for k, v in value.items():
            if k not in known:
                raise self.err(f"unknown {t.text} option {k!r} (known: {', '.join(known)})", blob.pos)
            if not isinstance(v, bool):
                raise self.err(f"{t.text} option {k!r} takes true or false, got {json.dumps(v)}", blob.pos)
            if k == "allow_invalid_utf8" and v:
                # accepted, as llguidance does; the output stays valid UTF-8, a subset of what the
                # option allows, so a warning and not an error
                line, col = self.src.line_col(blob.pos)
                warnings.warn(f"{t.text} allow_invalid_utf8 (line {line}, column {col}): stencil's grammars "
                              "describe UTF-8 text; invalid byte sequences stay refused", GrammarWarning,
                              stacklevel=2)
            self.out.options[k] = self.out.options.get(k, False) or v

    def import_(self) -> None:
        mod = self.next()
        if mod.kind != "RULE" or mod.text != "common":
            raise self.err("only the `common` library can be imported (%import common.NAME)", mod.pos)
        if self.tok.kind == ".":
            self.next()
            name = self.next()
            if name.kind not in ("TERMINAL", "RULE"):
                raise self.err("expected a name after 'common.'", name.pos)
            local = name.text
            if self.tok.kind == "->":
                self.next()
                local = self.next().text
            self.out.imports.append((name.text, local, name.pos))
        elif self.tok.kind == "(":
            self.next()
            while self.tok.kind != ")":
                name = self.next()
                if name.kind not in ("TERMINAL", "RULE"):
                    raise self.err(f"expected a name to import, found {name.text!r}", name.pos)
                self.out.imports.append((name.text, name.text, name.pos))
                if self.tok.kind == ",":
                    self.next()
            self.next()
        else:
            raise self.err("expected %import common.NAME or %import common (NAME, ...)")

    # -- expansions -----------------------------------------------------------------------------
    def expansions(self):
        pos = self.tok.pos
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.err(f"brackets nest deeper than {MAX_NESTING} levels")
        try:
            return self._expansions(pos)
        finally:
            self.depth -= 1

    def _expansions(self, pos: int):
        alts = [self.alias()]
        while self.tok.kind == "|":
            self.next()
            alts.append(self.alias())
        return alts[0] if len(alts) == 1 else Alt(alts, pos=pos)

    def alias(self):
        pos = self.tok.pos
        node = self.expansion()
        if self.tok.kind == "&":   # llguidance: `&` binds looser than juxtaposition, tighter than `|`
            items = [node]
            while self.tok.kind == "&":
                self.next()
                items.append(self.expansion())
            node = And(items, pos=pos)
        if self.tok.kind == "->":
            self.next()
            self.expect("RULE", "an alias name after '->'")
        if self.tok.kind == "DIRECTIVE" and self.tok.text == "%if":   # llguidance: a parametric alternative
            self.mark_parametric(self.tok.pos)
            node = parse_guard(self, node)
        return node

    def expansion(self):
        pos = self.tok.pos
        items = []
        while (self.tok.kind in _ATOM_START and self.tok.text != "%if"
               or self.tok.kind == "~" and self.toks[self.k + 1].kind != "NUMBER"):
            items.append(self.expr())
        if self.tok.kind in ("OP", "~", "{"):
            raise self.err(f"'{self.tok.text}' has nothing to repeat")
        return items[0] if len(items) == 1 else Seq(items, pos=pos)

    def expr(self):
        node = self.atom()
        while True:
            t = self.tok
            if t.kind == "OP":
                self.next()
                node = repeat(node, *{"*": (0, None), "+": (1, None), "?": (0, 1)}[t.text], pos=t.pos)
            elif t.kind == "~" and self.toks[self.k + 1].kind == "NUMBER":
                self.next()
                lo = int(self.expect("NUMBER", "a count after '~'").text)
                hi = lo
                if self.tok.kind == "..":
                    self.next()
                    hi = int(self.expect("NUMBER", "a count after '..'").text)
                node = repeat(node, lo, self.check_count(lo, hi, t.pos), pos=t.pos)
            elif t.kind == "{":
                # llguidance / XGrammar: x{n}, x{m,}, x{,n}, x{m,n}
                self.next()
                lo = int(self.next().text) if self.tok.kind == "NUMBER" else None
                if self.tok.kind == ",":
                    self.next()
                    hi = int(self.next().text) if self.tok.kind == "NUMBER" else None
                elif lo is None:
                    raise self.err("expected a repetition count such as {3}, {2,}, {,4} or {1,5}", t.pos)
                else:
                    hi = lo
                self.expect("}", "'}' closing the repetition count")
                lo = lo or 0
                node = repeat(node, lo, self.check_count(lo, hi, t.pos), pos=t.pos)
            else:
                return node

    def check_count(self, lo: int, hi: Optional[int], pos: int) -> Optional[int]:
        if hi is not None and hi < lo:
            raise self.err(f"repetition {{{lo},{hi}}}: the maximum is below the minimum", pos)
        if max(lo, hi or 0) > MAX_REPEAT:
            raise self.err(f"repetition count {max(lo, hi or 0)} exceeds the limit of {MAX_REPEAT}", pos)
        return hi

    def atom(self):
        t = self.next()
        if t.kind == "~":   # llguidance negation: binds tighter than `+` (`~A+` is `(~A)+`)
            odd = True
            while self.tok.kind == "~":   # a loop, not recursion: `~~~...` may be long; ~~A is A
                self.next()
                odd = not odd
            node = self.atom()
            return Not(node, pos=t.pos) if odd else node
        if t.kind == "(":
            node = self.expansions()
            self.expect(")", "')'")
            return node
        if t.kind == "[":
            node = self.expansions()
            self.expect("]", "']'")
            return Rep(node, 0, 1, pos=t.pos)
        if t.kind == "STRING":
            if self.tok.kind == "..":
                self.next()
                hi = self.expect("STRING", "a one-character string after '..'")
                return Term(_char_range(self.src, t, hi), pos=t.pos)
            return Term(_string_regex(self.src, t), pos=t.pos)
        if t.kind == "REGEXP":
            return Term(_regexp(self.src, t), pos=t.pos)
        if t.kind in ("RULE", "TERMINAL"):
            if t.text[0] in "?!":
                raise self.err("'?' and '!' only go before a rule being defined", t.pos)
            if self.tok.kind == "{" and self.toks[self.k + 1].kind not in ("NUMBER", ","):
                raise self.err(f"templates such as {t.text}{{...}} are not supported", self.tok.pos)
            if self.tok.kind == "::":
                self.mark_parametric(t.pos)
                return parse_call(self, t)
            return Ref(t.text, pos=t.pos)
        if t.kind == "SPECIAL":
            return _special(self.src, t)
        if t.kind == "GRAMMAR_REF":
            raise self.err(f"{t.text}: references to other grammars by name are not supported; embed the "
                           "grammar instead (%json {...} for a JSON Schema, %lark {...} for a Lark grammar)",
                           t.pos)
        if t.kind == "DIRECTIVE":
            if t.text == "%lark":
                body = self.expect("LARK", "a grammar in braces after %lark: %lark { start: ... }")
                return SubGrammar(_Parser(self.src, body.inner).parse(), pos=t.pos)
            if t.text not in ("%json", "%regex"):
                raise self.err(f"{t.text} cannot appear inside an expansion", t.pos)
            blob = self.expect("BLOB", f"a {{...}} object after {t.text}")
            value = _json_blob(self.src, blob)
            if t.text == "%json":
                try:
                    schema, options = x_guidance(value)
                except GrammarError as e:
                    raise self.err(f"in the %json schema: {e}", blob.pos) from None
                return JsonSchema(schema, options, pos=t.pos)
            return regex_options_term(self.src, value, t.pos)
        raise self.err(f"unexpected {t.text!r}", t.pos)


# --- literals -----------------------------------------------------------------------------------

def _unescape(src: Source, body: str, start: int) -> str:
    out = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:
            raise src.error("a backslash ends the string", start + i)
        e = body[i + 1]
        if e in _HEX:
            k = _HEX[e]
            digits = body[i + 2:i + 2 + k]
            if len(digits) != k or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise src.error(f"bad escape '\\{e}': it needs exactly {k} hex digits", start + i)
            cp = int(digits, 16)
            if cp > unicode.MAX_CP or 0xD800 <= cp <= 0xDFFF:
                raise src.error(f"bad escape '\\{e}{digits}': not a Unicode scalar value", start + i)
            out.append(chr(cp))
            i += 2 + k
        elif e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e in '"\\/':
            out.append(e)
            i += 2
        else:
            # Lark keeps the backslash of an unknown escape ("\." is two characters there) and
            # llguidance refuses it: no reading would be right for both
            raise src.error(f"bad escape '\\{e}' in a string: Lark reads a backslash and {e!r}, llguidance refuses "
                            f"it; write {e!r} alone or '\\\\{e}' (known: \\n \\t \\r \\f \\v \\a \\b \\0 \\xhh "
                            "\\uhhhh \\Uhhhhhhhh \\\\ \\\" \\/)", start + i)
    return "".join(out)


def _string_value(src: Source, t: Token) -> str:
    text = t.text[:-1] if t.text.endswith("i") else t.text
    value = _unescape(src, text[1:-1], t.pos + 1)
    bad = unicode.lone_surrogate(value)
    if bad is not None:  # no UTF-8 text holds it: the grammar would match nothing there
        raise src.error(f"the string {_clip(t.text)} holds a lone surrogate U+{ord(value[bad]):04X}, which cannot "
                        "be encoded as UTF-8 text", t.pos)
    return value


def _clip(text: str) -> str:
    text = text.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
    return text if len(text) <= 40 else text[:37] + "..."


def _string_regex(src: Source, t: Token):
    value = _string_value(src, t)
    if not t.text.endswith("i"):
        return regex_ast.literal(value)
    return regex_ast.concat([regex_ast.char_class(unicode.case_variants(ord(c))) for c in value])


def _char_range(src: Source, lo: Token, hi: Token):
    a, b = _string_value(src, lo), _string_value(src, hi)
    if len(a) != 1 or len(b) != 1:
        raise src.error('a range "a".."z" needs one-character strings', lo.pos)
    if ord(b) < ord(a):
        raise src.error(f"bad range: {a!r} comes after {b!r}", lo.pos)
    return regex_ast.char_class([(ord(a), ord(b))])


def _regexp(src: Source, t: Token):
    text = t.text
    end = text.rindex("/")
    pattern, flags = text[1:end], text[end + 1:]
    pattern = pattern.replace("\\/", "/")
    for f in flags:
        if f not in "isxu":
            raise src.error(f"unsupported regex flag '{f}' (supported: i, s, x, u; m is not)", t.pos)
    try:
        node = parse_regex(pattern, flags=flags, dialect="rust")   # llguidance's terminals: Rust's regex crate
    except GrammarError as e:
        raise src.error(f"in /{pattern}/: {e}", t.pos) from None
    if regex_ast.has_anchors(node):
        raise src.error("anchors (^, $, \\A, \\Z) have no meaning inside a grammar terminal", t.pos)
    return node


def _special(src: Source, t: Token) -> TokenRef:
    if t.text.startswith("<["):
        body = t.text[2:-2].strip()
        # <[*]> (any token) and <[^ids]> (any token but these): like GBNF's !<[ids]>, text that
        # is not those tokens, since a grammar over text does not count tokens
        if body == "*":
            return TokenRef(ids=(), negated=True, pos=t.pos)
        negated = body.startswith("^")
        ids = parse_id_list(body[1:] if negated else body, lambda m: src.error(m, t.pos))
        return TokenRef(ids=ids, negated=negated, pos=t.pos)
    return TokenRef(text=t.text, pos=t.pos)


def _json_blob(src: Source, t: Token):
    try:
        return json.loads(t.text)
    except json.JSONDecodeError as e:
        raise src.error(f"bad JSON: {e.msg}", t.pos + e.pos) from None


def parse_lark_syntax(text: str) -> LarkSyntax:
    if not isinstance(text, str):
        raise TypeError(f"a Lark grammar is a str, got {type(text).__name__}")
    return _Parser(Source(text, "Lark grammar")).parse()
