"""Seed corpora for the fuzz targets (not committed): MaskBench schemas (../shared/data/maskbench-dev
where it is beside the checkout, else tests/data/maskbench-sample), their `pattern` strings, the
GBNF examples of tests/data/gbnf, and a few Lark grammars.

    python fuzz/make_corpus.py fuzz/corpus
"""
import glob
import json
import os
import sys

# the benchmarks (their data paths) live at the repository root, beside the package, not in it
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.support.datasets import REPO_DATA, default_maskbench  # noqa: E402

LARK = [
    'start: expr\nexpr: term (("+"|"-") term)*\nterm: NUMBER | "(" expr ")"\n%import common.NUMBER\n%ignore " "\n',
    'start: "<think>" /(.|\\n)*/ "</think>" answer\nanswer: %json {"type": "object"}\n',
    'start: NAME ("," NAME)*\nNAME: %regex {"pattern": "[a-z]+", "max_length": 5}\n',
    'start: item+\nitem[stop="\\n"]: /[^\\n]*/\n',
]


def patterns(schema, out):
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k == "pattern" and isinstance(v, str):
                out.add(v)
            patterns(v, out)
    elif isinstance(schema, list):
        for v in schema:
            patterns(v, out)


def main(root: str) -> None:
    dirs = {name: os.path.join(root, name) for name in ("regex", "json_schema", "lark", "gbnf", "matcher")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    found: set = set()
    files = sorted(glob.glob(os.path.join(default_maskbench(), "*.json")))
    for i, f in enumerate(files[::20]):   # every 20th schema: ~400 seeds
        schema = json.load(open(f)).get("schema")
        text = json.dumps(schema).encode()
        if len(text) < 20_000:
            with open(os.path.join(dirs["json_schema"], f"s{i}"), "wb") as out:
                out.write(bytes([i & 255]) + text)
        patterns(schema, found)
    for i, p in enumerate(sorted(found)[:500]):
        with open(os.path.join(dirs["regex"], f"p{i}"), "wb") as out:
            out.write(b"\x00" + p.encode())
    for i, f in enumerate(sorted(glob.glob(os.path.join(REPO_DATA, "gbnf", "*.gbnf")))):
        with open(f, "rb") as src, open(os.path.join(dirs["gbnf"], f"g{i}"), "wb") as out:
            out.write(b"\x00" + src.read())
    for i, text in enumerate(LARK):
        with open(os.path.join(dirs["lark"], f"l{i}"), "wb") as out:
            out.write(b"\x00" + text.encode())
    for i in range(8):
        with open(os.path.join(dirs["matcher"], f"m{i}"), "wb") as out:
            out.write(os.urandom(64))
    print(f"seeds: {len(os.listdir(dirs['json_schema']))} schemas, {len(os.listdir(dirs['regex']))} patterns, "
          f"{len(os.listdir(dirs['gbnf']))} GBNF, {len(LARK)} Lark, 8 matcher")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus"))
