"""The typed arguments of ``GrammarCompiler.compile_json_schema`` and its siblings (``compile_json``,
``compile_pydantic``, ``compile_reasoning_json``, ``compile_structural_tag``).

:class:`JsonSchemaOptions` names every option with its type, for a type checker and an editor; the
defaults, the checks of each value and what each option means are in
:mod:`stencil.grammar.json.schema.core.options` (``Options``), which uses the types named here.
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
from typing import Any, Literal, TypedDict, Union

__all__ = ["JsonSchemaOptions", "LarkOptions", "GbnfOptions", "ToolCallOptions", "SchemaInfo", "Whitespace",
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


class JsonSchemaOptions(TypedDict, total=False):
    """The JSON Schema options as keyword arguments, every one optional (the defaults are
    ``Options``'s, in :mod:`stencil.grammar.json.schema.core.options`).

    Example::

        opts: stencil.JsonSchemaOptions = {"whitespace": "compact", "key_spelling": "plain"}
        g = compiler.compile_json_schema(schema, **opts)
    """
    whitespace: Whitespace
    max_whitespace_run: int | None
    property_order: PropertyOrder
    lenient: bool
    max_depth: int
    assert_content: bool
    key_spelling: KeySpelling
    string_spelling: StringSpelling
    number_spelling: NumberSpelling
    whitespace_pattern: str | None
    item_separator: str | None
    key_separator: str | None
    escapes: str | None
    whitespace_around: bool


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
