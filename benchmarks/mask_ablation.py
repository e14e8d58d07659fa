"""Each mask optimization measured on and off, on MaskBench schemas, in one run.

Run ``python -m benchmarks.mask_ablation [--limit 200] [--tokenizer deepseek]``. For each
configuration (all optimizations on; each one off alone; all off) a fresh tokenizer (so that no
configuration inherits another's shared cache) compiles the same schemas with the JSON Schema
front-end and runs the MaskBench loop (TTFM: compile and first mask; TBM: mask plus accepting one
token, over every test instance). Prints one table with TBM and TTFM statistics per configuration.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import sys
import time

import numpy as np

import stencil
from tests.support.datasets import default_maskbench
from tests.support.tokenizers import NAMES, load_tokenizer

OPTIMIZATIONS = ("plain_slice", "shared_masks", "boundary_runs", "repeat_memo", "loop_skip")
DEFAULT_DATA = default_maskbench()  # ../shared/data/maskbench-dev, else the sample in tests/data


def configurations():
    yield "all on", {}
    for name in OPTIMIZATIONS:
        yield f"no {name}", {name: False}
    yield "all off", {name: False for name in OPTIMIZATIONS}


def run(files, tokenizer: str, switches: dict):
    info, encode = load_tokenizer(tokenizer)
    compiler = stencil.GrammarCompiler(info, mask_optimizations=switches)
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    clock = time.perf_counter_ns
    tbm, ttfm, failed = [], [], 0
    for doc in files:
        t0 = clock()
        try:
            m = stencil.Matcher(compiler.compile_json_schema(doc["schema"]))
            m.fill_next_token_bitmask(bm, 0)
        except (stencil.GrammarError, stencil.LimitError):
            failed += 1
            continue
        ttfm.append(clock() - t0)
        for test in doc["tests"]:
            m.reset()
            for t in encode(json.dumps(test["data"], ensure_ascii=False)):
                a = clock()
                m.fill_next_token_bitmask(bm, 0)
                ok = m.accept_token(t)
                tbm.append(clock() - a)
                if not ok:
                    break
    return np.array(tbm) / 1e3, np.array(ttfm) / 1e6, failed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.mask_ablation", description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer", default="deepseek", choices=NAMES)
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    paths = sorted(glob.glob(os.path.join(args.data, "*.json")))
    random.Random(args.seed).shuffle(paths)
    files = []
    for p in paths[: args.limit]:
        with open(p, encoding="utf-8") as fh:
            files.append(json.load(fh))
    rows = []
    for label, switches in configurations():
        tbm, ttfm, failed = run(files, args.tokenizer, switches)
        q = lambda a, p: float(np.percentile(a, p)) if len(a) else float("nan")  # noqa: E731
        rows.append((label, tbm.mean(), q(tbm, 50), q(tbm, 99), q(tbm, 99.9), tbm.max(), ttfm.mean(), q(ttfm, 50),
                     q(ttfm, 99), len(tbm), failed))
    print(f"{len(files)} MaskBench schemas (seed {args.seed}), tokenizer {args.tokenizer}; TBM in us, TTFM in ms")
    head = ("configuration", "TBM mean", "p50", "p99", "p99.9", "max", "TTFM mean", "p50", "p99", "tokens", "errors")
    print(f"{head[0]:18}" + "".join(f"{h:>10}" for h in head[1:]))
    for r in rows:
        print(f"{r[0]:18}" + "".join(f"{v:>10.1f}" if isinstance(v, float) else f"{v:>10}" for v in r[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
