"""Objects whose keys fall into classes by several patterns, schemas nobody tuned for: MaskBench files.

Translations keyed by language (`^title_[a-z]{2}(_[A-Z]{2})?$`), extension keys (`^x-`), metrics
named by a device (`net_[a-z]+[0-9]+`, unanchored), beside keys of any string: each key is in the
class of the patterns it matches (every subset of them, the others excluded), so a key's lexer
state holds one derivative per class, and their product grows with every pattern begun. The
values of the patterns meet (each allows a string), so every class has keys: what an engine must
prove is that any text keeps a key open.

Files in MaskBench's format, each a schema with one instance that jsonschema accepts, from a fixed
seed (the names, patterns and values are this file's, none from ../shared/data); MaskBench then
runs them beside the peers, or beside a build from before a change (`stencil@DIR`)::

    python -m benchmarks.key_classes OUT [--count 80] [--seed 9]
    python -m benchmarks.maskbench OUT --tokenizer deepseek --engines stencil,llguidance,xgrammar
"""
from __future__ import annotations

import random

from benchmarks.maskbench.data import generate_main

WORDS = ("summary label caption heading notice remark detail motto slogan tagline subtitle blurb "
         "eth wlan loop tun vpn bond disk sda nvme").split()
LANGS = ("en", "fr", "de", "es", "it", "pt", "nl", "sv", "pl", "ja")
# (pattern, a key maker(rng) it takes, the value schema, a value maker)
PATTERNS = [
    ("^(title|name|description)_[a-z]{2}(_[A-Z]{2})?$",
     lambda r: f"{r.choice(('title', 'name', 'description'))}_{r.choice(LANGS)}" + (
         f"_{r.choice(LANGS).upper()}" if r.random() < 0.3 else ""),
     {"type": ["string", "object"]}, lambda r: " ".join(r.sample(WORDS[:12], 2))),
    ("^x-", lambda r: "x-" + "-".join(r.sample(WORDS, 2)), {}, lambda r: r.randint(0, 99)),
    ("net_[a-z]+[0-9]+", lambda r: f"net_{r.choice(WORDS[12:])}{r.randint(0, 9)}",
     {"type": ["object", "string"]}, lambda r: {"bytes": r.randint(0, 10 ** 6)}),
    ("drv_([a-z]+)", lambda r: f"drv_{r.choice(WORDS[12:])}", {"type": ["object", "string"], "required": ["name"]},
     lambda r: {"name": r.choice(WORDS)}),
    ("(count|total)$", lambda r: r.choice(WORDS[:12]) + r.choice(("_count", "_total")),
     {"type": ["integer", "object", "string"]}, lambda r: str(r.randint(0, 500))),
    ("^[a-z]+_(min|max)$", lambda r: r.choice(WORDS[:12]) + r.choice(("_min", "_max")),
     {"type": ["number", "string", "object"]}, lambda r: f"{r.uniform(0, 9):.2f}"),
]


def keyed_object(rng: random.Random) -> tuple[dict, dict]:
    """Named properties, two to four patterns whose values meet, other keys of any value."""
    chosen = rng.sample(PATTERNS, rng.randint(2, 4))
    schema: dict = {"type": "object", "properties": {"id": {"type": "string"}, "version": {"type": "integer"}},
                    "patternProperties": {p: dict(v) for p, _, v, _ in chosen}}
    instance: dict = {"id": rng.choice(WORDS), "version": rng.randint(1, 9)}
    for _ in range(rng.randint(2, 6)):
        _, make_key, _, make_value = rng.choice(chosen)
        instance[make_key(rng)] = make_value(rng)
    for _ in range(rng.randint(0, 2)):
        instance[f"{rng.choice(WORDS)} note {rng.randint(0, 9)}"] = rng.choice((True, None, "free text"))
    return schema, instance


def make_file(rng: random.Random, i: int) -> dict:
    props, instance = {}, {}
    for k in range(rng.choice((1, 2))):
        props[f"part_{k}"], instance[f"part_{k}"] = keyed_object(rng)
    return {"description": f"key classes #{i}",
            "schema": {"type": "object", "properties": props, "required": sorted(props)},
            "tests": [{"description": "written to fit", "data": instance, "valid": True}]}


def main(argv=None) -> None:
    generate_main(argv, __doc__, "key_classes", make_file, count=80, seed=9)


if __name__ == "__main__":
    main()
