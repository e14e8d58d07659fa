"""Identifiers checked by an unanchored class beside a length, schemas nobody tuned for: MaskBench
files generated here.

Schemas for IDs write ``"pattern": "[0-9a-fA-F]+"`` with ``minLength`` and ``maxLength`` of 24
(a MongoDB id), or ``"\\d+"`` with a length of 10: unanchored, so the pattern only asks for one
such character somewhere, and the length does the rest. Every character is a count of its own
beside the pattern's state, and the minimum sits past the pattern's shortest word. This writes
MaskBench-format files (schema, valid instances) of objects with one to three such strings (exact
lengths or ranges of 4 to 64 characters, some with text around the run), from a fixed seed; then
run MaskBench on them, side by side with the peers::

    python -m benchmarks.ids_with_lengths OUT [--count 80] [--seed 7]
    python -m benchmarks.maskbench OUT --tokenizer deepseek --engines stencil,stencil-budget,llguidance,xgrammar

Nothing here is drawn from ../shared/data: the classes and lengths are unanchored_counts' and this
file's.
"""
from __future__ import annotations

import random

from benchmarks.maskbench.data import generate_main
from benchmarks.unanchored_counts import CLASSES, WORDS

LENGTHS = (4, 8, 10, 12, 16, 20, 24, 32, 36, 40, 64)


def make_schema(rng: random.Random, i: int) -> dict:
    props, instance = {}, {}
    for k in range(rng.choice((1, 2, 3))):
        name, cls, chars, _ = rng.choice(CLASSES)
        n = rng.choice(LENGTHS)
        lo, hi = (n, n) if rng.random() < 0.6 else (max(1, n // 2), n)
        s: dict = {"type": "string", "pattern": cls + "+", "minLength": lo, "maxLength": hi}
        size = rng.randrange(lo, hi + 1)
        # (now and then words around a shorter run: the pattern asks for one character of it)
        words = " ".join(rng.sample(WORDS, 2)) + " " if rng.random() < 0.3 and size > 12 else ""
        value = (words + "".join(rng.choice(chars) for _ in range(size)))[:size]
        key = f"{name}_{k}"
        props[key] = s
        instance[key] = value
    return {"description": f"ids with lengths #{i}",
            "schema": {"type": "object", "properties": props, "required": sorted(props), "additionalProperties": False},
            "tests": [{"description": "written to fit", "data": instance, "valid": True}]}


def main(argv=None) -> None:
    generate_main(argv, __doc__, "ids", make_schema, count=80, seed=7)


if __name__ == "__main__":
    main()
