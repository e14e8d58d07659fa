"""A request's way through the server: its body read within the size limit, checked as its route's
request model (``server.request``: the values the service reads), its constraint compiled and
warmed (first mask, shortest completion) under the request's deadline, its jobs (``server.job``:
the checked ``GenerationParams`` and ``SamplingParams`` of each choice) queued for the engine."""
from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace
from typing import Any, NamedTuple

from fastapi import Request
from fastapi.responses import StreamingResponse

import stencil
from stencil.runtime.healing import Healer, start_healing
from stencil.server.body import read_json
from stencil.server.constraints import Constraint, constraint_for
from stencil.server.engine import Engine
from stencil.server.grammar_time import GrammarTime
from stencil.server.job import Job, JobGrammar, JobStream
from stencil.server.limits import ServerLimits
from stencil.server.params import GenerationParams, SamplingParams
from stencil.server.partials import partial_schema
from stencil.server.protocol import RequestError
from stencil.server.resident import Reservation, ResidentLimit
from stencil.server.request import RequestBounds, parse_request
from stencil.server.responses import choice, stream_events, usage, wait_all
from stencil.server.warmup import COMPILE_GRACE, Warmup
from stencil.runtime.speculative import SpeculationOptions


class Submitted(NamedTuple):
    """A request's queued choices: its constraint, its jobs, and the schema of its partial results
    (``stream_options.include_partial``; None: none)."""

    constraint: Constraint
    jobs: list[Job]
    partial_schema: Any


class Service:
    """What the routes share: the model, its name, the limits, the grammar compiler and the engine."""

    def __init__(self, lm, name: str, limits: ServerLimits, max_batch: int, mask_threads: int | None,
                 speculate: bool | SpeculationOptions = True, tool_strict: str = "all", full_masks: bool = False):
        self.lm, self.name, self.limits, self.tool_strict = lm, name, limits, tool_strict
        if limits.memory_limit is not None:
            stencil.set_memory_limit(int(limits.memory_limit))
        # first: an rss limit below the loaded model's RSS is refused before the engine starts
        if limits.rss_limit is not None:
            _read_in_weights(lm)
        self.resident = None if limits.rss_limit is None else ResidentLimit(limits.rss_limit, limits.memory_limit)
        self.compiler = stencil.GrammarCompiler(lm.tokenizer_info, compile_timeout=limits.compile_timeout)
        self.engine = Engine(lm, max_batch=max_batch, mask_threads=mask_threads,
                             step_time_limit=limits.step_time_limit, max_waiting=limits.max_waiting,
                             speculate=speculate, opportunistic=not full_masks)
        most = limits.max_tokens or int(getattr(lm, "context_length", 0) or 0) or None
        self.bounds = RequestBounds(max_tokens=most, max_n=limits.max_n, vocab_size=lm.tokenizer_info.vocab_size)

    async def read_body(self, request: Request) -> dict:
        body, size = await read_json(request, self.limits.max_body_bytes, self.limits.body_timeout)
        request.state.body_bytes = size  # what a compile may build scales with it (ResidentLimit)
        if body.get("model") not in (None, self.name):
            raise RequestError(f"unknown model {body.get('model')!r}; this server serves {self.name!r}",
                               param="model", code="model_not_found")
        return body

    def parse(self, model: type, body: dict):
        """``body`` as the route's request ``model`` (``server.request``), checked against this
        server's bounds; a RequestError naming the first bad field."""
        return parse_request(model, body, self.bounds)

    def _check_context(self, prompt_ids: list[int]) -> None:
        ctx = self.lm.context_length
        if ctx and len(prompt_ids) >= ctx:
            raise RequestError(f"the prompt has {len(prompt_ids)} tokens, but the model's context holds {ctx}",
                               param="messages", code="context_length_exceeded")

    async def prepare(self, body: dict, max_tokens: int, tool_format: str = "generic",
                      reservation: Reservation | None = None, max_rollback: int = 0,
                      prompt_ids: list[int] | None = None) -> tuple[Constraint, stencil.Matcher | None, Warmup | None]:
        """The request's constraint, a matcher at its start (its first mask computed) and its
        ``Warmup`` (``forget()`` drops its grammar): the grammar work a request causes before it
        joins the batch, all within ``compile_timeout`` (``warmup.COMPILE_GRACE``).
        ``reservation``: the compile's memory (ResidentLimit), released once that work ends;
        ``max_rollback``: the matcher's (a speculating row rolls back rejected drafts); ``prompt_ids``:
        the rendered prompt (one that opens a reasoning block puts the output inside it)."""
        reservation = reservation or Reservation()
        try:
            c = constraint_for(self.compiler, body, tool_format, self.tool_strict, prompt_ids=prompt_ids)
        except BaseException:
            reservation.release()
            raise
        if c.fn is None:
            reservation.release()
            return c, None, None
        work = Warmup(self.compiler, asyncio.get_running_loop(), reservation)
        timeout = self.limits.compile_timeout
        try:
            return c, await work.result(c, timeout, max_tokens, self.lm.tokenizer_info.vocab_size, max_rollback), work
        except RequestError:
            raise
        except (asyncio.TimeoutError, stencil.TimeLimitExceeded) as e:
            raise RequestError(f"the constraint is too expensive: its grammar work did not finish within the "
                               f"server's compile timeout of {timeout:g} s ({_why(e)})",
                               param="response_format", code="grammar_too_expensive") from None
        except stencil.BudgetError as e:
            raise RequestError(f"the constraint is too expensive: {e}", param="response_format",
                               code="grammar_too_expensive") from None
        except Exception as e:  # noqa: BLE001 - any failure of a user's grammar is the user's 400
            raise RequestError(f"invalid grammar: {e}", param="tools" if c.tools else "response_format") from None

    async def submit(self, req, body: dict, prompt_ids, tool_format="generic", body_bytes: int = 0) -> Submitted:
        """Compile and warm the constraint of ``req`` (its route's checked request; ``body``: the
        raw one, whose constraint fields ``constraints.constraint_for`` reads) and queue its ``n``
        jobs. ``body_bytes``: the body's size, for the RSS limit."""
        self._check_context(prompt_ids)
        gen, sampling = req.generation_params(self.bounds.default_max_tokens), req.sampling_params()
        if not self.engine.has_room(req.n):
            raise RequestError(f"the server is busy: {self.engine.jobs.qsize()} requests wait for a slot",
                               status=503, code="server_busy")
        reservation = await self.resident.reserve(body_bytes) if self.resident else Reservation()
        c, matcher, work = await self.prepare(body, gen.max_tokens, tool_format, reservation, self._rollback_for(gen),
                                              list(prompt_ids))
        if gen.aligned and matcher is None:
            raise RequestError('sampling: "aligned" needs a constraint (response_format, a grammar, tools)',
                               param="sampling")
        schema = partial_schema(req, c)   # (a 400 before any job is queued)
        matchers = [matcher if i == 0 or matcher is None else matcher.fork() for i in range(req.n)]
        run_ids, healers = prompt_ids, [None] * len(matchers)
        if getattr(req, "heal", None):   # (the first request builds the vocabulary's prefix index)
            run_ids, healers = await asyncio.to_thread(self._healing, prompt_ids, matchers, gen.max_tokens)
        total = self.limits.grammar_time_limit
        budget = GrammarTime(None if total is None else total * req.n)   # the request's choices together
        loop = asyncio.get_running_loop()
        forget = None if work is None else work.forget
        jobs = [self.engine.submit(Job(run_ids, gen, _choice_seed(sampling, i), JobStream(loop), JobGrammar(
                    m, budget, forget, h, h.prefix.decode(errors="replace") if h else "")))
                for i, (m, h) in enumerate(zip(matchers, healers))]
        return Submitted(c, jobs, schema)

    def _healing(self, prompt_ids: list[int], matchers: list, max_tokens: int) -> tuple[list[int], list]:
        """``heal: true`` (completions; token healing of the raw prompt, ``stencil.runtime.healing``): the
        prompt the jobs run, without its end that a longer token extends, and each job's ``Healer``
        (None: nothing to heal), which makes the choice write that end again first."""
        info = self.lm.tokenizer_info
        ctx = int(getattr(self.lm, "context_length", 0) or 0)
        room = min(max_tokens, ctx - len(prompt_ids)) if ctx else max_tokens   # what the row's budget holds
        plan, _ = start_healing(info, prompt_ids, matchers[0], room)
        return plan.prompt_ids, [Healer(info, plan.prefix, m) if plan.healed else None for m in matchers]

    def _rollback_for(self, gen: GenerationParams) -> int:
        """The max_rollback a request's matcher needs: a speculating row's longest draft."""
        e = self.engine
        on = e.speculate if gen.speculate is None else gen.speculate
        return e.speculation.max_draft if on and gen.logprobs is None and not gen.ignore_eos else 0

    async def run(self, request: Request, req, body: dict, prompt_ids, chat: bool, tool_format="generic"):
        """The answer to a completion route's checked request ``req`` (``body``: the raw one): its
        stream of events, or its JSON once every choice is done."""
        c, jobs, schema = await self.submit(req, body, prompt_ids, tool_format, body_bytes_of(request))
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        if req.stream:
            counted = len(prompt_ids) if req.include_usage() else None
            return StreamingResponse(stream_events(request, jobs, rid, chat, c, self.name, counted, schema),
                                     media_type="text/event-stream")
        await wait_all(request, jobs)
        for j in jobs:
            if j.result.error:
                raise RequestError(j.result.error, status=j.result.error_status, code=j.result.error_code)
        choices = [choice(i, j, chat, c, j.params.logprobs is not None) for i, j in enumerate(jobs)]
        return {"id": rid, "object": "chat.completion" if chat else "text_completion", "created": int(time.time()),
                "model": self.name, "choices": choices, "usage": usage(len(prompt_ids), jobs, c)}


def _choice_seed(sampling: SamplingParams, i: int) -> SamplingParams:
    """Choice ``i``'s sampling: the request's seed plus ``i`` (the choices differ, each reproducible)."""
    return sampling if sampling.seed is None else replace(sampling, seed=sampling.seed + i)


def body_bytes_of(request: Request) -> int:
    """The size of the body ``Service.read_body`` read."""
    return getattr(request.state, "body_bytes", 0)


def _read_in_weights(lm) -> None:
    """One forward pass: weights mapped from the model's file count in the RSS only once read (a
    SmolLM2 server's RSS doubles at its first step), so the RSS limit's start is measured after it."""
    import torch
    with torch.inference_mode():
        lm.model(input_ids=torch.tensor([[0]], device=lm.device))


def _why(e: BaseException) -> str:
    """What stopped the grammar work: the core's message, or the server's wait running out."""
    return str(e) if isinstance(e, stencil.TimeLimitExceeded) else \
        f"the server stopped waiting {COMPILE_GRACE:g} s past it"
