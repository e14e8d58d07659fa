"""Every compile ends within its deadline: each schema of the JSON Schema Test Suite (draft 2020-12,
its remotes as the registry) and of MaskBench, and each GBNF grammar in ../shared/data, compiled
through the public API with ``GrammarCompiler(compile_timeout=T)`` (default 5 s, the library's
default), once in the definition order and once with ``property_order="any"`` (as MaskBench runs).

Run ``python -m benchmarks.compile_deadlines [--timeout 5] [--slack 0.25]`` from the repository root.

A compile that ends (compiled, refused with a GrammarError, or stopped with CompileTimeout) later
than ``timeout + slack`` seconds after it began is an overshoot; the command prints the outcomes,
the slowest compiles, every overshoot, and exits 1 if there is one.
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import sys
import time

import stencil
from tests.support.datasets import JSON_SCHEMA_SUITE, default_maskbench
from tests.support.json_schema_suite import suite_groups, suite_registry
from tests.support.tokenizers import load_tokenizer

SHARED = os.path.dirname(default_maskbench())
GBNF = os.path.join(SHARED, "gbnf")
#: the official suite beside the checkout (../shared/data), else the repository's copy
SUITE = next((p for p in (os.path.join(SHARED, "json-schema-test-suite"), JSON_SCHEMA_SUITE) if os.path.isdir(p)))


def _jobs(suite: str, maskbench: str, gbnf: str):
    """(set, name, compile function of a compiler) for every grammar."""
    registry = suite_registry(suite)
    for order in ("definition", "any"):
        for i, (name, group) in enumerate(suite_groups(suite)):
            yield ("suite", f"{name}#{i} ({order})",
                   lambda c, s=group["schema"], o=order: c.compile_json_schema(s, registry=registry, property_order=o))
        for path in sorted(glob.glob(os.path.join(maskbench, "*.json"))):
            with open(path, encoding="utf-8") as f:
                schema = json.load(f)["schema"]
            yield ("maskbench", f"{os.path.basename(path)} ({order})",
                   lambda c, s=schema, o=order: c.compile_json_schema(s, property_order=o))
    for path in sorted(glob.glob(os.path.join(gbnf, "*.gbnf"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        yield ("gbnf", os.path.basename(path), lambda c, t=text: c.compile_gbnf(t))


def run(timeout: float, slack: float, suite: str, maskbench: str, gbnf: str) -> int:
    info, _ = load_tokenizer("deepseek")
    compiler = stencil.GrammarCompiler(info, cache_size=0, compile_timeout=timeout)
    outcomes: dict = collections.defaultdict(collections.Counter)
    times = []
    for kind, name, compile_with in _jobs(suite, maskbench, gbnf):
        t0 = time.perf_counter()
        try:
            compile_with(compiler)
            outcome = "compiled"
        except stencil.CompileTimeout:
            outcome = "CompileTimeout"
        except stencil.BudgetError:
            outcome = "limit"
        except stencil.GrammarError:
            outcome = "refused"
        seconds = time.perf_counter() - t0
        outcomes[kind][outcome] += 1
        times.append((seconds, kind, name, outcome))
    for kind, c in outcomes.items():
        print(f"{kind:10s} {sum(c.values()):6d} compiles: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    times.sort(reverse=True)
    print(f"deadline {timeout:g} s (+{slack:g} s slack); the slowest compiles:")
    for seconds, kind, name, outcome in times[:8]:
        print(f"  {seconds:7.3f} s  {kind:9s} {name}  {outcome}")
    over = [t for t in times if t[0] > timeout + slack]
    print(f"{len(times)} compiles, {len(over)} past the deadline" + "".join(
        f"\n  OVER {s:.3f} s {k} {n} {o}" for s, k, n, o in over))
    return 1 if over else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=5.0, help="compile_timeout in seconds (default 5)")
    ap.add_argument("--slack", type=float, default=0.25, help="seconds past the deadline tolerated (default 0.25)")
    ap.add_argument("--suite", default=SUITE)
    ap.add_argument("--maskbench", default=default_maskbench())
    ap.add_argument("--gbnf", default=GBNF)
    a = ap.parse_args(argv)
    return run(a.timeout, a.slack, a.suite, a.maskbench, a.gbnf)


if __name__ == "__main__":
    sys.exit(main())
