"""Mask speed of the core on the generic-JSON grammar over MaskBench instances.

Run ``python -m benchmarks.json_masks [--tokenizer deepseek] [--data DIR] [--limit N]``. For
every valid instance of the MaskBench files (serialized as ``json.dumps(data)``, tokenized by the
tokenizer's own encoder) it resets one matcher and, for each token, times computing the mask plus
accepting the token (TBM, as in MaskBench). Prints TBM mean and percentiles, the grammar's compile
time, the first mask's time, and the lexer and cache sizes reached.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

import numpy as np

import stencil
from tests.support.datasets import default_maskbench
from tests.support.tokenizers import NAMES, load_tokenizer
from stencil.grammar.json.value import json_value

DEFAULT_DATA = default_maskbench()  # ../shared/data/maskbench-dev, else the sample in tests/data


def instances(data_dir: str, limit: int | None) -> list[str]:
    files = sorted(glob.glob(os.path.join(data_dir, "*.json")))[:limit]
    out = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            for t in json.load(fh)["tests"]:
                if not t["valid"]:
                    continue
                text = json.dumps(t["data"], indent=None, ensure_ascii=False)
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    continue
                out.append(text)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.json_masks", description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer", default="deepseek", choices=NAMES)
    ap.add_argument("--data", default=DEFAULT_DATA, help="folder of MaskBench .json files")
    ap.add_argument("--limit", type=int, default=None, help="only the first N files")
    args = ap.parse_args(argv)

    texts = instances(args.data, args.limit)
    if not texts:
        print(f"no MaskBench instances under {args.data}", file=sys.stderr)
        return 1
    info, encode = load_tokenizer(args.tokenizer)
    token_lists = [encode(t) for t in texts]

    t0 = time.perf_counter()
    b = stencil.GrammarBuilder()
    compiled = stencil.GrammarCompiler(info).compile_grammar(b.build(json_value(b)))
    m = stencil.Matcher(compiled)
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    m.fill_next_token_bitmask(bm, 0)
    first_mask_s = time.perf_counter() - t0

    clock = time.perf_counter_ns
    times = []
    rejected = 0
    t_all = time.perf_counter()
    for ids in token_lists:
        m.reset()
        for t in ids:
            t0 = clock()
            m.fill_next_token_bitmask(bm, 0)
            ok = m.accept_token(t)
            times.append(clock() - t0)
            if not ok:
                rejected += 1
                break
    wall = time.perf_counter() - t_all
    us = np.array(times, dtype=np.float64) / 1e3
    pct = {p: np.percentile(us, p) for p in (50, 90, 99, 99.9)}
    print(f"generic JSON grammar, tokenizer {args.tokenizer} ({info.vocab_size} ids), {len(texts)} instances, "
          f"{len(us)} tokens, {wall:.1f} s")
    print(f"compile (build IR + compile): {compile_s * 1e3:.2f} ms; first mask: {first_mask_s * 1e3:.2f} ms")
    print(f"TBM (mask + accept) us: mean {us.mean():.1f}  p50 {pct[50]:.1f}  p90 {pct[90]:.1f}  "
          f"p99 {pct[99]:.1f}  p99.9 {pct[99.9]:.1f}  max {us.max():.1f}")
    print(f"lexer states {compiled.num_lexer_states}, cached masks {compiled.num_cached_masks}, "
          f"grammar memory {compiled.memory_bytes / 1e6:.1f} MB; valid instances rejected: {rejected}")
    target = us.mean() < 50 and pct[99] < 500
    print(f"target (mean < 50 us, p99 < 500 us): {'met' if target else 'MISSED'}")
    return 0 if rejected == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
