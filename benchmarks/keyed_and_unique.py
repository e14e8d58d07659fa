"""Maps keyed by a pattern and lists of unique objects, schemas nobody tuned for: MaskBench files.

Two shapes real schemas use everywhere make work for an engine that keeps every output valid:
- an object whose keys match a counted pattern (`patternProperties` such as `^[a-z0-9.-]{1,63}$`)
  beside keys of any string (`additionalProperties`): may the keys written so far exhaust a key?
  (stencil's lexer asks it of every key lexeme);
- a list with `uniqueItems` whose items are objects: a token may start an item that can only end
  as a repeat of an earlier one (stencil's item guard searches for a way out of every earlier item).

This writes MaskBench-format files (schema, a valid instance checked with jsonschema) from a fixed
seed; then run MaskBench on them, side by side with the peers (and a build before a change)::

    python -m benchmarks.keyed_and_unique OUT [--count 80] [--seed 5]
    python -m benchmarks.maskbench OUT --tokenizer deepseek --engines stencil,llguidance,xgrammar

Nothing here is drawn from ../shared/data: the names, patterns and values are this file's.
"""
from __future__ import annotations

import json
import random

from benchmarks.maskbench.data import generate_main

WORDS = ("alpha beta gamma delta region zone tier owner team build release stable canary web api "
         "worker cache store queue metrics audit billing search mobile edge batch").split()
# (key pattern, a key maker(rng) the pattern takes)
KEY_PATTERNS = [
    ("^[a-z0-9.-]{1,63}$", lambda r: "-".join(r.sample(WORDS, r.choice((1, 2))))),
    ("^x-[A-Za-z0-9_]{1,40}$", lambda r: "x-" + "_".join(r.sample(WORDS, r.choice((1, 2))))),
    ("^[A-Z]{2,8}$", lambda r: "".join(r.choice("ABCDEFGHKLMNPRSTUVW") for _ in range(r.randint(2, 8)))),
    ("^[a-zA-Z_][a-zA-Z0-9_]{0,127}$", lambda r: r.choice(WORDS) + str(r.randint(0, 99))),
]


def _value(rng: random.Random, kind: str):
    return {"string": lambda: " ".join(rng.sample(WORDS, rng.randint(1, 3))),
            "integer": lambda: rng.randint(-5, 500),
            "boolean": lambda: rng.random() < 0.5}[kind]()


def keyed_map(rng: random.Random) -> tuple[dict, dict]:
    """An object with named properties, keys of a pattern, and maybe any other keys."""
    pattern, make_key = rng.choice(KEY_PATTERNS)
    kind = rng.choice(("string", "integer", "boolean"))
    schema: dict = {"type": "object",
                    "properties": {"display name": {"type": "string"}, "schema version": {"type": "integer"}},
                    "patternProperties": {pattern: {"type": kind}}}
    other = rng.choice(("any", "string", "none", "absent"))
    if other == "any":
        schema["additionalProperties"] = True
    elif other == "string":
        schema["additionalProperties"] = {"type": "string"}
    elif other == "none":
        schema["additionalProperties"] = False
    # (named keys with a space: no key pattern takes them)
    instance: dict = {"display name": rng.choice(WORDS), "schema version": rng.randint(1, 9)}
    for _ in range(rng.randint(1, 5)):
        instance[make_key(rng)] = _value(rng, kind)
    if other in ("any", "string", "absent"):
        for _ in range(rng.randint(0, 2)):
            instance[f"{rng.choice(WORDS)} note {rng.randint(0, 9)}"] = " ".join(rng.sample(WORDS, 2))
    return schema, instance


def unique_list(rng: random.Random) -> tuple[dict, list]:
    """A unique list of objects (their fields few, some enums), maybe with unique tags inside."""
    fields = {"kind": {"enum": rng.sample(WORDS, 3)}, "value": {"type": "string"}}
    if rng.random() < 0.5:
        fields["rank"] = {"type": "integer"}
    tags = rng.random() < 0.4
    if tags:
        fields["tags"] = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    item = {"type": "object", "properties": fields, "required": ["kind", "value"],
            "additionalProperties": rng.random() < 0.3}
    items, seen = [], set()
    while len(items) < rng.randint(2, 7):
        it = {"kind": rng.choice(fields["kind"]["enum"]), "value": rng.choice(WORDS)}
        if "rank" in fields and rng.random() < 0.6:
            it["rank"] = rng.randint(0, 3)
        if tags and rng.random() < 0.6:
            it["tags"] = rng.sample(WORDS, rng.randint(1, 3))
        key = json.dumps(it, sort_keys=True)
        if key not in seen:
            seen.add(key)
            items.append(it)
    return {"type": "array", "uniqueItems": True, "items": item}, items


def make_file(rng: random.Random, i: int) -> dict:
    props, instance = {}, {}
    for k in range(rng.choice((1, 2, 3))):
        schema, value = (keyed_map if rng.random() < 0.5 else unique_list)(rng)
        props[f"part_{k}"] = schema
        instance[f"part_{k}"] = value
    return {"description": f"keyed maps and unique lists #{i}",
            "schema": {"type": "object", "properties": props, "required": sorted(props), "additionalProperties": False},
            "tests": [{"description": "written to fit", "data": instance, "valid": True}]}


def main(argv=None) -> None:
    generate_main(argv, __doc__, "keyed_unique", make_file, count=80, seed=5)


if __name__ == "__main__":
    main()
