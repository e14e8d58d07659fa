"""llguidance's ``%json`` dialect: the defaults of a JSON Schema embedded in Lark, and the
``"x-guidance"`` options at the top of such a schema, read into the JSON Schema front-end's options.

llguidance writes the strings of ``%json`` with ``\\uXXXX`` for control characters only (so an
``enum`` or ``const`` string has one spelling), integers without fraction or exponent, and no white
space around the value; ``compile_json_schema`` keeps the JSON Schema reading (any spelling of a
string, ``1.0`` as an integer).

Example::

    schema, options = x_guidance({"x-guidance": {"whitespace_flexible": False}, "type": "array"})
    # options == {"whitespace": "compact"}, schema == {"type": "array"}
"""
from __future__ import annotations

from stencil._core import GrammarError

__all__ = ["JSON_DIALECT", "x_guidance"]

#: the JSON Schema options of every ``%json`` block (``json_options`` and ``x-guidance`` go over them)
JSON_DIALECT = {"string_spelling": "controls", "number_spelling": "plain_integers"}

_BOOL, _STR = (bool,), (str,)
#: each x-guidance key: the JSON types it takes
_KEYS = {
    "item_separator": _STR, "key_separator": _STR, "whitespace_flexible": _BOOL,
    "whitespace_pattern": (str, type(None)), "coerce_one_of": _BOOL, "lenient": _BOOL,
    "json_allowed_escapes": (str, type(None)), "json_allow_general_unicode_escapes": _BOOL,
}


def x_guidance(schema):
    """``schema`` without its top-level ``"x-guidance"``, and the front-end options that key asks
    for; a ``GrammarError`` names an unknown key or a value of the wrong type."""
    if not isinstance(schema, dict) or "x-guidance" not in schema:
        return schema, {}
    xg = schema["x-guidance"]
    schema = {k: v for k, v in schema.items() if k != "x-guidance"}
    if not isinstance(xg, dict):
        raise GrammarError(f'"x-guidance" takes an object of options, got {type(xg).__name__}')
    for k, v in xg.items():
        if k not in _KEYS:
            raise GrammarError(f'unknown "x-guidance" option {k!r} (known: {", ".join(_KEYS)})')
        if not isinstance(v, _KEYS[k]) or (_KEYS[k] is not _BOOL and isinstance(v, bool)):
            want = "true or false" if _KEYS[k] is _BOOL else "a string"
            raise GrammarError(f'"x-guidance" option {k!r} takes {want}, got {v!r}')
    out: dict = {}
    if xg.get("whitespace_flexible") is False:
        out["whitespace"] = "compact"
    if xg.get("whitespace_pattern") is not None:   # overrides whitespace_flexible
        out["whitespace"] = "flexible"
        out["whitespace_pattern"] = xg["whitespace_pattern"]
    for k in ("item_separator", "key_separator", "lenient"):
        if k in xg:
            out[k] = xg[k]
    if xg.get("json_allowed_escapes") is not None:
        out["escapes"] = xg["json_allowed_escapes"]
    if xg.get("json_allow_general_unicode_escapes"):
        out["string_spelling"] = "unicode"
    # coerce_one_of: llguidance reads oneOf as anyOf, or refuses it; stencil enforces oneOf exactly
    return schema, out
