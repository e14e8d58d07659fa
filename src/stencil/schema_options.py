"""The typed arguments of ``GrammarCompiler.compile_json_schema`` and its siblings (``compile_json``,
``compile_pydantic``, ``compile_reasoning_json``, ``compile_structural_tag``).

:class:`JsonSchemaOptions` declares every option once: its type (for a type checker and an editor),
its default and what it means; :mod:`stencil.grammar.json.schema.core.options` builds ``Options``
from it and checks the values.
:class:`SchemaInfo` is what a compile fills when given as ``info``. This module loads nothing of the
JSON Schema front-end, so that ``import stencil`` stays light.

Example::

    opts: stencil.JsonSchemaOptions = {"whitespace": "compact", "key_spelling": "plain"}
    info = stencil.SchemaInfo()
    g = compiler.compile_json_schema(schema, info=info, lenient=True, **opts)
    info.ignored        # [(keyword, JSON pointer, reason)]: what the grammar does not enforce
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NamedTuple, TypedDict, Union

__all__ = ["JsonSchemaOptions", "Default", "DEFAULT_MAX_WHITESPACE_RUN", "LarkOptions", "GbnfOptions", "ToolCallOptions", "SchemaInfo", "Whitespace",
           "PropertyOrder", "KeySpelling", "StringSpelling", "NumberSpelling", "Unused"]

# Union, not |: these are evaluated when the module loads, and Python 3.10 has no | for Literal.
#: "flexible", "compact", or an indentation of 0 to 16 spaces
Whitespace = Union[Literal["flexible", "compact"], int]
PropertyOrder = Literal["definition", "any"]
KeySpelling = Literal["any", "plain"]
StringSpelling = Literal["any", "plain", "controls", "unicode"]
NumberSpelling = Literal["any", "plain", "plain_integers"]
#: what a grammar's rules that the start rule never reaches do: a warning, an error, or nothing
Unused = Literal["warn", "error", "ignore"]


class Default(NamedTuple):
    """An option's default, written in its annotation: ``Annotated[type, Default(value)]``."""
    value: Any


#: a run of flexible white space is at most this long (``max_whitespace_run``'s default)
DEFAULT_MAX_WHITESPACE_RUN = 32


class JsonSchemaOptions(TypedDict, total=False):
    """The JSON Schema options as keyword arguments, every one optional: the one place each is
    declared, with its type, its default (``Default``) and what it means (the docstring under it).
    ``Options`` (:mod:`stencil.grammar.json.schema.core.options`) is built from these fields and
    checks the values.

    Example::

        opts: stencil.JsonSchemaOptions = {"whitespace": "compact", "key_spelling": "plain"}
        g = compiler.compile_json_schema(schema, **opts)
    """
    whitespace: Annotated[Whitespace, Default("flexible")]
    """``"flexible"``: JSON white space between any two tokens, a run at most ``max_whitespace_run``
    characters long (so a model cannot loop on it); ``"compact"``: none (``{"a":1,"b":[2,3]}``); an
    int n: the fixed layout of ``json.dumps(value, indent=n)`` (a newline and n spaces per nesting
    level, ``": "`` after keys; nesting deeper than ``max_depth`` is not accepted)."""
    max_whitespace_run: Annotated[int | None, Default(DEFAULT_MAX_WHITESPACE_RUN)]
    """The longest run of flexible white space (None: unbounded)."""
    property_order: Annotated[PropertyOrder, Default("definition")]
    """``"definition"``: properties in the order of ``properties``; ``"any"``: any order (required
    keys and no duplicates enforced by the core's checks)."""
    lenient: Annotated[bool, Default(False)]
    """Ignore what cannot be enforced instead of failing; what was ignored is listed in the
    ``SchemaInfo`` given as ``info`` (and on ``CompiledGrammar.not_enforced``)."""
    max_depth: Annotated[int, Default(32)]
    """How deeply the JSON text may nest (objects and arrays)."""
    assert_content: Annotated[bool, Default(False)]
    """Enforce ``contentEncoding: "base64"`` (RFC 4648, padded). Off unless asked: in Draft 2020-12
    (and 07) content keywords are annotations, and real schemas use them for unpadded or URL-safe
    variants."""
    key_spelling: Annotated[KeySpelling, Default("any")]
    """``"any"``: a property name in any JSON spelling, ``"a"`` or ``"\\u0061"``, as a validator
    reads it; ``"plain"``: only the spelling of ``json.dumps(name, ensure_ascii=False)``, a subset of
    the valid texts, the one to generate with (declared keys become forced text, and a model cannot
    drift into escapes)."""
    string_spelling: Annotated[StringSpelling, Default("any")]
    """``"any"``: every JSON spelling of a string, escapes included. ``"plain"``: only the spelling of
    ``json.dumps(s, ensure_ascii=False)`` (characters raw, the short escapes but ``\\/``, and
    ``\\u00xx`` for the other controls; implies plain keys): what a model should write, and far
    smaller lexers for patterns and formats, whose characters otherwise each carry their
    ``\\uXXXX`` spellings. ``"controls"`` (llguidance's JSON strings): characters raw, ``\\uXXXX``
    only for the controls U+0000-U+001F and U+007F (which must be escaped; a control with a short
    escape may use either), no ``\\/``; so a ``const`` or ``enum`` string has one spelling unless it
    holds controls. ``"unicode"``: as ``"controls"``, and any character may also be written
    ``\\uXXXX`` (a surrogate pair for those past U+FFFF)."""
    number_spelling: Annotated[NumberSpelling, Default("any")]
    """``"any"``: every JSON spelling of a number, compared with the bounds exactly (under
    ``maximum: 5``, ``2000e-3`` is 2); ``"plain"``: numbers without an exponent, integers without a
    fraction, a subset of the valid texts, the one to generate with (a small model that starts
    ``2000`` under ``maximum: 5`` may only go on with zeros); ``"plain_integers"``: only integers are
    written without fraction or exponent, as llguidance does, and ``-0`` is refused where the
    minimum is 0 or more."""
    whitespace_pattern: Annotated[str | None, Default(None)]
    """A regex for the white space around punctuation (before and after ``{ [ , :``, before
    ``} ]``), as vLLM's and Outlines' option of that name: ``"[ ]?"`` allows at most one space there
    and nothing else. Only with ``whitespace="flexible"``. The pattern is the caller's: one that
    matches more than JSON white space gives texts that are not JSON."""
    item_separator: Annotated[str | None, Default(None)]
    """A regex for the ``,`` between items or members (llguidance's option of this name), e.g.
    ``", "``; the white space of ``whitespace`` still goes around it. Not with a fixed indentation."""
    key_separator: Annotated[str | None, Default(None)]
    """A regex for the ``:`` after a key, as ``item_separator`` is for the ``,``."""
    escapes: Annotated[str | None, Default(None)]
    """With ``string_spelling`` ``"controls"`` or ``"unicode"``: the letters that may follow a
    backslash (llguidance's ``json_allowed_escapes``; None: ``nrbtf\\"u``, every one); without
    ``u`` there is no ``\\uXXXX`` at all, and a control character without a short escape cannot be
    written."""
    whitespace_around: Annotated[bool, Default(False)]
    """With flexible white space, allow it before and after the whole value too (llguidance and
    XGrammar refuse it; wanted for a tokenizer whose tokens carry the white space before a word).
    Only for a schema compiled on its own."""


class LarkOptions(TypedDict, total=False):
    """``compile_lark``'s options.

    Example::

        opts: stencil.LarkOptions = {"start": "answer", "unused": "error"}
        g = compiler.compile_lark(text, **opts)
    """
    start: str                          # the start rule (default "start")
    unused: Unused                      # rules the start never reaches (default "warn")
    json_options: JsonSchemaOptions     # for the grammar's %json schemas


class GbnfOptions(TypedDict, total=False):
    """``compile_gbnf``'s options.

    Example::

        g = compiler.compile_gbnf(text, **stencil.GbnfOptions(start="answer"))
    """
    start: str                          # the start rule (default "root")
    unused: Unused                      # rules the start never reaches (default "warn")


class ToolCallOptions(TypedDict, total=False):
    """``compile_tool_calls``'s options besides ``trigger``, ``end`` and ``format``: with a
    ``format``, ``reasoning``, ``tool_choice``, ``parallel``, ``answer`` and ``json_options`` apply; without
    one, the trigger grammar's (``text_before`` to ``args_key``, ``json_options``, and
    ``reasoning`` as a (begin, end) pair of markers).

    Example::

        opts: stencil.ToolCallOptions = {"tool_choice": "required", "parallel": False}
        g = compiler.compile_tool_calls(tools, format="qwen", **opts)
    """
    reasoning: Union[bool, str, tuple[Union[str, int], Union[str, int]]]
    tool_choice: str                    # "auto", "required" or a tool's name (with a format)
    parallel: bool                      # more than one call (with a format)
    answer: dict[str, Any]              # JSON Schema of the final answer (format "harmony")
    text_before: bool
    require_call: bool
    max_calls: Union[int, None]
    name_key: str
    args_key: str
    json_options: JsonSchemaOptions


@dataclass
class SchemaInfo:
    """What a compilation ignored or relied on (filled by ``compile_json_schema(..., info=...)``).

    Example::

        info = stencil.SchemaInfo()
        compiler.compile_json_schema({"type": "string", "format": "x-mine"}, info=info)
        info.unknown_formats      # {"x-mine": "#"}
    """
    ignored: list[tuple[str, str, str]] = field(default_factory=list)  # (keyword, JSON pointer, reason), lenient mode
    unknown_keywords: dict[str, str] = field(default_factory=dict)     # keyword -> first JSON pointer
    unknown_formats: dict[str, str] = field(default_factory=dict)      # format name -> first JSON pointer
    checks: int = 0                                       # completion checks attached
