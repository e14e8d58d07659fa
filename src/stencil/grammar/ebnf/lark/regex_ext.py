"""``%regex { ...options... }``: a terminal with constraints a plain regex states badly.

Options (JSON): ``pattern`` (a regex, default: any text, newlines included), ``flags`` (for
``pattern``), ``min_length`` / ``max_length`` (in code points), ``not_containing`` (a list of
strings the text must not contain). They are combined by intersection in the core (the lexer
works with intersections and complements directly), so ``{"pattern": "[a-z ]+", "max_length":
40, "not_containing": ["  "]}`` costs no blow-up.

Example::

    NAME: %regex {"pattern": "[A-Za-z ]+", "max_length": 20}
"""
from __future__ import annotations

from stencil.grammar.ebnf.ast import Source, Term
from stencil.grammar.regex import build_regex

__all__ = ["regex_options_term"]

_KNOWN = ("pattern", "flags", "min_length", "max_length", "not_containing")


def regex_options_term(src: Source, options, pos: int) -> Term:
    if not isinstance(options, dict):
        raise src.error("%regex takes a JSON object of options", pos)
    for k in options:
        if k not in _KNOWN:
            raise src.error(f"unknown %regex option {k!r} (known: {', '.join(_KNOWN)})", pos)
    pattern = options.get("pattern")
    flags = options.get("flags", "")
    if pattern is not None and not isinstance(pattern, str) or not isinstance(flags, str):
        raise src.error("%regex: pattern and flags are strings", pos)
    lo = options.get("min_length", 0)
    hi = options.get("max_length")
    for v in (lo, hi):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise src.error("%regex: min_length and max_length are non-negative integers", pos)
    if hi is not None and hi < lo:
        raise src.error("%regex: max_length is below min_length", pos)
    banned = options.get("not_containing", [])
    if not isinstance(banned, list) or not all(isinstance(s, str) and s for s in banned):
        raise src.error("%regex: not_containing is a list of non-empty strings", pos)
    from stencil._core import GrammarError
    if pattern is not None:
        try:
            from stencil.grammar.regex import parse_regex
            parse_regex(pattern, flags=flags)  # report syntax errors here, with a position
        except GrammarError as e:
            raise src.error(f"%regex pattern: {e}", pos) from None

    def build(b) -> int:
        parts = [build_regex(b, pattern, flags=flags) if pattern is not None else b.re_any_string()]
        if lo or hi is not None:
            any_char = b.re_char_ranges([(0, 0x10FFFF)], False)
            parts.append(b.re_repeat(any_char, lo, -1 if hi is None else hi))
        for s in banned:
            anything = b.re_any_string()
            parts.append(b.re_not(b.re_concat([anything, b.re_literal(s), anything])))
        return parts[0] if len(parts) == 1 else b.re_and(parts)

    return Term(None, build=build, pos=pos)
