"""Tool calls of every family through the real server and the official ``openai`` client, from
random-weight models built on each family's real tokenizer and chat template
(:mod:`tests.support.tool_models`; issue 44). A random model writes arbitrary text, so each call is
the grammar's doing: every one must parse and validate.

Per family, ``--requests`` chat requests (pairs of one request unstreamed and the same streamed;
greedy and temperature 1.0 in turn; ``tool_choice`` required, auto, named and ``allowed_tools``;
``parallel_tool_calls`` true and false; generated tool sets of 1 to 6 tools, hidden from tuning):

- parse: each returned call names a tool and its arguments are JSON (a request whose choice
  demands a call but returns none counts as a call that did not parse);
- valid: the arguments validate against the tool's schema (jsonschema, with numbers read exactly:
  decimals as Decimal, ``multipleOf`` in fractions, where floats overflow or round);
- broken: answers that break the request's rules: more than one call where
  ``parallel_tool_calls`` is false or a tool is named (or the family takes one call per turn), a
  call of a tool ``allowed_tools`` leaves out, calls without ``finish_reason`` "tool_calls";
- streamed == final: the streamed twin's argument deltas, joined per call, equal the unstreamed
  answer's arguments (same ids' names, same order), or, where they differ, those of a repeat of the
  unstreamed request (``equal_to_repeat_only`` counts them: the first request over a tool set fills
  its budget-aware masks with cold cost memos, which may leave other tokens than warm ones);
- two-turn: the history (assistant ``tool_calls`` and ``tool`` results) sent back is answered, the
  family's template renders it (the prompt the server counted equals the template's rendering of
  it), and the calls read back from the rendered assistant turn are the calls made;
- harmony: each unstreamed output (its tokens, from logprobs) parsed by openai-harmony to the same
  reasoning and calls, and each rendered history parsed by openai-harmony too.

Requests ask the server not to speculate (``--speculate``: as it does by default): a speculative
row draws a seeded sample otherwise than a plain one, and a request with logprobs (harmony's
unstreamed one) does not speculate, so a sampled pair's twins would differ.

    python -m benchmarks.tool_families --requests 200
    python -m benchmarks.tool_families --families qwen,harmony --requests 16 --max-tokens 96
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from tests.support.tool_families import run_family
from tests.support.tool_models import FAMILIES, SOURCES


def table(rows: list[dict]) -> str:
    cols = ["family", "requests", "refused", "failed", "broken", "calls", "parse_%", "valid_%", "streamed==final_%",
            "greedy_streamed==final", "equal_to_repeat_only",
            "two_turn", "harmony_parser"]
    lines = ["| " + " | ".join(cols) + " | tokenizer / template |", "|" + "---|" * (len(cols) + 1)]
    for r in rows:
        s = SOURCES[r["family"]]
        src = f"{s.tokenizer} / {s.template}" + (f" (substitute: {s.substitute})" if s.substitute else "")
        lines.append("| " + " | ".join(str(r[c]) for c in cols) + f" | {src} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--requests", type=int, default=200, help="requests per family (half streamed)")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--workers", type=int, default=4, help="concurrent request pairs (batched by the server)")
    ap.add_argument("--speculate", action="store_true", help="requests with speculative decoding (default: off, "
                    "so that a sampled request and its streamed twin draw alike)")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    rows = []
    for family in a.families.split(","):
        t = time.perf_counter()
        tally = run_family(family, a.requests, a.max_tokens, a.workers, a.speculate)
        rows.append(tally.row())
        print(json.dumps({**rows[-1], "seconds": round(time.perf_counter() - t, 1)}), flush=True)
    print(table(rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    ok = all(r["failed"] == 0 and r["broken"] == 0 and r["parse_%"] == 100.0 and r["valid_%"] == 100.0 and r["streamed==final_%"] == 100.0
             and r["two_turn"].split("/")[0] == r["two_turn"].split("/")[1] for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
