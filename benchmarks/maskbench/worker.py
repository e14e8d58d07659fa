"""Worker processes: one per engine, so that a crash or a hang costs one schema, not the run.

Protocol over a ``multiprocessing`` pipe (pickled dicts, never the worker's stdout, which engines
may write to): the worker sends ``{"ready": True, "version", "tokenizer_source", "init_s"}`` once
its engine is built, or ``{"init_error": traceback}``; then for each task the parent sends (see
``data.load_task``) it answers with the record of ``measure.measure_schema``; ``None`` asks it to
exit. The parent enforces the per-schema time limit and a memory limit by killing the process, and
starts a new one for the next schema.

Example::

    w = Worker("stencil", "deepseek", log_path="/tmp/stencil.log")
    w.start()
    record = w.run(task, time_limit=60)
    w.stop()
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
import traceback


_CTX = mp.get_context("spawn")  # a clean interpreter: no state inherited from the parent


def worker_main(conn, engine_name: str, tokenizer_name: str, log_path: str | None,
                cpus: frozenset[int] | None = None) -> None:
    """Entry point of the worker process."""
    _die_with_parent()
    if cpus:
        os.sched_setaffinity(0, cpus)  # before the engine starts any thread, so that all inherit it
    if log_path:
        # Engines' own chatter (warnings, Rust logs, crash traces) goes to the engine's log file.
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    import gc
    t0 = time.perf_counter()
    try:
        from benchmarks.maskbench.engines import make_engine, split_build, use_build
        if split_build(engine_name)[1] is not None:  # another build of stencil, before anything imports it
            use_build(split_build(engine_name)[1])
        from benchmarks.maskbench.measure import measure_schema
        from tests.support.tokenizers import load_tokenizer
        info, encode = load_tokenizer(tokenizer_name)
        engine = make_engine(engine_name, tokenizer_name, info, encode)
    except BaseException:
        conn.send({"init_error": traceback.format_exc()})
        return
    conn.send({"ready": True, "version": engine.version, "tokenizer_source": engine.tokenizer_source,
               "init_s": time.perf_counter() - t0})
    eos = list(info.eos_token_ids)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        rec = measure_schema(engine, task, eos, info.token_bytes)
        # Clean up before answering: the parent then starts the next engine on this schema, and
        # freeing one engine's grammar while another is being timed would be charged to it.
        engine.release()
        gc.collect()
        conn.send(rec)
        del rec


def _resident_bytes(pid: int) -> int:
    from stencil.memory import resident_bytes  # (not at import: a worker may import stencil from another build)
    return resident_bytes(pid)


def _die_with_parent() -> None:
    """On Linux, have the kernel kill this worker when the parent dies (even by SIGKILL), so that no
    engine keeps computing for a run that is gone."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class WorkerError(RuntimeError):
    """The engine could not even be set up (not installed, tokenizer conversion failed)."""


class Worker:
    """The parent's handle on one engine's worker process."""

    def __init__(self, engine: str, tokenizer: str, log_path: str | None = None, init_timeout: float = 600.0,
                 mem_limit_bytes: int | None = None, cpus: frozenset[int] | None = None):
        self.engine = engine
        self.cpus = cpus
        self.tokenizer = tokenizer
        self.log_path = log_path
        self.init_timeout = init_timeout
        self.mem_limit_bytes = mem_limit_bytes
        self.proc = None
        self.conn = None
        self.info: dict = {}
        self.restarts = 0

    def start(self) -> dict:
        parent, child = _CTX.Pipe()
        self.proc = _CTX.Process(target=worker_main, args=(child, self.engine, self.tokenizer, self.log_path, self.cpus),
                                 name=f"maskbench-{self.engine}", daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        if not parent.poll(self.init_timeout):
            self.kill()
            raise WorkerError(f"{self.engine}: worker not ready after {self.init_timeout:.0f} s")
        try:
            msg = parent.recv()
        except EOFError:
            code = self._reap()
            raise WorkerError(f"{self.engine}: worker died while starting ({_exit_reason(code)}); "
                              f"see {self.log_path}") from None
        if "init_error" in msg:
            self.kill()
            raise WorkerError(f"{self.engine}: could not set up the engine:\n{msg['init_error']}")
        self.info = msg
        return msg

    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def run(self, task: dict, time_limit: float) -> dict:
        """The worker's record for ``task``, or a crash/timeout/oom record (the worker is then gone
        and the next call starts a new one)."""
        if not self.alive():
            if self.proc is not None:
                self.restarts += 1
            self.start()
        try:
            self.conn.send(task)
        except (BrokenPipeError, OSError):  # it died since the last schema: start a new one
            self._reap()
            self.restarts += 1
            self.start()
            self.conn.send(task)
        t_start = time.monotonic()
        while True:
            left = time_limit - (time.monotonic() - t_start)
            if left <= 0:
                self.kill()
                return {"status": "timeout", "error": f"no result within {time_limit:g} s"}
            if self.conn.poll(min(0.25, left)):
                try:
                    return self.conn.recv()
                except (EOFError, OSError):
                    code = self._reap()
                    return {"status": "crash", "error": f"worker {_exit_reason(code)}"}
            if not self.proc.is_alive():
                code = self._reap()
                return {"status": "crash", "error": f"worker {_exit_reason(code)}"}
            if self.mem_limit_bytes and _resident_bytes(self.proc.pid) > self.mem_limit_bytes:
                self.kill()
                return {"status": "oom", "error": f"resident memory over {self.mem_limit_bytes / 2**30:g} GiB"}

    def _reap(self) -> int | None:
        self.proc.join(5)
        if self.proc.is_alive():
            self.kill()
        code = self.proc.exitcode
        self._close()
        return code

    def kill(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
            self.proc.join(10)
        self._close()

    def stop(self) -> None:
        if self.alive():
            try:
                self.conn.send(None)
                self.proc.join(10)
            except (OSError, EOFError):
                pass
        self.kill()

    def _close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
