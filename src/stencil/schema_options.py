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
from typing import Literal, TypedDict, Union

__all__ = ["JsonSchemaOptions", "SchemaInfo", "Whitespace", "PropertyOrder", "KeySpelling", "StringSpelling",
           "NumberSpelling"]

# Union, not |: these are evaluated when the module loads, and Python 3.10 has no | for Literal.
#: "flexible", "compact", or an indentation of 0 to 16 spaces
Whitespace = Union[Literal["flexible", "compact"], int]
PropertyOrder = Literal["definition", "any"]
KeySpelling = Literal["any", "plain"]
StringSpelling = Literal["any", "plain", "controls", "unicode"]
NumberSpelling = Literal["any", "plain", "plain_integers"]


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


@dataclass
class SchemaInfo:
    """What a compilation ignored or relied on (filled by ``compile_json_schema(..., info=...)``).

    Example::

        info = stencil.SchemaInfo()
        compiler.compile_json_schema({"type": "string", "format": "x-mine"}, info=info)
        info.unknown_formats      # {"x-mine": "#"}
    """
    ignored: list = field(default_factory=list)          # (keyword, JSON pointer, reason), lenient mode
    unknown_keywords: dict = field(default_factory=dict)  # keyword -> first JSON pointer
    unknown_formats: dict = field(default_factory=dict)   # format name -> first JSON pointer
    checks: int = 0                                       # completion checks attached
