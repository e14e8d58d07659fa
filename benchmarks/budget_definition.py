"""Budget-aware masks against their definition on MaskBench files: along random budgeted walks,
each sampled token t at budget k must be allowed by the mask exactly when the bound after t
(``min_completion_tokens`` of a fork that took it) is at most k - 1, and ``accept_token(t, k)``
(the one-token check that opportunistic masking asks first) must answer as the mask does::

    python -m benchmarks.format_strings /tmp/fmt
    python -m benchmarks.budget_definition /tmp/fmt [--tokenizer cl100k]

Prints the disagreements per file and in all: kept_over (the mask keeps a token over the
budget), dropped_fit (it drops one that fits), check_yes_mask_no / check_no_mask_yes (the one-token
check against the mask; asked before the mask, as a generation does).
"""
from __future__ import annotations

import argparse
import collections
import json
import pathlib
import random

import stencil
from tests.support.tight_walks import allowed
from tests.support.tokenizers import NAMES, load_tokenizer


def check(g, info, rng: random.Random, slacks=(1, 3), sample_size: int = 25) -> collections.Counter:
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    eos = set(info.eos_token_ids)
    out = collections.Counter()
    for slack in slacks:
        m = stencil.Matcher(g)
        k = m.min_completion_tokens() + slack
        for used in range(k):
            full = [t for t in allowed(m, bm) if t not in eos]
            bound = m.min_completion_tokens()
            sample = rng.sample(full, min(len(full), sample_size))
            for kk in sorted({max(bound, 1), bound + 2, bound + 3, k - used, bound + 60}, reverse=True):
                first = {t: m.fork().accept_token(t, kk) for t in sample}
                got = set(allowed(m, bm, kk))
                for t in sample:
                    y = m.fork()
                    y.accept_token(t)
                    after = y.min_completion_tokens()
                    fits = after is not None and 0 <= after <= kk - 1
                    out["checked"] += 1
                    out["kept_over"] += t in got and not fits
                    out["dropped_fit"] += t not in got and fits
                    out["check_yes_mask_no"] += first[t] and t not in got
                    out["check_no_mask_yes"] += not first[t] and t in got
            t = rng.choice(allowed(m, bm, k - used))
            if t in eos:
                break
            m.accept_token(t)
        out["not_accepting"] += not m.is_accepting()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="MaskBench .json files")
    ap.add_argument("--tokenizer", choices=NAMES, default="cl100k")
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    info, _ = load_tokenizer(args.tokenizer)
    compiler = stencil.GrammarCompiler(info)
    total = collections.Counter()
    for path in sorted(pathlib.Path(args.folder).glob("*.json")):
        schema = json.loads(path.read_text())["schema"]
        try:
            g = compiler.compile_json_schema(schema, whitespace="compact", string_spelling="plain")
        except (stencil.GrammarError, ValueError) as e:  # (a documented refusal: nothing to check)
            total["compile_errors"] += 1
            print(path.name, "compile error:", str(e)[:160], flush=True)
            continue
        got = check(g, info, random.Random(args.seed))
        total.update(got)
        print(path.name, {k: v for k, v in got.items() if v}, flush=True)
    print("total", {k: total[k] for k in ("checked", "kept_over", "dropped_fit", "check_yes_mask_no",
                                          "check_no_mask_yes", "not_accepting", "compile_errors")})


if __name__ == "__main__":
    main()
