"""A running request in the engine's batch (``server.engine``): its matcher and sampler, the tokens
it generated and those not yet fed, its text sent as it grows (a stop string ends it), its grammar
time (``server.grammar_time``), its token healing and its speculation."""
from __future__ import annotations

import codecs
import numpy as np

import stencil
from stencil.server.grammar_time import RowClock
from stencil.server.job import Job
from stencil.server.speculation import RowSpeculation
from stencil.runtime.stops import other_token_words, stop_token_ids

__all__ = ["Row"]


class Row:
    """A running request: its matcher, sampler, generated tokens and tokens not yet fed."""

    def __init__(self, job: Job, info, time_limit: float | None, spec: RowSpeculation | None = None,
                 eos: set[int] | None = None, not_eos: np.ndarray | None = None):
        self.job = job
        g = job.grammar
        self.healer = g.healer   # its tokens come first, one per step, under its own masks
        self.skip = len(self.healer.prefix) if self.healer is not None else 0  # prefix bytes not to send
        self.spec_later = spec     # a healing row drafts once healed
        self.spec = None if self.healing() else spec  # None: one token per step
        self.matcher = g.matcher
        # the step limit and the request's total (each call on the matcher is armed with what is left)
        self.clock = RowClock(time_limit, g.grammar_time)
        self.sampler = job.sampling.sampler()
        self.out: list[int] = []
        self.feed: list[int] = job.input_ids[-1:]
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.info = info
        self.finish: str | None = None
        self.remaining_tokens = job.params.max_tokens  # tokens this row may still add (set each step)
        self.constrained = g.matcher is not None
        # The tokens that end the row (``stops``; ``not_stops``: the mask words of every other
        # token): end of sequence, but for the ids the row's grammar writes as its text
        # (stencil.runtime.stops: gpt-oss's <|call|> closes a call).
        eos = set(info.eos_token_ids) if eos is None else eos
        self.stops = stop_token_ids(eos, g.matcher)
        self.not_stops = not_eos if not_eos is not None and self.stops == eos else \
            other_token_words(self.stops, (info.vocab_size + 31) // 32)

    def grammar(self, fn, *args):
        """``fn(*args)``, a call that works on the row's matcher, under its grammar time (see
        server.grammar_time); a row without a grammar calls it as it is."""
        return fn(*args) if self.matcher is None else self.clock.call(self.matcher, fn, *args)

    def ended(self) -> bool:
        """Whether the matcher took its last token as the end: an EOS id the grammar also writes
        as text (``stops``) is text where the grammar writes it and the end where it is complete."""
        return self.matcher is not None and self.matcher.is_terminated()

    def healing(self) -> bool:
        """Whether the row is still spelling its healed prefix."""
        return self.healer is not None and not self.healer.done

    def heal(self, t: int) -> None:
        """Token ``t`` of the healed prefix (the healer gives the grammar what runs past it)."""
        assert self.healer is not None   # called for healing rows only
        if not self.grammar(self.healer.accept_token, t):
            raise RuntimeError(f"internal error: token {t} does not continue the healed prefix {self.healer.rest!r}")
        if self.healer.done:
            self.spec = self.spec_later

    def emit(self, tokens: list[int]) -> None:
        """Generated tokens: count them and pass their text on (a stop string ends the row)."""
        self.out.extend(tokens)
        data = self.info.decode_bytes(tokens)
        cut = min(self.skip, len(data))   # the healed prefix belongs to the prompt
        self.skip -= cut
        piece = self.decoder.decode(data[cut:])
        if piece and self.job.push_text(piece):
            self.finish = "stop"

    def fail(self, e: BaseException) -> None:
        self.job.fail(e)
        self.finish = "error"
        forget = self.job.grammar.forget
        if isinstance(e, (stencil.GrammarError, stencil.LimitError)) and forget is not None:
            forget()  # too expensive: its lazy state goes with the request's last matcher

    def close(self) -> None:
        """The row's job gets its last text, its counts and its finish reason (the engine then
        sends the end of its stream)."""
        job, result = self.job, self.job.result
        if self.finish != "stop":  # a stop string already cut the text
            job.push_text(self.decoder.decode(b"", final=True))
        job.flush()
        result.completion_tokens = len(self.out)
        result.tokens, result.token_bytes = self.out, self.info.token_bytes
        if self.spec is not None:
            result.drafted_tokens, result.accepted_tokens = self.spec.drafted, self.spec.accepted
        # cut by the budget or the context: "length", unless the grammar accepts the output (the
        # budget-aware masks closed it in time), which is complete: "stop", as OpenAI's parse() needs
        cut = self.finish in ("max_tokens", "context")
        result.finish_reason = "length" if cut and (self.healing() or not _accepting(self.matcher)) else "stop"
        job.grammar.matcher = self.matcher = None  # the grammar's memory goes with the last matcher


def _accepting(m) -> bool:
    """Whether matcher ``m`` (None: no grammar) accepts its output; False where the question itself
    costs more than the row's grammar time left."""
    if m is None:
        return False
    try:
        return m.is_accepting()
    except stencil.TimeLimitExceeded:
        return False
