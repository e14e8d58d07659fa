"""Seeded JSON Schemas of realistic shape that no engine was tuned on: records of a few dozen kinds
(orders, patients, flights, bug reports...) built from a library of typed fields (formats,
patterns, enums, ranges, nullable values, nested objects, arrays of objects, ``$defs`` and
``$ref``), each with a prompt asking a chat model for one instance. The generation benchmarks use
them where the development set's schemas would measure what was tuned on it.

Every array has ``maxItems`` and every free string ``maxLength``, so a small model's outputs stay
short enough to finish within a few hundred tokens (the structure, not the model's rambling, is
what these schemas exercise).

Example::

    for case in generated_schemas(20, seed=0):
        print(case.name, case.prompt, case.schema["required"])
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["SchemaCase", "generated_schemas", "FIELDS", "KINDS"]


@dataclass(frozen=True)
class SchemaCase:
    """One generated schema: ``name`` (kind and index), the ``schema`` and a user ``prompt``."""
    name: str
    schema: dict
    prompt: str


def _s(max_length: int = 40, **extra: Any) -> dict:
    return {"type": "string", "maxLength": max_length, **extra}


def _int(lo: int, hi: int) -> dict:
    return {"type": "integer", "minimum": lo, "maximum": hi}


def _num(lo: float, hi: float) -> dict:
    return {"type": "number", "minimum": lo, "maximum": hi}


def _nullable(schema: dict) -> dict:
    return {"anyOf": [schema, {"type": "null"}]}


# A field: its name and a function of the random source giving its schema (some fields vary).
FIELDS: dict[str, Callable[[random.Random], dict]] = {
    "name": lambda r: _s(r.choice([24, 40, 60])),
    "title": lambda r: _s(r.choice([40, 80])),
    "description": lambda r: _s(r.choice([80, 120]), minLength=r.choice([0, 10])),
    "email": lambda r: {"type": "string", "format": "email", **({"maxLength": 60} if r.random() < 0.2 else {})},
    "phone": lambda r: {"type": "string", "pattern": r"^\+?[0-9][0-9 -]{6,14}$"},
    "website": lambda r: {"type": "string", "format": "uri", **({"maxLength": 80} if r.random() < 0.2 else {})},
    "id": lambda r: r.choice([{"type": "string", "format": "uuid"},
                              {"type": "string", "pattern": "^[A-Z]{2,3}-[0-9]{3,6}$"},
                              _int(1, 10**9)]),
    "created_at": lambda r: {"type": "string", "format": "date-time"},
    "date": lambda r: {"type": "string", "format": "date"},
    "start_time": lambda r: {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
    "age": lambda r: _int(0, 120),
    "quantity": lambda r: _int(1, r.choice([10, 100, 1000])),
    "count": lambda r: {"type": "integer", "minimum": 0},
    "rating": lambda r: r.choice([_int(1, 5), _num(0, 10), {"type": "integer", "enum": [1, 2, 3, 4, 5]}]),
    "price": lambda r: {"type": "number", "minimum": 0, **r.choice([{}, {"exclusiveMaximum": 100000}, {},
                                                                    {"exclusiveMaximum": 100000}, {"multipleOf": 0.01}])},
    "percentage": lambda r: _num(0, 100),
    "temperature": lambda r: _num(-60, 60),
    "currency": lambda r: {"type": "string", "enum": ["USD", "EUR", "GBP", "JPY", "CHF"][:r.randint(3, 5)]},
    "language": lambda r: {"type": "string", "enum": ["en", "fr", "de", "es", "ja", "pt"]},
    "status": lambda r: {"type": "string", "enum": r.choice([["draft", "published", "archived"],
                                                             ["open", "in_progress", "resolved", "closed"],
                                                             ["pending", "confirmed", "cancelled"]])},
    "priority": lambda r: r.choice([{"enum": ["low", "medium", "high", "critical"]}, _int(1, 4)]),
    "active": lambda r: {"type": "boolean"},
    "verified": lambda r: {"type": "boolean"},
    "color": lambda r: {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"},
    "country_code": lambda r: {"type": "string", "pattern": "^[A-Z]{2}$"},
    "postal_code": lambda r: {"type": "string", "pattern": r"^[0-9A-Z][0-9A-Z -]{2,8}$"},
    "notes": lambda r: _nullable(_s(r.choice([60, 100]))),
    "tags": lambda r: {"type": "array", "items": _s(20), "maxItems": r.choice([3, 5]),
                       **({"uniqueItems": True} if r.random() < 0.2 else {})},
    "duration_minutes": lambda r: _int(1, 600),
    "version": lambda r: {"type": "string", "pattern": r"^[0-9]+\.[0-9]+\.[0-9]+$"},
    "ip_address": lambda r: {"type": "string", "format": "ipv4"},
    "weight_kg": lambda r: {"type": "number", "exclusiveMinimum": 0, "maximum": 500},
}

_ADDRESS = {"type": "object", "properties": {"street": _s(60), "city": _s(40), "postal_code": FIELDS["postal_code"](
    random.Random(0)), "country_code": FIELDS["country_code"](random.Random(0))},
    "required": ["street", "city", "country_code"]}
_COORDS = {"type": "object", "properties": {"lat": _num(-90, 90), "lon": _num(-180, 180)},
           "required": ["lat", "lon"], "additionalProperties": False}

# kind: (the fields it draws from, the nested parts it may have: property name -> part kind)
KINDS: dict[str, tuple[list[str], dict[str, str]]] = {
    "customer order": (["id", "created_at", "status", "currency", "price", "notes", "email"],
                       {"shipping_address": "address", "items": "line_items"}),
    "patient record": (["id", "name", "age", "date", "phone", "email", "notes", "verified"],
                       {"address": "address", "allergies": "strings"}),
    "flight booking": (["id", "date", "start_time", "duration_minutes", "price", "currency", "status"],
                       {"passengers": "people", "origin": "airport", "destination": "airport"}),
    "bug report": (["id", "title", "description", "priority", "status", "created_at", "version", "tags"],
                   {"reporter": "person", "steps": "strings"}),
    "product listing": (["id", "name", "description", "price", "currency", "rating", "tags", "weight_kg",
                         "active"], {"dimensions": "dimensions", "variants": "variants"}),
    "weather report": (["date", "temperature", "percentage", "notes"], {"location": "coordinates",
                                                                        "forecast": "forecast"}),
    "restaurant review": (["name", "rating", "description", "date", "price", "verified"],
                          {"address": "address", "dishes": "strings"}),
    "job posting": (["id", "title", "description", "status", "created_at", "website", "tags"],
                    {"salary": "salary", "company": "company"}),
    "server config": (["name", "ip_address", "version", "active", "count", "tags", "notes"],
                      {"ports": "ports", "owner": "person"}),
    "calendar event": (["id", "title", "date", "start_time", "duration_minutes", "priority", "notes"],
                       {"attendees": "people", "location": "address"}),
    "bank transaction": (["id", "created_at", "price", "currency", "status", "description"],
                         {"counterparty": "company"}),
    "book": (["title", "name", "date", "language", "rating", "tags", "description"],
             {"authors": "people", "publisher": "company"}),
    "sensor reading": (["id", "created_at", "temperature", "percentage", "active", "count"],
                       {"position": "coordinates"}),
    "recipe": (["name", "description", "duration_minutes", "rating", "language", "tags"],
               {"ingredients": "ingredients", "steps": "strings"}),
    "support ticket": (["id", "title", "priority", "status", "created_at", "email", "notes"],
                       {"customer": "person", "labels": "strings"}),
}


def _part(kind: str, r: random.Random) -> dict:
    """A nested part of a record (an object or an array of them), drawn for one schema."""
    if kind == "address":
        return dict(_ADDRESS)
    if kind == "coordinates":
        return dict(_COORDS)
    if kind == "strings":
        return {"type": "array", "items": _s(r.choice([40, 60])), "minItems": r.choice([0, 1]), "maxItems": 4}
    if kind == "person":
        return _record(["name", "email", "phone", "age"], r, at_least=2)
    if kind == "people":
        return {"type": "array", "items": {"$ref": "#/$defs/person"}, "minItems": 1, "maxItems": 3}
    if kind == "company":
        return _record(["name", "website", "country_code", "id"], r, at_least=2)
    if kind == "airport":
        return {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"},
                                                 "city": _s(40)}, "required": ["code", "city"]}
    if kind == "line_items":
        item = _record(["name", "quantity", "price", "id"], r, at_least=3)
        return {"type": "array", "items": item, "minItems": 1, "maxItems": r.choice([3, 4])}
    if kind == "dimensions":
        return {"type": "object", "properties": {k: {"type": "number", "exclusiveMinimum": 0, "maximum": 1000}
                                                 for k in ("width", "height", "depth")},
                "required": ["width", "height"], "additionalProperties": False}
    if kind == "variants":
        return {"type": "array", "maxItems": 3,
                "items": _record(["name", "color", "price", "quantity"], r, at_least=2)}
    if kind == "forecast":
        day = {"type": "object", "properties": {"date": FIELDS["date"](r), "high": _num(-60, 60),
                                                "low": _num(-60, 60),
                                                "summary": {"enum": ["sunny", "cloudy", "rain", "snow", "storm"]}},
               "required": ["date", "high", "low", "summary"]}
        return {"type": "array", "items": day, "minItems": 1, "maxItems": 3}
    if kind == "salary":
        return {"type": "object", "properties": {"min": {"type": "integer", "minimum": 0},
                                                 "max": {"type": "integer", "minimum": 0},
                                                 "currency": FIELDS["currency"](r),
                                                 "period": {"enum": ["hour", "month", "year"]}},
                "required": ["min", "max", "currency"]}
    if kind == "ports":
        return {"type": "array", "items": _int(1, 65535), "maxItems": 4, **({"uniqueItems": True} if r.random() < 0.3 else {})}
    if kind == "ingredients":
        item = {"type": "object", "properties": {"name": _s(30), "amount": {"type": "number", "exclusiveMinimum": 0},
                                                 "unit": {"enum": ["g", "kg", "ml", "l", "cup", "tbsp", "tsp", "piece"]}},
                "required": ["name", "amount"], "additionalProperties": False}
        return {"type": "array", "items": item, "minItems": 1, "maxItems": 5}
    raise ValueError(kind)


def _record(fields: list[str], r: random.Random, at_least: int) -> dict:
    names = r.sample(fields, r.randint(min(at_least, len(fields)), len(fields)))
    props = {n: FIELDS[n](r) for n in names}
    required = [n for n in names if r.random() < 0.7] or names[:1]
    schema: dict = {"type": "object", "properties": props, "required": required}
    if r.random() < 0.6:
        schema["additionalProperties"] = False
    return schema


def _schema(kind: str, r: random.Random) -> dict:
    fields, parts = KINDS[kind]
    schema = _record(fields, r, at_least=3)
    chosen = r.sample(sorted(parts), r.randint(1, len(parts)))
    for prop in chosen:
        schema["properties"][prop] = _part(parts[prop], r)
        if r.random() < 0.6:
            schema["required"].append(prop)
    if any(parts[p] == "people" for p in chosen):   # the shared person part behind a $ref
        schema["$defs"] = {"person": _part("person", r)}
    schema["title"] = kind.title().replace(" ", "")
    return schema


def generated_schemas(count: int = 24, seed: int = 0) -> list[SchemaCase]:
    """``count`` schemas drawn with ``seed`` (the same arguments give the same schemas), the kinds
    in turn, each with a prompt asking for one instance."""
    r = random.Random(seed)
    kinds = sorted(KINDS)
    r.shuffle(kinds)
    cases = []
    for i in range(count):
        kind = kinds[i % len(kinds)]
        schema = _schema(kind, r)
        prompt = f"Write one realistic {kind} as JSON."
        cases.append(SchemaCase(f"{kind.replace(' ', '_')}-{i}", schema, prompt))
    return cases


def tool_set(count: int, seed: int = 0) -> list[dict]:
    """``count`` generated records as function tools (their schemas as the parameters), seeded."""
    return [{"type": "function", "function": {"name": case.name.replace("-", "_"), "description": case.prompt,
                                              "parameters": case.schema}}
            for case in generated_schemas(count, seed)]
