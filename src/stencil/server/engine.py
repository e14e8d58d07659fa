"""The generation thread: continuous batching of every running request.

Requests queue up; the engine thread admits them into the running batch (up to ``max_batch``
rows) between steps, and each step runs ONE forward pass for all rows (``KVBatch``). Meanwhile a
second thread fills the rows' token masks with ``fill_next_token_bitmasks`` (the core releases the
GIL), so the grammar costs the step nothing. Forced tokens (the only token a grammar allows) are
appended without sampling and fed with the row's next step. A finished, cancelled or failed row
leaves the batch at once and frees its slot; text pieces flow back to each request's asyncio queue.
"""
from __future__ import annotations

import asyncio
import codecs
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import stencil
from stencil.generate import _Sampler
from stencil.server.kv_batch import KVBatch

_DONE = object()


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
    top_p: float = 1.0
    out: asyncio.Queue = field(default_factory=asyncio.Queue)
    text: str = ""
    finish_reason: str = "stop"
    completion_tokens: int = 0
    cancelled: bool = False
    error: str | None = None
    sent: int = 0  # characters of text already sent (text that may start a stop string is held)

    def put(self, item) -> None:
        self.loop.call_soon_threadsafe(self.out.put_nowait, item)

    def push_text(self, piece: str) -> bool:
        """Append generated text and send what can no longer be part of a stop string; True when a
        stop string was reached (the text is cut before it)."""
        self.text += piece
        for s in self.stop:
            i = self.text.find(s, max(0, self.sent - len(s)))
            if i >= 0:
                self.text = self.text[:i]
                self.flush()
                return True
        safe = len(self.text) - (max((len(s) for s in self.stop), default=1) - 1)
        if safe > self.sent:
            self.put(self.text[self.sent:safe])
            self.sent = safe
        return False

    def flush(self) -> None:
        if len(self.text) > self.sent and not self.cancelled:
            self.put(self.text[self.sent:])
        self.sent = len(self.text)


class _Row:
    """A running request: its matcher, sampler, generated tokens and tokens not yet fed."""

    def __init__(self, job: Job, info):
        self.job = job
        self.matcher = stencil.Matcher(job.grammar) if job.grammar is not None else None
        self.sampler = _Sampler(job.temperature, job.seed, job.repetition_penalty)
        self.out: list[int] = []
        self.feed: list[int] = job.input_ids[-1:]
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.info = info
        self.finish: str | None = None

    def emit(self, tokens: list[int]) -> None:
        """Generated tokens: count them and pass their text on (a stop string ends the row)."""
        self.out.extend(tokens)
        piece = self.decoder.decode(self.info.decode_bytes(tokens))
        if piece and self.job.push_text(piece):
            self.finish = "stop"

    def close(self) -> None:
        job = self.job
        if self.finish != "stop":  # a stop string already cut the text
            job.push_text(self.decoder.decode(b"", final=True))
        job.flush()
        job.completion_tokens = len(self.out)
        job.finish_reason = "length" if self.finish in ("max_tokens", "context") else "stop"
        job.put(_DONE)


class Engine:
    """Owns the model and the generation thread; ``max_batch`` rows run together."""

    def __init__(self, lm, max_batch: int = 16):
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.lm = lm
        self.info = lm.tokenizer_info
        self.max_batch = max_batch
        self.eos = set(self.info.eos_token_ids)
        eos_words = np.zeros((stencil.allocate_token_bitmask(1, self.info.vocab_size).shape[1],), np.uint32)
        for t in self.eos:
            eos_words[t // 32] |= np.uint32(1 << (t % 32))
        self.not_eos = (~eos_words).view(np.int32)
        self.jobs: queue.Queue = queue.Queue()
        self.masks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stencil-serve-mask")
        self.steps = 0    # forward passes, for /health, tests and the benchmark
        self.running = 0  # rows in the batch
        self.thread = threading.Thread(target=self._run, name="stencil-serve", daemon=True)
        self.thread.start()

    def submit(self, job: Job) -> Job:
        self.jobs.put(job)
        return job

    def close(self) -> None:
        self.jobs.put(None)

    # -- the loop -------------------------------------------------------------------------------
    def _run(self) -> None:
        import torch
        batch = KVBatch(self.lm.model)
        rows: list[_Row] = []
        with torch.inference_mode():
            while True:
                if not self._admit(batch, rows, block=not rows):
                    return
                if not rows:
                    continue
                try:
                    self._step(batch, rows)
                except Exception as e:  # noqa: BLE001 - the batch fails, the server keeps serving
                    for r in rows:
                        r.job.error = f"{type(e).__name__}: {e}"
                        r.finish = "error"
                    batch = KVBatch(self.lm.model)
                keep = []
                for i, r in enumerate(rows):
                    if r.finish is None and r.job.cancelled:
                        r.finish = "cancelled"
                    if r.finish is None:
                        keep.append(i)
                    else:
                        r.close()
                if len(keep) < len(rows):
                    batch.keep(keep)
                    rows[:] = [rows[i] for i in keep]
                self.running = len(rows)

    def _admit(self, batch: KVBatch, rows: list[_Row], block: bool) -> bool:
        """Move waiting jobs into the batch; False when the engine was closed."""
        while len(rows) < self.max_batch:
            try:
                job = self.jobs.get() if block else self.jobs.get_nowait()
            except queue.Empty:
                return True
            block = False
            if job is None:
                return False
            if job.cancelled:
                job.put(_DONE)
                continue
            try:
                row = _Row(job, self.info)
                if job.max_tokens == 0:
                    row.finish = "max_tokens"
                    row.close()
                    continue
                batch.add(job.input_ids[:-1])
            except Exception as e:  # noqa: BLE001 - one bad request must not stop the others
                job.error = f"{type(e).__name__}: {e}"
                job.put(_DONE)
                continue
            rows.append(row)
        return True

    def _budget(self, r: _Row) -> int:
        ctx = int(getattr(self.lm, "context_length", 0) or 0)
        left = r.job.max_tokens - len(r.out)
        if ctx:
            room = ctx - len(r.job.input_ids) - len(r.out)
            if room < left:
                return room if room > 0 else -1  # -1: the context is full
        return left

    def _step(self, batch: KVBatch, rows: list[_Row]) -> None:
        bm = stencil.allocate_token_bitmask(len(rows), self.info.vocab_size)
        fill = []   # (row index, matcher, budget) whose mask is filled during the forward pass
        for i, r in enumerate(rows):
            left = self._budget(r)
            if left <= 0:
                r.finish = "context" if left < 0 else "max_tokens"
                continue
            m = r.matcher
            if m is None:
                continue
            forced = m.forced_tokens()[:left]
            if forced:
                for t in forced:
                    if not m.accept_token(t):
                        raise RuntimeError(f"internal error: forced token {t} was refused")
                r.feed = r.feed + forced
                r.emit(forced)
                left -= len(forced)
                if r.finish is None and left == 0:
                    r.finish = "max_tokens"
            # budget-aware masks: only tokens after which the output can still end within max_tokens
            if r.finish is None and m.is_accepting():
                m.fill_next_token_bitmask(bm, i, remaining_tokens=left)
                if not np.any(bm[i] & self.not_eos):
                    r.finish = "grammar"  # nothing but EOS is allowed: the output is complete
            else:
                fill.append((i, m, left))
        if any(r.finish is not None for r in rows):
            return  # the loop drops finished rows first; the others' forced tokens wait in feed
        pending = self.masks.submit(stencil.fill_next_token_bitmasks, [f[1] for f in fill], bm,
                                    [f[0] for f in fill], 1, [f[2] for f in fill]) if fill else None
        try:
            logits = batch.step([r.feed for r in rows])
        finally:
            if pending is not None:
                pending.result()
        self.steps += 1
        for i, r in enumerate(rows):
            r.feed = []
            row = logits[i]
            r.sampler.penalize(row, r.out)
            if r.matcher is not None:
                if not np.any(bm[i]):
                    raise RuntimeError("the grammar allows no token and not EOS: " + r.matcher.debug_state())
                stencil.apply_token_bitmask_inplace(row, bm[i])
            if r.job.top_p < 1.0 and r.job.temperature > 0:
                _nucleus(row, r.job.temperature, r.job.top_p)
            t = r.sampler.sample(row)
            if t in self.eos:
                r.finish = "eos"
                continue
            if r.matcher is not None and not r.matcher.accept_token(t):
                raise RuntimeError(f"internal error: sampled token {t} is not allowed: {r.matcher.debug_state()}")
            r.feed = [t]
            r.emit([t])


def _nucleus(logits, temperature: float, top_p: float) -> None:
    """Top-p: keep the most likely tokens whose probabilities (at ``temperature``) first sum to
    ``top_p`` or more (always the most likely one), set the others to -inf. After the grammar
    mask, so the nucleus is taken among allowed tokens."""
    import torch
    probs = torch.softmax(logits / temperature, dim=-1)
    order = torch.argsort(probs, descending=True)
    before = torch.cumsum(probs[order], dim=-1) - probs[order]  # mass of the more likely tokens
    drop = before >= top_p
    drop[0] = False
    logits[order[drop]] = float("-inf")
