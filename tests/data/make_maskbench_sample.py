"""Rebuild tests/data/maskbench-sample from a full copy of MaskBench's data folder (the files are
copied unchanged). Run from the repository root:

    python tests/data/make_maskbench_sample.py ../shared/data/maskbench-dev [--extra NAME ...]

The rule (fixed, so that the sample is not tuned to what stencil passes): the files are taken in
name order, every 16th (the sample tests/python/test_json_schema_maskbench.py ran over the full
set), grouped by category (the name up to "---" or the last "_<number>"); from each category the
first PER_CATEGORY files of at most MAX_BYTES that have a valid instance (some categories, BFCL
and JME, have no invalid ones); a category with none in the every-16th list takes its first such
file overall, and one whose files are all larger (Github_ultra) its smallest. ``--extra`` adds
named files (the schemas the generation tests pick, see tests/data/maskbench-sample/README.md).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil

PER_CATEGORY = 3
MAX_BYTES = 24_000
STEP = 16
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "maskbench-sample")


def category(name: str) -> str:
    return re.sub(r"_\d+\.json$", "", name.split("---")[0])


def has_valid(path: str) -> bool:
    with open(path, encoding="utf-8") as f:
        return any(t["valid"] for t in json.load(f)["tests"])


def usable(path: str) -> bool:
    return os.path.getsize(path) <= MAX_BYTES and has_valid(path)


def select(src: str) -> list[str]:
    names = sorted(n for n in os.listdir(src) if n.endswith(".json"))
    every = set(names[::STEP])
    by_cat: dict[str, list[str]] = collections.defaultdict(list)
    for n in names:
        by_cat[category(n)].append(n)
    out = []
    for _, members in sorted(by_cat.items()):
        first = [n for n in members if n in every and usable(os.path.join(src, n))][:PER_CATEGORY]
        first = first or [n for n in members if usable(os.path.join(src, n))][:1]
        if not first:  # every file of the category is larger than MAX_BYTES
            first = sorted((n for n in members if has_valid(os.path.join(src, n))),
                           key=lambda n: os.path.getsize(os.path.join(src, n)))[:1]
        out += first
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", help="a full MaskBench data folder")
    ap.add_argument("--extra", nargs="*", default=[], help="file names added to the rule's choice")
    args = ap.parse_args()
    names = sorted(set(select(args.src)) | set(args.extra))
    os.makedirs(OUT, exist_ok=True)
    for n in names:
        shutil.copyfile(os.path.join(args.src, n), os.path.join(OUT, n))
    print(f"{len(names)} files, {sum(os.path.getsize(os.path.join(OUT, n)) for n in names)} bytes")


if __name__ == "__main__":
    main()
