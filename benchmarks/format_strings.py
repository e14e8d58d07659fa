"""Formats beside a length, schemas nobody tuned for: MaskBench files generated here.

Real schemas bound a format by a length (a hostname of at most 253 characters, an e-mail of at
most 100, a URI of at most 2,048): the format's own counts (a hostname's labels of 1-63
characters, its 253 in all) meet the length's, and each character is a lexer state of its own.
This writes MaskBench-format files (schema, valid instances) of objects holding one to three such
strings, alone or as array items, with instances made from this file's words to fit (checked with
jsonschema), from a fixed seed; then run MaskBench on them, side by side with the peers::

    python -m benchmarks.format_strings OUT [--count 80] [--seed 5]
    python -m benchmarks.maskbench OUT --tokenizer deepseek --engines stencil,stencil-budget,llguidance,xgrammar

Nothing here is drawn from ../shared/data: the words, hosts and lengths are this file's.
"""
from __future__ import annotations

import random

from benchmarks.counted_strings import WORDS, with_test
from benchmarks.maskbench.data import generate_main

TLDS = ("com", "org", "io", "net", "dev", "co.uk")


def host(rng: random.Random) -> str:
    return ".".join([rng.choice(WORDS) for _ in range(rng.randrange(1, 4))] + [rng.choice(TLDS)])


def value(rng: random.Random, fmt: str) -> str:
    """A string of the format, from this file's words."""
    if fmt == "hostname":
        return host(rng)
    if fmt == "email":
        return f"{rng.choice(WORDS)}.{rng.choice(WORDS)}@{host(rng)}"
    if fmt == "uri":
        path = "/".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 4)))
        return f"https://{host(rng)}/{path}" + (f"?{rng.choice(WORDS)}={rng.randrange(1000)}" if rng.random() < 0.5 else "")
    if fmt == "date-time":
        return (f"20{rng.randrange(10, 40)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
                f"T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z")
    if fmt == "date":
        return f"19{rng.randrange(50, 100)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
    if fmt == "ipv4":
        return ".".join(str(rng.randrange(256)) for _ in range(4))
    if fmt == "uuid":
        digits = "".join(rng.choice("0123456789abcdef") for _ in range(32))
        return "-".join((digits[:8], digits[8:12], digits[12:16], digits[16:20], digits[20:]))
    raise ValueError(f"no values for format {fmt!r}")


FORMATS = ("hostname", "email", "uri", "date-time", "date", "ipv4", "uuid")
LENGTHS = (40, 64, 100, 128, 253, 2048)


def make_schema(rng: random.Random, i: int) -> dict:
    props, instance = {}, {}
    for k in range(rng.choice((1, 2, 3))):
        fmt = rng.choice(FORMATS)
        items = [value(rng, fmt) for _ in range(rng.randrange(1, 4))]
        n = rng.choice([n for n in LENGTHS if n >= max(map(len, items))])
        s: dict = {"type": "string", "format": fmt, "maxLength": n}
        if rng.random() < 0.3:
            s["minLength"] = min(map(len, items))
        key = f"{fmt.replace('-', '_')}_{k}"
        if rng.random() < 0.4:  # a list of them
            props[key] = {"type": "array", "items": s, "maxItems": 5}
            instance[key] = items
        else:
            props[key] = s
            instance[key] = items[0]
    return {"description": f"format strings #{i}",
            "schema": {"type": "object", "properties": props, "required": sorted(props), "additionalProperties": False},
            "instance": instance}


def main(argv=None) -> None:
    generate_main(argv, __doc__, "formats", lambda rng, i: with_test(make_schema(rng, i)), count=80, seed=5)


if __name__ == "__main__":
    main()
