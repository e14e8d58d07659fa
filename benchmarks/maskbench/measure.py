"""The MaskBench measurement of one schema on one engine, run inside a worker process.

TTFM: ``engine.compile(schema)``, which compiles the schema and creates a matcher ready for its
first mask. Then for each test: reset the matcher, and for each token time TBM = compute the mask
+ test the token's bit + accept the token (only if the mask allows it, as a sampler would). A
valid instance must have every token allowed and accepted, and EOS allowed by the mask after the
last token; an invalid one must fail somewhere (a token refused, or EOS not allowed at the end).
The EOS check is not timed. A budget engine (``session.budget``) fills with the tokens that may
still be generated: a fixed count, or this token and those after it in the instance + a slack. A token the mask allows but the engine then refuses counts as a
rejection and is reported as a mask/accept mismatch.

Each step's thread CPU time is read too, outside the timed window: a step whose wall time exceeds
its CPU time by more than 0.1 ms was descheduled (another task ran on its core: on a small VM,
kernel threads or the host's agent), and is listed in ``descheduled`` as (step index, ns off
CPU). Its time still counts in every figure; the tables add the max without such steps.

Example::

    record = measure_schema(engine, task, eos_ids=info.eos_token_ids, token_bytes=info.token_bytes)
    record["status"]   # passing | compile_error | validation_error | invalidation_error
"""
from __future__ import annotations

import gc
import time
from typing import Callable, Sequence

from benchmarks.maskbench.engines.base import CompileError

#: a step whose wall time exceeds its thread CPU time by more than this was descheduled
OFF_CPU_NS = 100_000


def _describe(e: BaseException) -> str:
    text = str(e).strip().replace("\n", " ")
    return f"{type(e).__name__}: {text[:500]}"


def _budget_fill(fill: Callable[[int], object], budgets: list[int], last: int) -> Callable[[], object]:
    """fill() with the next remaining-token count of ``budgets`` at each call (``last`` after)."""
    it = iter(budgets)
    return lambda: fill(next(it, last))


def measure_schema(engine, task: dict, eos_ids: Sequence[int], token_bytes: Callable[[int], bytes],
                   clock: Callable[[], int] = time.perf_counter_ns) -> dict:
    """Run one MaskBench file on one engine; a record with times in nanoseconds."""
    tests = task["tests"]
    rec = {"status": "passing", "error": None, "ttfm_ns": None, "tbm_ns": [], "num_tests": len(tests),
           "skipped_tests": task.get("skipped_tests", 0), "valid_rejected": 0, "invalid_accepted": 0,
           "mismatches": 0, "descheduled": []}
    tbm = rec["tbm_ns"]
    off_cpu = rec["descheduled"]
    cpu_clock = time.thread_time_ns
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection inside a timed step would be charged to whichever engine runs
    try:
        t0 = clock()
        try:
            session = engine.compile(task["schema"])
        except CompileError as e:
            rec.update(status="compile_error", error=str(e)[:1000] or "compile error")
            return rec
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # pyo3 panics derive from BaseException
            rec.update(status="compile_error", error=_describe(e))
            return rec
        rec["ttfm_ns"] = clock() - t0

        for i, test in enumerate(tests):
            tokens = test["tokens"]
            failure = None
            try:
                session.reset()
                fill, accept, words = session.fill, session.accept, session.words
                if session.budget is not None:  # fill(remaining): this token and those after it + slack
                    fixed, slack = session.budget
                    budgets = [fixed] * len(tokens) if fixed else [len(tokens) - k + slack for k in range(len(tokens))]
                    fill = _budget_fill(session.fill, budgets, fixed or slack)
                for k, t in enumerate(tokens):
                    c0 = cpu_clock()
                    t0 = clock()
                    fill()
                    allowed = (words[t >> 5] >> (t & 31)) & 1
                    if allowed:
                        allowed = accept(t)
                        if not allowed:
                            rec["mismatches"] += 1
                    wall = clock() - t0
                    off = wall - (cpu_clock() - c0)
                    if off > OFF_CPU_NS:
                        off_cpu.append((len(tbm), off))
                    tbm.append(wall)
                    if not allowed:
                        failure = (f"token {k} of {len(tokens)} ({t}, {token_bytes(t)!r}) refused"
                                   + (" by accept after its mask allowed it" if (words[t >> 5] >> (t & 31)) & 1 else "")
                                   + f" after {b''.join(token_bytes(x) for x in tokens[max(0, k - 8):k])[-60:]!r}")
                        break
                if failure is None:
                    fill()
                    if not any((words[e >> 5] >> (e & 31)) & 1 for e in eos_ids):
                        failure = "EOS not allowed after the last token"
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:
                failure = f"exception {_describe(e)}"
            if test["valid"] and failure is not None:
                rec["valid_rejected"] += 1
                if rec["status"] == "passing":
                    rec.update(status="validation_error", error=f"test #{i} (valid) rejected: {failure}")
            elif not test["valid"] and failure is None:
                rec["invalid_accepted"] += 1
                if rec["status"] == "passing":
                    rec.update(status="invalidation_error", error=f"test #{i} (invalid) accepted with EOS allowed")
        return rec
    finally:
        if gc_was_enabled:
            gc.enable()
