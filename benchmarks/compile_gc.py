"""Schema compiles in a server's process: with the garbage collector running through them, with
what the server loaded frozen (``gc.freeze()``, which ``stencil serve`` calls once it has loaded),
and as the library compiles, the collector held off (``stencil.grammar.gc_pause``).

Run ``python -m benchmarks.compile_gc [--count 300] [--rounds 2] [--maskbench DIR --half tuning]``.
The process first loads what ``stencil serve`` holds: torch, transformers, the default model and
the app (``stencil.server.create_app``), about 400,000 objects the collector tracks. Then it
compiles each schema cold (``GrammarCompiler.compile_json_schema``, the cache cleared between
schemas), in rounds that rotate the three modes, so that a drift of the machine's speed falls on
each: "as is" (the collector running through the compile, the loaded objects in its
generations), "frozen" (the same with those moved out of its reach) and "paused" (what
``compile_json_schema`` does: no collection inside a compile). The first two call the method
beneath the compiler's wrappers (its memo, deadline and pause). Schemas: ``tests/support/schema_generator.py``'s generated ones (none from
../shared), or a MaskBench half's. Prints per mode the compile p50, p90, p99 and sum, the
collections of each generation that ran inside a compile, and the time of one full collection before and after the freeze.
"""
from __future__ import annotations

import argparse
import functools
import gc
import json
import time

from benchmarks.maskbench.data import HALVES, list_files
from benchmarks.maskbench.stats import percentiles
from tests.support.schema_generator import generated_schemas


def _schemas(args) -> list:
    if args.maskbench:
        files = list_files([args.maskbench], limit=args.count, seed=0, half=args.half)
        return [json.load(open(f, encoding="utf-8"))["schema"] for f in files]
    return [c.schema for c in generated_schemas(args.count, seed=args.seed)]


#: modes, and whether their compiles go through the library's pause
MODES = {"as is": False, "frozen": False, "paused": True}


class _Inside:
    """Collections per generation that start while a compile runs (a gc callback). A paused
    compile may still meet one as it is entered: the count its predecessor's objects left."""

    def __init__(self) -> None:
        self.now = False
        self.counts = [0, 0, 0]

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start" and self.now:
            self.counts[info["generation"]] += 1


def _round(compiler, schemas: list, paused: bool = True) -> tuple[list[float], list[int]]:
    """Each schema's compile in seconds (failures left out) and the collections per generation
    that ran inside the compiles."""
    import stencil
    # beneath _memoized and _limited (functools.wraps keeps each one's inner function)
    raw = stencil.GrammarCompiler.compile_json_schema.__wrapped__.__wrapped__  # type: ignore[attr-defined]
    compile_one = compiler.compile_json_schema if paused else functools.partial(raw, compiler)
    inside = _Inside()
    gc.callbacks.append(inside)
    times = []
    try:
        for s in schemas:
            t0 = time.perf_counter()
            inside.now = True
            try:
                compile_one(s)
            except (ValueError, TypeError, RecursionError):  # (GrammarError is a ValueError)
                continue
            finally:
                inside.now = False
                compiler.clear_cache()
            times.append(time.perf_counter() - t0)
    finally:
        gc.callbacks.remove(inside)
    return times, inside.counts


def _full_collection() -> float:
    t0 = time.perf_counter()
    gc.collect()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.compile_gc", description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=300, help="schemas (default 300)")
    ap.add_argument("--seed", type=int, default=0, help="the generated schemas' seed")
    ap.add_argument("--maskbench", metavar="DIR", help="a MaskBench folder's schemas instead of generated ones")
    ap.add_argument("--half", choices=HALVES, default="check", help="with --maskbench: its half (default check)")
    ap.add_argument("--rounds", type=int, default=2, help="ABBA rounds (default 2)")
    args = ap.parse_args(argv)
    import torch
    from stencil.runtime.models import load_model
    from stencil.server import create_app
    torch.set_num_threads(1)
    lm = load_model(None, device="cpu", quiet=True)
    app = create_app(lm)
    import stencil
    compiler = stencil.GrammarCompiler(lm.tokenizer_info)
    schemas = _schemas(args)
    _round(compiler, schemas[:20])   # the front-end's modules and first calls
    full_before = _full_collection()
    print(f"{len(schemas)} schemas ({'MaskBench ' + args.half if args.maskbench else f'generated, seed {args.seed}'}), "
          f"{len(gc.get_objects())} objects tracked; a full collection {full_before * 1e3:.1f} ms")
    times: dict[str, list[float]] = {m: [] for m in MODES}
    counts: dict[str, list[int]] = {m: [0, 0, 0] for m in MODES}
    full_frozen = 0.0
    order = list(MODES)
    for k in range(args.rounds):
        for mode in order[k % 3:] + order[:k % 3]:
            gc.collect()
            if mode == "frozen":
                gc.freeze()
                full_frozen = _full_collection()
            else:
                gc.unfreeze()
            t, c = _round(compiler, schemas, MODES[mode])
            times[mode] += t
            counts[mode] = [a + b for a, b in zip(counts[mode], c)]
    gc.unfreeze()
    print(f"a full collection with the loaded objects frozen: {full_frozen * 1e3:.2f} ms")
    print("| mode | compiles | p50 ms | p90 ms | p99 ms | sum s | collections inside, gen 0 / 1 / 2 |")
    print("|---|---|---|---|---|---|---|")
    for mode, t in times.items():
        ms = {k: float("nan") if v is None else v * 1e3 for k, v in percentiles(t, ("p50", "p90", "p99")).items()}
        print(f"| {mode} | {len(t)} | {ms['p50']:.3f} | {ms['p90']:.2f} | {ms['p99']:.2f} | {sum(t):.2f} | "
              f"{' / '.join(map(str, counts[mode]))} |")
    a, f, p = sum(times["as is"]), sum(times["frozen"]), sum(times["paused"])
    print(f"frozen / as is: {f / a:.3f}x the compile time; paused / as is: {p / a:.3f}x")
    app.state.engine.close()
    app.state.engine.thread.join(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
