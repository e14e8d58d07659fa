"""Pydantic models (and other types pydantic knows) as grammars, through their JSON Schema.

The schema is pydantic's own ``model_json_schema()`` (``TypeAdapter(tp).json_schema()`` for
other types), compiled with the JSON Schema front-end; properties come in field order by default,
as a model's fields are declared. Pydantic is an optional dependency (``pip install
'stencil-llm[pydantic]'``).

Example::

    class Point(pydantic.BaseModel):
        x: int
        y: int

    g = pydantic_grammar(Point)            # {"x": <int>, "y": <int>}
"""
from __future__ import annotations

from stencil._core import GrammarError
from stencil._version import pip_install
from stencil.grammar.json.schema import json_schema_grammar

__all__ = ["pydantic_schema", "pydantic_grammar"]


def pydantic_schema(model) -> dict:
    """The JSON Schema pydantic gives for ``model`` (a BaseModel subclass or any type)."""
    try:
        import pydantic
    except ImportError:
        raise GrammarError(f"compile_pydantic needs pydantic ({pip_install('pydantic')})") from None
    if isinstance(model, type) and issubclass(model, pydantic.BaseModel):
        return model.model_json_schema()
    if isinstance(model, pydantic.BaseModel):
        raise GrammarError(f"compile_pydantic needs a model class, not an instance of {type(model).__name__}")
    try:
        return pydantic.TypeAdapter(model).json_schema()
    except pydantic.PydanticUserError as e:
        raise GrammarError(f"pydantic cannot give a JSON Schema for {model!r}: {e}") from None
    except pydantic.errors.PydanticInvalidForJsonSchema as e:
        raise GrammarError(f"pydantic cannot give a JSON Schema for {model!r}: {e}") from None


def pydantic_grammar(model, **options):
    """The grammar of the JSON texts that validate as ``model`` (options as for JSON Schema)."""
    return json_schema_grammar(pydantic_schema(model), **options)
