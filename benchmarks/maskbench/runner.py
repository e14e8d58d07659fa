"""Runs MaskBench files through every engine's worker, writes raw records, prints the tables.

Engines run one after another on each schema (never two at once: on a 2-core machine a second
busy process would slow the first), in an order rotated from schema to schema so that no engine
always runs right after another's cache-warming work. Each record is written as soon as it is
made, so an interrupted run keeps what it did and ``--resume`` picks up from there.

Files in the output folder: ``results.jsonl`` (one record per engine and schema, times in ns),
``meta.json`` (command, commit, machine, versions), ``report.txt`` (the printed tables) and
``logs/<engine>.log`` (what the engines wrote to stdout and stderr).

Example::

    code = run_benchmark(files, engines=["stencil", "llguidance"], tokenizer="deepseek",
                         output="/tmp/mb", time_limit=60)
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time

import numpy as np

from benchmarks.maskbench.cpus import CpuPlan, pinned
from benchmarks.maskbench.data import load_task
from benchmarks.maskbench.stats import by_engine as group, passed_by_all, summarize
from benchmarks.maskbench.tables import common_table, engine_table, targets
from benchmarks.maskbench.worker import Worker, WorkerError


def machine_description() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        mem = f", {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB"
    except (ValueError, OSError):
        pass
    return f"{cpu}, {os.cpu_count()} CPUs{mem}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


#: what git_commit adds to the commit of a checkout with uncommitted changes
UNCOMMITTED = "+uncommitted changes"


def git_commit() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (rev + (UNCOMMITTED if dirty else "")) if rev else "unknown"


def load_records(path: str) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                r = json.loads(line)
                r["tbm_ns"] = np.asarray(r.get("tbm_ns") or (), dtype=np.int64)
                out.append(r)
    return out


def report(records: list[dict], engines: list[str], files: set[str] | None, header: str) -> str:
    """The two tables (and issue 6's targets) for the records of ``engines`` on ``files``."""
    by_engine = group(records, engines, files)
    if not by_engine:
        return header + "\nno results\n"
    lines = [header, "", "All schemas:", engine_table({e: summarize(rs) for e, rs in by_engine.items()})]
    common = passed_by_all(by_engine)
    common_s = {e: summarize(rs, only=common) for e, rs in by_engine.items()}
    note = "; ratio below 1: stencil faster" if "stencil" in by_engine and len(by_engine) > 1 else ""
    lines += ["", f"On the {len(common):,} schemas every engine passed ({', '.join(by_engine)}{note}):",
              common_table(common_s)]
    t = targets(common_s)
    if t:
        lines += ["", "Issue 6 targets on those schemas:"]
        lines += [f"  {'met   ' if ok else 'MISSED'}  {text}" for text, ok in t]
    if "stencil" in by_engine:
        lines += ["", "stencil's slowest schemas (where to look first):"] + slowest(by_engine["stencil"])
    return "\n".join(lines) + "\n"


def slowest(records: list[dict], n: int = 5) -> list[str]:
    """Lines naming the schemas with the highest single TBM, the highest TTFM, and the timeouts
    and crashes of one engine's records."""
    timed = [r for r in records if len(r["tbm_ns"])]
    by_tbm = sorted(timed, key=lambda r: -int(r["tbm_ns"].max()))[:n]
    by_ttfm = sorted((r for r in records if r.get("ttfm_ns") is not None), key=lambda r: -r["ttfm_ns"])[:n]
    out = ["  max TBM: " + ", ".join(f"{r['file']} {r['tbm_ns'].max() / 1e3:,.0f} us" for r in by_tbm),
           "  TTFM:    " + ", ".join(f"{r['file']} {r['ttfm_ns'] / 1e6:,.1f} ms" for r in by_ttfm)]
    bad = [f"{r['file']} ({r['status']})" for r in records if r["status"] in ("timeout", "crash", "oom")]
    if bad:
        out.append(f"  timeouts, crashes, out of memory ({len(bad)}): " + ", ".join(bad[:20]) + (" ..." if len(bad) > 20 else ""))
    return out


def _progress(done: int, total: int, t0: float, counts: dict[str, dict[str, int]]) -> str:
    el = time.monotonic() - t0
    parts = [f"{e} {c.get('passing', 0)} ok/{sum(c.values())}" for e, c in counts.items()]
    return f"[{done:>5}/{total}] {el / 60:5.1f} min  " + "  ".join(parts)


def _file_name(engine: str) -> str:
    """An engine's name as a file name (``stencil@/tmp/old`` -> ``stencil@_tmp_old``)."""
    return engine.replace(os.sep, "_")


def run_benchmark(files: list[str], engines: list[str], tokenizer: str, output: str, time_limit: float,
                  mem_limit_gb: float | None = 8.0, resume: bool = False, command: str = "",
                  data_paths: list[str] | None = None, stream=None,
                  cpu_plan: CpuPlan | None = None) -> tuple[int, str]:
    """Run every file on every engine; returns (exit code, report text). With ``cpu_plan`` the
    workers and this process are pinned apart (see cpus.py) for the run."""
    stream = stream or sys.stderr  # looked up per call: sys.stderr may have been replaced since import
    with pinned(cpu_plan.harness if cpu_plan else None):
        return _run_benchmark(files, engines, tokenizer, output, time_limit, mem_limit_gb, resume, command,
                              data_paths, stream, cpu_plan)


def _run_benchmark(files, engines, tokenizer, output, time_limit, mem_limit_gb, resume, command, data_paths,
                   stream, cpu_plan) -> tuple[int, str]:
    from tests.support.tokenizers import load_tokenizer

    os.makedirs(os.path.join(output, "logs"), exist_ok=True)
    results_path = os.path.join(output, "results.jsonl")
    previous = _previous_records(results_path, resume, stream)
    if previous is None:
        return 2, ""
    done = {(r["engine"], r["file"]) for r in previous}

    info, encode = load_tokenizer(tokenizer)
    if getattr(info, "add_prefix_space", False):
        print(f"warning: the {tokenizer} tokenizer's encoder puts a space before the text (SentencePiece's dummy "
              f"prefix), so every instance starts with a space that JSON grammars may refuse", file=stream)
    mem = int(mem_limit_gb * 2**30) if mem_limit_gb else None
    workers = {e: Worker(e, tokenizer, os.path.join(output, "logs", f"{_file_name(e)}.log"), mem_limit_bytes=mem,
                         cpus=cpu_plan.workers if cpu_plan else None) for e in engines}
    meta = {"command": command, "commit": git_commit(), "machine": machine_description(), "tokenizer": tokenizer,
            "vocab_size": info.vocab_size, "engines": {}, "time_limit_s": time_limit, "mem_limit_gb": mem_limit_gb,
            "files": len(files), "data": data_paths or [],
            "cpus": cpu_plan.describe() if cpu_plan else "not pinned",
            "started": datetime.datetime.now().isoformat(timespec="seconds")}
    if not _start_workers(workers, meta, stream):
        return 2, ""
    with open(os.path.join(output, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)

    records = [r for r in previous if r["engine"] in workers]
    _run_files(files, engines, workers, encode, time_limit, done, records, results_path, stream)
    meta["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    meta["worker_restarts"] = {e: w.restarts for e, w in workers.items()}
    with open(os.path.join(output, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    text = report(records, engines, {os.path.basename(p) for p in files}, describe_run(meta))
    with open(os.path.join(output, "report.txt"), "w") as f:
        f.write(text)
    return 0, text


def _previous_records(results_path: str, resume: bool, stream) -> list[dict] | None:
    """The records of an earlier run in the output folder ([] when none); None when there is one
    and ``resume`` was not asked for (the caller stops)."""
    if not (os.path.exists(results_path) and os.path.getsize(results_path) > 0):
        return []
    if not resume:
        print(f"{results_path} exists: pass --resume to continue that run, or another --output", file=stream)
        return None
    return load_records(results_path)


def _start_workers(workers: dict, meta: dict, stream) -> bool:
    """Start every engine's worker, noting its version in ``meta``; False (all killed) when one fails."""
    try:
        for e, w in workers.items():
            msg = w.start()
            meta["engines"][e] = {"version": msg["version"], "tokenizer": msg["tokenizer_source"],
                                  "setup_s": round(msg["init_s"], 2)}
            print(f"{e} {msg['version']}: ready in {msg['init_s']:.1f} s (tokenizer from {msg['tokenizer_source']})",
                  file=stream)
    except WorkerError as err:
        for w in workers.values():
            w.kill()
        print(str(err), file=stream)
        return False
    return True


def _run_files(files, engines, workers, encode, time_limit, done, records, results_path, stream) -> None:
    """Run each file not ``done`` on each engine, appending to ``records`` and to results.jsonl;
    the workers are stopped at the end, whatever happens."""
    counts = {e: {} for e in engines}
    for r in records:
        counts[r["engine"]][r["status"]] = counts[r["engine"]].get(r["status"], 0) + 1
    t0 = time.monotonic()
    last_note = t0
    old_term = None
    if threading.current_thread() is threading.main_thread():
        # `kill PID` of a background run: stop the workers and keep what was written
        old_term = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        with open(results_path, "a", encoding="utf-8") as out:
            for i, path in enumerate(files):
                name = os.path.basename(path)
                todo = [e for e in engines if (e, name) not in done]
                if todo:
                    task = load_task(path, encode)
                    k = i % len(todo)
                    for e in todo[k:] + todo[:k]:
                        rec = _run_one(workers[e], e, name, task, time_limit, out)
                        records.append(rec)
                        counts[e][rec["status"]] = counts[e].get(rec["status"], 0) + 1
                now = time.monotonic()
                if now - last_note > 30 or i + 1 == len(files):
                    print(_progress(i + 1, len(files), t0, counts), file=stream, flush=True)
                    last_note = now
    finally:
        for w in workers.values():
            w.stop()
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)


def _run_one(worker, engine: str, name: str, task: dict, time_limit: float, out) -> dict:
    """One file on one engine: its record, also written (and flushed) to ``out``."""
    rec = worker.run(task, time_limit)
    rec.update(engine=engine, file=name)
    rec.setdefault("num_tests", len(task["tests"]))
    rec.setdefault("skipped_tests", task["skipped_tests"])
    rec["tbm_ns"] = np.asarray(rec.get("tbm_ns") or (), dtype=np.int64)
    out.write(json.dumps({**rec, "tbm_ns": rec["tbm_ns"].tolist()}) + "\n")
    out.flush()
    return rec


def describe_run(meta: dict) -> str:
    engines = ", ".join(f"{e} {v['version']}" for e, v in meta.get("engines", {}).items())
    return (f"MaskBench: {meta.get('files', '?'):,} schema files, tokenizer {meta.get('tokenizer')} "
            f"({meta.get('vocab_size', '?'):,} ids), time limit {meta.get('time_limit_s')} s per schema\n"
            f"engines: {engines}\ncommit {meta.get('commit')}; machine: {meta.get('machine')}"
            f"{'; ' + meta['cpus'] if meta.get('cpus') else ''}\n"
            f"command: {meta.get('command')}")


def load_run(folder: str, engines: list[str] | None = None) -> tuple[dict, list[dict], list[str]]:
    """(meta.json, the records of results.jsonl, the engines to look at) of an earlier run: all the
    engines it ran, or ``engines`` (ValueError if one of them did not run)."""
    with open(os.path.join(folder, "meta.json"), encoding="utf-8") as f:
        meta = json.load(f)
    records = load_records(os.path.join(folder, "results.jsonl"))
    ran = list(meta.get("engines") or dict.fromkeys(r["engine"] for r in records))
    missing = [e for e in engines or () if e not in ran]
    if missing:
        raise ValueError(f"{folder} has no results for {', '.join(missing)} (engines: {', '.join(ran)})")
    return meta, records, list(engines or ran)


def report_from_folder(folder: str, engines: list[str] | None = None) -> str:
    """The report of an earlier run, recomputed from its results.jsonl and meta.json, for all its
    engines or only ``engines`` (which also narrows the schemas "every engine passed")."""
    meta, records, engines = load_run(folder, engines)
    return report(records, engines, None, describe_run(meta))
