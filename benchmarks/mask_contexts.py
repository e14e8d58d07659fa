"""Where stencil's mask time goes, by the JSON context of the mask, per tokenizer side by side.

Run ``python -m benchmarks.mask_contexts [--tokenizers smollm2,gemma3] [--split tuning]
[--limit 500]``. Each tokenizer compiles the same MaskBench schemas (the compile options of the
MaskBench run) and walks every valid instance as MaskBench does (a mask, then the instance's
token), schema by schema, each tokenizer in turn. Each mask is put in the context it was asked in
(inside a key, inside a string value, after ``{``, ``:``, ``,``, a number or literal, a closing
quote...), and in whether it made a new entry in the vocabulary's shared mask cache (a lexer
state no grammar over that vocabulary had shown). Prints per context: masks, microseconds each,
and the microseconds it adds to the mean, per tokenizer, and the ratio of the last tokenizer's
share to the first's: the contexts where a larger vocabulary costs most (issue 41's vocabulary
curve) head the table.
"""
from __future__ import annotations

import argparse
import sys
import time

import stencil
from benchmarks.maskbench.data import list_files, load_task
from benchmarks.maskbench.engines.stencil_engine import COMPILE_OPTIONS
from tests.support.datasets import default_maskbench
from tests.support.tokenizers import NAMES, load_tokenizer


class JsonContext:
    """The JSON context after the bytes fed so far (a scanner, not a parser: MaskBench instances
    are valid JSON)."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.in_string = self.escape = self.is_key = self.expect_key = self.scalar = False
        self.last = ""

    def feed(self, text: str) -> None:
        for ch in text:
            if self.in_string:
                if self.escape:
                    self.escape = False
                elif ch == "\\":
                    self.escape = True
                elif ch == '"':
                    self.in_string = False
                    self.last = 'key"' if self.is_key else 'string"'
                continue
            if ch == '"':
                self.in_string = True
                self.is_key = bool(self.stack) and self.stack[-1] == "{" and self.expect_key
            elif ch in "{[":
                self.stack.append(ch)
                self.expect_key = ch == "{"
                self.last = ch
            elif ch in "}]":
                if self.stack:
                    self.stack.pop()
                self.last = ch
            elif ch == ",":
                self.expect_key = bool(self.stack) and self.stack[-1] == "{"
                self.last = ch
            elif ch == ":":
                self.expect_key = False
                self.last = ch
            elif ch not in " \t\n\r":
                if not self.scalar:  # (a scalar is named by its first character: the e of true is no exponent)
                    self.last = "number" if ch.isdigit() or ch == "-" else "literal"
                self.scalar = True
                continue
            self.scalar = False

    def name(self) -> str:
        if self.in_string:
            return "in key" if self.is_key else "in string"
        return "after " + self.last if self.last else "start"


class Run:
    """One tokenizer's compiler and the time of its masks, per (context, new shared entry):
    [masks, total ns]."""

    def __init__(self, tokenizer: str) -> None:
        self.info, self.encode = load_tokenizer(tokenizer)
        self.compiler = stencil.GrammarCompiler(self.info)
        self.bitmask = stencil.allocate_token_bitmask(1, self.info.vocab_size)
        self.cells: dict[tuple[str, bool], list[int]] = {}

    def masks(self) -> int:
        return sum(c[0] for c in self.cells.values())

    def walk(self, path: str) -> None:
        """Walks every valid instance of one MaskBench file, as MaskBench does."""
        vocab, bm, clock = self.info.vocabulary, self.bitmask, time.perf_counter_ns
        try:
            task = load_task(path, self.encode)
            matcher = stencil.Matcher(self.compiler.compile_json_schema(task["schema"], **COMPILE_OPTIONS))
        except (stencil.GrammarError, stencil.LimitError, ValueError):
            return
        for test in task["tests"]:
            if not test["valid"]:
                continue
            matcher.reset()
            ctx = JsonContext()
            for token in test["tokens"]:
                entries = vocab.shared_mask_entries
                t0 = clock()
                matcher.fill_next_token_bitmask(bm, 0)
                dt = clock() - t0
                if not matcher.accept_token(token):
                    break
                cell = self.cells.setdefault((ctx.name(), vocab.shared_mask_entries != entries), [0, 0])
                cell[0] += 1
                cell[1] += dt
                ctx.feed(self.info.decode_bytes([token]).decode("utf-8", "replace"))
        self.compiler.clear_cache()


def table(runs: dict[str, Run]) -> str:
    names = list(runs)
    first, last = names[0], names[-1]
    counts = {n: runs[n].masks() for n in names}
    share = {n: {k: v[1] / 1e3 / counts[n] for k, v in runs[n].cells.items()} for n in names}
    keys = set().union(*(runs[n].cells for n in names))
    # (by what the last tokenizer adds over the first: where the curve is made)
    order = sorted(keys, key=lambda k: share[first].get(k, 0) - share[last].get(k, 0))
    head = f"{'context':<16} {'new':<5}" + "".join(f" | {n + ' masks':>14} {'us each':>8} {'of mean':>8}"
                                                  for n in names) + f" | {'of mean, ' + last + '/' + first:>22}"
    lines = [head, "-" * len(head)]
    for k in order:
        row = f"{k[0]:<16} {'yes' if k[1] else 'no':<5}"
        for n in names:
            masks, ns = runs[n].cells.get(k, [0, 0])
            row += f" | {masks:>14,} {ns / 1e3 / masks if masks else 0:>8.1f} {share[n].get(k, 0):>8.2f}"
        a, b = share[first].get(k, 0), share[last].get(k, 0)
        lines.append(row + f" | {(f'{b / a:.2f}x' if a else '-'):>22}")
    totals = "".join(f" | {counts[n]:>14,} {'':>8} {sum(share[n].values()):>8.2f}" for n in names)
    a, b = sum(share[first].values()), sum(share[last].values())
    lines.append(f"{'all':<16} {'':<5}" + totals + f" | {(f'{b / a:.2f}x' if a else '-'):>22}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=default_maskbench())
    p.add_argument("--tokenizers", default="smollm2,gemma3", help="comma-separated, of: " + ", ".join(NAMES))
    p.add_argument("--split", choices=["tuning", "check", "all"], default="tuning")
    p.add_argument("--limit", type=int, default=None)
    a = p.parse_args(argv)
    files = list_files([a.data], limit=a.limit, half=None if a.split == "all" else a.split)
    if not files:
        print(f"no MaskBench files in {a.data}", file=sys.stderr)
        return 1
    runs = {name: Run(name) for name in a.tokenizers.split(",")}
    for path in files:  # (schema by schema, each tokenizer in turn: a slow spell of the host hits all alike)
        for run in runs.values():
            run.walk(path)
    print(f"{len(files)} schemas ({a.split}), {', '.join(runs)}; time per mask (fill only), by the JSON "
          "context it was asked in and whether it made a new shared cache entry")
    print(table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
