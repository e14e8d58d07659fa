"""The JSON Schema Test Suite and MaskBench runs of stencil's JSON Schema compiler, shared by the
tests (``test_json_schema_suite.py``, ``test_json_schema_maskbench.py``, ...) and
``python -m benchmarks.json_schema_coverage``: every (schema, instance) pair compiled and the
instance fed token by token; a pair is *correct*, *unsupported* (the schema does not compile) or
*wrong* (an invalid instance accepted or a valid one rejected).

Example::

    info, encode = load_tokenizer("deepseek")
    res = run_suite(stencil.GrammarCompiler(info), encode)
    print_suite(res)
"""
from __future__ import annotations

import collections
import glob
import json
import os
import time

import stencil
from tests.support.datasets import JSON_SCHEMA_SUITE, default_maskbench

SUITE = JSON_SCHEMA_SUITE
MASKBENCH = default_maskbench()
SKIPPED_FILES = ("format.json", "content.json")

__all__ = ["SUITE", "MASKBENCH", "suite_registry", "suite_groups", "feed", "run_suite", "maskbench_files",
           "run_maskbench", "warm_up", "print_suite", "print_maskbench"]


def suite_registry(root: str = SUITE) -> dict:
    """The suite's remotes/ documents under the URIs its tests use (http://localhost:1234/...)."""
    out = {}
    base = os.path.join(root, "remotes")
    for path in glob.glob(os.path.join(base, "**", "*.json"), recursive=True):
        rel = os.path.relpath(path, base).replace(os.sep, "/")
        with open(path, encoding="utf-8") as f:
            out["http://localhost:1234/" + rel] = json.load(f)
    return out


def suite_groups(root: str = SUITE, draft: str = "draft2020-12") -> list:
    """(file name, group) for every test group of the draft's top-level files."""
    out = []
    for path in sorted(glob.glob(os.path.join(root, "tests", draft, "*.json"))):
        name = os.path.basename(path)
        if name in SKIPPED_FILES:
            continue
        with open(path, encoding="utf-8") as f:
            for group in json.load(f):
                out.append((name, group))
    return out


def feed(matcher, ids) -> bool:
    """Accept ``ids`` one by one; True when all are accepted and the result is complete."""
    for t in ids:
        if not matcher.accept_token(t):
            return False
    return matcher.is_accepting()


def run_suite(compiler, encode, root: str = SUITE, **options) -> dict:
    """{file: Counter(correct/unsupported/wrong_valid/wrong_invalid)} plus "_wrong" details."""
    registry = suite_registry(root)
    counts: dict = collections.defaultdict(collections.Counter)
    details = []
    opts = dict(property_order="any")
    opts.update(options)
    for name, group in suite_groups(root):
        try:
            g = compiler.compile_json_schema(group["schema"], registry=registry, **opts)
        except (stencil.GrammarError, stencil.LimitError) as e:
            counts[name]["unsupported"] += len(group["tests"])
            details.append(("unsupported", name, group["description"], str(e).split("\n")[0]))
            continue
        for t in group["tests"]:
            text = json.dumps(t["data"])
            ok = feed(stencil.Matcher(g), encode(text))
            if ok == t["valid"]:
                counts[name]["correct"] += 1
            else:
                kind = "wrong_valid" if t["valid"] else "wrong_invalid"
                counts[name][kind] += 1
                details.append((kind, name, group["description"], t["description"] + ": " + text[:120]))
    return {"counts": dict(counts), "details": details}


def maskbench_files(root: str = MASKBENCH, limit: int | None = None, step: int = 1) -> list:
    """The MaskBench files of ``root``, sorted: every ``step``-th, at most ``limit``."""
    return sorted(glob.glob(os.path.join(root, "*.json")))[::step][:limit]


def run_maskbench(compiler, encode, files, **options) -> dict:
    """Each schema of ``files`` compiled (its time taken) and its instances fed: the counts
    ``print_maskbench`` prints."""
    opts = dict(property_order="any")
    opts.update(options)
    res = {"schemas": 0, "compiled": 0, "passed": 0, "validation_errors": 0, "invalidation_errors": 0,
           "compile_ms": [], "compile_cpu_ms": [], "errors": collections.Counter(), "wrong": []}
    for path in files:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        res["schemas"] += 1
        c0, t0 = time.thread_time(), time.perf_counter()
        try:
            g = compiler.compile_json_schema(doc["schema"], **opts)
        except (stencil.GrammarError, stencil.LimitError) as e:
            msg = str(e).split("\n")[0]
            res["errors"][_reason(msg)] += 1
            continue
        res["compile_ms"].append((time.perf_counter() - t0) * 1e3)
        res["compile_cpu_ms"].append((time.thread_time() - c0) * 1e3)
        res["compiled"] += 1
        bad_valid = bad_invalid = False
        for t in doc["tests"]:
            text = json.dumps(t["data"], indent=None, ensure_ascii=False)
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                continue
            ok = feed(stencil.Matcher(g), encode(text))
            if ok != t["valid"]:
                if t["valid"]:
                    bad_valid = True
                else:
                    bad_invalid = True
                res["wrong"].append(("valid rejected" if t["valid"] else "invalid accepted",
                                     os.path.basename(path), text[:160]))
        res["validation_errors"] += bad_valid
        res["invalidation_errors"] += bad_invalid
        res["passed"] += not (bad_valid or bad_invalid)
    return res


def _reason(msg: str) -> str:
    """A short class for a compile error message: its keyword and gist, without the pointer."""
    if msg.startswith("JSON Schema: "):
        msg = msg[len("JSON Schema: "):]
    if " at " in msg and ": " in msg.split(" at ", 1)[1]:
        keyword, rest = msg.split(" at ", 1)
        return f"{keyword}: {rest.split(': ', 1)[1]}"[:110]
    return msg[:110]


def _pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100 * len(xs)))]


def warm_up() -> None:
    """Parse the format regexes once (a per-process cost, kept out of per-schema times)."""
    from stencil.grammar.json.schema.core.formats import SUPPORTED_FORMATS, format_spec
    for name in SUPPORTED_FORMATS:
        format_spec(name)


def print_suite(res) -> None:
    counts = res["counts"]
    total = collections.Counter()
    print(f"{'file':34s} {'pairs':>5s} {'correct':>7s} {'unsupp.':>7s} {'wrong':>5s}")
    for name in sorted(counts):
        c = counts[name]
        n = sum(c.values())
        wrong = c["wrong_valid"] + c["wrong_invalid"]
        print(f"{name:34s} {n:5d} {c['correct']:7d} {c['unsupported']:7d} {wrong:5d}")
        total.update(c)
    n = sum(total.values())
    print(f"{'total':34s} {n:5d} {total['correct']:7d} {total['unsupported']:7d} "
          f"{total['wrong_valid'] + total['wrong_invalid']:5d}  (valid rejected {total['wrong_valid']}, "
          f"invalid accepted {total['wrong_invalid']})")
    for d in res["details"]:
        if d[0] != "unsupported":
            print("  WRONG", *d)


def print_maskbench(res) -> None:
    n = res["schemas"]
    ms = res["compile_ms"]
    print(f"MaskBench: {n} schemas, {res['compiled']} compile ({100 * res['compiled'] / max(n, 1):.1f}%), "
          f"{res['passed']} pass; schemas with validation errors (valid rejected): "
          f"{res['validation_errors']}, with invalidation errors (invalid accepted): {res['invalidation_errors']}")
    for label, xs in (("wall", ms), ("CPU of the compiling thread", res["compile_cpu_ms"])):
        print(f"compile time per schema, {label} (ms): p50 {_pct(xs, 50):.2f}  p90 {_pct(xs, 90):.2f}  "
              f"p99 {_pct(xs, 99):.2f}  max {max(xs) if xs else float('nan'):.1f}  "
              f"mean {sum(xs) / max(len(xs), 1):.2f}")
    print("compile errors by reason:")
    for reason, k in res["errors"].most_common(25):
        print(f"  {k:5d}  {reason}")
    for w in res["wrong"][:40]:
        print("  WRONG", *w)

