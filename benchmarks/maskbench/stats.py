"""Summaries of MaskBench records: the figures of the tables.

Percentiles are nearest-rank on the sorted samples (``sorted[min(int(n * p / 100), n - 1)]``), as
MaskBench's own results script computes them. TBM pools every timed token of every schema that
compiled (passing or not); TTFM pools every schema that compiled. Each schema has exactly one
status: passing, compile_error, validation_error (a valid instance rejected: that is the first
failure seen), invalidation_error (an invalid instance accepted), crash, oom or timeout.
``tbm_max_on_cpu_us`` is the TBM max over the steps that were never descheduled (see measure.py);
``descheduled_steps`` counts the others.

Example::

    s = summarize(records)            # records of one engine
    s["tbm_us"]["p99"], s["counts"]["passing"]
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

TBM_POINTS = ("mean", "p25", "p50", "p75", "p90", "p95", "p99", "p99.9", "max")
TTFM_POINTS = ("mean", "p50", "p75", "p90", "p95", "p99", "max")
STATUSES = ("passing", "compile_error", "crash", "oom", "timeout", "validation_error", "invalidation_error")


def percentiles(values: Sequence[float] | np.ndarray, points: Sequence[str]) -> dict[str, float | None]:
    """``{point: value}`` for points named mean, max or pNN(.N); None everywhere when empty."""
    a = np.sort(np.asarray(values, dtype=np.float64))
    out: dict[str, float | None] = {}
    for p in points:
        if a.size == 0:
            out[p] = None
        elif p == "mean":
            out[p] = float(a.mean())
        elif p == "max":
            out[p] = float(a[-1])
        elif p.startswith("p"):
            q = float(p[1:])
            out[p] = float(a[min(int(a.size * q / 100), a.size - 1)])
        else:
            raise ValueError(f"unknown statistic {p!r}")
    return out


def summarize(records: Iterable[dict], only: set[str] | None = None) -> dict:
    """Counts and TBM/TTFM statistics (microseconds) of one engine's records, restricted to the
    files in ``only`` when given."""
    counts = {s: 0 for s in STATUSES}
    tbm: list[np.ndarray] = []
    on_cpu: list[np.ndarray] = []   # the steps never descheduled
    descheduled = 0
    ttfm: list[float] = []
    schemas = tests = skipped = 0
    for r in records:
        if only is not None and r["file"] not in only:
            continue
        schemas += 1
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        tests += r.get("num_tests", 0)
        skipped += r.get("skipped_tests", 0)
        if r.get("ttfm_ns") is not None:
            ttfm.append(r["ttfm_ns"] / 1e3)
            times = np.asarray(r.get("tbm_ns", ()), dtype=np.float64) / 1e3
            tbm.append(times)
            off = [i for i, _ in r.get("descheduled", ())]
            descheduled += len(off)
            on_cpu.append(np.delete(times, off) if off else times)
    tbm_all = np.concatenate(tbm) if tbm else np.zeros(0)
    return {
        "schemas": schemas,
        "tests": tests,
        "skipped_tests": skipped,
        "tokens": int(tbm_all.size),
        "counts": counts,
        "tbm_us": percentiles(tbm_all, TBM_POINTS),
        "descheduled_steps": descheduled,
        "tbm_max_on_cpu_us": percentiles(np.concatenate(on_cpu) if on_cpu else np.zeros(0), ("max",))["max"],
        "ttfm_us": percentiles(ttfm, TTFM_POINTS),
    }


def by_engine(records: Iterable[dict], engines: Sequence[str], files: set[str] | None = None) -> dict[str, list[dict]]:
    """``{engine: its records}`` for ``engines`` in that order (on ``files`` when given); an engine
    without any record is left out, so it cannot empty the set every engine passed."""
    records = list(records)
    grouped = {e: [r for r in records if r["engine"] == e and (files is None or r["file"] in files)] for e in engines}
    return {e: rs for e, rs in grouped.items() if rs}


def passed_by_all(records_by_engine: dict[str, list[dict]]) -> set[str]:
    """The files every engine passed (ran on and got status passing)."""
    sets = [{r["file"] for r in recs if r["status"] == "passing"} for recs in records_by_engine.values()]
    return set.intersection(*sets) if sets else set()
