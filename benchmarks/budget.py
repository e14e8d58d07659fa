"""Budget-aware masks (issue 18): what a token budget costs per mask, and what it buys.

Two parts, both over JSON Schemas of ../shared/data/maskbench-dev (or, without it, the sample in
tests/data/maskbench-sample) picked by a fixed rule
(``pick_schemas``: object schemas with properties, short valid instances, no open-ended values,
round robin over sources in name order):

``python -m benchmarks.budget masks [--tokenizer smollm2] [--count 20]``
    For each schema's valid instances, replayed token by token with the tokenizer's own encoder,
    the time to fill the mask (plus accepting the token) with the budget off, with a loose budget
    (``remaining_tokens`` far above the bound: it does not bind), with a tight one (the bound
    itself: it binds at every step) and with a short one (two below the bound: no token fits but
    one that spans lexemes, and the cheapest stay), after each grammar's first budgeted mask (timed apart: it
    builds the bound's tables). Prints mean and percentiles per mode and checks that the loose
    masks are the unbudgeted ones bit for bit.

``python -m benchmarks.budget generate [--count 20] [--slack 0]``
    The default model generates under each schema, greedy and sampled, with ``max_tokens`` set
    to the schema's shortest output (``Matcher.min_completion_tokens()`` at the start) plus
    ``--slack``: every output is validated with jsonschema. The same runs without the budget
    show how many would have been cut mid-output, and a greedy run with a large ``max_tokens``,
    with and without the budget, must give the same text (on the first ``--compare`` schemas).
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import sys
import time
from typing import Any

import numpy as np

import stencil
import stencil.runtime
from tests.support.datasets import default_maskbench

DEFAULT_DATA = default_maskbench()  # ../shared/data/maskbench-dev, else the sample in tests/data
SYSTEM = "Answer with JSON that follows this JSON Schema:\n"


def _open_ended(schema: Any) -> bool:
    """A value of any length: ``{}``/``true`` properties or items, arrays without maxItems."""
    if isinstance(schema, dict):
        if (schema.get("type") == "array" or "items" in schema) and "maxItems" not in schema:
            return True
        for key in ("properties", "patternProperties"):
            if any(v is True or v == {} or _open_ended(v) for v in (schema.get(key) or {}).values()):
                return True
        for key in ("items", "additionalItems"):
            v = schema.get(key)
            if v is True or v == {} or (isinstance(v, dict) and _open_ended(v)):
                return True
    return False


def pick_schemas(compiler: stencil.GrammarCompiler, count: int, data_dir: str = DEFAULT_DATA,
                 **options) -> list[tuple[str, dict, list[str]]]:
    """(file name, schema, valid instances as compact JSON) for ``count`` schemas that compile."""
    by_source: dict[str, list] = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(data_dir, "*.json"))):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        schema = doc["schema"]
        valid = [json.dumps(t["data"], ensure_ascii=False, separators=(",", ":")) for t in doc["tests"] if t["valid"]]
        if not valid or max(map(len, valid)) > 100 or len(json.dumps(schema)) > 800:
            continue
        if not isinstance(schema, dict) or schema.get("type") != "object" or not schema.get("properties"):
            continue
        if _open_ended(schema):
            continue
        name = os.path.basename(path)
        by_source[name.replace("-", "_").split("_")[0]].append((name, schema, valid))
    queues = {s: list(v) for s, v in sorted(by_source.items())}
    picked = []
    while len(picked) < count and any(queues.values()):
        for source in sorted(queues):
            while queues[source]:
                entry = queues[source].pop(0)
                try:
                    compiler.compile_json_schema(entry[1], **options)
                except (stencil.GrammarError, stencil.LimitError):
                    continue
                picked.append(entry)
                break
            if len(picked) == count:
                break
    return picked


def _stats(us: list[float]) -> str:
    a = np.asarray(us)
    return (f"mean {a.mean():8.1f} us  p50 {np.percentile(a, 50):8.1f}  p90 {np.percentile(a, 90):8.1f}  "
            f"p99 {np.percentile(a, 99):8.1f}  max {a.max():9.1f}  ({len(a)} masks)")


def run_masks(args) -> int:
    from tests.support.tokenizers import load_tokenizer
    info, encode = load_tokenizer(args.tokenizer)
    compiler = stencil.GrammarCompiler(info)
    schemas = pick_schemas(compiler, args.count, args.data, whitespace="compact", string_spelling="plain")
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    ref = stencil.allocate_token_bitmask(1, info.vocab_size)
    times: dict[str, list[float]] = {"off": [], "loose": [], "tight": [], "short": []}
    mismatches = tightened = steps = 0
    first: list[float] = []
    for _name, schema, valid in schemas:
        g = compiler.compile_json_schema(schema, whitespace="compact", string_spelling="plain")
        # A grammar's first budgeted mask builds the bound's tables (shared by its matchers).
        t0 = time.perf_counter()
        stencil.Matcher(g).fill_next_token_bitmask(bm, 0, remaining_tokens=1 << 30)
        first.append((time.perf_counter() - t0) * 1e3)
        for text in valid:
            ids = encode(text)
            for mode in times:
                m = stencil.Matcher(g)
                for t in ids:
                    k = {"off": None, "loose": 1 << 30}.get(mode)
                    if mode in ("tight", "short"):  # the bound itself (or less), found outside the timing
                        k = max(m.min_completion_tokens() - (2 if mode == "short" else 0), 1)
                    t0 = time.perf_counter()
                    m.fill_next_token_bitmask(bm, 0, remaining_tokens=k)
                    ok = m.accept_token(t)
                    times[mode].append((time.perf_counter() - t0) * 1e6)
                    if not ok:
                        break  # a tight or short budget may refuse the instance's own token
            # Bit-identity of the loose masks, outside the timing.
            m = stencil.Matcher(g)
            for t in ids:
                m.fill_next_token_bitmask(ref, 0)
                m.fill_next_token_bitmask(bm, 0, remaining_tokens=1 << 30)
                mismatches += int(not np.array_equal(bm, ref))
                m.fill_next_token_bitmask(bm, 0, remaining_tokens=max(m.min_completion_tokens(), 1))
                tightened += int(not np.array_equal(bm, ref))
                steps += 1
                m.accept_token(t)
    print(f"budget masks, tokenizer {args.tokenizer} (vocab {info.vocab_size}), {len(schemas)} schemas, "
          f"compact JSON, fill + accept per token")
    print(f"  first budgeted mask of a grammar (builds its tables): mean {np.mean(first):.1f} ms, "
          f"max {np.max(first):.1f} ms")
    for mode, us in times.items():
        print(f"  budget {mode:5}: {_stats(us)}")
    print(f"  loose-budget masks different from unbudgeted: {mismatches} of {steps}; "
          f"tight-budget masks narrower: {tightened} of {steps}")
    return 1 if mismatches else 0


def run_generate(args) -> int:
    import jsonschema
    from stencil.runtime.models import load_model
    lm = load_model(quiet=True)
    compiler = stencil.GrammarCompiler(lm.tokenizer_info)
    opts = dict(whitespace=2, string_spelling="plain")
    schemas = pick_schemas(compiler, args.count, args.data, **opts)
    rows = collections.Counter()
    shown = []
    t_start = time.perf_counter()
    for name, schema, _ in schemas:
        g = compiler.compile_json_schema(schema, **opts)
        need = stencil.Matcher(g).min_completion_tokens()
        limit = need + args.slack
        system = SYSTEM + json.dumps(schema)
        validate = jsonschema.validators.validator_for(schema)(schema).validate
        compare = rows["schemas compared"] < args.compare
        rows["schemas compared"] += compare
        for mode, temperature, seed in (("greedy", 0.0, None), ("sampled", args.temperature, args.seed)):
            for budget in (True, False) if compare else (True,):
                out = stencil.runtime.generate(lm, g, "Give an example.", system=system, max_tokens=limit,
                                       temperature=temperature, seed=seed, repetition_penalty=1.1, budget=budget)
                try:
                    validate(json.loads(out.text))
                    ok = True
                except (ValueError, jsonschema.ValidationError):
                    ok = False
                key = f"{mode} budget {'on ' if budget else 'off'}"
                rows[key + " valid"] += ok
                rows[key + " runs"] += 1
                rows[key + " tokens"] += len(out.token_ids)
                if budget and not ok:
                    shown.append(f"INVALID {name} {mode}: {out.text!r}")
        rows["shortest"] += need
        same = ""
        if compare:
            # Where the budget does not bind the output is the unbudgeted one.
            big = [stencil.runtime.generate(lm, g, "Give an example.", system=system, max_tokens=need + 100,
                                    repetition_penalty=1.1, budget=b) for b in (True, False)]
            rows["identity runs"] += 1
            rows["identical"] += big[0].text == big[1].text
            same = f", at shortest + 100 identical: {big[0].text == big[1].text} ({len(big[0].token_ids)} tokens)"
        done = " ".join(f"{k.split()[0][0]}{'+' if 'on' in k else '-'}:{rows[k]}" for k in rows if k.endswith("valid"))
        print(f"  {name}: shortest {need} tokens = max_tokens; valid so far {done}{same}", flush=True)
    n = len(schemas)
    print(f"budget generation, {lm.name}, {n} schemas, 2-space JSON, plain strings, repetition penalty 1.1, "
          f"max_tokens = shortest output + {args.slack} (mean shortest {rows['shortest'] / n:.1f} tokens), "
          f"sampled at T={args.temperature} seed {args.seed}; {time.perf_counter() - t_start:.0f} s")
    for mode in ("greedy", "sampled"):
        for b in ("on ", "off"):
            key = f"{mode} budget {b}"
            print(f"  {key}: {rows[key + ' valid']}/{rows[key + ' runs']} valid JSON for the schema "
                  f"({rows[key + ' tokens'] / max(rows[key + ' runs'], 1):.1f} tokens per output)")
    print(f"  greedy with max_tokens = shortest + 100: identical text with and without the budget "
          f"{rows['identical']}/{rows['identity runs']}")
    for line in shown:
        print("  " + line)
    return 0 if rows["greedy budget on  valid"] == n and rows["sampled budget on  valid"] == n else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.budget", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("masks", help="mask cost with the budget off, loose, tight and short")
    m.add_argument("--tokenizer", default="smollm2")
    m.add_argument("--count", type=int, default=20)
    m.add_argument("--data", default=DEFAULT_DATA)
    m.set_defaults(func=run_masks)
    g = sub.add_parser("generate", help="validity of the default model's outputs at max_tokens near the shortest")
    g.add_argument("--count", type=int, default=20)
    g.add_argument("--slack", type=int, default=0, help="tokens above the shortest output (default 0)")
    g.add_argument("--temperature", type=float, default=0.7)
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--compare", type=int, default=20,
                   help="on this many schemas also generate without the budget, and compare greedy outputs at "
                        "shortest + 100 tokens with and without it (default 20)")
    g.add_argument("--data", default=DEFAULT_DATA)
    g.set_defaults(func=run_generate)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
