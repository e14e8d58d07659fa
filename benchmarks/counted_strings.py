"""Strings with a pattern and a length, schemas nobody tuned for: MaskBench files generated here.

Real schemas bound free text by a pattern beside a maxLength ("at most 50 words, 500
characters", a slug of at most 64, a name of at most 100): each character is then a lexer state of
its own, which the mask cache must not walk whole every time. This writes MaskBench-format files
(schema, valid instances) that combine pattern families with lengths from 24 to 500 in objects of
one to three such properties, with instances written to fit (checked with jsonschema), from a
fixed seed; then run MaskBench on them, side by side with the peers::

    python -m benchmarks.counted_strings OUT [--count 120] [--seed 11]
    python -m benchmarks.maskbench OUT --tokenizer deepseek --engines stencil,stencil-budget,llguidance,xgrammar

Nothing here is drawn from ../shared/data: the words, patterns and lengths are this file's.
"""
from __future__ import annotations

import random

from benchmarks.maskbench.data import generate_main

WORDS = ("support reliable teams region clear reports fast answers every quarter invoice shipment "
         "customer portal access review audit schedule weekly onboarding training budget vendor "
         "renewal contract secure storage backup network outage incident response metrics").split()

# (name, pattern or None, text maker(rng, n) -> a string of at most n characters the pattern takes)
FAMILIES = [
    ("words", "^(?:\\S+\\s+){0,%d}\\S+$", "words"),
    ("letters", "^[A-Za-z ,.'-]+$", "sentence"),
    ("no-markup", "^[^<>]*$", "sentence"),
    ("unanchored", "[A-z]+", "sentence"),
    ("slug", "^[a-z0-9]+(?:-[a-z0-9]+)*$", "slug"),
    ("title", "^[A-Z][a-z]+(?: [A-Z][a-z]+)*$", "title"),
    ("plain", None, "sentence"),
]
LENGTHS = (24, 40, 64, 100, 128, 200, 500)


def text(rng: random.Random, kind: str, n: int, words: int) -> str:
    """Up to `words` words, whole, in at most n characters, spelled as the family's pattern takes."""
    sep = "-" if kind == "slug" else " "
    out = ""
    for _ in range(words):
        w = rng.choice(WORDS)
        w = w.capitalize() if kind == "title" or (kind == "sentence" and not out) else w
        if len(out) + len(sep) + len(w) + (kind == "sentence") > n:
            break
        out = out + sep + w if out else w
    if not out:  # a length under the shortest word: a prefix of one, letters only
        out = rng.choice(WORDS)[:n].capitalize() if kind == "title" else rng.choice(WORDS)[:n]
    return out + "." if kind == "sentence" and len(out) < n else out


def make_schema(rng: random.Random, i: int) -> dict:
    props, instance = {}, {}
    for k in range(rng.choice((1, 2, 3))):
        name, pattern, kind = rng.choice(FAMILIES)
        n = rng.choice(LENGTHS)
        count = rng.choice((9, 19, 49, 99))
        s: dict = {"type": "string", "maxLength": n}
        if pattern:
            s["pattern"] = pattern % count if "%d" in pattern else pattern
        if rng.random() < 0.3:
            s["minLength"] = 1
        key = f"{name.replace('-', '_')}_{k}"
        props[key] = s
        instance[key] = text(rng, kind, n, min(count + 1, rng.randrange(2, 60)))
    return {"description": f"counted strings #{i}",
            "schema": {"type": "object", "properties": props, "required": sorted(props), "additionalProperties": False},
            "instance": instance}


def with_test(doc: dict) -> dict:
    doc["tests"] = [{"description": "written to fit", "data": doc.pop("instance"), "valid": True}]
    return doc


def main(argv=None) -> None:
    generate_main(argv, __doc__, "counted", lambda rng, i: with_test(make_schema(rng, i)), count=120, seed=11)


if __name__ == "__main__":
    main()
