"""Unanchored patterns with a count inside, schemas nobody tuned for: MaskBench files generated here.

JSON Schema's ``pattern`` is not anchored: ``"[0-9a-f]{40}"`` means "holds 40 hex digits in a
row somewhere", and schemas written for IDs, keys and hashes use it that way (or mean an anchored
one and leave the anchors out). Inside a long string every run begun is a count of its own, so a
lexer that keeps them apart makes a state per character, growing with the run. This writes
MaskBench-format files (schema, valid instances) of objects with one to three such strings (runs of
16 to 200 characters of a class, some beside a maxLength, instances with text around the run,
checked with jsonschema), from a fixed seed; then run MaskBench on them, side by side with the
peers::

    python -m benchmarks.unanchored_counts OUT [--count 80] [--seed 5]
    python -m benchmarks.maskbench OUT --tokenizer deepseek --engines stencil,stencil-budget,llguidance,xgrammar

Nothing here is drawn from ../shared/data: the classes, counts and words are this file's.
"""
from __future__ import annotations

import random
import string

from benchmarks.maskbench.data import generate_main

# (name, the run's class in the pattern, its characters, what may stand before and after it)
CLASSES = [
    ("hex", "[0-9a-f]", "0123456789abcdef", "sha: "),
    ("token", "[A-Za-z0-9_-]", string.ascii_letters + string.digits + "_-", "Bearer "),
    ("digits", "\\d", string.digits, "acct "),
    ("upper", "[A-Z0-9]", string.ascii_uppercase + string.digits, "ref-"),
    ("base64", "[A-Za-z0-9+/]", string.ascii_letters + string.digits + "+/", "key="),
]
COUNTS = (16, 20, 32, 40, 64, 100, 128, 162, 200)
WORDS = "issued by the billing service for tenant west see log entry".split()


def run_text(rng: random.Random, chars: str, prefix: str, count: int, exact: bool, around: bool) -> str:
    """A string holding a run of `count` (or, for a range, up to 8 more) characters of the class,
    with the prefix and a few words around it when `around`."""
    n = count if exact else count + rng.randrange(0, 9)
    run = "".join(rng.choice(chars) for _ in range(n))
    if not around:
        return run
    return prefix + run + " " + " ".join(rng.sample(WORDS, rng.randrange(1, 4)))


def make_schema(rng: random.Random, i: int) -> dict:
    props, instance = {}, {}
    for k in range(rng.choice((1, 2, 3))):
        name, cls, chars, prefix = rng.choice(CLASSES)
        count = rng.choice(COUNTS)
        exact = rng.random() < 0.6
        s: dict = {"type": "string", "pattern": f"{cls}{{{count}}}" if exact else f"{cls}{{{count},{count + 8}}}"}
        around = rng.random() < 0.5
        value = run_text(rng, chars, prefix, count, exact, around)
        if rng.random() < 0.3:  # a maxLength that leaves the text room
            s["maxLength"] = len(value) + rng.randrange(0, 40)
        key = f"{name}_{k}"
        props[key] = s
        instance[key] = value
    return {"description": f"unanchored counts #{i}",
            "schema": {"type": "object", "properties": props, "required": sorted(props), "additionalProperties": False},
            "tests": [{"description": "written to fit", "data": instance, "valid": True}]}


def main(argv=None) -> None:
    generate_main(argv, __doc__, "unanchored", make_schema, count=80, seed=5)


if __name__ == "__main__":
    main()
