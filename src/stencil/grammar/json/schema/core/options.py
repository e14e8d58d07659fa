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
- ``string_spelling="controls"`` (llguidance's JSON strings): characters raw, ``\\uXXXX`` only
  for the controls U+0000-U+001F and U+007F (which must be escaped; a control with a short escape
  may use either), no ``\\/``; so a ``const`` or ``enum`` string has one spelling unless it holds
  controls. ``"unicode"``: as ``"controls"``, and any character may also be written ``\\uXXXX``
  (a surrogate pair for those past U+FFFF).
- ``escapes``: with ``"controls"`` or ``"unicode"``, the letters that may follow a backslash
  (llguidance's ``json_allowed_escapes``, default ``"nrbtf\\\"u"``); without ``u`` there is no
  ``\\uXXXX`` at all, and a control character without a short escape cannot be written.
- ``item_separator``, ``key_separator``: regexes for the ``,`` between items or members and for the
  ``:`` after a key (llguidance's options of these names), e.g. ``", "``; the white space of
  ``whitespace`` still goes around them. Not with a fixed indentation.
- ``number_spelling``: ``"any"`` (default: every JSON spelling of a number, compared with the
  bounds exactly: under ``maximum: 5``, ``2000e-3`` is 2) or ``"plain"`` (numbers without an
  exponent, integers without a fraction: a subset of the valid texts, the one to generate with,
  since a small model that starts ``2000`` under ``maximum: 5`` may only go on with zeros), or
  ``"plain_integers"`` (only integers are written without fraction or exponent, as llguidance
  does, and ``-0`` is refused where the minimum is 0 or more).
- ``whitespace_around``: with flexible white space, allow it before and after the whole value
  too (off by default: llguidance and XGrammar refuse it; on for a tokenizer whose tokens carry
  the white space before a word). Only for a schema compiled on its own.
- ``lenient``: ignore what cannot be enforced instead of failing; what was ignored is listed in
  the ``SchemaInfo`` given as ``info`` (and on ``CompiledGrammar.not_enforced``).
- ``max_depth``: how deeply the JSON text may nest (objects and arrays).
- ``assert_content``: enforce ``contentEncoding: "base64"`` (RFC 4648, padded). Off by default:
  in Draft 2020-12 (and 07) content keywords are annotations, and real schemas use them for
  unpadded or URL-safe variants.

``registry`` (``{uri: schema}`` of other documents that ``$ref`` may point into) and ``info`` (a
``SchemaInfo`` to fill) are arguments of the compile call, not options.

``stencil.JsonSchemaOptions`` (:mod:`stencil.schema_options`) is the public, typed form of these
options, the type of ``**options`` of ``GrammarCompiler.compile_json_schema`` and its siblings;
:class:`Options` holds the defaults and checks the values.

Example::

    opts = Options.make(whitespace="compact", property_order="any")
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_args

from stencil._core import GrammarError
from stencil.schema_options import KeySpelling, NumberSpelling, PropertyOrder, StringSpelling, Whitespace

__all__ = ["Options", "DEFAULT_MAX_WHITESPACE_RUN"]

DEFAULT_MAX_WHITESPACE_RUN = 32


@dataclass(frozen=True)
class Options:
    """The JSON Schema options with their defaults (the one place they are defined); see the
    module docstring for each."""
    whitespace: Whitespace = "flexible"
    max_whitespace_run: int | None = DEFAULT_MAX_WHITESPACE_RUN
    property_order: PropertyOrder = "definition"
    lenient: bool = False
    max_depth: int = 32
    assert_content: bool = False
    key_spelling: KeySpelling = "any"
    string_spelling: StringSpelling = "any"
    number_spelling: NumberSpelling = "any"
    whitespace_pattern: str | None = None
    item_separator: str | None = None
    key_separator: str | None = None
    escapes: str | None = None
    whitespace_around: bool = False

    @staticmethod
    def make(**kw: Any) -> Options:
        """Checked options: TypeError naming an unknown option, GrammarError naming one whose
        value is wrong (a GrammarError, so a server answers 400 to a request's bad option)."""
        known = set(Options.__dataclass_fields__)
        bad = sorted(set(kw) - known)
        if bad:
            raise TypeError(f"unknown JSON Schema option(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")
        o = Options(**kw)
        for name in ("lenient", "assert_content", "whitespace_around"):
            if not isinstance(getattr(o, name), bool):
                raise GrammarError(f"{name} must be True or False, got {getattr(o, name)!r}")
        ws = o.whitespace
        if not (ws in ("flexible", "compact") or (isinstance(ws, int) and not isinstance(ws, bool) and 0 <= ws <= 16)):
            raise GrammarError(f"whitespace must be 'flexible', 'compact' or an indentation of 0 to 16 "
                               f"spaces, got {ws!r}")
        if o.whitespace_pattern is not None and not (isinstance(o.whitespace_pattern, str) and ws == "flexible"):
            raise GrammarError(f"whitespace_pattern must be a regex string used with whitespace='flexible', got "
                               f"{o.whitespace_pattern!r} with whitespace={ws!r}")
        _check_spellings(o)
        _one_of("key_spelling", o.key_spelling, KeySpelling)
        _one_of("property_order", o.property_order, PropertyOrder)
        run = o.max_whitespace_run
        if run is not None and (not isinstance(run, int) or isinstance(run, bool) or run < 1):
            raise GrammarError(f"max_whitespace_run must be a positive int or None, got {o.max_whitespace_run!r}")
        if not isinstance(o.max_depth, int) or isinstance(o.max_depth, bool) or o.max_depth < 1:
            raise GrammarError(f"max_depth must be a positive int, got {o.max_depth!r}")
        return o

    @property
    def indent(self) -> int | None:
        """The fixed indentation, or None for flexible or compact white space."""
        return self.whitespace if isinstance(self.whitespace, int) and not isinstance(self.whitespace, bool) else None


#: the letters that may follow a backslash in a JSON string, under ``escapes``
ESCAPE_LETTERS = '"\\bfnrtu'


def _one_of(name: str, value: object, kind: object) -> None:
    """GrammarError unless ``value`` is one of the ``Literal`` type ``kind``'s values: the values
    are written once, in :mod:`stencil.schema_options`, for the type checker and this check."""
    allowed = get_args(kind)
    if value not in allowed:
        listed = ", ".join(map(repr, allowed[:-1])) + f" or {allowed[-1]!r}"
        raise GrammarError(f"{name} must be {listed}, got {value!r}")


def _check_spellings(o: Options) -> None:
    """The string and number spellings, the escapes and separators (see the module docstring)."""
    _one_of("string_spelling", o.string_spelling, StringSpelling)
    _one_of("number_spelling", o.number_spelling, NumberSpelling)
    if o.escapes is not None:
        if not isinstance(o.escapes, str) or any(c not in ESCAPE_LETTERS for c in o.escapes):
            raise GrammarError(f"escapes must be a string of the letters {ESCAPE_LETTERS}, got {o.escapes!r}")
        if o.string_spelling not in ("controls", "unicode"):
            raise GrammarError(f"escapes goes with string_spelling 'controls' or 'unicode', not "
                               f"{o.string_spelling!r}")
    for name in ("item_separator", "key_separator"):
        v = getattr(o, name)
        if v is not None and not isinstance(v, str):
            raise GrammarError(f"{name} must be a regex string, got {v!r}")
        if v is not None and o.indent is not None:
            raise GrammarError(f"{name} cannot be used with a fixed indentation (whitespace={o.whitespace!r})")
