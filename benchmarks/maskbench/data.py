"""MaskBench files: finding them, and turning one into a task for the workers.

A MaskBench file holds ``{"schema": ..., "tests": [{"valid": bool, "data": ...}, ...]}``. A test's
instance is ``json.dumps(data, indent=None, ensure_ascii=False)`` tokenized without special tokens
by the tokenizer's own encoder. The parent process tokenizes once, so every engine is fed exactly
the same token ids.

Generated sets (``benchmarks.counted_strings``, ``benchmarks.keyed_and_unique``) are written by
``write_files``, each valid instance checked against its schema first.

Example::

    files = list_files(["../shared/data/maskbench-dev"], limit=10, seed=0)
    task = load_task(files[0], encode)
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import random
from typing import Callable, Iterable


#: the halves of the development set: outliers are looked at in "tuning", figures reported on "check"
HALVES = ("tuning", "check")


def half_of(path: str) -> str:
    """The half a file belongs to, fixed by a hash of its name (not of its content or place)."""
    return HALVES[hashlib.sha256(os.path.basename(path).encode()).digest()[0] & 1]


def list_files(paths: Iterable[str], limit: int | None = None, seed: int = 0, half: str | None = None) -> list[str]:
    """The ``.json`` files named or found (not recursively) in the folders named, those of one
    ``half`` if given, shuffled with ``seed`` (so that ``limit`` takes a fair sample and slow kinds
    of schemas do not bunch up), the first ``limit`` of them."""
    found: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found.extend(sorted(glob.glob(os.path.join(p, "*.json"))))
        elif os.path.isfile(p):
            found.append(p)
        else:
            raise FileNotFoundError(f"no MaskBench file or folder at {p!r}")
    files = sorted(p for p in set(found) if half is None or half_of(p) == half)
    random.Random(seed).shuffle(files)
    return files[:limit] if limit is not None else files


def instance_text(data) -> str:
    return json.dumps(data, indent=None, ensure_ascii=False)


def load_task(path: str, encode: Callable[[str], list[int]]) -> dict:
    """``{"file", "schema", "tests": [{"valid", "tokens"}], "skipped_tests"}`` for one file.

    Tests whose instance cannot be encoded as UTF-8 (lone surrogates from ``\\udXXX`` escapes)
    cannot be fed to a tokenizer; they are counted in ``skipped_tests``.
    """
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or "schema" not in doc:
        raise ValueError(f"{path}: not a MaskBench file (no 'schema' key)")
    tests, skipped = [], 0
    for t in doc.get("tests", []):
        text = instance_text(t["data"])
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            skipped += 1
            continue
        tests.append({"valid": bool(t["valid"]), "tokens": list(encode(text))})
    return {"file": os.path.basename(path), "schema": doc["schema"], "tests": tests, "skipped_tests": skipped}


def write_files(out: str, stem: str, docs: Iterable[dict]) -> int:
    """Write MaskBench files ``out/{stem}_{i:04d}.json``, each valid test's instance checked against
    its schema (jsonschema) first; the count written."""
    import jsonschema
    os.makedirs(out, exist_ok=True)
    written = 0
    for i, doc in enumerate(docs):
        for test in doc["tests"]:
            if test["valid"]:
                jsonschema.validate(test["data"], doc["schema"])
        with open(os.path.join(out, f"{stem}_{i:04d}.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
        written += 1
    return written


def generate_main(argv, doc: str, stem: str, make: Callable, count: int, seed: int) -> None:
    """The command of a generated set: ``OUT [--count N] [--seed S]``, writing ``make(rng, i)`` for
    i below the count (``doc``: the module's docstring, its first line the description)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=count)
    ap.add_argument("--seed", type=int, default=seed)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    written = write_files(args.out, stem, (make(rng, i) for i in range(args.count)))
    print(f"{written} files in {args.out}")
