"""SVG plots of MaskBench runs, written by hand (no plotting package is a dependency).

``tbm_distribution_svg`` draws each engine's time between masks (TBM) as a CDF: the fraction of
masks at or below x, x in microseconds on a log scale. ``vocabulary_curve_svg`` draws TBM mean
and p99 against the tokenizer's vocabulary size, one point per run. Both use only the schemas
every engine passed (``stats.passed_by_all``, as the report's second table does), so that no
engine's figures include schemas another one failed or skipped.

Example::

    from benchmarks.maskbench.plots import write_tbm_cdf, write_vocabulary_curve
    write_tbm_cdf("/tmp/mb")                 # -> /tmp/mb/tbm_cdf.svg
    write_vocabulary_curve(["/tmp/mb_smollm2", "/tmp/mb_gemma3"], "/tmp/vocabulary_curve.svg")
"""
from __future__ import annotations

import math
import os
from typing import Sequence
from xml.sax.saxutils import escape

import numpy as np

from benchmarks.maskbench.engines import ENGINES
from benchmarks.maskbench.runner import UNCOMMITTED, load_run
from benchmarks.maskbench.stats import by_engine, passed_by_all, percentiles, summarize

# one color per engine, fixed by the engine's place in ENGINES so it is the same in every plot
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
MAX_POINTS = 400  # per CDF curve: ~150k masks would make a multi-MB SVG
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 40, 50  # margins (px); the right one holds the legend
X_MIN_US = 0.1  # the CDF's x axis starts at 0.1 us; faster masks are drawn there


def _color(engine: str, engines: Sequence[str]) -> str:
    known = list(ENGINES)
    i = known.index(engine) if engine in known else len(known) + list(engines).index(engine)
    return PALETTE[i % len(PALETTE)]


def _attr(v) -> str:
    return escape(str(v), {'"': "&quot;"})


def _el(tag: str, text: str | None = None, **attrs) -> str:
    """One SVG element; ``class_`` and ``font_size`` style names become ``class``, ``font-size``."""
    a = " ".join(f'{k.rstrip("_").replace("_", "-")}="{_attr(v)}"' for k, v in attrs.items() if v is not None)
    return f"<{tag} {a}/>" if text is None else f"<{tag} {a}>{escape(text)}</{tag}>"


def _svg(width: int, height: int, body: list[str]) -> str:
    return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                      f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
                      _el("rect", width=width, height=height, fill="white")] + body + ["</svg>", ""])


def _polyline(xs, ys, color: str, **attrs) -> str:
    pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys))
    return _el("polyline", points=pts, fill="none", stroke=color, stroke_width=1.6, **attrs)


def _legend(x: float, y: float, engines: Sequence[str], notes: dict[str, str]) -> list[str]:
    """A line of each engine's color and its name, with a note in grey below the name when given."""
    out = []
    for i, e in enumerate(engines):
        yy = y + (30 if notes else 16) * i
        out.append(_el("line", x1=x, y1=yy, x2=x + 18, y2=yy, stroke=_color(e, engines), stroke_width=2.5))
        out.append(_el("text", e, x=x + 24, y=yy + 4, class_="legend", data_engine=e))
        if e in notes:
            out.append(_el("text", notes[e], x=x + 24, y=yy + 17, font_size=10, fill="#555"))
    return out


def fmt_time(us: float) -> str:
    """Three significant digits and a unit: ``0.1 us``, ``12.3 us``, ``4.2 ms``, ``10 s``."""
    if us < 1000:
        return f"{us:.3g} us"
    return f"{us / 1e3:.3g} ms" if us < 1e6 else f"{us / 1e6:.3g} s"


def common_tbm_us(records: list[dict], engines: Sequence[str]) -> tuple[dict[str, np.ndarray], int]:
    """({engine: every TBM sample in us on the schemas all of ``engines`` passed}, how many schemas)."""
    grouped = by_engine(records, engines)
    common = passed_by_all(grouped)
    out = {e: np.concatenate([np.asarray(r["tbm_ns"], dtype=np.float64) / 1e3 for r in rs if r["file"] in common]
                             or [np.zeros(0)]) for e, rs in grouped.items()}
    return out, len(common)


def cdf_points(samples: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(x, fraction of samples at or below x) at evenly spaced ranks; the first point is the
    minimum, the last the maximum (at 1), so the curve's ends are exact whatever is left out."""
    a = np.sort(np.asarray(samples, dtype=np.float64))
    if a.size == 0:
        return a, a
    idx = np.unique(np.linspace(0, a.size - 1, min(a.size, max_points)).round().astype(np.int64))
    x = a[idx]
    return x, np.searchsorted(a, x, side="right") / a.size  # ties: every equal sample counts


def tbm_distribution_svg(results: list[dict], engines: Sequence[str], title: str | None = None) -> str:
    """The TBM CDF of each of ``engines`` (those with records) on the schemas they all passed."""
    samples, n_common = common_tbm_us(results, engines)
    names = list(samples)
    width, height = 760, 440
    pw, ph = width - LEFT - RIGHT, height - TOP - BOTTOM
    top = max((float(s.max()) for s in samples.values() if s.size), default=1.0)
    lo, hi = math.log10(X_MIN_US), max(math.ceil(math.log10(max(top, 1.0)) - 1e-9), 1)

    def px(us):
        return LEFT + (np.log10(np.maximum(us, X_MIN_US)) - lo) / (hi - lo) * pw

    def py(frac):
        return TOP + (1 - np.asarray(frac)) * ph

    body = [_el("text", title or "Time between masks", x=LEFT, y=18, font_size=13, font_weight="bold"),
            _el("text", f"on the {n_common:,} schemas every engine passed", x=LEFT, y=32, fill="#444"),
            _el("rect", x=LEFT, y=TOP, width=pw, height=ph, fill="none", stroke="#888", class_="frame")]
    for d in range(round(lo), hi + 1):  # decades: gridline and label; 2..9 x each: a short tick
        x = float(px(10.0 ** d))
        body.append(_el("line", x1=f"{x:.1f}", y1=TOP, x2=f"{x:.1f}", y2=TOP + ph, stroke="#ddd"))
        body.append(_el("text", fmt_time(10.0 ** d), x=f"{x:.1f}", y=TOP + ph + 16,
                        text_anchor="middle", class_="tick-x"))
        for k in range(2, 10) if d < hi else ():
            xm = float(px(k * 10.0 ** d))
            body.append(_el("line", x1=f"{xm:.1f}", y1=TOP + ph, x2=f"{xm:.1f}", y2=TOP + ph - 4, stroke="#888"))
    for f in (0, 0.25, 0.5, 0.75, 1):
        y = float(py(f))
        body.append(_el("line", x1=LEFT, y1=y, x2=LEFT + pw, y2=y, stroke="#ddd"))
        body.append(_el("text", f"{f:g}", x=LEFT - 6, y=y + 4, text_anchor="end", class_="tick-y"))
    for f, label in ((0.5, "p50"), (0.99, "p99")):  # the percentiles the tables report, read off the curves
        y = float(py(f))
        body.append(_el("line", x1=LEFT, y1=y, x2=LEFT + pw, y2=y, stroke="#999", stroke_dasharray="4 3"))
        body.append(_el("text", label, x=LEFT + pw - 4, y=y + 12, text_anchor="end", fill="#666"))
    body.append(_el("text", "time between masks (log scale)", x=LEFT + pw / 2, y=height - 10, text_anchor="middle"))
    body.append(_el("text", "fraction of masks at or below", x=16, y=TOP + ph / 2, text_anchor="middle",
                    transform=f"rotate(-90 16 {TOP + ph / 2})"))
    labels = {}
    for e in names:
        if samples[e].size:
            x, y = cdf_points(samples[e])
            body.append(_polyline(px(x), py(y), _color(e, names), class_="curve", data_engine=e))
            p = percentiles(samples[e], ("p50", "p99"))
            labels[e] = f"p50 {fmt_time(p['p50'])}, p99 {fmt_time(p['p99'])}"
        else:
            labels[e] = "no masks"
    body += _legend(LEFT + pw + 14, TOP + 10, names, labels)
    return _svg(width, height, body)


def _nice_step(span: float, ticks: int = 6) -> float:
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def vocabulary_curve_svg(runs: list[dict]) -> str:
    """TBM mean (upper panel) and p99 (lower panel) against vocabulary size, one line per engine.
    ``runs``: ``{"meta": meta.json, "records": [...], "engines": [...]}`` each (see ``load_run``);
    each run's figures are on the schemas all its ``engines`` passed."""
    runs = sorted(runs, key=lambda r: r["meta"]["vocab_size"])  # a line goes left to right
    points: dict[str, list[tuple[int, float, float]]] = {}
    notes = []  # each point's schemas and commit: runs of different commits may be put side by side
    for run in runs:
        grouped = by_engine(run["records"], run["engines"])
        common = passed_by_all(grouped)
        commit = str(run["meta"].get("commit", "?")).replace(UNCOMMITTED, "+edits")  # (fits the margin)
        notes.append(f"{run['meta'].get('tokenizer', '?')}: {len(common):,}, {commit}")
        for e, rs in grouped.items():
            tbm = summarize(rs, only=common)["tbm_us"]
            if tbm["mean"] is not None:
                points.setdefault(e, []).append((run["meta"]["vocab_size"], tbm["mean"], tbm["p99"]))
    names = list(points)
    width, height, gap = 840, 560, 40  # (80 px more on the right: the runs' commits)
    pw, ph = width - LEFT - RIGHT - 80, (height - TOP - BOTTOM - 30 - gap) / 2  # 30: room for tokenizer names
    x_max = max((r["meta"]["vocab_size"] for r in runs), default=1)
    x_step = _nice_step(x_max)
    x_top = math.ceil(x_max * 1.04 / x_step) * x_step  # room for the rightmost point's marker

    def px(v):
        return LEFT + v / x_top * pw

    body = [_el("text", "Time between masks against vocabulary size (schemas every engine passed, per run)",
                x=LEFT, y=22, font_size=13, font_weight="bold")]
    for panel, (label, col) in enumerate((("TBM mean (us)", 1), ("TBM p99 (us)", 2))):
        y0 = TOP + panel * (ph + gap)
        y_max = max((p[col] for ps in points.values() for p in ps), default=1.0) or 1.0
        y_step = _nice_step(y_max, 4)
        y_top = math.ceil(y_max * 1.05 / y_step) * y_step

        def py(v, y0=y0, y_top=y_top):
            return y0 + (1 - v / y_top) * ph

        body.append(_el("rect", x=LEFT, y=y0, width=pw, height=ph, fill="none", stroke="#888", class_="frame"))
        for k in range(round(y_top / y_step) + 1):
            y = py(k * y_step)
            body.append(_el("line", x1=LEFT, y1=f"{y:.1f}", x2=LEFT + pw, y2=f"{y:.1f}", stroke="#ddd"))
            body.append(_el("text", f"{k * y_step:,.4g}", x=LEFT - 6, y=f"{y + 4:.1f}", text_anchor="end"))
        body.append(_el("text", label, x=16, y=y0 + ph / 2, text_anchor="middle",
                        transform=f"rotate(-90 16 {y0 + ph / 2:.1f})"))
        for run in runs:  # a dotted line per run ties both panels' points to its tokenizer
            x = px(run["meta"]["vocab_size"])
            body.append(_el("line", x1=f"{x:.1f}", y1=y0, x2=f"{x:.1f}", y2=y0 + ph, stroke="#bbb",
                            stroke_dasharray="2 3"))
        for e in names:
            ps, color = points[e], _color(e, names)
            body.append(_polyline([px(p[0]) for p in ps], [py(p[col]) for p in ps], color, class_="curve",
                                  data_engine=e, data_panel=label.split()[1]))
            for p in ps:
                body.append(f'<circle cx="{px(p[0]):.1f}" cy="{py(p[col]):.1f}" r="3" fill="{color}">'
                            f"<title>{escape(e)}: {p[col]:,.1f} us at {p[0]:,} ids</title></circle>")
    base = TOP + 2 * ph + gap
    for k in range(round(x_top / x_step) + 1):
        x = px(k * x_step)
        body.append(_el("text", f"{k * x_step / 1000:g}k" if k else "0", x=f"{x:.1f}", y=base + 14, text_anchor="middle"))
    for run in runs:
        x = px(run["meta"]["vocab_size"])  # slanted, so that near sizes do not overwrite each other
        body.append(_el("text", str(run["meta"].get("tokenizer", "?")), x=f"{x:.1f}", y=base + 28,
                        text_anchor="end", class_="tokenizer", transform=f"rotate(-30 {x:.1f} {base + 28})"))
    body.append(_el("text", "vocabulary size (token ids)", x=LEFT + pw / 2, y=height - 8, text_anchor="middle"))
    body += _legend(LEFT + pw + 14, TOP + 10, names, {})
    y = TOP + 16 * len(names) + 24
    for i, line in enumerate(["runs (schemas, commit):"] + notes):
        body.append(_el("text", line, x=LEFT + pw + 14, y=y + 14 * i, font_size=10, fill="#444", class_="run"))
    return _svg(width, height, body)


def write_tbm_cdf(folder: str, engines: list[str] | None = None) -> str:
    """Write ``tbm_cdf.svg`` into a run's folder (its engines, or ``engines``); returns its path."""
    meta, records, engines = load_run(folder, engines)
    title = (f"Time between masks, tokenizer {meta.get('tokenizer')} ({meta.get('vocab_size', 0):,} ids), "
             f"commit {meta.get('commit')}")
    path = os.path.join(folder, "tbm_cdf.svg")
    with open(path, "w", encoding="utf-8") as f:
        f.write(tbm_distribution_svg(records, engines, title=title))
    return path


def write_vocabulary_curve(folders: Sequence[str], path: str, engines: list[str] | None = None) -> str:
    """Write the vocabulary curve of several runs' folders to ``path`` (a .svg file); returns it.
    With ``engines``, only those, and each run must have them all (ValueError otherwise)."""
    runs = []
    for folder in folders:
        meta, records, ran = load_run(folder, engines)
        if "vocab_size" not in meta:
            raise ValueError(f"{folder}/meta.json has no vocab_size")
        runs.append({"meta": meta, "records": records, "engines": ran})
    with open(path, "w", encoding="utf-8") as f:
        f.write(vocabulary_curve_svg(runs))
    return path
