"""Aligned sampling against plain masked sampling, measured against the exact answer.

Run ``python -m benchmarks.aligned_sampling [--samples 2000] [--particles 16] [--cost-samples 4]
[--cases NAME,...] [--json FILE]``. For each small grammar (a few to a few hundred valid outputs)
with its prompt, on the real default model (SmolLM2-135M-Instruct):

1. every token sequence the grammar allows within the token limit is enumerated
   (``tests.support.aligned_exact.PrefixTree``) and the real model is run once on every prefix, one
   batched pass per depth; this gives the exact conditional distribution (the model's probability
   of each valid output, EOS included, normalized) and the exact law of plain masked sampling;
2. ``stencil.runtime.generate`` itself draws ``--samples`` outputs with ``sampling="plain"`` and as many
   with ``sampling="aligned"`` (``--particles``), at temperature 1, on a stand-in for the model
   that replays the real model's distributions from step 1 (``table_lm``: every probability a
   sampler reads is the real model's; the stand-in only spares the forward passes);
3. the empirical distributions over output texts are compared with the exact one: KL(exact ||
   empirical), with 0.5 pseudo-counts per valid output (``KL_SMOOTHING``), and total variation.
   "plain, exact law" is KL(exact || plain's own law): what plain sampling converges to with any
   number of samples, hence any number of model calls. "floor" is the KL of as many samples drawn
   from the exact distribution itself (the smoothing and the finite sample cost that much).

Model calls are reported per sample: forward passes (each a batch) and token rows (a pass over
16 particles is 16 rows). Then, on the real model, ``--cost-samples`` outputs per mode on two of
the grammars give the seconds per sample of each (torch on one thread).
Target (issue 45): on at least 5 grammars aligned's KL at least 5x smaller than plain's.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

import numpy as np

import stencil
import stencil.runtime
from tests.support.aligned_exact import KL_SMOOTHING, PrefixTree, kl, kl_from_samples, table_lm, tv, tv_from_samples
from stencil.runtime.aligned import HFParticles

#: name -> (kind, grammar, prompt, max_tokens). Each is one where masking skews the distribution:
#: a token the model likes leads into a branch where it gives the grammar little mass.
CASES: dict[str, tuple[str, Any, str, int]] = {
    "ab-word": ("regex", r"[ab]{1,4}c?", "Write a short word.", 6),
    "two-digits": ("regex", r"[0-9]{1,2}", "How many legs does a spider have?", 3),
    "year": ("regex", r"(19|20)[0-9]{2}", "In which year did the Berlin wall fall?", 4),
    "yes-no": ("regex", r"(true|false|yes|no|maybe)", "Is water wet?", 4),
    "capital": ("choice", ["Paris", "Lyon", "London", "Parisians", "Paris, France"],
                "What is the capital of France?", 6),
    "sum": ("lark", 'start: NUM OP NUM\nNUM: /[1-9]/\nOP: "+" | "-"', "Write an arithmetic expression equal to 4.", 4),
    "tuple": ("lark", 'start: "(" ITEM ("," ITEM)? ")"\nITEM: /[a-c]/', "Write a tuple.", 6),
    "json-int": ("json", {"type": "integer", "minimum": 0, "maximum": 99},
                 "How many legs does a spider have? Answer in JSON.", 3),
}
#: the cases timed on the real model
COST_CASES = ("year", "sum")


def compile_case(compiler: stencil.GrammarCompiler, kind: str, source: Any) -> stencil.CompiledGrammar:
    """A case's grammar: ``kind`` names the compile method (a JSON Schema is given as a dict)."""
    if kind == "json":
        return compiler.compile_json_schema(json.dumps(source))
    return {"regex": compiler.compile_regex, "choice": compiler.compile_choice, "lark": compiler.compile_lark}[kind](source)


def draw(lm: Any, grammar, prompt_ids: list[int], max_tokens: int, n: int, sampling: str, particles: int) -> dict:
    """``n`` outputs of ``stencil.runtime.generate`` (temperature 1, seeds 0..n-1): texts and calls."""
    texts, passes, rows = [], 0, 0
    t0 = time.perf_counter()
    for seed in range(n):
        r = stencil.runtime.generate(lm, grammar, input_ids=prompt_ids, max_tokens=max_tokens, temperature=1.0, seed=seed,
                             sampling=sampling, particles=particles)
        texts.append(r.text.encode())
        passes += r.forward_passes
        # plain: one row per pass after the prompt's; aligned: the particles' rows
        rows += r.aligned.rows if r.aligned is not None else r.forward_passes - 1
    return {"texts": texts, "passes": passes / n, "rows": rows / n, "seconds": (time.perf_counter() - t0) / n}


def floor_kl(exact: dict, n: int, seed: int = 0) -> float:
    """KL(exact || empirical) of ``n`` samples drawn from ``exact`` itself."""
    keys = sorted(exact)
    p = np.array([exact[k] for k in keys])
    idx = np.random.default_rng(seed).choice(len(keys), size=n, p=p / p.sum())
    return kl_from_samples(exact, [keys[i] for i in idx])


def run_case(name: str, lm: Any, compiler, args) -> dict:
    kind, source, prompt, max_tokens = CASES[name]
    g = compile_case(compiler, kind, source)
    prompt_ids = lm.encode_prompt(prompt)
    t0 = time.perf_counter()
    tree = PrefixTree.build(stencil.Matcher(g), lm.tokenizer_info, max_tokens)
    tree.evaluate(HFParticles(lm.model), prompt_ids)
    exact, plain_law = tree.string_law("target"), tree.string_law("plain")
    row = {"case": name, "grammar": kind, "outputs": len(exact), "sequences": len(tree.outputs("target")),
           "prefixes": len(tree.nodes), "exact_seconds": time.perf_counter() - t0, "exact_passes": tree.passes,
           "log_z": tree.log_valid_mass(), "plain_law_kl": kl(exact, plain_law), "plain_law_tv": tv(exact, plain_law),
           "floor_kl": floor_kl(exact, args.samples)}
    stand_in = table_lm(tree, lm, len(prompt_ids))
    for mode, particles in (("plain", 1), ("aligned", args.particles)):
        d = draw(stand_in, g, prompt_ids, max_tokens, args.samples, mode, particles)
        row.update({f"{mode}_kl": kl_from_samples(exact, d["texts"]), f"{mode}_tv": tv_from_samples(exact, d["texts"]),
                    f"{mode}_passes": d["passes"], f"{mode}_rows": d["rows"]})
    row["ratio"] = row["plain_kl"] / max(row["aligned_kl"], 1e-12)
    return row


def cost(lm: Any, compiler, args) -> list[dict]:
    """Seconds, passes and rows per sample on the real model, plain and aligned, interleaved."""
    out = []
    for name in COST_CASES:
        kind, source, prompt, max_tokens = CASES[name]
        g = compile_case(compiler, kind, source)
        ids = lm.encode_prompt(prompt)
        stencil.runtime.generate(lm, g, input_ids=ids, max_tokens=max_tokens, temperature=1.0, seed=0)  # warm-up
        plain = draw(lm, g, ids, max_tokens, args.cost_samples, "plain", 1)
        aligned = draw(lm, g, ids, max_tokens, args.cost_samples, "aligned", args.particles)
        out.append({"case": name, "plain": {k: plain[k] for k in ("passes", "rows", "seconds")},
                    "aligned": {k: aligned[k] for k in ("passes", "rows", "seconds")},
                    "cost_ratio": aligned["seconds"] / plain["seconds"]})
    return out


def print_table(rows: list[dict], costs: list[dict], args) -> None:
    print(f"\nKL(exact || empirical) in nats ({args.samples} samples per mode, {KL_SMOOTHING} pseudo-counts per "
          f"output), TV; aligned with {args.particles} particles; calls per sample: passes / rows")
    head = ("case", "grammar", "outputs", "prefixes", "plain KL", "plain law KL", "aligned KL", "floor KL", "ratio",
            "plain TV", "aligned TV", "plain calls", "aligned calls")
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for r in rows:
        print(" | ".join([r["case"], r["grammar"], str(r["outputs"]), str(r["prefixes"]), f"{r['plain_kl']:.3f}",
                          f"{r['plain_law_kl']:.3f}", f"{r['aligned_kl']:.4f}", f"{r['floor_kl']:.4f}",
                          f"{r['ratio']:.1f}x", f"{r['plain_tv']:.3f}", f"{r['aligned_tv']:.3f}",
                          f"{r['plain_passes']:.2f} / {r['plain_rows']:.2f}",
                          f"{r['aligned_passes']:.2f} / {r['aligned_rows']:.1f}"]))
    wins = sum(r["ratio"] >= 5 for r in rows)
    print(f"\naligned KL >= 5x smaller than plain on {wins} of {len(rows)} grammars (target: 5)")
    if costs:
        print("\nreal model, seconds per sample (passes / rows per sample): plain | aligned | cost")
        for c in costs:
            p, a = c["plain"], c["aligned"]
            print(f"{c['case']}: {p['seconds']:.3f} s ({p['passes']:.1f} / {p['rows']:.1f}) | {a['seconds']:.3f} s "
                  f"({a['passes']:.1f} / {a['rows']:.1f}) | {c['cost_ratio']:.1f}x")


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--samples", type=int, default=2000, help="samples per mode and grammar (default 2000)")
    parser.add_argument("--particles", type=int, default=16, help="aligned sampling's particles (default 16)")
    parser.add_argument("--cost-samples", type=int, default=4,
                        help="samples per mode timed on the real model (default 4; 0: skip)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names (default: all)")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    return parser


def run(args: argparse.Namespace) -> int:
    import torch

    from stencil.runtime.models import load_model
    torch.set_num_threads(args.threads)
    lm = load_model(quiet=True)
    compiler = stencil.GrammarCompiler(lm.tokenizer_info)
    names = [n for n in args.cases.split(",") if n]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"unknown cases: {', '.join(unknown)} (known: {', '.join(CASES)})", file=sys.stderr)
        return 2
    rows = []
    for name in names:
        rows.append(run_case(name, lm, compiler, args))
        r = rows[-1]
        print(f"{name}: plain KL {r['plain_kl']:.3f} aligned KL {r['aligned_kl']:.4f} ({r['ratio']:.1f}x)", flush=True)
    costs = cost(lm, compiler, args) if args.cost_samples > 0 else []
    print_table(rows, costs, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "costs": costs, "samples": args.samples, "particles": args.particles}, f,
                      indent=1, default=lambda x: None if isinstance(x, float) and math.isnan(x) else str(x))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.aligned_sampling", description=__doc__.split("\n\n")[0])
    return run(add_arguments(ap).parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
