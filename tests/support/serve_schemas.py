"""Short JSON objects under strict schemas, as ``python -m benchmarks.serve`` requests them and
the server tests (``test_server_picks.py``) generate them: strings and numbers bounded, so a small
model finishes within a few dozen tokens.

Example::

    prompt, schema = SCHEMAS[0]   # ("A person as JSON.", {"type": "object", ...})
"""
from __future__ import annotations

__all__ = ["SCHEMAS"]


def _obj(props: dict) -> dict:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


#: (prompt, schema): strings and numbers bounded, so a small model finishes within max_tokens
SCHEMAS = [
    ("A person as JSON.", _obj({"name": {"type": "string", "maxLength": 12},
                                "age": {"type": "integer", "minimum": 0, "maximum": 120}})),
    ("A product as JSON.", _obj({"product": {"type": "string", "maxLength": 12},
                                 "size": {"enum": ["S", "M", "L"]}, "in_stock": {"type": "boolean"}})),
    ("A point as JSON.", _obj({"x": {"type": "integer", "minimum": -99, "maximum": 99},
                               "y": {"type": "integer", "minimum": -99, "maximum": 99}})),
    ("Three colors as JSON.", _obj({"colors": {"type": "array", "maxItems": 3,
                                               "items": {"enum": ["red", "green", "blue", "black"]}}})),
]
