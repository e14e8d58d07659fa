"""Enums of numbers, schemas nobody tuned for: MaskBench files.

Status codes, ports, years, versions, ratings: real schemas list allowed numbers as an `enum`
(a few to a hundred values, integers and decimals, some beside strings or null). A number has many
spellings (`200`, `2e2`, `200.0`, `0.2e3`), so each value is a number expression of its own, and
the first mask where such an enum may start derives every member at every byte a token reads
(stencil: a lexer state per prefix of every spelling). This set measures that cold cost on unseen
schemas beside the peers.

This writes MaskBench-format files (schema, valid instances checked with jsonschema, and invalid
ones: a value outside the enum) from a fixed seed; then run MaskBench on them::

    python -m benchmarks.value_enums OUT [--count 80] [--seed 11]
    python -m benchmarks.maskbench OUT --tokenizer deepseek --engines stencil,stencil-budget,llguidance,xgrammar

Nothing here is drawn from ../shared/data: the names and values are this file's.
"""
from __future__ import annotations

import random

from benchmarks.maskbench.data import generate_main

HTTP = [100, 101, 200, 201, 202, 204, 206, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405, 406, 408,
        409, 410, 412, 413, 415, 418, 422, 425, 429, 431, 451, 500, 501, 502, 503, 504, 505, 507, 511]
# (name, the values a maker(rng) gives: a sorted list)
KINDS = [
    ("status", lambda r: sorted(r.sample(HTTP, r.randint(5, len(HTTP))))),
    ("port", lambda r: sorted(r.sample([21, 22, 25, 53, 80, 110, 143, 443, 465, 587, 993, 995, 1433, 3306, 5432,
                                        6379, 8080, 8443, 9090, 9200, 27017], r.randint(3, 21)))),
    ("year", lambda r: list(range(r.randint(1990, 2010), r.randint(2015, 2030)))),
    ("rating", lambda r: [x / 2 for x in range(0, 11)]),
    ("version", lambda r: sorted(r.sample([1, 1.1, 1.2, 2, 2.5, 3, 3.1, 4, 10, 11, 12.5], r.randint(3, 11)))),
    ("level", lambda r: list(range(-r.randint(1, 10), r.randint(1, 100)))),
]


def _field(rng: random.Random) -> tuple[str, dict, list, object]:
    """(name, schema, its values, a number outside them)."""
    name, make = rng.choice(KINDS)
    values: list = make(rng)
    schema: dict = {"enum": list(values)}
    if all(isinstance(v, int) for v in values) and rng.random() < 0.6:
        schema["type"] = "integer"
    elif rng.random() < 0.3:  # beside other kinds of values
        schema["enum"] += [None, "unknown"]
    outside = max(values) + 7
    return name, schema, values, outside


def make_file(rng: random.Random, i: int) -> dict:
    props, valid, invalid = {}, {}, {}
    for k in range(rng.randint(1, 4)):
        name, schema, values, outside = _field(rng)
        key = f"{name}_{k}"
        if rng.random() < 0.3:  # a list of them
            props[key] = {"type": "array", "items": schema, "maxItems": 6}
            valid[key] = [rng.choice(values) for _ in range(rng.randint(1, 6))]
            invalid[key] = valid[key][:-1] + [outside]
        else:
            props[key] = schema
            valid[key] = rng.choice(values)
            invalid[key] = outside
    props["label"] = {"type": "string"}
    valid["label"] = f"case {i}"
    invalid["label"] = f"case {i}"
    return {"description": f"enums of numbers #{i}",
            "schema": {"type": "object", "properties": props, "required": sorted(props), "additionalProperties": False},
            "tests": [{"description": "values from the enums", "data": valid, "valid": True},
                      {"description": "a value outside its enum", "data": invalid, "valid": False}]}


def main(argv=None) -> None:
    generate_main(argv, __doc__, "value_enums", make_file, count=80, seed=11)


if __name__ == "__main__":
    main()
