"""Random walks that look for the next dead end (issue 40).

A dead end is a silent wrong answer: the mask lets a generation into a prefix that no valid
document extends, after which the mask is empty (no token, not even EOS). This harness walks the
masks at random, the way a sampler would, and counts what it meets::

    python -m benchmarks.dead_ends ../shared/data [--quick] [--limit N] [--walks N] [--seconds S]
        [--sources suite,maskbench,unique] [--match TEXT] [--tokenizer NAME]

The schemas (``DATA`` holds ``json-schema-test-suite`` and ``maskbench-dev``; without them the
copies in ``tests/data`` serve):

- ``suite``: every group of the JSON Schema Test Suite, every draft folder there is (optional/ and
  optional/format/ too; a draft other than 2020-12 is named to the compiler and to ``jsonschema``
  by a ``$schema``), with the suite's ``remotes/`` as the registry;
- ``maskbench``: a fixed sample of 500 MaskBench schemas, those whose file name has the smallest
  SHA-256 (``--maskbench-count``);
- ``unique``: generated ``uniqueItems`` arrays (``unique_items_cases``) of enums, booleans, small
  integer ranges, numbers, consts, short strings, objects of booleans and enums (required and
  optional members), arrays of them, nested, prefixItems and untyped items, each at ``minItems``
  near its number of distinct values: the walks must write many items and the last ones can only
  be the values not written yet.

Each schema is compiled with a real multi-byte vocabulary (by default SmolLM2's 49,152 tokens, the
default model's GGUF file) under ``property_order`` "definition" and "any" and ``whitespace``
"compact", "flexible" and 2, and each of these six configurations runs ``--walks`` seeded random
walks (seed: the schema's name, the configuration and ``--seed``). A walk fills the mask at each
step and picks an allowed token, in one of three styles (``STYLES``): ``uniform`` (any allowed
token, a closing token now and then so strings and numbers end), ``close`` (closing tokens and EOS
first, so walks end), ``repeat`` (first the tokens that write again what an earlier item, key or
value began with: a repeated array item is what ``uniqueItems`` forbids, a repeated key what an
object forbids, and dead ends hide behind those repeats). Half the walks fill budget-aware masks
(``remaining_tokens`` = budget - steps, the budget drawn at or above
``Matcher.min_completion_tokens()`` at the start), which must end every walk within the budget.

What a walk meets, counted per configuration and source:

- ``dead``: a mask with neither a token nor EOS (the reproducer: schema, options, text so far);
- ``budget dead``: an empty budget-aware mask where the plain mask has tokens (or the budget
  spent with the output unfinished): the budget's promise broken, not a dead end of the grammar;
- ``wrong``: an output that ended (EOS) and that ``jsonschema`` finds invalid (or that is no JSON,
  or repeats a key). The verdict reads numbers as ``Decimal`` (1.0 is an integer, 0.1 is exact)
  and validates without formats; ``format`` counts the outputs valid but for a ``format`` check
  of ``jsonschema``'s (formats it cannot check pass), ``undecided`` those ``jsonschema`` cannot
  judge (a number no Decimal context reduces, a pattern Python's ``re`` cannot read);
- ``refused``: a token the mask allowed that ``accept_token`` then refused;
- ``cut``: a walk stopped at ``--max-tokens`` without a budget; ``slow``: a mask over the matcher's
  time limit.

Schemas that do not compile are counted apart (``unsupported``, compile timeouts, crashes), and
so are configurations left out when a schema's ``--seconds`` ran out. Every dead end, budget dead
end, wrong output and refused token is printed with its schema, options and text.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import stencil
import stencil.runtime
from tests.support.dead_ends import Tally, Vocab, Walker, load_cases, print_findings, print_table, run_case
from tests.support.datasets import SHARED_DATA


def _head() -> str:
    """The checkout's commit, and whether its cpp/ differs from it (the build may then be newer)."""
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "cpp"], cwd=root, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" (cpp/ changed since)" if dirty.strip() else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.dead_ends", description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", default=SHARED_DATA, help="folder holding json-schema-test-suite/ and "
                    f"maskbench-dev/ (default {SHARED_DATA}; without them, tests/data)")
    ap.add_argument("--sources", default="unique,suite,maskbench")
    ap.add_argument("--walks", type=int, default=12, help="walks per schema and configuration (default 12)")
    ap.add_argument("--seconds", type=float, default=3.0, help="time per schema, its six configurations together")
    ap.add_argument("--unique-seconds", type=float, default=10.0, help="the same for the generated uniqueItems schemas")
    ap.add_argument("--max-tokens", type=int, default=160, help="tokens of a walk without a budget")
    ap.add_argument("--limit", type=int, default=None, help="the first N schemas of each source")
    ap.add_argument("--maskbench-count", type=int, default=500)
    ap.add_argument("--match", default=None, help="only schemas whose name matches this regex")
    ap.add_argument("--quick", action="store_true", help="--limit 40 --walks 6: a run of a few minutes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokenizer", default=None, help="a name of tests.support.tokenizers (default: SmolLM2's GGUF)")
    ap.add_argument("--compile-timeout", type=float, default=3.0)
    args = ap.parse_args(argv)
    if args.quick:
        args.limit, args.walks = args.limit or 40, min(args.walks, 6)
    if args.tokenizer:
        from tests.support.tokenizers import load_tokenizer
        info = load_tokenizer(args.tokenizer)[0]
    else:
        info = stencil.TokenizerInfo.from_gguf(stencil.runtime.default_model_path())
    vocab = Vocab(info)
    compiler = stencil.GrammarCompiler(info, max_threads=1, cache_size=16, compile_timeout=args.compile_timeout)
    walker = Walker(vocab)
    cases = load_cases(args.data, args.sources.split(","), args.limit, args.match, args.maskbench_count)
    print(f"checkout {_head()}, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"{len(cases)} schemas ({dict(collections.Counter(c.source for c in cases))}), {vocab.size} tokens, "
          f"{args.walks} walks a configuration, {args.seconds} s a schema ({args.unique_seconds} s a generated one)", flush=True)
    tally = Tally()
    t0 = time.perf_counter()
    for i, case in enumerate(cases):
        run_case(case, compiler, walker, tally, walks=args.walks, max_tokens=args.max_tokens,
                 seconds=args.unique_seconds if case.source == "unique" else args.seconds, seed=args.seed)
        if (i + 1) % 50 == 0:
            found = collections.Counter(f[0] for f in tally.findings)
            print(f"  {i + 1}/{len(cases)} schemas, {time.perf_counter() - t0:.0f} s, {dict(found)}", flush=True)
    print_table(tally, time.perf_counter() - t0)
    print_findings(tally)
    return 1 if any(f[0] in ("dead", "wrong", "refused", "crash") for f in tally.findings) else 0


if __name__ == "__main__":
    sys.exit(main())
