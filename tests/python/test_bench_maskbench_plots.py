"""The MaskBench harness's SVG plots (benchmarks/maskbench/plots.py): the TBM CDF of a run and the
TBM-against-vocabulary-size curve of several runs, both on the schemas every engine passed, and
the command line that writes them (--report, after a run, --vocabulary-curve)."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np

from benchmarks.maskbench import main
from benchmarks.maskbench.plots import cdf_points, tbm_distribution_svg, vocabulary_curve_svg

NS = "{http://www.w3.org/2000/svg}"
ENGINES = ["stencil", "llguidance", "xgrammar"]


def _rec(engine, file, status, tbm_us=()):
    return {"engine": engine, "file": file, "status": status, "num_tests": 1, "skipped_tests": 0,
            "ttfm_ns": 1000 if status != "compile_error" else None, "tbm_ns": [int(t * 1000) for t in tbm_us]}


def _records(scale=1.0):
    """Schemas a and b pass everywhere; c fails on llguidance, and stencil's 5 s step there must
    not show (xgrammar passes c too: on stencil and xgrammar alone c counts)."""
    rng = np.random.default_rng(0)
    out = []
    for i, e in enumerate(ENGINES):
        for f in ("a", "b"):
            out.append(_rec(e, f, "passing", (rng.uniform(1, 300, 500) * (i + 1) * scale).tolist()))
    out.append(_rec("stencil", "c", "passing", [5_000_000, 3]))
    out.append(_rec("llguidance", "c", "validation_error", [4]))
    out.append(_rec("xgrammar", "c", "passing", [2, 2]))
    return out


def _parse(svg):
    return ET.fromstring(svg)  # raises on malformed XML


def _curves(root, panel=None):
    return {c.get("data-engine"): [tuple(map(float, p.split(","))) for p in c.get("points").split()]
            for c in root.iter(f"{NS}polyline") if c.get("class") == "curve" and panel in (None, c.get("data-panel"))}


def _texts(root, cls):
    return [t.text for t in root.iter(f"{NS}text") if t.get("class") == cls]


def test_cdf_points_are_exact_at_the_ends_and_count_ties():
    x, y = cdf_points(np.array([3, 1, 2, 2]))
    assert x.tolist() == [1, 2, 2, 3] and y.tolist() == [0.25, 0.75, 0.75, 1.0]
    x, y = cdf_points(np.arange(100_000)[::-1], max_points=400)
    assert len(x) <= 400 and x[0] == 0 and x[-1] == 99_999 and y[-1] == 1.0
    assert np.all(np.diff(x) > 0) and abs(y[len(y) // 2] - 0.5) < 0.01


def test_tbm_cdf_has_a_monotone_curve_per_engine_on_the_common_schemas():
    root = _parse(tbm_distribution_svg(_records(), ENGINES))
    curves = _curves(root)
    assert sorted(curves) == sorted(ENGINES)
    assert _texts(root, "legend") == ENGINES
    frame = next(r for r in root.iter(f"{NS}rect") if r.get("class") == "frame")
    top, left = float(frame.get("y")), float(frame.get("x"))
    right = left + float(frame.get("width"))
    for pts in curves.values():
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        assert all(b >= a for a, b in zip(xs, xs[1:])) and all(b <= a for a, b in zip(ys, ys[1:]))
        assert ys[-1] == top and left <= xs[0] and xs[-1] <= right  # ends at fraction 1, inside the frame
        assert 2 < len(pts) <= 400
    # the slowest engine (xgrammar: 3x stencil's times) lies right of the fastest at the median
    mid = {e: pts[len(pts) // 2][0] for e, pts in curves.items()}
    assert mid["xgrammar"] > mid["llguidance"] > mid["stencil"]
    # schema c is left out: the axis ends at 1 ms (times up to 900 us), not at 10 s (stencil's 5 s step)
    assert _texts(root, "tick-x")[-1] == "1 ms"
    # ... but counts where every engine named passed it
    both = _parse(tbm_distribution_svg(_records(), ["stencil", "xgrammar"]))
    assert sorted(_curves(both)) == ["stencil", "xgrammar"] and _texts(both, "tick-x")[-1] == "10 s"


def _write_run(folder, tokenizer, vocab_size, scale, engines=ENGINES):
    folder.mkdir(exist_ok=True)
    (folder / "meta.json").write_text(json.dumps({"command": "test", "commit": "abc", "files": 3, "tokenizer": tokenizer,
                                                  "vocab_size": vocab_size, "engines": {e: {"version": "1"} for e in engines}}))
    with open(folder / "results.jsonl", "w") as f:
        for r in _records(scale):
            if r["engine"] in engines:
                f.write(json.dumps(r) + "\n")
    return str(folder)


def test_report_writes_tbm_cdf_into_the_run_folder(tmp_path, capsys):
    run = _write_run(tmp_path / "run", "deepseek", 129280, 1.0)
    assert main(["--report", run]) == 0
    out = capsys.readouterr()
    assert "All schemas:" in out.out and f"{run}/tbm_cdf.svg" in out.err
    assert sorted(_curves(_parse((tmp_path / "run" / "tbm_cdf.svg").read_text()))) == sorted(ENGINES)
    assert main(["--report", run, "--engines", "stencil,xgrammar"]) == 0  # --engines narrows the plot too
    assert sorted(_curves(_parse((tmp_path / "run" / "tbm_cdf.svg").read_text()))) == ["stencil", "xgrammar"]


def test_a_run_writes_tbm_cdf(tmp_path, capsys, monkeypatch):
    from benchmarks.maskbench import runner

    def fake_run(files, engines, tokenizer, output, *args, **kwargs):  # what a run leaves, without running
        _write_run(tmp_path / "out", tokenizer, 129280, 1.0, engines)
        return 0, "tables\n"
    (tmp_path / "x.json").write_text("{}")
    monkeypatch.setattr(runner, "run_benchmark", fake_run)
    assert main([str(tmp_path / "x.json"), "--engines", "stencil", "--output", str(tmp_path / "out"),
                 "--pin", "off"]) == 0
    assert "tbm_cdf.svg" in capsys.readouterr().err
    assert list(_curves(_parse((tmp_path / "out" / "tbm_cdf.svg").read_text()))) == ["stencil"]


def test_vocabulary_curve_orders_runs_by_vocabulary_size(tmp_path, capsys):
    # given out of order; times grow with the vocabulary (scale)
    runs = [_write_run(tmp_path / "qwen", "qwen", 151851, 2.0), _write_run(tmp_path / "smol", "smollm2", 49152, 1.0),
            _write_run(tmp_path / "gemma", "gemma3", 262144, 3.0)]
    out = tmp_path / "curve.svg"
    assert main(["--vocabulary-curve", *runs, "--plot-output", str(out)]) == 0
    assert str(out) in capsys.readouterr().err
    root = _parse(out.read_text())
    assert _texts(root, "tokenizer") == ["smollm2", "qwen", "gemma3"]
    for panel in ("mean", "p99"):
        curves = _curves(root, panel)
        assert sorted(curves) == sorted(ENGINES)
        for pts in curves.values():
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            assert len(pts) == 3 and xs == sorted(xs) and xs[0] < xs[1] < xs[2]
            assert ys[0] > ys[1] > ys[2]  # higher up the bigger the vocabulary: each point kept its run's times
    assert sorted(_texts(root, "legend")) == sorted(ENGINES)
    # stencil's mean in each run is on schemas a and b only (c's 5 s step would make it ~5,000 us)
    titles = [t.text for t in root.iter(f"{NS}title") if t.text.startswith("stencil")]
    means = [float(t.split(": ")[1].split(" us")[0].replace(",", "")) for t in titles[:3]]
    assert all(100 < m < 1000 for m in means), means


def test_vocabulary_curve_skips_an_engine_a_run_lacks():
    runs = [{"meta": {"tokenizer": t, "vocab_size": v}, "records": [r for r in _records() if r["engine"] in es],
             "engines": es} for t, v, es in (("a", 2, ENGINES), ("b", 1, ["stencil", "llguidance"]))]
    curves = _curves(_parse(vocabulary_curve_svg(runs)), "mean")
    assert len(curves["stencil"]) == 2 and len(curves["xgrammar"]) == 1


def test_plot_options_errors(tmp_path, capsys):
    run = _write_run(tmp_path / "run", "qwen", 151851, 1.0)
    assert main(["--plot-output", str(tmp_path / "x.svg")]) == 2
    assert "--plot-output goes with --vocabulary-curve" in capsys.readouterr().err
    assert main(["--vocabulary-curve", str(tmp_path / "nope")]) == 2
    assert f"no MaskBench run in {str(tmp_path / 'nope')!r}" in capsys.readouterr().err
    assert main(["--vocabulary-curve", run, "--engines", "outlines"]) == 2
    assert "has no results for outlines" in capsys.readouterr().err
    assert main(["--vocabulary-curve", run, "--report", run]) == 2
    assert not (tmp_path / "x.svg").exists() and not (tmp_path / "run" / "tbm_cdf.svg").exists()


def test_tbm_cdf_stays_small():
    recs = [_rec(e, "a", "passing", np.random.default_rng(1).lognormal(3, 1, 200_000)) for e in ENGINES]
    assert len(tbm_distribution_svg(recs, ENGINES)) < 60_000
