"""FastAPI routes: /v1/chat/completions, /v1/completions, /v1/models, /health (OpenAI's shapes)."""
from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

import stencil
from stencil.server.constraints import constraint_for
from stencil.server.engine import _DONE, Engine, Job
from stencil.server.protocol import RequestError, error_body, message_text, number, stop_list
from stencil.server.toolcalls import split_tool_calls, tools_prompt

#: seconds a grammar may take to compile before the request gets a 400 (the compiler's own
#: compile_timeout bounds the front-end; this bounds the wait on the thread pool as well)
COMPILE_WAIT = 10.0


def create_app(lm, *, model_name: str | None = None, compile_timeout: float = 5.0, max_batch: int = 16):
    """The ASGI app serving ``lm`` (a ``stencil.models.LoadedModel``)."""
    svc = _Service(lm, model_name or lm.name, compile_timeout, max_batch)
    engine = svc.engine

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        engine.close()  # the thread ends and drops its rows (their matchers) before the interpreter
        await asyncio.to_thread(engine.thread.join, 10)

    app = FastAPI(title="stencil", lifespan=lifespan)
    app.state.engine = engine

    @app.exception_handler(RequestError)
    async def _bad(_req, e: RequestError):
        return JSONResponse(error_body(e.message, param=e.param, code=e.code), status_code=e.status)

    @app.get("/health")
    async def health():
        return {"status": "ok", "running": engine.running, "waiting": engine.jobs.qsize(),
                "forward_passes": engine.steps}

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": svc.name, "object": "model", "created": 0,
                                            "owned_by": "stencil"}]}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        body = await svc.read_body(request)
        prompt_ids = await asyncio.to_thread(lm.encode_prompt, messages=_chat_messages(body))
        return await svc.run(request, body, prompt_ids, chat=True)

    @app.post("/v1/completions")
    async def completions(request: Request):
        body = await svc.read_body(request)
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not prompt:
            raise RequestError("prompt must be a non-empty string", param="prompt")
        prompt_ids = await asyncio.to_thread(lm.encode_prompt, prompt, chat=False)
        return await svc.run(request, body, prompt_ids, chat=False)

    return app


def _chat_messages(body: dict) -> list[dict]:
    """The chat request's messages as the chat template takes them, tools in a system message."""
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise RequestError("messages must be a non-empty list", param="messages")
    messages = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise RequestError(f"messages[{i}] must be an object with a role", param=f"messages[{i}]")
        messages.append({"role": m["role"], "content": message_text(m.get("content"))})
    if body.get("tools") and body.get("tool_choice") != "none" and isinstance(body["tools"], list):
        # small chat templates have no tools section: the tools go in a system message
        messages.insert(0, {"role": "system", "content": tools_prompt(body["tools"])})
    return messages


class _Service:
    """What the routes share: the model, its name, the grammar compiler and the batching engine."""

    def __init__(self, lm, name: str, compile_timeout: float, max_batch: int):
        self.lm, self.name = lm, name
        self.compiler = stencil.GrammarCompiler(lm.tokenizer_info, compile_timeout=compile_timeout)
        self.engine = Engine(lm, max_batch=max_batch)

    async def read_body(self, request: Request) -> dict:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise RequestError(f"the request body is not valid JSON: {e}") from None
        except RecursionError:
            raise RequestError("the request body nests too deeply to parse") from None
        if not isinstance(body, dict):
            raise RequestError("the request body must be a JSON object")
        if body.get("model") not in (None, self.name):
            raise RequestError(f"unknown model {body.get('model')!r}; this server serves {self.name!r}",
                               param="model", code="model_not_found")
        return body

    async def compile_grammar(self, body: dict):
        compiler = self.compiler
        c = constraint_for(compiler, body)
        if c.fn is None:
            return c, None
        fut = compiler.compile_async(c.fn, *c.args, **(c.kwargs or {}))
        try:
            return c, await asyncio.wait_for(asyncio.wrap_future(fut), COMPILE_WAIT)
        except asyncio.TimeoutError:
            raise RequestError(f"the grammar did not compile within {COMPILE_WAIT} s") from None
        except RequestError:
            raise
        except Exception as e:  # noqa: BLE001 - any failure of a user's grammar is the user's 400
            raise RequestError(f"invalid grammar: {e}", param="response_format") from None

    def params(self, body: dict, prompt_ids: list[int]) -> dict:
        ctx = self.lm.context_length
        if ctx and len(prompt_ids) >= ctx:
            raise RequestError(f"the prompt has {len(prompt_ids)} tokens, but the model's context holds {ctx}",
                               param="messages", code="context_length_exceeded")
        return dict(max_tokens=number(body, "max_tokens", number(body, "max_completion_tokens", 256, 0, None, int),
                                      0, None, int),
                    temperature=number(body, "temperature", 0.0, 0.0, 2.0),
                    top_p=number(body, "top_p", 1.0, 0.0, 1.0),
                    seed=number(body, "seed", None, kind=int), stop=stop_list(body),
                    # vLLM's extra parameter: > 1 keeps small models out of loops inside strings
                    repetition_penalty=number(body, "repetition_penalty", 1.0, 0.5, 2.0))

    async def run(self, request: Request, body: dict, prompt_ids, chat: bool):
        c, grammar = await self.compile_grammar(body)
        p = self.params(body, prompt_ids)
        if grammar is not None:  # the budget-aware masks end the output within max_tokens if it can fit
            need = await asyncio.to_thread(lambda: stencil.Matcher(grammar).min_completion_tokens())
            if need is not None and need > p["max_tokens"]:
                raise RequestError(f"max_tokens is {p['max_tokens']}, but the shortest output the constraint allows "
                                   f"needs up to {need} tokens", param="max_tokens")
        n = number(body, "n", 1, 1, 16, int)
        loop = asyncio.get_running_loop()
        jobs = [self.engine.submit(Job(prompt_ids, grammar, p["max_tokens"], p["temperature"],
                                       None if p["seed"] is None else p["seed"] + i, p["stop"],
                                       p["repetition_penalty"], loop, top_p=p["top_p"]))
                for i in range(n)]
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        if body.get("stream"):
            return StreamingResponse(_stream(request, jobs, rid, chat, c, self.name), media_type="text/event-stream")
        await _wait_all(request, jobs)
        for j in jobs:
            if j.error:
                raise RequestError(f"generation failed: {j.error}", status=500)
        choices = [_choice(i, j, chat, c) for i, j in enumerate(jobs)]
        done = sum(j.completion_tokens for j in jobs)
        return {"id": rid, "object": "chat.completion" if chat else "text_completion", "created": int(time.time()),
                "model": self.name, "choices": choices,
                "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": done,
                          "total_tokens": len(prompt_ids) + done}}


async def _wait_all(request: Request, jobs: list[Job]) -> None:
    """Wait until every job is done; a client that left cancels them all."""
    try:
        for j in jobs:
            while True:
                try:
                    if (await asyncio.wait_for(j.out.get(), 0.5)) is _DONE:
                        break
                except asyncio.TimeoutError:
                    # uvicorn does not cancel a handler whose client left: look, and free the slot
                    if await request.is_disconnected():
                        raise asyncio.CancelledError from None
    except asyncio.CancelledError:
        for j in jobs:
            j.cancelled = True
        raise


async def _stream(request: Request, jobs: list[Job], rid: str, chat: bool, c, name: str):
    """Server-sent events of the jobs' text, as OpenAI streams it (chunks, then ``[DONE]``)."""
    created = int(time.time())
    obj = "chat.completion.chunk" if chat else "text_completion"

    def chunk(i: int, delta: dict | str, finish=None) -> str:
        choice = ({"index": i, "delta": delta, "finish_reason": finish} if chat
                  else {"index": i, "text": delta, "finish_reason": finish})
        return "data: " + json.dumps({"id": rid, "object": obj, "created": created, "model": name,
                                      "choices": [choice]}) + "\n\n"

    # the n choices' pieces, interleaved as they come, each tagged with its index
    merged: asyncio.Queue = asyncio.Queue()
    tasks = [asyncio.create_task(_forward(i, j, merged)) for i, j in enumerate(jobs)]
    try:
        if chat:
            for i in range(len(jobs)):
                yield chunk(i, {"role": "assistant", "content": ""})
        # tool calls and reasoning are parsed from the whole text; plain content streams as it comes
        buffered = c.tools or c.reasoning
        left = len(jobs)
        while left:
            i, item = await merged.get()
            job = jobs[i]
            if item is not _DONE:
                if not buffered:
                    yield chunk(i, {"content": item} if chat else item)
                continue
            left -= 1
            if job.error:
                yield "data: " + json.dumps(error_body(job.error, type_="server_error")) + "\n\n"
                continue
            if buffered:
                yield chunk(i, _final_delta(job, c))
            yield chunk(i, {} if chat else "", _finish(job, c))
        yield "data: [DONE]\n\n"
    finally:
        for job in jobs:
            job.cancelled = True  # a dropped connection ends the generations (no-op once done)
        for t in tasks:
            t.cancel()


async def _forward(i: int, job: Job, merged: asyncio.Queue) -> None:
    """Copy the job's pieces into ``merged``, tagged with its index ``i``, up to its end."""
    while True:
        item = await job.out.get()
        await merged.put((i, item))
        if item is _DONE:
            return


def _final_delta(job: Job, c) -> dict:
    """The whole message of a buffered stream (tool calls, reasoning) as one delta."""
    msg = _message(job, c)
    delta = {k: v for k, v in msg.items() if k != "role" and v is not None}
    if "tool_calls" in delta:
        delta["tool_calls"] = [dict(tc, index=k) for k, tc in enumerate(delta["tool_calls"])]
    return delta


def _finish(job: Job, c) -> str:
    if c.tools and split_tool_calls(job.text)[1]:
        return "tool_calls"
    return job.finish_reason


def _message(job: Job, c) -> dict[str, Any]:
    text, reasoning = job.text, None
    if c.reasoning and "</think>" in text:
        head, _, text = text.partition("</think>")
        reasoning = head.replace("<think>", "", 1).strip()
        text = text.lstrip()
    msg: dict[str, Any] = {"role": "assistant", "content": text, "reasoning_content": reasoning}
    if c.tools:
        content, calls = split_tool_calls(text)
        if calls:
            msg["content"] = content or None
            msg["tool_calls"] = calls
    return msg


def _choice(i: int, job: Job, chat: bool, c) -> dict:
    if chat:
        return {"index": i, "message": _message(job, c), "finish_reason": _finish(job, c), "logprobs": None}
    return {"index": i, "text": job.text, "finish_reason": job.finish_reason, "logprobs": None}
