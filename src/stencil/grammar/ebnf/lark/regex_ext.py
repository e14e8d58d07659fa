"""``%regex { ...options... }``: a terminal with constraints a plain regex states badly.

Options (JSON): ``pattern`` (a regex, default: any text, newlines included), ``flags`` (for
``pattern``), ``min_length`` / ``max_length`` (in code points), ``not_containing`` (a list of
strings the text must not contain), and llguidance's ``substring_chunks`` (a list of strings:
the text is ``chunks[n:m]`` joined for some ``n <= m``), ``substring_words`` and
``substring_chars`` (a string, split into words and single other characters, or into code
points). They are combined by intersection in the core (the lexer
works with intersections and complements directly), so ``{"pattern": "[a-z ]+", "max_length":
40, "not_containing": ["  "]}`` costs no blow-up.

Example::

    NAME: %regex {"pattern": "[A-Za-z ]+", "max_length": 20}
"""
from __future__ import annotations

import re

from stencil.grammar.ebnf.ast import Source, Term, substring_regex, without_texts
from stencil.grammar.regex import build_regex
from stencil.grammar.regex import parse_regex
from stencil._core import ExprId, GrammarError

__all__ = ["regex_options_term"]

_KNOWN = ("pattern", "flags", "min_length", "max_length", "not_containing", "substring_chunks", "substring_words",
          "substring_chars", "type", "chunks")
_SUBSTRING = ("substring_chunks", "substring_words", "substring_chars")
MAX_SUBSTRING_TEXT = 100_000   # code points over all chunks


def substring_chunks(src: Source, options: dict, pos: int):
    """The chunks of a substring option, or None: ``substring_chunks`` as given,
    ``substring_words`` split into runs of word characters and single other characters,
    ``substring_chars`` into code points; ``{"type": "substring", "chunks": [...]}`` is the
    spelling llguidance's docs propose for the first."""
    given = [k for k in _SUBSTRING if k in options]
    if options.get("type") is not None or "chunks" in options:
        if options.get("type") != "substring" or "chunks" not in options:
            raise src.error('%regex: "type" must be "substring", with "chunks" (a list of strings)', pos)
        given.append("chunks")
    if not given:
        return None
    if len(given) > 1 or "pattern" in options:
        raise src.error(f"%regex: {' and '.join(given + (['pattern'] if 'pattern' in options else []))} "
                        "cannot be combined: give one of them", pos)
    key = given[0]
    value = options[key]
    if key in ("substring_chunks", "chunks"):
        if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
            raise src.error(f"%regex: {key} is a list of strings", pos)
        chunks = value
    else:
        if not isinstance(value, str):
            raise src.error(f"%regex: {key} is a string", pos)
        chunks = re.findall(r"\w+|\W", value) if key == "substring_words" else list(value)
    if sum(len(c) for c in chunks) > MAX_SUBSTRING_TEXT:
        raise src.error(f"%regex: the {key} text is longer than the limit of {MAX_SUBSTRING_TEXT} characters",
                        pos)
    return chunks


def regex_options_term(src: Source, options, pos: int) -> Term:
    if not isinstance(options, dict):
        raise src.error("%regex takes a JSON object of options", pos)
    for k in options:
        if k not in _KNOWN:
            raise src.error(f"unknown %regex option {k!r} (known: {', '.join(_KNOWN)})", pos)
    chunks = substring_chunks(src, options, pos)
    if chunks is not None and set(options) <= {*_SUBSTRING, "type", "chunks"}:
        return Term(substring_regex(chunks), pos=pos)   # a plain regex: the oracles and samplers read it
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
    if pattern is not None:
        try:
            parse_regex(pattern, flags=flags, dialect="rust")  # report syntax errors here, with a position
        except GrammarError as e:
            raise src.error(f"%regex pattern: {e}", pos) from None

    def build(b) -> ExprId:
        if chunks is not None:
            parts = [build_regex(b, substring_regex(chunks))]
        else:
            parts = [build_regex(b, pattern, flags=flags, dialect="rust") if pattern is not None else b.re_any_string()]
        if lo or hi is not None:
            any_char = b.re_char_ranges([(0, 0x10FFFF)], False)
            parts.append(b.re_repeat(any_char, lo, -1 if hi is None else hi))
        for s in banned:
            parts.append(without_texts(b, [s]))
        return parts[0] if len(parts) == 1 else b.re_and(parts)

    return Term(None, build=build, pos=pos)
