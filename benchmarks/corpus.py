"""Corpus run (issue 17): every maskbench-dev schema compiled and walked token by token with its
valid instances (each must be accepted, EOS allowed at the end) and invalid ones (each must be
refused somewhere), each schema in an isolated worker process with a time and memory limit.

This is the MaskBench harness (``benchmarks.maskbench``: data loading, workers, crash and
timeout detection, resumable results) run with stencil alone, plus the verdict the issue asks
for: crashes / hangs / invalid instances accepted, which must all be 0.

    python -m benchmarks.corpus ../shared/data/maskbench-dev --output /tmp/corpus
    python -m benchmarks.corpus --summary /tmp/corpus     # the counts of an earlier (partial) run

The exit code is 1 when a crash, hang, out-of-memory or accepted invalid instance was counted.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

from benchmarks.maskbench import cli as maskbench_cli

#: record counters and statuses (measure.py, worker.py) behind each figure of the verdict
_STATUS_ROWS = (("crashes", "crash"), ("hangs (timeouts)", "timeout"), ("out of memory", "oom"),
                ("compile errors", "compile_error"))


def summarize(records: list[dict]) -> dict[str, int]:
    """Counts of the stencil records of a run: schemas, one per status row, and instances."""
    recs = [r for r in records if r.get("engine", "stencil") == "stencil"]
    out = {"schemas": len(recs)}
    for label, status in _STATUS_ROWS:
        out[label] = sum(r["status"] == status for r in recs)
    out["invalid accepted"] = sum(int(r.get("invalid_accepted") or 0) for r in recs)
    out["valid rejected"] = sum(int(r.get("valid_rejected") or 0) for r in recs)
    out["schemas passing"] = sum(r["status"] == "passing" for r in recs)
    return out


def verdict(counts: dict[str, int]) -> str:
    """The issue's line (crashes / hangs / invalid accepted) and the other counts."""
    head = (f"crashes / hangs / invalid accepted: {counts['crashes']} / {counts['hangs (timeouts)']} / "
            f"{counts['invalid accepted']}")
    rest = ", ".join(f"{k} {v:,}" for k, v in counts.items() if k not in ("crashes", "hangs (timeouts)",
                                                                         "invalid accepted"))
    return f"{head}  ({rest})"


def failed(counts: dict[str, int]) -> bool:
    return bool(counts["crashes"] or counts["hangs (timeouts)"] or counts["out of memory"]
                or counts["invalid accepted"])


def _summary_of(folder: str) -> dict[str, int]:
    from benchmarks.maskbench.runner import load_records
    return summarize(load_records(os.path.join(folder, "results.jsonl")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.corpus", description=__doc__.split("\n\n")[0])
    maskbench_cli.add_arguments(parser)
    parser.add_argument("--summary", default=None, metavar="DIR", help="only print the counts of an earlier run")
    parser.set_defaults(engines="stencil", pin="off")
    args = parser.parse_args(argv)
    if args.summary:
        try:
            counts = _summary_of(args.summary)
        except FileNotFoundError as e:
            print(f"corpus: no run in {args.summary!r}: {e}", file=sys.stderr)
            return 2
        print(verdict(counts))
        return int(failed(counts))
    if args.engines != "stencil":
        parser.error("the corpus run is stencil's alone; compare engines with python -m benchmarks.maskbench")
    args.output = args.output or tempfile.mkdtemp(prefix="corpus-")
    args.argv = sys.argv[1:] if argv is None else list(argv)
    code = maskbench_cli.run(args)
    if code == 2:
        return code
    counts = _summary_of(args.output)
    print(verdict(counts))
    return int(failed(counts))


if __name__ == "__main__":
    sys.exit(main())
