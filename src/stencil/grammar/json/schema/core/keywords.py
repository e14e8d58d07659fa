"""The kind of value each JSON Schema keyword takes, in one table (:data:`KEYWORD_VALUES`), and the
places of a schema object's subschemas (:func:`subschemas`) that table implies.

The reader checks every schema object against the table before it reads a keyword
(:func:`..read.common.check_values`), so a malformed value is one error naming the keyword and its
JSON pointer (``additionalProperties at /additionalProperties: must be an object or a boolean, got
a list``), not a crash further in (a list where a schema was expected is unhashable) nor a keyword
silently skipped (``"format": ["date"]``, ``"if": [1]`` alone). Listed: every keyword stencil
reads (validation, applicators, identifiers, ``$defs``). Not listed: annotations it never reads
(``title``, ``default``, ``$comment``...), draft 4's ``id`` (a plain name in later drafts) and
unknown keywords, which stay unchecked as the specification ignores them.

Example::

    KEYWORD_VALUES["items"].test([{"type": "integer"}])   # True: a tuple of schemas (draft 2019-09 and older)
    [path for path, _ in subschemas({"anyOf": [{}, True], "not": {}})]   # [("not",), ("anyOf", 0), ("anyOf", 1)]
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator

__all__ = ["Shape", "KEYWORD_VALUES", "SCHEMA_VALUED", "SCHEMA_LISTS", "SCHEMA_MAPS", "subschemas",
           "is_count"]


@dataclass(frozen=True)
class Shape:
    """A kind of keyword value: ``what`` completes "must be ...", ``test`` takes the whole value,
    and ``each`` each item (``of=list``) or member value (``of=dict``) of a value of type ``of``,
    so that an error can point at the one that is wrong (``items`` is a schema or a list of them:
    only the items of the list are tested)."""
    what: str
    test: Callable[[Any], bool]
    each: Shape | None = None
    of: type[list] | type[dict] = list


def _schema(v) -> bool:
    return isinstance(v, (dict, bool))


def _number(v) -> bool:
    # Python's json.loads reads NaN and Infinity, which no bound or divisor can be; an int is finite
    # (and one past a float's range, 3 * 10 ** 400, makes math.isfinite raise OverflowError)
    return isinstance(v, (int, float)) and not isinstance(v, bool) and (isinstance(v, int) or math.isfinite(v))


def is_count(v) -> bool:
    """A non-negative integer (2.0 too: JSON does not tell 2 from 2.0)."""
    return _number(v) and v >= 0 and v == int(v)


def _names(v) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


SCHEMA = Shape("an object or a boolean", _schema)
STRING = Shape("a string", lambda v: isinstance(v, str))
COUNT = Shape("a non-negative integer", is_count)
#: the largest count a grammar repeats (the core's repetition bound, 2**32 - 2): a maximum above it
#: bounds nothing a generation can write, a minimum above it asks for more than one can
COUNT_LIMIT = 0xFFFFFFFE
SCHEMAS = Shape("a list of schemas", lambda v: isinstance(v, list), SCHEMA)
SCHEMA_MAP = Shape("an object whose values are schemas", lambda v: isinstance(v, dict), SCHEMA, dict)
# a tuple of schemas (then additionalItems) is the draft 2019-09 and older form, still read in 2020-12
ITEMS = Shape("an object, a boolean or a list of schemas", lambda v: _schema(v) or isinstance(v, list), SCHEMA)
BRANCHES = Shape("a non-empty list of schemas", lambda v: isinstance(v, list) and len(v) > 0, SCHEMA)
NUMBER = Shape("a finite number", _number)
# a boolean: draft 4's flag on minimum/maximum; a number: the bound itself (draft 6 on)
NUMBER_OR_FLAG = Shape("a finite number or a boolean", lambda v: _number(v) or isinstance(v, bool))
DIVISOR = Shape("a finite number greater than 0", lambda v: _number(v) and v > 0)
BOOLEAN = Shape("a boolean", lambda v: isinstance(v, bool))

#: keyword -> the kind of value it takes (subschema keywords first, in the order the resolver
#: indexes them)
KEYWORD_VALUES: dict[str, Shape] = {
    **dict.fromkeys(("additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if", "then",
                     "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"), SCHEMA),
    "items": ITEMS,
    **dict.fromkeys(("allOf", "anyOf", "oneOf"), BRANCHES),
    "prefixItems": SCHEMAS,
    **dict.fromkeys(("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"), SCHEMA_MAP),
    "dependencies": Shape("an object whose values are schemas or lists of property names", lambda v: isinstance(v, dict),
                          Shape("a schema or a list of property names", lambda v: _schema(v) or _names(v)), dict),
    "dependentRequired": Shape("an object whose values are lists of property names", lambda v: isinstance(v, dict),
                               Shape("a list of property names", _names), dict),
    # a boolean: a draft-3 per-property flag, seen in the wild (listed as an unknown keyword)
    "required": Shape("a list of strings", lambda v: isinstance(v, (list, bool)), STRING),
    "type": Shape("a type name or a list of them", lambda v: isinstance(v, (str, list)), STRING),
    "enum": Shape("a list", lambda v: isinstance(v, list)),
    **dict.fromkeys(("minLength", "maxLength", "minItems", "maxItems", "minContains", "maxContains",
                     "minProperties", "maxProperties"), COUNT),
    **dict.fromkeys(("minimum", "maximum"), NUMBER),
    **dict.fromkeys(("exclusiveMinimum", "exclusiveMaximum"), NUMBER_OR_FLAG),
    "multipleOf": DIVISOR,
    **dict.fromkeys(("pattern", "format", "contentEncoding", "$ref", "$dynamicRef", "$recursiveRef", "$id",
                     "$schema", "$anchor", "$dynamicAnchor"), STRING),
    **dict.fromkeys(("uniqueItems", "$recursiveAnchor"), BOOLEAN),
}

#: keywords whose value is a schema / a list of schemas / a map of name to schema (``items``:
#: either; ``dependencies``: a map whose values may be schemas)
SCHEMA_VALUED = tuple(k for k, s in KEYWORD_VALUES.items() if s in (SCHEMA, ITEMS))
SCHEMA_LISTS = tuple(k for k, s in KEYWORD_VALUES.items() if s in (BRANCHES, SCHEMAS, ITEMS))
SCHEMA_MAPS = tuple(k for k, s in KEYWORD_VALUES.items() if s is SCHEMA_MAP) + ("dependencies",)


def subschemas(node: dict) -> Iterator[tuple[tuple, Any]]:
    """(path from ``node``, value) of each subschema of the schema object ``node`` (an object or
    a boolean at a place the table says holds a schema; anything else there is left out)."""
    for key in SCHEMA_VALUED:
        v = node.get(key)
        if _schema(v):
            yield (key,), v
    for key in SCHEMA_LISTS:
        v = node.get(key)
        if isinstance(v, list):
            yield from (((key, i), x) for i, x in enumerate(v) if _schema(x))
    for key in SCHEMA_MAPS:
        v = node.get(key)
        if isinstance(v, dict):
            yield from (((key, name), x) for name, x in v.items() if _schema(x))
