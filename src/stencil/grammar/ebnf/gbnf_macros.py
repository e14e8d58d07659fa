"""XGrammar's EBNF macros: ``Regex(...)``, ``Substring(...)``, ``Token(...)``, ``ExcludeToken(...)``.

A call is ``Name(value, ..., option=value)`` where a value is a string, a decimal integer,
``true``/``false``, a rule name or a tuple of values. Each macro becomes ordinary grammar nodes:

- ``Regex("[0-9]{5}", flags="i", json_string=false)``: the regex as one terminal piece. Without
  ``flags``, ``.`` matches every character (XGrammar uses the pattern verbatim); with
  ``json_string=true`` no character of the match may be a control character, ``"`` or ``\\``.
- ``Substring("abc", "de")``: every run of whole chunks (``chunks[n:m]`` joined), the empty one
  included.
- ``Token(1, 2)``: one of these tokens, as ``<[1,2]>``; ``ExcludeToken(1, 2)``: as ``!<[1,2]>``
  (text that is not these tokens: token counts are not kept, see :mod:`stencil.grammar.ebnf.gbnf`).

``TagDispatch`` and ``TokenTagDispatch`` need free text that excludes strings and lexemes that
end at the first trigger, which this character-level front-end does not build: they are refused
with an error that points to the Lark form of the same pattern.

Example::

    gbnf_grammar('root ::= "ID-" Regex("[0-9]{5}")')
"""
from __future__ import annotations

from stencil.grammar.regex import ast as regex_ast
from stencil.grammar.regex import unicode
from stencil.grammar.ebnf.ast import Ref, Term, TokenRef, substring_regex
from stencil.grammar.regex import parse_regex
from stencil._core import GrammarError

__all__ = ["MACROS", "expand_macro", "MAX_SUBSTRING_CHUNKS"]

MACROS = ("Regex", "Substring", "Token", "ExcludeToken", "TagDispatch", "TokenTagDispatch")
MAX_SUBSTRING_CHUNKS = 10_000
_JSON_STRING_BANNED = ((0, 0x1F), (ord('"'), ord('"')), (ord("\\"), ord("\\")))


class _Args:
    def __init__(self, p, name: str, pos: int):
        self.p, self.name, self.pos = p, name, pos
        self.positional: list = []
        self.named: dict = {}

    def err(self, msg: str):
        return self.p.err(f"{self.name}(...): {msg}", self.pos)

    def only(self, named: tuple) -> None:
        for k in self.named:
            if k not in named:
                raise self.err(f"unknown argument {k}=" + (f" (known: {', '.join(named)})" if named else
                                                          " (it takes no named arguments)"))


def _value(p, in_tuple: bool):
    """One argument value: ("str", s), ("int", n), ("bool", b), ("name", s) or ("tuple", [...])."""
    p.skip()
    c = p.peek()
    if c == '"':
        return ("str", p.string_value())
    if c == "(":
        p.i += 1
        items: list = []
        while True:
            p.skip()
            if p.peek() == ")":
                p.i += 1
                return ("tuple", items)
            items.append(_value(p, True))
            p.skip()
            if p.peek() == ",":
                p.i += 1
            elif p.peek() != ")":
                raise p.err("expected ',' or ')' in a tuple")
    if c.isdigit():
        return ("int", p.number(optional=False))
    end = p.name_at(p.i)
    if end == p.i:
        raise p.err("expected a macro argument: a string, an integer, true/false, a rule name or a tuple")
    word = p.s[p.i:end]
    pos = p.i
    p.i = end
    if word in ("true", "false"):
        return ("bool", word == "true")
    return ("name", Ref(word, pos=pos))


def _parse_args(p, name: str, pos: int) -> _Args:
    args = _Args(p, name, pos)
    p.i += 1   # (
    p.skip()
    if p.peek() == ")":
        p.i += 1
        return args
    while True:
        p.skip()
        end = p.name_at(p.i)
        after = p.after_space(end)
        if end > p.i and p.s.startswith("=", after) and not p.s.startswith("==", after):
            key = p.s[p.i:end]
            p.i = after + 1
            if key in args.named:
                raise args.err(f"argument {key}= is given twice")
            args.named[key] = _value(p, False)
        else:
            if args.named:
                raise args.err("positional arguments go before named ones")
            args.positional.append(_value(p, False))
        p.skip()
        if p.peek() == ",":
            p.i += 1
        elif p.peek() == ")":
            p.i += 1
            return args
        else:
            raise p.err(f"expected ',' or ')' in the arguments of {name}(...)")


def _kind(args: _Args, v, kind: str, what: str):
    if v[0] != kind:
        raise args.err(f"{what} must be {'a string' if kind == 'str' else 'an integer' if kind == 'int' else 'true or false'}")
    return v[1]


def _without_chars(node, banned):
    """``node`` where no character match may take a ``banned`` character."""
    banned = unicode.normalize(banned)

    def visit(n, kids):
        if isinstance(n, regex_ast.Literal):
            return regex_ast.Nothing() if any(unicode.contains(banned, ord(c)) for c in n.text) else n
        if isinstance(n, regex_ast.CharClass):
            keep = unicode.complement(unicode.union(unicode.complement(n.ranges), banned))
            return regex_ast.char_class(keep) if keep else regex_ast.Nothing()
        if isinstance(n, regex_ast.Concat):
            return regex_ast.concat(kids)
        if isinstance(n, regex_ast.Alt):
            return regex_ast.alt(kids)
        if isinstance(n, regex_ast.Repeat):
            return regex_ast.repeat(kids[0], n.min, n.max)
        return n
    return regex_ast.postorder(node, visit)


def expand_macro(p, name: str, pos: int):
    """Parse the arguments of macro ``name`` (``p.i`` at its ``(``) and return its node."""
    args = _parse_args(p, name, pos)
    if name in ("TagDispatch", "TokenTagDispatch"):
        raise args.err("not supported by stencil's GBNF front-end; write the same pattern in Lark "
                       "(compile_lark): `start: tool* TEXT` with `tool_head[lazy]: TEXT \"<tool_call>\"` and "
                       "`tool: tool_head body`, or compile_tool_calls / structural tags")
    if name == "Regex":
        args.only(("flags", "json_string"))
        if len(args.positional) != 1:
            raise args.err("takes exactly one pattern string")
        pattern = _kind(args, args.positional[0], "str", "the pattern")
        flags = _kind(args, args.named["flags"], "str", "flags") if "flags" in args.named else None
        json_string = _kind(args, args.named["json_string"], "bool", "json_string") if "json_string" in args.named else False
        if flags is not None and any(f not in "isu" for f in flags):
            raise args.err(f"unsupported flags {flags!r} (known: i, s, u)")
        try:
            # without flags XGrammar uses the pattern verbatim, where `.` matches any character
            node = parse_regex(pattern, flags="s" if flags is None else flags.replace("u", ""))
        except GrammarError as e:
            raise args.err(f"in the pattern: {e}") from None
        if regex_ast.has_anchors(node):
            raise args.err("anchors (^, $) have no meaning inside a grammar")
        if json_string:
            node = _without_chars(node, _JSON_STRING_BANNED)
        return Term(node, pos=pos)
    if name == "Substring":
        args.only(())
        chunks = [_kind(args, v, "str", "every chunk") for v in args.positional]
        if len(chunks) > MAX_SUBSTRING_CHUNKS:
            raise args.err(f"more than {MAX_SUBSTRING_CHUNKS} chunks")
        return Term(substring_regex(chunks), pos=pos)
    # Token / ExcludeToken
    args.only(())
    if not args.positional:
        raise args.err("needs at least one token id")
    ids = tuple(sorted({_kind(args, v, "int", "every token id") for v in args.positional}))
    return TokenRef(ids=ids, negated=name == "ExcludeToken", pos=pos)
