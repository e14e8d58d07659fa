"""Options of the JSON Schema compiler.

- ``whitespace``: ``"flexible"`` (default: JSON whitespace allowed between any two tokens, a run
  bounded by ``max_whitespace_run`` characters so a model cannot loop on it), ``"compact"`` (no
  whitespace at all: ``{"a":1,"b":[2,3]}``), or an int n: the fixed layout of
  ``json.dumps(value, indent=n)`` (newline and n spaces per nesting level, ``": "`` after keys;
  nesting deeper than ``max_depth`` is not accepted).
- ``whitespace_pattern``: a regex for the white space around punctuation (before and after
  ``{ [ , :``, before ``} ]``), as vLLM's and Outlines' option of that name: e.g. ``"[ ]?"`` allows
  at most one space there and nothing else. With it, ``whitespace`` must be ``"flexible"``. The
  pattern is the caller's: one that matches more than JSON white space gives texts that are not JSON.
- ``property_order``: ``"definition"`` (default: properties in the order of ``properties``) or
  ``"any"`` (any order; required keys and no duplicates enforced by the core's checks).
- ``key_spelling``: ``"any"`` (default: a property name in any JSON spelling, ``"a"`` or
  ``"\u0061"``, as a validator reads it) or ``"plain"`` (only the spelling of
  ``json.dumps(name, ensure_ascii=False)``: a subset of the valid texts, the one to generate
  with, since declared keys become forced text and a model cannot drift into escapes).
- ``string_spelling``: ``"any"`` (default: every JSON spelling of a string, escapes included) or
  ``"plain"`` (only the spelling of ``json.dumps(s, ensure_ascii=False)``: characters raw, the
  short escapes but ``\\/``, and ``\\u00xx`` for the other controls; implies plain keys). What a
  model should write, and far smaller lexers for patterns and formats, whose characters otherwise
  each carry their ``\\uXXXX`` spellings.
- ``number_spelling``: ``"any"`` (default: every JSON spelling of a number, compared with the
  bounds exactly: under ``maximum: 5``, ``2000e-3`` is 2) or ``"plain"`` (numbers without an
  exponent, integers without a fraction: a subset of the valid texts, the one to generate with,
  since a small model that starts ``2000`` under ``maximum: 5`` may only go on with zeros).
- ``lenient``: ignore what cannot be enforced instead of failing; what was ignored is listed on
  the result (``Grammar.json_schema_ignored`` from :func:`json_schema_grammar`).
- ``registry``: ``{uri: schema}`` of other documents that ``$ref`` may point into.
- ``assert_content``: enforce ``contentEncoding: "base64"`` (RFC 4648, padded). Off by default:
  in Draft 2020-12 (and 07) content keywords are annotations, and real schemas use them for
  unpadded or URL-safe variants.

Example::

    opts = Options.make(whitespace="compact", property_order="any")
"""
from __future__ import annotations

from dataclasses import dataclass

from stencil._core import GrammarError

__all__ = ["Options", "DEFAULT_MAX_WHITESPACE_RUN"]

DEFAULT_MAX_WHITESPACE_RUN = 32


@dataclass(frozen=True)
class Options:
    whitespace: object = "flexible"
    max_whitespace_run: int | None = DEFAULT_MAX_WHITESPACE_RUN
    property_order: str = "definition"
    lenient: bool = False
    max_depth: int = 32
    assert_content: bool = False
    key_spelling: str = "any"
    string_spelling: str = "any"
    number_spelling: str = "any"
    whitespace_pattern: str | None = None

    @staticmethod
    def make(**kw) -> "Options":
        known = set(Options.__dataclass_fields__)
        bad = sorted(set(kw) - known)
        if bad:
            raise TypeError(f"unknown JSON Schema option(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")
        o = Options(**kw)
        ws = o.whitespace
        if not (ws in ("flexible", "compact") or (isinstance(ws, int) and not isinstance(ws, bool) and 0 <= ws <= 16)):
            raise GrammarError(f"whitespace must be 'flexible', 'compact' or an indentation of 0 to 16 "
                               f"spaces, got {ws!r}")
        if o.whitespace_pattern is not None and not (isinstance(o.whitespace_pattern, str) and ws == "flexible"):
            raise GrammarError(f"whitespace_pattern must be a regex string used with whitespace='flexible', got "
                               f"{o.whitespace_pattern!r} with whitespace={ws!r}")
        if o.key_spelling not in ("any", "plain"):
            raise GrammarError(f"key_spelling must be 'any' or 'plain', got {o.key_spelling!r}")
        if o.string_spelling not in ("any", "plain"):
            raise GrammarError(f"string_spelling must be 'any' or 'plain', got {o.string_spelling!r}")
        if o.number_spelling not in ("any", "plain"):
            raise GrammarError(f"number_spelling must be 'any' or 'plain', got {o.number_spelling!r}")
        if o.property_order not in ("definition", "any"):
            raise GrammarError(f"property_order must be 'definition' or 'any', got {o.property_order!r}")
        if o.max_whitespace_run is not None and (not isinstance(o.max_whitespace_run, int) or o.max_whitespace_run < 1):
            raise GrammarError(f"max_whitespace_run must be a positive int or None, got {o.max_whitespace_run!r}")
        if not isinstance(o.max_depth, int) or o.max_depth < 1:
            raise GrammarError(f"max_depth must be a positive int, got {o.max_depth!r}")
        return o

    @property
    def indent(self):
        return self.whitespace if isinstance(self.whitespace, int) and not isinstance(self.whitespace, bool) else None
