"""Command line of the MaskBench harness: ``python -m benchmarks.maskbench`` (from the
repository root; ``add_arguments``/``run`` embed it in another parser).

Example::

    python -m benchmarks.maskbench ../shared/data/maskbench-dev --tokenizer deepseek \\
        --engines stencil,llguidance,xgrammar,outlines --limit 200 --output /tmp/mb
    python -m benchmarks.maskbench --report /tmp/mb
    python -m benchmarks.maskbench --vocabulary-curve /tmp/mb_smollm2 /tmp/mb_gemma3 --plot-output curve.svg

A run and ``--report`` also write the TBM distribution, ``tbm_cdf.svg``, into the run's folder.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile

from benchmarks.maskbench.cpus import plan_cpus
from tests.support.datasets import default_maskbench
from benchmarks.maskbench.data import HALVES, list_files
from benchmarks.maskbench.engines import ENGINES, available, pip_name, split_build
from tests.support.tokenizers import NAMES

DEFAULT_DATA = default_maskbench()  # ../shared/data/maskbench-dev, else the sample in tests/data
DESCRIPTION = ("Side-by-side MaskBench: time to first mask (TTFM) and time between masks (TBM) of stencil "
               "and the reference engines on JSON Schema test files, each engine in its own worker process.")


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the harness's options to ``parser``."""
    parser.add_argument("paths", nargs="*", metavar="FILES or DIR",
                        help=f"MaskBench .json files or folders of them (default {DEFAULT_DATA})")
    parser.add_argument("--tokenizer", default="deepseek", choices=NAMES, help="tokenizer (default deepseek)")
    parser.add_argument("--engines", default=None,
                        help=f"comma-separated, from {','.join(ENGINES)} (default: all that are installed); "
                             "stencil engines may end in @DIR, another build of stencil (an unpacked wheel) "
                             "run beside this one")
    parser.add_argument("--limit", type=int, default=None, help="only N files (after shuffling with --seed)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the file order (default 0)")
    parser.add_argument("--half", choices=HALVES, default=None,
                        help="only the files of one half of the set, split by a hash of the file name: look at "
                             "outliers in 'tuning', report figures on 'check' (default: all)")
    parser.add_argument("--time-limit", type=float, default=60.0, metavar="SECONDS",
                        help="per schema and engine, compile and all tests; past it the worker is killed "
                             "and the schema counts as a timeout (default 60)")
    parser.add_argument("--mem-limit", type=float, default=8.0, metavar="GB",
                        help="resident memory of a worker; past it the schema counts as out of memory (default 8)")
    parser.add_argument("--pin", default="auto", metavar="auto|off|CPU",
                        help="give the workers a CPU of their own, apart from the harness: auto (the last CPU, "
                             "when there are two or more), off, or a CPU number (default auto)")
    parser.add_argument("--output", default=None, metavar="DIR",
                        help="folder for results.jsonl, meta.json, report.txt and logs (default: a new temporary folder)")
    parser.add_argument("--resume", action="store_true", help="continue the run already in --output")
    parser.add_argument("--report", default=None, metavar="DIR",
                        help="only print the tables of an earlier run (of its engines named by --engines, if given) "
                             "and write its tbm_cdf.svg")
    parser.add_argument("--vocabulary-curve", nargs="+", default=None, metavar="DIR",
                        help="only plot TBM mean and p99 against vocabulary size, one point per earlier run "
                             "(folders of runs with different --tokenizer), into --plot-output")
    parser.add_argument("--plot-output", default=None, metavar="FILE",
                        help="the SVG file --vocabulary-curve writes (default vocabulary_curve.svg)")
    return parser


def _engines(spec: str | None) -> tuple[list[str], list[str]]:
    """(engines to run, error messages)."""
    if spec is None:
        return [e for e in ENGINES if available(e)], []
    names = [s.strip() for s in spec.split(",") if s.strip()]
    errors = [f"unknown engine {n!r}; known: {', '.join(ENGINES)} (a stencil engine may end in @DIR: another build)"
              for n in names if split_build(n)[0] not in ENGINES]
    if errors:
        return [], errors
    errors = [f"engine {n!r} is not installed: pip install {pip_name(n)} (all of them: make bench-deps)"
              for n in names if not available(n)]
    if len(set(names)) != len(names):
        errors.append(f"an engine is named twice in {spec!r}")
    return names, errors


def run(args: argparse.Namespace) -> int:
    """Run the harness with parsed arguments; the exit code."""
    from benchmarks.maskbench.plots import write_vocabulary_curve
    from benchmarks.maskbench.runner import report_from_folder, run_benchmark
    only = [s.strip() for s in args.engines.split(",") if s.strip()] if args.engines else None
    if args.plot_output and not args.vocabulary_curve:
        print("maskbench: --plot-output goes with --vocabulary-curve", file=sys.stderr)
        return 2
    if args.vocabulary_curve:
        if args.report:
            print("maskbench: --report and --vocabulary-curve are two different commands", file=sys.stderr)
            return 2
        code, path = _from_runs(lambda: write_vocabulary_curve(args.vocabulary_curve,
                                                               args.plot_output or "vocabulary_curve.svg", only))
        if path:
            print(f"vocabulary curve: {path}", file=sys.stderr)
        return code
    if args.report:
        code, text = _from_runs(lambda: report_from_folder(args.report, only))
        if code:
            return code
        print(text, end="")
        _write_tbm_cdf(args.report, only)
        return 0
    engines, errors = _engines(args.engines)
    if not errors and not engines:
        errors = ["no engine to run"]
    if args.limit is not None and args.limit < 1:
        errors.append(f"--limit must be at least 1, got {args.limit}")
    if args.time_limit <= 0:
        errors.append(f"--time-limit must be positive, got {args.time_limit:g}")
    cpu_plan = None
    try:
        cpu_plan = plan_cpus(getattr(args, "pin", "auto"))
    except ValueError as e:
        errors.append(str(e))
    paths = args.paths or [DEFAULT_DATA]
    try:
        files = list_files(paths, args.limit, args.seed, args.half)
    except FileNotFoundError as e:
        errors.append(str(e))
        files = []
    if not errors and not files:
        errors.append(f"no .json files in {', '.join(paths)}")
    if errors:
        for e in errors:
            print(f"maskbench: {e}", file=sys.stderr)
        return 2
    output = args.output or tempfile.mkdtemp(prefix="maskbench-")
    argv = getattr(args, "argv", None)  # set by main(); absent when another program parsed the arguments
    if argv is not None:
        command = "python -m benchmarks.maskbench " + " ".join(shlex.quote(a) for a in argv)
    else:
        command = " ".join(shlex.quote(a) for a in [os.path.basename(sys.argv[0])] + sys.argv[1:])
    print(f"{len(files)} files, engines {', '.join(engines)}, tokenizer {args.tokenizer}; results in {output}",
          file=sys.stderr)
    code, text = run_benchmark(files, engines, args.tokenizer, output, args.time_limit, args.mem_limit,
                               args.resume, command=command.strip(), data_paths=paths, cpu_plan=cpu_plan)
    if text:
        print(text, end="")
    if code == 0:
        _write_tbm_cdf(output, engines)
    return code


def _from_runs(make):
    """(0, what ``make`` returns), or (2, None) after saying why it could not read an earlier run."""
    try:
        return 0, make()
    except FileNotFoundError as e:
        print(f"no MaskBench run in {os.path.dirname(e.filename or '')!r}: {e}", file=sys.stderr)
    except (ValueError, OSError) as e:
        print(f"maskbench: {e}", file=sys.stderr)
    return 2, None


def _write_tbm_cdf(folder: str, engines: list[str] | None) -> None:
    """Write the run's tbm_cdf.svg and say where; a plot it cannot write (a read-only folder) is
    only a warning, as the tables are out already."""
    from benchmarks.maskbench.plots import write_tbm_cdf
    try:
        print(f"TBM distribution: {write_tbm_cdf(folder, engines)}", file=sys.stderr)
    except OSError as e:
        print(f"maskbench: could not write the TBM plot: {e}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.maskbench", description=DESCRIPTION)
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    return run(args)
