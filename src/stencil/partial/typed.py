"""Partial results as Pydantic objects: :func:`partial_object` builds an instance of the model from
a snapshot's ``value`` with ``model_construct`` (no validation: a partial object is not a valid
one), so code typed against the model reads the settled fields as they come.

Fields not written yet (or whose value is still being written as a number or literal) are
``None``, whatever their type or default; ``model_fields_set`` names the fields present. A string
being written holds its text so far. Nested models, lists and dicts of models, and ``Optional``
models are built the same way, recursively; a union of several models takes the first one whose
fields hold every key written so far (else the plain dict stays). Fields are read under their alias
when they have one (as ``model_json_schema()`` writes them).

Example::

    class Person(pydantic.BaseModel):
        name: str
        born: int

    p = partial_object(Person, {"name": "Mar"})     # Person(name='Mar', born=None)
    p.model_fields_set                               # {'name'}
"""
from __future__ import annotations

import collections.abc as cabc
import types
import typing
from typing import Any

__all__ = ["partial_object"]

#: the origins of the list-like types whose items are read as their first argument
_SEQUENCES = (list, tuple, set, frozenset, cabc.Sequence, cabc.MutableSequence, cabc.Set, cabc.MutableSet)


def partial_object(model: Any, value: Any) -> Any:
    """An instance of the Pydantic model class ``model`` holding the partial ``value`` (a dict;
    anything else is returned as it is, e.g. None before the output has started)."""
    if not isinstance(value, dict):
        return value
    fields = {}
    for name, info in model.model_fields.items():
        key = info.alias or name
        if key in value:
            fields[name] = _convert(info.annotation, value[key])
    written = set(fields)
    for name in model.model_fields:
        fields.setdefault(name, None)
    return model.model_construct(_fields_set=written, **fields)


def _model_class(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_fields") and hasattr(tp, "model_construct")


def _convert(tp: Any, value: Any) -> Any:
    """``value`` (partial JSON) read as the type ``tp``: models built, containers gone through."""
    if _model_class(tp):
        return partial_object(tp, value)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _convert(args[0], value)
    if isinstance(value, list) and origin is tuple and args and args[-1] is not Ellipsis:
        return [_convert(args[i], v) if i < len(args) else v for i, v in enumerate(value)]
    if isinstance(value, list) and origin in _SEQUENCES and args:
        return [_convert(args[0], v) for v in value]
    if isinstance(value, dict) and origin in (dict, cabc.Mapping, cabc.MutableMapping) and len(args) == 2:
        return {k: _convert(args[1], v) for k, v in value.items()}
    if isinstance(value, dict) and args and _is_union(origin):
        for arm in args:
            arm = typing.get_args(arm)[0] if typing.get_origin(arm) is typing.Annotated else arm
            if _model_class(arm) and set(value) <= {f.alias or n for n, f in arm.model_fields.items()}:
                return partial_object(arm, value)
    if isinstance(value, list) and args and _is_union(origin):
        lists = [a for a in args if typing.get_origin(a) in _SEQUENCES]
        return _convert(lists[0], value) if lists else value
    return value


def _is_union(origin: Any) -> bool:
    return origin is typing.Union or origin is getattr(types, "UnionType", None)
