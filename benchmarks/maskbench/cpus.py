"""Which CPUs the harness and its workers run on.

On a small machine the timed worker shares its core with whatever else wakes up, and the harness's
own process is the most frequent of those: every result it receives and every task it sends is a
wake-up on the worker's core (a pipe write is a "sync" wake-up, which the scheduler places on the
waker's core), and an idle core may wait a whole scheduler tick (4 ms here) before it pulls a
waiting task over. So by default the workers get one CPU of their own (the last one this process
may use) and the harness keeps the others. Every engine runs under the same placement, single
threaded as MaskBench runs them, so this takes noise out of the figures without favouring one.

Example::

    plan = plan_cpus("auto")   # CpuPlan(harness={0}, workers={1}) on a 2-CPU machine, or None
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class CpuPlan:
    harness: frozenset[int]
    workers: frozenset[int]

    def describe(self) -> str:
        return f"workers on CPU {_fmt(self.workers)}, harness on CPU {_fmt(self.harness)}"


def _fmt(cpus: frozenset[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def plan_cpus(spec: str) -> CpuPlan | None:
    """The placement for ``--pin SPEC``: ``off`` (None), ``auto`` (the last allowed CPU for the
    workers when there are at least two, else None) or a CPU number for the workers. Raises
    ValueError for a CPU this process may not use or a malformed spec."""
    spec = spec.strip().lower()
    if spec == "off":
        return None
    try:
        allowed = frozenset(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux: leave placement to the OS
        if spec == "auto":
            return None
        raise ValueError("--pin needs a system with CPU affinity (Linux)") from None
    if spec == "auto":
        if len(allowed) < 2:
            return None
        worker = max(allowed)
    else:
        try:
            worker = int(spec)
        except ValueError:
            raise ValueError(f"--pin takes auto, off or a CPU number, got {spec!r}") from None
        if worker not in allowed:
            raise ValueError(f"--pin {worker}: this process may only use CPUs {_fmt(allowed)}")
        if len(allowed) < 2:
            raise ValueError(f"--pin {worker}: the harness needs another CPU, and only {_fmt(allowed)} is allowed")
    return CpuPlan(harness=allowed - {worker}, workers=frozenset({worker}))


@contextmanager
def pinned(cpus: frozenset[int] | None):
    """Run the block on ``cpus`` (this thread's affinity; new threads and processes inherit it),
    then restore the affinity it had. ``None`` leaves it alone."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
