"""Think, then constrain: accuracy of constrained-from-the-start against a free part first.

Run ``python -m benchmarks.think_then_constrain [--arithmetic 40] [--extraction 20] [--seed 0]
[--think-tokens 64] [--max-tokens 128] [--layout flexible|compact] [--model PATH] [--show]``. The task set is generated here, seeded,
with answers known by construction:

- arithmetic word problems of one or two steps with an integer answer (add, take away, multiply;
  then add or take away), schema ``{"answer": integer}``;
- extraction: a short text about a person with a distractor city and number (where they were born,
  years in their job), schema ``{"name", "age", "city"}``; the answer is where they live now.

Three modes, greedy, one torch thread, the default model unless ``--model``:

- ``constrained``: the schema's grammar from the first token (the prompt asks for JSON);
- ``think``: ``generate(..., think=ThinkOptions(max_tokens=N))``, the prompt asking the model to
  think step by step and then write "Answer:" and the JSON;
- ``draft``: ``ThinkOptions(mode="draft")`` (DCCD): a free draft (the prompt asks to think step by
  step), then a second turn asking for the final answer, constrained.

The question is the same in all three; only the closing instruction differs, as each mode needs.
The grammar is the same too: plain spellings, and ``--layout``'s white space (``flexible``: where
the model likes, a newline before the object included; ``compact``: none, which forces ``"age":64``
on a model that writes ``"age": 64``).
Reported per mode and task kind: accuracy (every field right), valid outputs (JSON valid for the
schema: must be all of them), generated tokens per task (free part and answer) and seconds per task.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Any

import stencil
import stencil.runtime
from tests.support.think_tasks import Task, judge, schema_of, task_set

MODES = ("constrained", "think", "draft")
CLOSING = {"constrained": "Reply with the answer as JSON.",
           "think": "Think step by step, then write 'Answer:' followed by the answer as JSON.",
           "draft": "Think step by step."}


@dataclass
class Outcome:
    mode: str
    kind: str
    valid: bool
    correct: bool
    tokens: int          # generated: free part and answer
    seconds: float
    text: str
    thought: str | None


#: the grammar's layout: "flexible" lets the model put white space where it likes (a newline
#: before the object, a space after a colon), within the run limit; "compact" allows none
LAYOUTS: dict[str, dict] = {"flexible": {"whitespace": "flexible", "whitespace_around": True},
                            "compact": {"whitespace": "compact"}}


def run_task(lm: Any, compiler: Any, task: Task, mode: str, think_tokens: int, max_tokens: int,
             layout: str = "flexible") -> Outcome:
    """One task in one mode, greedy; strings and numbers in their plain spelling (no escapes that
    are not needed, no exponents)."""
    g = compiler.compile_json_schema(schema_of(task), string_spelling="plain", number_spelling="plain",
                                     **LAYOUTS[layout])
    think = {"constrained": False, "think": stencil.runtime.ThinkOptions(max_tokens=think_tokens),
             "draft": stencil.runtime.ThinkOptions(max_tokens=think_tokens, mode="draft")}[mode]
    t0 = time.perf_counter()
    out = stencil.runtime.generate(lm, g, f"{task.question}\n{CLOSING[mode]}", max_tokens=max_tokens, think=think)
    seconds = time.perf_counter() - t0
    valid, correct = judge(task, out.text)
    return Outcome(mode, task.kind, valid and bool(out.complete), correct and valid,
                   len(out.token_ids) + out.thought_tokens, seconds, out.text, out.thought)


def table(outcomes: list[Outcome], modes: tuple[str, ...]) -> str:
    """Markdown: per mode and kind (and all), accuracy, valid, tokens and seconds per task."""
    lines = ["| mode | tasks | accuracy | valid | tokens / task | s / task |", "|---|---|---|---|---|---|"]
    for mode in modes:
        for kind in ("arithmetic", "extraction", "all"):
            rows = [o for o in outcomes if o.mode == mode and (kind == "all" or o.kind == kind)]
            if not rows:
                continue
            n = len(rows)
            right, valid = sum(o.correct for o in rows), sum(o.valid for o in rows)
            lines.append(f"| {mode} ({kind}) | {n} | {right}/{n} ({100 * right / n:.0f}%) | {valid}/{n} | "
                         f"{sum(o.tokens for o in rows) / n:.1f} | {sum(o.seconds for o in rows) / n:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arithmetic", type=int, default=40)
    ap.add_argument("--extraction", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--think-tokens", type=int, default=64, help="most tokens of the free part")
    ap.add_argument("--max-tokens", type=int, default=128, help="generate's max_tokens (free part and answer)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--layout", choices=sorted(LAYOUTS), default="flexible", help="the JSON grammar's white space")
    ap.add_argument("--model", default=None)
    ap.add_argument("--show", action="store_true", help="print every output")
    args = ap.parse_args(argv)
    import torch
    from stencil.runtime.models import load_model
    torch.set_num_threads(1)
    modes = tuple(m for m in args.modes.split(",") if m)
    unknown = set(modes) - set(MODES)
    if unknown:
        ap.error(f"unknown modes {sorted(unknown)}; choose from {MODES}")
    lm = load_model(args.model, quiet=True)
    compiler = stencil.GrammarCompiler(lm.tokenizer_info)
    tasks = task_set(args.arithmetic, args.extraction, args.seed)
    outcomes = []
    for mode in modes:
        for task in tasks:
            o = run_task(lm, compiler, task, mode, args.think_tokens, args.max_tokens, args.layout)
            outcomes.append(o)
            if args.show:
                print(f"[{mode}] {task.answer} <- {o.text!r} (thought: {o.thought!r})", file=sys.stderr)
    print(table(outcomes, modes))
    invalid = sum(not o.valid for o in outcomes)
    print(f"\n{len(tasks)} tasks (seed {args.seed}), {args.layout} white space, think tokens "
          f"{args.think_tokens}, max_tokens {args.max_tokens}; invalid outputs: {invalid}")
    return 1 if invalid else 0


if __name__ == "__main__":
    sys.exit(main())
