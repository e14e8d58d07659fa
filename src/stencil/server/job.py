"""One choice of a request on its way through the engine (``server.engine``), in three parts: what
it generates (``input_ids``, ``GenerationParams``, ``SamplingParams`` and its ``JobGrammar``), the
``JobStream`` its text pieces flow back to the event loop on, and its ``JobResult``.

Example::

    job = Job(prompt_ids, GenerationParams(max_tokens=16), SamplingParams(), JobStream(loop))
    engine.submit(job)
    while (item := await job.stream.out.get()) is not DONE: ...   # (piece, logprob entries so far)
    job.result.text, job.result.finish_reason
"""
from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import stencil
from stencil.server.grammar_time import GrammarTime
from stencil.server.params import GenerationParams, SamplingParams

__all__ = ["DONE", "Job", "JobGrammar", "JobResult", "JobStream"]

#: the last item of a job's stream
DONE = object()


@dataclass
class JobGrammar:
    """A choice's constraint: ``matcher`` at its start (first mask computed; None: free text, and
    None again once the row is done, so the grammar's memory goes with it), the request's total of
    grammar time (shared by its choices), ``forget`` (called when the grammar fails the row for
    its cost: drops it from the compile cache), and token healing (``stencil.runtime.healing.Healer``, over
    ``matcher``): the first tokens spell the prompt's removed end again, ``healed_prefix``, which
    the text leaves out."""

    matcher: Any = None
    grammar_time: Optional[GrammarTime] = None
    forget: Optional[Callable[[], None]] = None
    healer: Any = None
    healed_prefix: str = ""


@dataclass
class JobStream:
    """The way back to the event loop: ``out`` gets ``(piece, log-probability entries so far)``
    items, then ``DONE``; ``cancelled`` is the reader's (a client that left), which the engine
    reads between steps."""

    loop: asyncio.AbstractEventLoop
    out: asyncio.Queue = field(default_factory=asyncio.Queue)
    cancelled: bool = False

    def put(self, item) -> None:
        """Hand ``item`` to the event loop (called from the engine's thread)."""
        self.loop.call_soon_threadsafe(self.out.put_nowait, item)


@dataclass
class JobResult:
    """What a choice produced: its text (grown as it is sent; ``sent``: characters already sent,
    text that may start a stop string is held), why it ended, its counts, and its error (an HTTP
    ``error_status``: 400 for a grammar that costs too much, 500 otherwise)."""

    text: str = ""
    sent: int = 0
    finish_reason: str = "stop"
    completion_tokens: int = 0
    #: per generated token, {"token", "logprob", "bytes", "top_logprobs"} (OpenAI's chat entries)
    token_logprobs: list = field(default_factory=list)
    #: the generated tokens, and the tokenizer's bytes of a token (set at the end): where each
    #: token ends (token_ends) is worked out only for a response that counts reasoning tokens
    tokens: list = field(default_factory=list)
    token_bytes: Optional[Callable[[int], bytes]] = None
    drafted_tokens: int = 0   # speculative draft tokens proposed, and of them accepted (set at the end)
    accepted_tokens: int = 0
    error: Optional[str] = None
    error_status: int = 500
    error_code: Optional[str] = None

    def token_ends(self) -> list[int]:
        """Where each generated token's bytes end in the decoded output (the healed prefix's
        included)."""
        size = self.token_bytes
        return [] if size is None else list(itertools.accumulate(len(size(t)) for t in self.tokens))


@dataclass
class Job:
    """One completion choice: its inputs (``input_ids``, ``params``, ``sampling``, ``grammar``), the
    ``stream`` back to the event loop, and its ``result``."""

    input_ids: list[int]
    params: GenerationParams
    sampling: SamplingParams
    stream: JobStream
    grammar: JobGrammar = field(default_factory=JobGrammar)
    result: JobResult = field(default_factory=JobResult)

    def fail(self, e: BaseException) -> None:
        """Record why this job failed: a grammar that costs too much (a work limit or time limit
        of the core ran out) is the request's fault, a 400; anything else is the server's, a 500."""
        r = self.result
        if isinstance(e, (stencil.GrammarError, stencil.LimitError)):
            r.error_status, r.error_code = 400, "grammar_too_expensive"
            r.error = f"the constraint is too expensive to generate with: {type(e).__name__}: {e}"
        else:
            r.error_status, r.error_code = 500, None
            r.error = f"generation failed: {type(e).__name__}: {e}"

    def push_text(self, piece: str) -> bool:
        """Append generated text and send what can no longer be part of a stop string; True when a
        stop string was reached (the text is cut before it)."""
        r, stop = self.result, self.params.stop
        r.text += piece
        for s in stop:
            i = r.text.find(s, max(0, r.sent - len(s)))
            if i >= 0:
                r.text = r.text[:i]
                self.flush()
                return True
        safe = len(r.text) - (max((len(s) for s in stop), default=1) - 1)
        if safe > r.sent:
            self._send(r.text[r.sent:safe])
            r.sent = safe
        return False

    def flush(self) -> None:
        """Send the text held back (the job's end)."""
        r = self.result
        if len(r.text) > r.sent and not self.stream.cancelled:
            self._send(r.text[r.sent:])
        r.sent = len(r.text)

    def _send(self, piece: str) -> None:
        """A text piece with the count of log-probability entries generated up to it."""
        self.stream.put((piece, len(self.result.token_logprobs)))
