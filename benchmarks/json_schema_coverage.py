"""Coverage, exactness and compile time of the JSON Schema compiler.

Run ``python -m benchmarks.json_schema_coverage [--suite-only | --maskbench-only] [--limit N]``.

1. The JSON Schema Test Suite, draft 2020-12 (the copy in ``tests/data/json-schema-test-suite``;
   format.json and content.json left out, ``remotes/`` served as the registry): every (schema, instance) pair is
   compiled with ``property_order="any"``, the instance serialized with ``json.dumps(data)`` and fed
   token by token (DeepSeek tokenizer); the pair is *correct*, *unsupported* (the schema does not
   compile) or *wrong* (an invalid instance accepted or a valid one rejected). Per-file counts.
2. MaskBench (``--maskbench DIR``; by default ``../shared/data/maskbench-dev`` where it is beside
   the checkout, else the sample in ``tests/data/maskbench-sample``): every schema compiled (``property_order="any"``,
   the instances list properties in any order), every instance serialized with
   ``json.dumps(data, ensure_ascii=False)`` and fed token by token. A schema passes when it
   compiles and every valid instance is accepted and every invalid one rejected. Prints how many
   compile and pass, validation errors (valid rejected) and invalidation errors (invalid accepted),
   the compile errors by reason, and the compile time per schema (grammar IR from the schema plus
   ``compile_grammar``; the format regexes are parsed once per process, before timing), as wall
   time and as CPU time of the compiling thread (the figure that does not depend on what else the
   machine runs).

``--compare llguidance,xgrammar`` also runs the suite through those engines (the MaskBench
harness's adapters) and prints the three side by side.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time

import stencil
from tests.support.json_schema_suite import (MASKBENCH, SUITE, maskbench_files, print_maskbench, print_suite,
                                             run_maskbench, run_suite, suite_groups, warm_up)
from tests.support.tokenizers import load_tokenizer


def run_suite_engine(engine, encode, eos: int, root: str = SUITE) -> dict:
    """The same classification for another engine, through a MaskBench harness adapter
    (``benchmarks.maskbench.engines``): accepted means every token consumed and then EOS in
    the mask. Remote references are given to stencil only; other engines see the schema alone."""
    from benchmarks.maskbench.engines import CompileError, mask_bit
    counts: dict = collections.defaultdict(collections.Counter)
    for name, group in suite_groups(root):
        try:
            session = engine.compile(group["schema"])
        except CompileError:
            counts[name]["unsupported"] += len(group["tests"])
            continue
        except Exception:  # an engine crash on a schema counts as not supported
            counts[name]["unsupported"] += len(group["tests"])
            continue
        for t in group["tests"]:
            session.reset()
            ok = True
            try:
                for tok in encode(json.dumps(t["data"])):
                    if not session.accept(tok):
                        ok = False
                        break
                if ok:
                    session.fill()
                    ok = mask_bit(session.words, eos)
            except Exception:
                ok = False
            key = "correct" if ok == t["valid"] else ("wrong_valid" if t["valid"] else "wrong_invalid")
            counts[name][key] += 1
    return {"counts": dict(counts), "details": []}


def print_side_by_side(results: dict) -> None:
    """Per-file correct / unsupported / wrong for several engines of one run."""
    names = list(results)
    files = sorted(next(iter(results.values()))["counts"])
    head = f"{'file':30s}" + "".join(f" {n[:22]:>22s}" for n in names)
    print(head)
    print(f"{'':30s}" + "".join(f" {'right/unsup/wrong':>22s}" for _ in names))
    totals = {n: collections.Counter() for n in names}
    for f in files:
        row = f"{f[:30]:30s}"
        for n in names:
            c = results[n]["counts"].get(f, collections.Counter())
            totals[n].update(c)
            row += f" {c['correct']:>8d}/{c['unsupported']:>5d}/{c['wrong_valid'] + c['wrong_invalid']:>5d}  "
        print(row)
    print(f"{'total':30s}" + "".join(
        f" {totals[n]['correct']:>8d}/{totals[n]['unsupported']:>5d}/{totals[n]['wrong_valid'] + totals[n]['wrong_invalid']:>5d}  "
        for n in names))
    for n in names:
        t = totals[n]
        print(f"  {n}: {t['correct']} right, {t['unsupported']} unsupported, valid rejected {t['wrong_valid']}, "
              f"invalid accepted {t['wrong_invalid']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.json_schema_coverage",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite-only", action="store_true")
    ap.add_argument("--maskbench-only", action="store_true")
    ap.add_argument("--limit", type=int, default=None, help="only the first N MaskBench files")
    ap.add_argument("--maskbench", default=MASKBENCH, help=f"folder of MaskBench files (default {MASKBENCH})")
    ap.add_argument("--tokenizer", default="deepseek")
    ap.add_argument("--compare", default="", help="also run the suite through these engines of the MaskBench "
                    "harness, e.g. llguidance,xgrammar")
    args = ap.parse_args(argv)
    info, encode = load_tokenizer(args.tokenizer)
    compiler = stencil.GrammarCompiler(info, cache_size=16)
    warm_up()
    if not args.maskbench_only:
        t0 = time.perf_counter()
        res = run_suite(compiler, encode)
        print(f"JSON Schema Test Suite, draft 2020-12 (format.json and content.json left out), "
              f"tokenizer {args.tokenizer}, {time.perf_counter() - t0:.1f} s")
        print_suite(res)
        if args.compare:
            from benchmarks.maskbench.engines import make_engine
            side = {"stencil": res}
            for name in [n for n in args.compare.split(",") if n]:
                engine = make_engine(name, args.tokenizer, info, encode)
                t0 = time.perf_counter()
                side[f"{name} {engine.version}"] = run_suite_engine(engine, encode, info.eos_token_ids[0])
                print(f"{name}: {time.perf_counter() - t0:.1f} s")
            print("\nside by side, same run (right / unsupported / wrong pairs):")
            print_side_by_side(side)
    if not args.suite_only:
        t0 = time.perf_counter()
        res = run_maskbench(compiler, encode, maskbench_files(args.maskbench, limit=args.limit))
        print(f"\nMaskBench, {args.maskbench}, tokenizer {args.tokenizer}, {time.perf_counter() - t0:.1f} s")
        print_maskbench(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
