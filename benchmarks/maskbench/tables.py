"""Text tables of MaskBench summaries (see ``stats.summarize``), and issue 6's targets.

``engine_table`` has one column per engine: TBM in microseconds, TTFM in milliseconds, then the
schema counts. ``common_table`` does the same on the schemas every engine passed and adds the
ratio of stencil's figure to each other engine's (below 1: stencil is faster).

Example::

    print(engine_table({"stencil": summarize(recs_s), "llguidance": summarize(recs_l)}))
"""
from __future__ import annotations

from benchmarks.maskbench.stats import TBM_POINTS, TTFM_POINTS

COUNT_ROWS = (("schemas", None), ("passing", "passing"), ("compile errors", "compile_error"),
              ("crashes", "crash"), ("out of memory", "oom"), ("timeouts", "timeout"),
              ("validation errors", "validation_error"), ("invalidation errors", "invalidation_error"))


def fmt_us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.1f}" if v < 100 else f"{v:,.0f}"


def fmt_ms(v_us: float | None) -> str:
    if v_us is None:
        return "-"
    v = v_us / 1e3
    if v < 10:
        return f"{v:.2f}"
    return f"{v:.1f}" if v < 1000 else f"{v:,.0f}"


def fmt_ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


def _time_rows(s: dict) -> list[tuple[str, str, float | None]]:
    rows = [(f"TBM {p} (us)", fmt_us(s["tbm_us"][p]), s["tbm_us"][p]) for p in TBM_POINTS]
    # what the max is without the steps another task interrupted (counted on the next row)
    rows.append(("TBM max, never descheduled (us)", fmt_us(s["tbm_max_on_cpu_us"]), s["tbm_max_on_cpu_us"]))
    rows.append(("steps descheduled > 0.1 ms", f"{s['descheduled_steps']:,}", None))
    rows += [(f"TTFM {p} (ms)", fmt_ms(s["ttfm_us"][p]), s["ttfm_us"][p]) for p in TTFM_POINTS]
    return rows


def _render(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]

    def line(r):
        return "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r))

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def engine_table(summaries: dict[str, dict]) -> str:
    """Every figure of every engine, on all schemas of the run."""
    names = list(summaries)
    rows = []
    for i, (label, _, _) in enumerate(_time_rows(summaries[names[0]])):
        rows.append([label] + [_time_rows(summaries[n])[i][1] for n in names])
    for label, key in COUNT_ROWS:
        rows.append([label] + [f"{summaries[n]['schemas'] if key is None else summaries[n]['counts'].get(key, 0):,}"
                               for n in names])
    rows.append(["tokens"] + [f"{summaries[n]['tokens']:,}" for n in names])
    return _render(["metric"] + names, rows)


def common_table(summaries: dict[str, dict], ours: str = "stencil") -> str:
    """Times on the schemas every engine passed, with ``ours``'s ratio to each other engine."""
    names = list(summaries)
    others = [n for n in names if n != ours] if ours in names else []
    per = {n: _time_rows(summaries[n]) for n in names}
    rows = []
    for i, (label, _, _) in enumerate(per[names[0]]):
        row = [label] + [per[n][i][1] for n in names]
        row += [fmt_ratio(per[ours][i][2], per[o][i][2]) for o in others]
        rows.append(row)
    rows.append(["schemas"] + [f"{summaries[n]['schemas']:,}" for n in names] + [""] * len(others))
    rows.append(["tokens"] + [f"{summaries[n]['tokens']:,}" for n in names] + [""] * len(others))
    return _render(["metric"] + names + [f"{ours}/{o}" for o in others], rows)


def targets(summaries: dict[str, dict], ours: str = "stencil") -> list[tuple[str, bool]] | None:
    """Issue 6's targets on the common schemas, as ``(statement with figures, met)``; None unless
    stencil, llguidance and xgrammar all ran."""
    if not all(n in summaries for n in (ours, "llguidance", "xgrammar")):
        return None
    s, lg, x = (summaries[n] for n in (ours, "llguidance", "xgrammar"))
    if s["tokens"] == 0 or s["ttfm_us"]["p50"] is None:
        return None
    out = []

    def check(text: str, a: float, b: float, factor: float = 1.0, strict: bool = True):
        met = a < b * factor if strict else a <= b * factor
        out.append((f"{text}: {a:,.1f} vs {b:,.1f}" + (f" (x{factor:g} = {b * factor:,.1f})" if factor != 1 else ""), met))

    for p in ("mean", "p99", "p99.9", "max"):
        check(f"TBM {p} below llguidance's (us)", s["tbm_us"][p], lg["tbm_us"][p])
        check(f"TBM {p} below XGrammar's (us)", s["tbm_us"][p], x["tbm_us"][p])
    check("TBM p50 within 1.5x of XGrammar's (us)", s["tbm_us"]["p50"], x["tbm_us"]["p50"], 1.5, strict=False)
    check("TTFM p50 within 1.2x of llguidance's (us)", s["ttfm_us"]["p50"], lg["ttfm_us"]["p50"], 1.2, strict=False)
    check("TTFM p99 below llguidance's (us)", s["ttfm_us"]["p99"], lg["ttfm_us"]["p99"])
    for p in ("p75", "p90", "p95", "p99", "max"):
        check(f"TTFM {p} below XGrammar's (us)", s["ttfm_us"][p], x["ttfm_us"][p])
    return out
