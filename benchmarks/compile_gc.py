"""Schema compiles in a server's process, with the garbage collector as Python leaves it and with
what the server loaded frozen (``gc.freeze()``, which ``stencil serve`` calls once it has loaded).

Run ``python -m benchmarks.compile_gc [--count 300] [--rounds 2] [--maskbench DIR --half tuning]``.
The process first loads what ``stencil serve`` holds: torch, transformers, the default model and
the app (``stencil.server.create_app``), about 400,000 objects the collector tracks. Then it
compiles each schema cold (``GrammarCompiler.compile_json_schema``, the cache cleared between
schemas), in rounds that alternate the two modes ABBA, so that a drift of the machine's speed
falls on both: "as is" (the loaded objects in the collector's generations) and "frozen" (moved
out of its reach). Schemas: ``tests/support/schema_generator.py``'s generated ones (none from
../shared), or a MaskBench half's. Prints per mode the compile p50, p90, p99 and sum, the
collections of each generation, and the time of one full collection before and after the freeze.
"""
from __future__ import annotations

import argparse
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


def _round(compiler, schemas: list) -> tuple[list[float], list[int]]:
    """Each schema's compile in seconds (failures left out) and the collections per generation."""
    before = [g["collections"] for g in gc.get_stats()]
    times = []
    for s in schemas:
        t0 = time.perf_counter()
        try:
            compiler.compile_json_schema(s)
        except (ValueError, TypeError, RecursionError):  # (GrammarError is a ValueError)
            continue
        finally:
            compiler.clear_cache()
        times.append(time.perf_counter() - t0)
    return times, [g["collections"] - b for g, b in zip(gc.get_stats(), before)]


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
    times: dict[str, list[float]] = {"as is": [], "frozen": []}
    counts: dict[str, list[int]] = {"as is": [0, 0, 0], "frozen": [0, 0, 0]}
    full_frozen = 0.0
    for k in range(args.rounds):
        for mode in (("as is", "frozen") if k % 2 == 0 else ("frozen", "as is")):
            gc.collect()
            if mode == "frozen":
                gc.freeze()
                full_frozen = _full_collection()
            else:
                gc.unfreeze()
            t, c = _round(compiler, schemas)
            times[mode] += t
            counts[mode] = [a + b for a, b in zip(counts[mode], c)]
    gc.unfreeze()
    print(f"a full collection with the loaded objects frozen: {full_frozen * 1e3:.2f} ms")
    print("| mode | compiles | p50 ms | p90 ms | p99 ms | sum s | collections gen 0 / 1 / 2 |")
    print("|---|---|---|---|---|---|---|")
    for mode, t in times.items():
        ms = {k: float("nan") if v is None else v * 1e3 for k, v in percentiles(t, ("p50", "p90", "p99")).items()}
        print(f"| {mode} | {len(t)} | {ms['p50']:.3f} | {ms['p90']:.2f} | {ms['p99']:.2f} | {sum(t):.2f} | "
              f"{' / '.join(map(str, counts[mode]))} |")
    a, f = sum(times["as is"]), sum(times["frozen"])
    print(f"frozen / as is: {f / a:.3f}x the compile time")
    app.state.engine.close()
    app.state.engine.thread.join(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
