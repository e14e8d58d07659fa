"""Walks at the budget's edge: where a budget-aware mask keeps a token it should not.

Each schema's walks start with ``remaining_tokens`` exactly ``min_completion_tokens()`` (and one
and three above it) and keep choosing, among a sample of the tokens the mask keeps, one whose cost
after uses the whole budget (``min_completion_tokens()`` of a fork equal to the tokens left - 1),
so that every step is one where a wrong bound shows. The mask is asked before any cost after a
token (what the cost memos hold must not decide it). Counted::

    python -m benchmarks.tight_budgets ../shared/data/maskbench-dev [--half tuning] [--limit N]
        [--walks 3] [--order any|definition] [--tokenizer smollm2] [--seed 3]

- cornered: a mask that keeps no token (but end of sequence) before the output is complete, with
  tokens left: the generation would run past its budget (the budget then keeps the cheapest);
- over: sampled kept tokens whose cost after exceeds the tokens left after them.

The walk is ``tests.support.tight_walks``'s. A consistent bound gives neither; the completion
checks the cost does not model (cost/README.md) give both. Schemas whose bound is above 400
tokens, or that do not compile, are skipped.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import time

import stencil
from benchmarks.maskbench.data import list_files
from tests.support.tight_walks import tight_walk
from tests.support.tokenizers import load_tokenizer


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="+")
    ap.add_argument("--half", choices=("tuning", "check"))
    ap.add_argument("--limit", type=int)
    ap.add_argument("--walks", type=int, default=3)
    ap.add_argument("--order", choices=("any", "definition"), default="any")
    ap.add_argument("--tokenizer", default="smollm2")
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args(argv)
    info, _ = load_tokenizer(args.tokenizer)
    compiler = stencil.GrammarCompiler(info)
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    eos = set(info.eos_token_ids)
    rng = random.Random(args.seed)
    files = list_files(args.data, limit=args.limit, seed=args.seed, half=args.half)
    counts: collections.Counter = collections.Counter()
    cornered: collections.Counter = collections.Counter()
    overs: collections.Counter = collections.Counter()
    start = time.time()
    for path in files:
        with open(path, encoding="utf-8") as f:
            schema = json.load(f).get("schema")
        try:
            g = compiler.compile_json_schema(schema, property_order=args.order)
            k0 = stencil.Matcher(g).min_completion_tokens()
        except (stencil.GrammarError, ValueError, TypeError, RecursionError):
            counts["not compiled"] += 1
            continue
        if k0 is None or k0 > 400:
            counts["skipped (bound)"] += 1
            continue
        counts["schemas"] += 1
        for w in range(args.walks):
            end, over, _, _ = tight_walk(stencil.Matcher(g), k0 + (0, 1, 3)[w % 3], bm, eos, rng, info.vocab_size)
            counts["walks"] += 1
            counts["over"] += over
            overs[os.path.basename(path)] += over
            if end == "cornered":
                counts["cornered walks"] += 1
                cornered[os.path.basename(path)] += 1
        compiler.clear_cache()
    counts["cornered schemas"] = len(cornered)
    print(f"{len(files)} files, order {args.order}, tokenizer {args.tokenizer}, {time.time() - start:.0f} s")
    for key in ("schemas", "walks", "cornered walks", "cornered schemas", "over", "not compiled", "skipped (bound)"):
        print(f"  {key:18} {counts[key]:,}")
    if cornered:
        print("  cornered most:", ", ".join(f"{n} ({c})" for n, c in cornered.most_common(8)))
    if +overs:
        print("  over most:", ", ".join(f"{n} ({c})" for n, c in (+overs).most_common(8)))


if __name__ == "__main__":
    main()
