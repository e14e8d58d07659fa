"""vLLM's CPU engine with each structured-output backend on the same batch of generated JSON
Schemas (tests.support.schema_generator: schemas no engine was tuned on), as a vLLM user compares
them: one setting switched, everything else equal. Each backend runs in a process of its own.

For each backend: how many requests it refuses, how many outputs are valid (jsonschema) and how
many were cut at ``max_tokens``; then output tokens/s over the requests every backend accepts (one
batch of those requests, greedy), and the time the backend's calls take per engine step, measured
by wrapping vLLM's own structured-output manager: ``fill`` (the batch's bitmask,
``grammar_bitmask``), ``accept`` (``accept_tokens``), ``compile`` (``_create_grammar``, on vLLM's
compile threads) and ``validate`` (the front-end's request check).

    python -m benchmarks.vllm_backends --count 24 --max-tokens 400
    python -m benchmarks.vllm_backends --backends stencil,xgrammar --count 8
    python -m benchmarks.vllm_backends --workload extraction --count 12 --speculate 0,4

``--speculate 0,4``: each backend without speculation and with vLLM's n-gram (prompt lookup)
speculation drafting 4 tokens, in separate processes; ``draft`` is then the time of the scheduler's
check of each draft against the grammar (``validate_tokens``), and ``fill`` holds the masks of every
draft position. ``--workload extraction``: documents whose values the answer copies
(tests.support.extraction_cases, seed 100 onwards: not the cases the tests use), where drafts hit.

Needs vLLM's CPU build in the interpreter that runs it (``make integrations-venv``, then
``.venv-integrations/bin/python -m benchmarks.vllm_backends``). stencil runs in the place of
vLLM's "guidance" backend (``stencil.integrations.vllm.install``); "guidance" is llguidance.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from benchmarks.prompts import schema_system_message
from tests.support.schema_generator import generated_schemas

BACKENDS = ("stencil", "guidance", "xgrammar")
_PHASES = ("fill", "accept", "draft", "compile", "validate")


def _timed(owner: Any, name: str, totals: dict, key: str) -> None:
    """Wrap ``owner.name`` so that its wall time adds to ``totals[key]`` (and its calls to ``key + '#'``)."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            totals[key] += time.perf_counter() - t
            totals[key + "#"] += 1
    setattr(owner, name, wrapper)


def _count_rows(manager: Any, totals: dict) -> None:
    """Count the masks each ``grammar_bitmask`` call fills (``totals["rows"]``): one per request and
    draft position. Backends whose requests write longer outputs fill more rows per step, so time
    per mask compares them where time per step does not."""
    original = manager.grammar_bitmask

    def grammar_bitmask(self, requests, ids, spec_tokens, *args, **kwargs):
        totals["rows"] += sum(1 + len(spec_tokens.get(rid, ())) for rid in ids)
        return original(self, requests, ids, spec_tokens, *args, **kwargs)
    manager.grammar_bitmask = grammar_bitmask


def _engine(backend: str, model_dir: str, max_model_len: int, totals: dict, speculate: int = 0):
    # in-process engine core: the hooks below see the scheduler's calls, and every backend pays
    # its grammar time on the step (vLLM's CPU executor runs the forward pass synchronously)
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    import vllm.sampling_params as vsp
    from vllm import LLM
    from vllm.v1.structured_output import StructuredOutputManager
    name = backend
    if backend == "stencil":
        import stencil.integrations.vllm as sv
        sv.install("guidance")
        name = "guidance"
    _timed(StructuredOutputManager, "grammar_bitmask", totals, "fill")
    _count_rows(StructuredOutputManager, totals)
    _timed(StructuredOutputManager, "accept_tokens", totals, "accept")
    _timed(StructuredOutputManager, "validate_tokens", totals, "draft")
    _timed(StructuredOutputManager, "_create_grammar", totals, "compile")
    _timed(vsp.SamplingParams, "_validate_structured_outputs", totals, "validate")
    spec = ({"method": "ngram", "num_speculative_tokens": speculate, "prompt_lookup_max": 5,
             "prompt_lookup_min": 2} if speculate else None)
    return LLM(model_dir, dtype="float32", max_model_len=max_model_len, enforce_eager=True, seed=0,
               structured_outputs_config={"backend": name}, speculative_config=spec)


def _run_batch(llm: Any, requests: list[tuple[int, str, dict]], max_tokens: int, totals: dict) -> dict:
    """Add each request (a refused one is recorded, not fatal), run the engine until all finish."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams
    engine = llm.llm_engine
    results: dict[int, dict] = {}
    for i, prompt, schema in requests:
        params = SamplingParams(temperature=0.0, max_tokens=max_tokens,
                                structured_outputs=StructuredOutputsParams(json=schema))
        try:
            engine.add_request(str(i), prompt, params)
        except Exception as e:   # noqa: BLE001 - the backend's refusal, whatever its type
            results[i] = {"status": "refused", "why": f"{type(e).__name__}: {str(e)[:200]}"}
    t0 = time.perf_counter()
    while engine.has_unfinished_requests():
        for out in engine.step():
            if out.finished:
                c = out.outputs[0]
                results[int(out.request_id)] = {"status": "done", "text": c.text, "tokens": len(c.token_ids),
                                                "finish_reason": c.finish_reason}
    wall = time.perf_counter() - t0
    # a step: a forward pass with constrained rows (one bitmask); engine.step() also returns
    # without a pass while grammars compile
    return {"results": results, "wall_s": wall, "steps": int(totals["fill#"]), "totals": dict(totals)}


def worker(backend: str, cases_file: str, out_file: str, model_dir: str, max_tokens: int, max_model_len: int,
           speculate: int = 0) -> None:
    """One backend, one process: every request of ``cases_file`` ({"ids": [...]} limits them)."""
    with open(cases_file, encoding="utf-8") as f:
        job = json.load(f)
    totals = {k + s: 0.0 for k in _PHASES for s in ("", "#")}
    totals["rows"] = 0
    t = time.perf_counter()
    llm = _engine(backend, model_dir, max_model_len, totals, speculate)
    load_s = time.perf_counter() - t
    tok = llm.get_tokenizer()
    requests = []
    for i, case in enumerate(job["cases"]):
        if job.get("ids") is not None and i not in job["ids"]:
            continue
        messages = [{"role": "system", "content": schema_system_message(case["schema"])},
                    {"role": "user", "content": case["prompt"]}]
        prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        requests.append((i, prompt, case["schema"]))
    run = _run_batch(llm, requests, max_tokens, totals)
    run["load_s"] = load_s
    with open(out_file, "w", encoding="utf-8") as f:
        json.dump(run, f)


def _verdict(case: dict, rec: dict) -> str:
    """refused / cut (finish reason "length") / valid / invalid."""
    import jsonschema
    if rec["status"] != "done":
        return "refused"
    if rec["finish_reason"] == "length":
        return "cut"
    try:
        jsonschema.validate(json.loads(rec["text"]), case["schema"], format_checker=jsonschema.FormatChecker())
    except (ValueError, jsonschema.ValidationError):
        return "invalid"
    return "valid"


def _spawn(backend: str, job: dict, args, tmp: str, tag: str, speculate: int = 0) -> dict:
    tag = f"{tag}-spec{speculate}"
    cases_file = os.path.join(tmp, f"{backend}-{tag}-cases.json")
    out_file = os.path.join(tmp, f"{backend}-{tag}-out.json")
    with open(cases_file, "w", encoding="utf-8") as f:
        json.dump(job, f)
    cmd = [sys.executable, "-m", "benchmarks.vllm_backends", "--worker", backend, "--cases", cases_file,
           "--result", out_file, "--model-dir", args.model_dir, "--max-tokens", str(args.max_tokens),
           "--max-model-len", str(args.max_model_len), "--speculate", str(speculate)]
    log = os.path.join(tmp, f"{backend}-{tag}.log")
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0 or not os.path.exists(out_file):
        with open(log) as f:
            tail = f.read()[-3000:]
        raise RuntimeError(f"the {backend} worker failed (exit {rc}); its log ends:\n{tail}")
    with open(out_file, encoding="utf-8") as f:
        run = json.load(f)
    run["results"] = {int(k): v for k, v in run["results"].items()}
    return run


def _per_step_ms(run: dict, phase: str) -> float:
    return 1000 * run["totals"][phase] / max(1, run["steps"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated: stencil, guidance, xgrammar")
    ap.add_argument("--count", type=int, default=24, help="generated schemas (one request each)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the schema generator")
    ap.add_argument("--max-tokens", type=int, default=400)
    ap.add_argument("--max-model-len", type=int, default=4096)
    ap.add_argument("--model-dir", help="the model as a transformers folder (default: the default model, "
                                        "converted once into a temporary folder)")
    ap.add_argument("--output", help="write the runs (JSON) here")
    ap.add_argument("--workload", choices=("schemas", "extraction"), default="schemas",
                    help="generated schemas (default) or extraction documents (tests.support.extraction_cases)")
    ap.add_argument("--speculate", default="0",
                    help="comma-separated draft lengths of vLLM's n-gram speculation, 0 for none (default 0)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--cases", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        specs = [int(x) for x in args.speculate.split(",")]
    except ValueError:
        ap.error(f"--speculate: comma-separated draft lengths, got {args.speculate!r}")
    if args.worker:
        worker(args.worker, args.cases, args.result, args.model_dir, args.max_tokens, args.max_model_len, specs[0])
        return 0
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown:
        ap.error(f"unknown backends {unknown}; expected some of {', '.join(BACKENDS)}")
    if min(specs) < 0:
        ap.error("--speculate: draft lengths must be >= 0")
    cases = _cases(args.workload, args.count, args.seed)
    with tempfile.TemporaryDirectory(prefix="stencil-vllm-bench-") as tmp:
        if not args.model_dir:
            from stencil.runtime.models import save_model_folder
            args.model_dir = save_model_folder(os.path.join(tmp, "model"))
        first = {(b, k): _spawn(b, {"cases": cases, "ids": None}, args, tmp, "all", k) for k in specs for b in backends}
        verdicts = {key: {i: _verdict(cases[i], r) for i, r in run["results"].items()} for key, run in first.items()}
        common = sorted(i for i in range(len(cases)) if all(v[i] != "refused" for v in verdicts.values()))
        timed = {}
        for key in first:   # the common requests alone, where a backend refused others
            accepted = [i for i, v in verdicts[key].items() if v != "refused"]
            timed[key] = first[key] if sorted(accepted) == common else _spawn(
                key[0], {"cases": cases, "ids": common}, args, tmp, "common", key[1])
    what = "generated schemas" if args.workload == "schemas" else "extraction documents"
    print(f"vLLM CPU, {len(cases)} {what} (seed {args.seed}), greedy, max_tokens {args.max_tokens}; "
          f"{len(common)} requests accepted by every backend")
    print(f"{'backend':10} {'spec':>4} {'refused':>7} {'valid':>5} {'invalid':>7} {'cut':>4} | common: {'valid':>5} "
          f"{'tokens':>6} {'tok/s':>6} {'x nospec':>8} {'steps':>5} {'ms/step':>7} {'fill':>6} {'accept':>6} "
          f"{'draft':>6} {'grammar':>7} {'masks':>5} {'us/mask':>7} {'compile':>8} {'validate':>8}")
    for (b, k), run in timed.items():
        counts = {c: sum(v == c for v in verdicts[b, k].values()) for c in ("refused", "valid", "invalid", "cut")}
        toks = sum(run["results"][i]["tokens"] for i in common)
        valid_common = sum(_verdict(cases[i], run["results"][i]) == "valid" for i in common)
        tot = run["totals"]
        base = timed.get((b, 0))
        ratio = f"{toks * base['wall_s'] / run['wall_s'] / max(1, sum(base['results'][i]['tokens'] for i in common)):7.2f}x" \
            if base is not None and k else f"{'':>8}"
        grammar = sum(_per_step_ms(run, p) for p in ("fill", "accept", "draft"))
        print(f"{b:10} {k:4} {counts['refused']:7} {counts['valid']:5} {counts['invalid']:7} {counts['cut']:4} | "
              f"{valid_common:5}/{len(common):<3} {toks:6} {toks / run['wall_s']:6.1f} {ratio} {run['steps']:5} "
              f"{1000 * run['wall_s'] / max(1, run['steps']):7.1f} {_per_step_ms(run, 'fill'):6.2f} "
              f"{_per_step_ms(run, 'accept'):6.2f} {_per_step_ms(run, 'draft'):6.2f} {grammar:7.2f} "
              f"{tot['rows'] / max(1, run['steps']):5.1f} "
              f"{1e6 * tot['fill'] / max(1, tot['rows']):7.1f} {tot['compile']:7.2f}s {tot['validate']:7.2f}s")
    print("spec: n-gram draft length (0: none); x nospec: tokens/s against the same backend without speculation; "
          "fill, accept, draft (validate_tokens on drafts): ms per engine step in the backend's calls, grammar: "
          "their sum; masks: masks filled per step (draft positions included), us/mask: fill time per mask; "
          "compile (vLLM's compile threads) and validate (front-end request check): seconds in all")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump({"cases": cases, "first": {f"{b}/{k}": r for (b, k), r in first.items()},
                       "timed": {f"{b}/{k}": r for (b, k), r in timed.items()}, "common": common}, f)
    return 0


def _cases(workload: str, count: int, seed: int) -> list[dict]:
    """The requests: a schema and a user prompt each."""
    if workload == "extraction":
        from tests.support.extraction_cases import extraction_cases
        # seeds from 100: the tests' extraction cases use small ones
        return [{"name": c.name, "schema": c.schema, "prompt": c.prompt} for c in extraction_cases(count, seed=100 + seed)]
    return [{"name": c.name, "schema": c.schema, "prompt": c.prompt} for c in generated_schemas(count, seed=seed)]


if __name__ == "__main__":
    sys.exit(main())
