"""The generation thread: requests queue up, a background thread generates, and text pieces
flow back to each request's asyncio queue.

The thread runs one sequence at a time through ``stencil.generate`` (with its mask fill
overlapped with the forward pass and jump-forward). A disconnected client sets ``cancelled``:
its generation stops at the next token and frees the thread.
"""
from __future__ import annotations

import asyncio
import queue
import threading
from dataclasses import dataclass, field
from typing import Any

import stencil

_DONE = object()


class _Abort(Exception):
    """Raised inside on_text to end a generation early (stop string or cancellation)."""


@dataclass
class Job:
    """One completion: inputs, the stream back to the event loop, and the result."""

    input_ids: list[int]
    grammar: Any
    max_tokens: int
    temperature: float
    seed: int | None
    stop: list[str]
    repetition_penalty: float
    loop: asyncio.AbstractEventLoop
    out: asyncio.Queue = field(default_factory=asyncio.Queue)
    text: str = ""
    finish_reason: str = "stop"
    completion_tokens: int = 0
    cancelled: bool = False
    error: str | None = None

    def put(self, item) -> None:
        self.loop.call_soon_threadsafe(self.out.put_nowait, item)


class Engine:
    """Owns the model and the generation thread."""

    def __init__(self, lm):
        self.lm = lm
        self.jobs: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="stencil-serve", daemon=True)
        self.thread.start()

    def submit(self, job: Job) -> Job:
        self.jobs.put(job)
        return job

    def _run(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            if not job.cancelled:
                try:
                    self._generate(job)
                except Exception as e:  # noqa: BLE001 - a failing request must not kill the thread
                    job.error = f"{type(e).__name__}: {e}"
            job.put(_DONE)

    def _generate(self, job: Job) -> None:
        sent = 0  # characters of job.text already sent (text that may start a stop string is held)
        hold = max((len(s) for s in job.stop), default=1) - 1

        def on_text(piece: str) -> None:
            nonlocal sent
            if job.cancelled:
                raise _Abort
            job.text += piece
            for s in job.stop:
                i = job.text.find(s, max(0, sent - len(s)))
                if i >= 0:
                    job.text = job.text[:i]
                    if len(job.text) > sent:
                        job.put(job.text[sent:])
                    sent = len(job.text)
                    job.finish_reason = "stop"
                    raise _Abort
            safe = len(job.text) - hold
            if safe > sent:
                job.put(job.text[sent:safe])
                sent = safe

        try:
            res = stencil.generate(self.lm, job.grammar, input_ids=job.input_ids, max_tokens=job.max_tokens,
                                   temperature=job.temperature, seed=job.seed, on_text=on_text,
                                   repetition_penalty=job.repetition_penalty)
            job.text = res.text
            job.completion_tokens = len(res.token_ids)
            job.finish_reason = "length" if res.finish_reason in ("max_tokens", "context") else "stop"
        except _Abort:
            job.completion_tokens = len(self.lm.tokenizer(job.text, add_special_tokens=False)["input_ids"])
        if len(job.text) > sent and not job.cancelled:
            job.put(job.text[sent:])

    def close(self) -> None:
        self.jobs.put(None)
