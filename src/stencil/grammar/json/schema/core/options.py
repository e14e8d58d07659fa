"""Options of the JSON Schema compiler: ``Options``, the options checked and with their defaults.

Each option is declared once, in ``stencil.JsonSchemaOptions`` (:mod:`stencil.schema_options`):
its type, its default and what it means. ``Options`` is a frozen dataclass built from those
fields, so the two cannot differ; here are only the checks of the values. ``registry`` (``{uri:
schema}`` of other documents that ``$ref`` may point into) and ``info`` (a ``SchemaInfo`` to fill)
are arguments of the compile call, not options.

Example::

    opts = Options.make(whitespace="compact", property_order="any")
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, get_args, get_type_hints

from stencil._core import GrammarError
from stencil.schema_options import (DEFAULT_MAX_WHITESPACE_RUN, Default, JsonSchemaOptions, KeySpelling,
                                    NumberSpelling, PropertyOrder, StringSpelling)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Options", "DEFAULT_MAX_WHITESPACE_RUN"]


def dataclass_of(options: type) -> Callable[[type], type]:
    """A class decorator: the class as a frozen dataclass whose fields are ``options``'s (a
    TypedDict whose every annotation is ``Annotated[type, Default(value)]``), in their order."""
    def decorate(cls: type) -> type:
        cls.__annotations__ = dict(cls.__dict__.get("__annotations__", {}))
        for name, hint in get_type_hints(options, include_extras=True).items():
            default = next((m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Default)), None)
            if default is None:
                raise TypeError(f"{options.__name__}.{name} has no Default in its annotation")
            cls.__annotations__[name] = get_args(hint)[0]
            setattr(cls, name, default.value)
        return dataclasses.dataclass(frozen=True)(cls)
    return decorate


@dataclass_of(JsonSchemaOptions)
class Options:
    """The JSON Schema options with their defaults, checked (``make``): a frozen dataclass whose
    fields are ``JsonSchemaOptions``'s."""

    if TYPE_CHECKING:   # (mypy does not see the fields the decorator adds)
        def __init__(self, **options: Unpack[JsonSchemaOptions]) -> None: ...

        def __getattr__(self, name: str) -> Any: ...

    @staticmethod
    def make(**kw: Any) -> Options:
        """Checked options: TypeError naming an unknown option, GrammarError naming one whose
        value is wrong (a GrammarError, so a server answers 400 to a request's bad option)."""
        # Every compile makes its options, and a service asks the same few sets over and over:
        # checked ones are kept (frozen, so shared), keyed with each value's type (True is 1).
        try:
            key = tuple(sorted((k, type(v), v) for k, v in kw.items()))
            hash(key)
        except TypeError:   # an unhashable value: checked, and refused there
            return Options._checked(kw)
        return _checked_once(key)

    @staticmethod
    def _checked(kw: dict[str, Any]) -> Options:
        known = set(JsonSchemaOptions.__annotations__)
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
        ws = self.whitespace
        return ws if isinstance(ws, int) and not isinstance(ws, bool) else None


@lru_cache(maxsize=256)
def _checked_once(key: tuple[tuple[str, type, Any], ...]) -> Options:
    """Options.make's checked options by their (name, type, value) arguments."""
    return Options._checked({k: v for k, _, v in key})


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
    """The string and number spellings, the escapes and separators (``JsonSchemaOptions`` says what each allows)."""
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
