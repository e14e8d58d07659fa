"""FastAPI routes: /v1/chat/completions, /v1/completions, /v1/models, /health (OpenAI's shapes)."""
from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

import stencil
from stencil.memory import resident_bytes
from stencil.server.limits import ServerLimits
from stencil.server.protocol import RequestError, error_body, message_text
from stencil.server.service import Service
from stencil.server.toolcalls import tools_prompt

log = logging.getLogger("stencil.server")


def create_app(lm, *, model_name: str | None = None, compile_timeout: float | None = None, max_batch: int = 16,
               mask_threads: int | None = None, limits: ServerLimits | None = None):
    """The ASGI app serving ``lm`` (a ``stencil.models.LoadedModel``); ``limits`` bound what one
    request may cost (``compile_timeout`` overrides ``limits.compile_timeout``).

    Example::

        app = create_app(stencil.models.load_model(), max_batch=16)   # then uvicorn.run(app)
    """
    limits = limits or ServerLimits()
    if compile_timeout is not None:
        limits = replace(limits, compile_timeout=compile_timeout)
    svc = Service(lm, model_name or lm.name, limits, max_batch, mask_threads)
    engine = svc.engine

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        engine.close()  # the thread ends and drops its rows (their matchers) before the interpreter
        await asyncio.to_thread(engine.thread.join, 10)

    app = FastAPI(title="stencil", lifespan=lifespan)
    app.add_middleware(_InternalErrors)
    app.state.engine = engine

    @app.exception_handler(RequestError)
    async def _bad(_req, e: RequestError):
        return JSONResponse(error_body(e.message, param=e.param, code=e.code,
                                       type_="invalid_request_error" if e.status < 500 else "server_error"),
                            status_code=e.status)

    device, dtype = lm.device, lm.dtype

    @app.get("/health")
    async def health():
        # step_seconds and step_rows are cumulative since the start: a client measures the mean
        # decode step (and its mean batch) between two readings, as the serve benchmark does
        return {"status": "ok", "running": engine.running, "waiting": engine.jobs.qsize(),
                "forward_passes": engine.steps, "step_seconds": engine.step_seconds, "step_rows": engine.step_rows,
                "device": device, "dtype": dtype, "failed_rows": engine.failed_rows,
                "rss_bytes": resident_bytes(), "grammar_memory": stencil.memory_usage()}

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
        messages.append({"role": m["role"], "content": message_text(m.get("content"), f"messages[{i}].content")})
    if body.get("tools") and body.get("tool_choice") != "none" and isinstance(body["tools"], list):
        # small chat templates have no tools section: the tools go in a system message
        messages.insert(0, {"role": "system", "content": tools_prompt(body["tools"])})
    return messages


class _InternalErrors:
    """An unexpected exception in a route becomes OpenAI's error JSON with a 500, logged with its
    traceback, instead of a plain-text 500 that also closes the client's keep-alive connection."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def tracked(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)
        try:
            await self.app(scope, receive, tracked)
        except Exception:  # noqa: BLE001 - answered as a 500, the server goes on
            log.exception("internal error in %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            body = error_body("internal server error (the server's log has the details)", type_="server_error")
            await JSONResponse(body, status_code=500)(scope, receive, send)
