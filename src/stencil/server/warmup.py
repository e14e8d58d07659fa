"""A request's grammar work before it joins the batch, on one of the compiler's threads: its
constraint compiled (the front-ends and the core check ``compile_timeout``) and its matcher taken
through the lazy first-use work (shortest completion, first budget-aware mask), each step under
what is left of the same ``compile_timeout``.

The request waits for the work at most ``COMPILE_GRACE`` s past ``compile_timeout`` after it
started (work checks its deadline every so often, never at every step), and at most as long again
for a compile thread to start it (503 past that: the threads are busy). A grammar the server
refuses (too expensive, over the deadline, a failure of the first mask), or whose request stopped
waiting, is dropped from the compile cache with every reference to it at once, so its lazy state
(lexer, masks, cost tables) is freed now, not when 256 later grammars have pushed it out of the
cache. The request's memory reservation (``ResidentLimit``) is held until the work ends.

Example::

    work = Warmup(compiler, asyncio.get_running_loop(), reservation)
    matcher = await work.result(constraint, compile_timeout=5.0, max_tokens=256, vocab_size=v)
"""
from __future__ import annotations

import asyncio
import threading
import time
import traceback

import stencil
from stencil.memory import reclaim
from stencil.server.constraints import Constraint
from stencil.server.protocol import RequestError
from stencil.server.resident import Reservation

#: seconds the server waits past ``compile_timeout`` for a request's grammar work before its 400.
#: The front-ends read the clock every few hundred items of their loops and the core every 1,024
#: steps of its own, so the work ends a little after its deadline; one step of the core can be
#: slow (a derivative over a 100,000-value union), and past this grace the request gets its answer
#: while the work ends unseen on its thread.
COMPILE_GRACE = 0.5


class Warmup:
    """One request's grammar work (see the module doc); ``result()`` runs it and waits for it."""

    def __init__(self, compiler: stencil.GrammarCompiler, loop: asyncio.AbstractEventLoop,
                 reservation: Reservation | None = None):
        self.compiler, self.loop = compiler, loop
        self.reservation = reservation or Reservation()
        self.started = asyncio.Event()
        self.grammar: stencil.CompiledGrammar | None = None
        self._lock = threading.Lock()
        self._abandoned = self._done = False

    async def result(self, c: Constraint, compile_timeout: float, max_tokens: int, vocab_size: int,
                     max_rollback: int = 0) -> stencil.Matcher:
        """The matcher of ``c`` at its start, its first mask computed: RequestError 503 when no
        compile thread starts the work within ``compile_timeout + COMPILE_GRACE`` s, TimeoutError
        when the work takes longer than that; the work's own errors as they are raised."""
        fut = self.compiler.compile_async(self._run, c, compile_timeout, max_tokens, vocab_size, max_rollback)
        fut.add_done_callback(lambda _: reclaim())  # what a refused grammar built goes back under the limit
        wait = compile_timeout + COMPILE_GRACE
        try:
            try:
                await asyncio.wait_for(self.started.wait(), wait)
            except asyncio.TimeoutError:
                raise RequestError(f"the server is busy: every compile thread stayed busy for {wait:g} s; retry "
                                   f"later", status=503, code="server_busy") from None
            m = await asyncio.wait_for(asyncio.wrap_future(fut), wait)
            assert m is not None   # None only for a request that stopped waiting
            return m
        finally:
            if not fut.done():
                self._abandon(fut)

    def _abandon(self, fut) -> None:
        """The request stopped waiting (its deadline, or its client gone): work not started is
        cancelled; work under way drops what it built and releases the reservation when it ends."""
        with self._lock:
            self._abandoned = True
            done = self._done
        if fut.cancel() or done:
            self._drop()

    def _run(self, c: Constraint, seconds: float, max_tokens: int, vocab_size: int,
             max_rollback: int) -> stencil.Matcher | None:
        """On the compile thread: compile ``c``, then the first-use work, each under what is left
        of ``seconds``; None where the request no longer waits."""
        self.loop.call_soon_threadsafe(self.started.set)
        start = time.monotonic()
        try:
            assert c.fn is not None   # the caller compiles only constraints with a grammar
            self.grammar = c.fn(*c.args, **(c.kwargs or {}))  # the compiler's compile_timeout bounds this part
            reclaim()   # the front-end's objects are garbage now: their heap goes back to the OS soon
            m = _first_use(self.grammar, max_rollback, lambda: max(seconds - (time.monotonic() - start), 1e-3),
                           max_tokens, vocab_size)
        except BaseException as e:
            # the traceback's frames hold the matcher, the grammar and the front-end's builder:
            # their locals go now, not when the error is collected
            traceback.clear_frames(e.__traceback__)
            self._end(wanted=False)
            raise
        return m if self._end(wanted=True) else None

    def _end(self, wanted: bool) -> bool:
        """The work is over: whether the request still waits for its matcher (else its grammar is
        dropped); the reservation goes."""
        with self._lock:
            self._done = True
            wanted = wanted and not self._abandoned
        if wanted:
            self.reservation.release()
        else:
            self._drop()
        return wanted

    def _drop(self) -> None:
        self.forget()
        self.reservation.release()

    def forget(self) -> None:
        """Drop the grammar from the compile cache and this object: once the request's matchers are
        gone, nothing holds its lazy state (a refused grammar, a row failed for its grammar's cost)."""
        g, self.grammar = self.grammar, None
        if g is not None:
            self.compiler.discard(g)


def _first_use(g: stencil.CompiledGrammar, max_rollback: int, left, max_tokens: int,
               vocab_size: int) -> stencil.Matcher:
    """A matcher of ``g`` through its lazy first-use work (shortest completion, first budget-aware
    mask), each call under ``left()`` seconds."""
    m = stencil.Matcher(g, max_rollback, time_limit=left())
    need = m.min_completion_tokens()
    if need is not None and need > max_tokens:
        raise RequestError(f"max_tokens is {max_tokens}, but the shortest output the constraint allows "
                           f"needs up to {need} tokens", param="max_tokens")
    m.time_limit = left()
    m.fill_next_token_bitmask(stencil.allocate_token_bitmask(1, vocab_size), 0, remaining_tokens=max_tokens)
    return m
