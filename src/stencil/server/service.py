"""A request's way through the server: its body read within the size limit, its parameters
checked, its constraint compiled and warmed (first mask, shortest completion) under the request's
deadline, its jobs queued for the engine."""
from __future__ import annotations

import asyncio
import time
import uuid

from fastapi import Request
from fastapi.responses import StreamingResponse

import stencil
from stencil.healing import Healer, start_healing
from stencil.server.body import read_json
from stencil.server.constraints import Constraint, constraint_for
from stencil.server.engine import Engine, Job
from stencil.server.grammar_time import GrammarTime
from stencil.server.limits import ServerLimits
from stencil.server.partials import partial_schema
from stencil.server.protocol import RequestError, flag, number, stop_list
from stencil.server.resident import Reservation, ResidentLimit
from stencil.server.request import aligned_particles, logit_bias, logprobs_count
from stencil.server.responses import choice, stream_events, usage, wait_all
from stencil.server.warmup import COMPILE_GRACE, Warmup
from stencil.speculative import SpeculationOptions


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
        self.max_tokens = limits.max_tokens or int(getattr(lm, "context_length", 0) or 0) or None

    async def read_body(self, request: Request) -> dict:
        body, size = await read_json(request, self.limits.max_body_bytes, self.limits.body_timeout)
        request.state.body_bytes = size  # what a compile may build scales with it (ResidentLimit)
        if body.get("model") not in (None, self.name):
            raise RequestError(f"unknown model {body.get('model')!r}; this server serves {self.name!r}",
                               param="model", code="model_not_found")
        return body

    def params(self, body: dict, prompt_ids: list[int], req=None) -> dict:
        ctx = self.lm.context_length
        if ctx and len(prompt_ids) >= ctx:
            raise RequestError(f"the prompt has {len(prompt_ids)} tokens, but the model's context holds {ctx}",
                               param="messages", code="context_length_exceeded")
        flag(body, "stream")
        default_max = min(256, self.max_tokens or 256)
        max_tokens = number(body, "max_completion_tokens", default_max, 0, self.max_tokens, int)
        return dict(max_tokens=number(body, "max_tokens", max_tokens, 0, self.max_tokens, int),
                    temperature=number(body, "temperature", 0.0, 0.0, 2.0),
                    top_p=number(body, "top_p", 1.0, 0.0, 1.0),
                    seed=number(body, "seed", None, 0, 2**63 - 1, kind=int), stop=stop_list(body),
                    # vLLM's extra parameter: > 1 keeps small models out of loops inside strings
                    repetition_penalty=number(body, "repetition_penalty", 1.0, 0.5, 2.0),
                    # vLLM's too: the end-of-sequence token is never sampled, so an unconstrained
                    # row runs to max_tokens (or a stop string), as benchmarks at equal lengths need
                    ignore_eos=flag(body, "ignore_eos"),
                    n=number(body, "n", 1, 1, self.limits.max_n, int), **self._sampling(req))

    def _sampling(self, req) -> dict:
        """The fields the request model checked: Sampler options and log-probabilities."""
        if req is None:
            return dict(sampling={}, logprobs=None, include_usage=False, speculate=None)
        top_k = req.top_k if req.top_k and req.top_k > 0 else 0
        sampling = dict(top_k=top_k, min_p=req.min_p or 0.0, frequency_penalty=req.frequency_penalty or 0.0,
                        presence_penalty=req.presence_penalty or 0.0,
                        logit_bias=logit_bias(req, self.lm.tokenizer_info.vocab_size))
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        speculate = req.speculate
        if req.stream_options is not None and not req.stream:
            raise RequestError("stream_options is only allowed with stream: true", param="stream_options")
        return dict(sampling=sampling, logprobs=logprobs_count(req), include_usage=include_usage, speculate=speculate)

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

    async def submit(self, body: dict, prompt_ids, req=None, tool_format="generic",
                     body_bytes: int = 0) -> tuple[Constraint, list[Job], dict]:
        """Check the request's parameters, compile and warm its constraint, and queue its ``n``
        jobs: (constraint, jobs, parameters). ``body_bytes``: the body's size, for the RSS limit."""
        p = self.params(body, prompt_ids, req)
        p["aligned"] = aligned_particles(req, p)   # sampling: "aligned" (stencil.aligned), checked first
        if not self.engine.has_room(p["n"]):
            raise RequestError(f"the server is busy: {self.engine.jobs.qsize()} requests wait for a slot",
                               status=503, code="server_busy")
        reservation = await self.resident.reserve(body_bytes) if self.resident else Reservation()
        c, matcher, work = await self.prepare(body, p["max_tokens"], tool_format, reservation, self._rollback_for(p),
                                              list(prompt_ids))
        if p["aligned"] and matcher is None:
            raise RequestError('sampling: "aligned" needs a constraint (response_format, a grammar, tools)',
                               param="sampling")
        p["partial_schema"] = partial_schema(req, c)   # (a 400 before any job is queued)
        matchers = [matcher if i == 0 or matcher is None else matcher.fork() for i in range(p["n"])]
        run_ids, healers = prompt_ids, [None] * len(matchers)
        if getattr(req, "heal", None):   # (the first request builds the vocabulary's prefix index)
            run_ids, healers = await asyncio.to_thread(self._healing, prompt_ids, matchers, p["max_tokens"])
        total = self.limits.grammar_time_limit
        budget = GrammarTime(None if total is None else total * p["n"])   # the request's choices together
        loop = asyncio.get_running_loop()
        jobs = [self.engine.submit(Job(run_ids, p["max_tokens"], p["temperature"],
                                       None if p["seed"] is None else p["seed"] + i, p["stop"],
                                       p["repetition_penalty"], loop, top_p=p["top_p"],
                                       ignore_eos=p["ignore_eos"], matcher=m, sampling=p["sampling"],
                                       logprobs=p["logprobs"], speculate=p["speculate"],
                                       forget=None if work is None else work.forget, grammar_time=budget,
                                       healer=h, healed_prefix=h.prefix.decode(errors="replace") if h else "",
                                       aligned=p["aligned"]))
                for i, (m, h) in enumerate(zip(matchers, healers))]
        return c, jobs, p

    def _healing(self, prompt_ids: list[int], matchers: list, max_tokens: int) -> tuple[list[int], list]:
        """``heal: true`` (completions; token healing of the raw prompt, ``stencil.healing``): the
        prompt the jobs run, without its end that a longer token extends, and each job's ``Healer``
        (None: nothing to heal), which makes the choice write that end again first."""
        info = self.lm.tokenizer_info
        ctx = int(getattr(self.lm, "context_length", 0) or 0)
        room = min(max_tokens, ctx - len(prompt_ids)) if ctx else max_tokens   # what the row's budget holds
        plan, _ = start_healing(info, prompt_ids, matchers[0], room)
        return plan.prompt_ids, [Healer(info, plan.prefix, m) if plan.healed else None for m in matchers]

    def _rollback_for(self, p: dict) -> int:
        """The max_rollback a request's matcher needs: a speculating row's longest draft."""
        e = self.engine
        on = e.speculate if p["speculate"] is None else p["speculate"]
        return e.speculation.max_draft if on and p["logprobs"] is None and not p["ignore_eos"] else 0

    async def run(self, request: Request, body: dict, prompt_ids, chat: bool, req=None, tool_format="generic"):
        c, jobs, p = await self.submit(body, prompt_ids, req, tool_format, body_bytes_of(request))
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        if body.get("stream"):
            counted = len(prompt_ids) if p["include_usage"] else None
            return StreamingResponse(stream_events(request, jobs, rid, chat, c, self.name, counted,
                                                   p["partial_schema"]),
                                     media_type="text/event-stream")
        await wait_all(request, jobs)
        for j in jobs:
            if j.error:
                raise RequestError(j.error, status=j.error_status, code=j.error_code)
        choices = [choice(i, j, chat, c, p["logprobs"] is not None) for i, j in enumerate(jobs)]
        return {"id": rid, "object": "chat.completion" if chat else "text_completion", "created": int(time.time()),
                "model": self.name, "choices": choices, "usage": usage(len(prompt_ids), jobs, c)}


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
