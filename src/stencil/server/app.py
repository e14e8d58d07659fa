"""FastAPI routes: /v1/chat/completions, /v1/responses, /v1/completions, /v1/models, /health (OpenAI's
shapes)."""
from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import time
import uuid
from dataclasses import replace

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

import stencil
from stencil.memory import resident_bytes
from stencil.runtime.models import chat_ids, renders_own_chats
from stencil.runtime.speculative import SpeculationOptions
from stencil.server.constraints import TOOL_STRICT, request_tools
from stencil.server.limits import ServerLimits
from stencil.server.openai_responses import ResponsesRequest, chat_body, response_events, response_object
from stencil.server.protocol import RequestError, error_body
from stencil.server.request import ChatRequest, CompletionRequest
from stencil.server.responses import wait_all
from stencil.server.service import Service, body_bytes_of
from stencil.server.toolcalls import FORMATS, chat_prompt, renders_tools, tool_format_for

log = logging.getLogger("stencil.server")


def create_app(lm, *, model_name: str | None = None, compile_timeout: float | None = None, max_batch: int = 16,
               mask_threads: int | None = None, limits: ServerLimits | None = None, tool_format: str = "auto",
               speculate: bool | SpeculationOptions = True, tool_strict: str = "all", full_masks: bool = False):
    """The ASGI app serving ``lm`` (a ``stencil.runtime.models.LoadedModel``); ``limits`` bound what one
    request may cost (``compile_timeout`` overrides ``limits.compile_timeout``). ``tool_format``:
    how tool calls are written and read back ("auto": the model family's, read from its chat
    template; "generic": ``<tool_call>`` JSON announced in a system message; or a family of
    ``stencil.grammar.tagged.tool_presets.FORMATS``: llama3, qwen, qwen-coder, deepseek,
    deepseek-v3.1, kimi, mistral, harmony); a request's ``tool_format`` overrides it.
    ``tool_strict``: whose arguments the grammar holds to their schema: "all" tools (also those
    a request marks ``strict: false``), only those marked ``strict: true`` ("requested"), or none
    ("off": any JSON object). ``speculate`` (on by default): the engine's (``Engine``) speculative
    decoding; a request's ``"speculate"`` overrides it. ``full_masks``: every mask filled (``server.picks``).

    Example::

        app = create_app(stencil.runtime.models.load_model(), max_batch=16)   # then uvicorn.run(app)
    """
    limits = limits or ServerLimits()
    if compile_timeout is not None:
        limits = replace(limits, compile_timeout=compile_timeout)
    default_format = _tool_format(lm, tool_format)
    template_tools = renders_tools(lm.tokenizer)   # (else the server announces the tools)
    if tool_strict not in TOOL_STRICT:
        raise ValueError(f"tool_strict must be one of {', '.join(TOOL_STRICT)}, got {tool_strict!r}")
    svc = Service(lm, model_name or lm.name, limits, max_batch, mask_threads, speculate, tool_strict, full_masks)
    engine = svc.engine
    app = FastAPI(title="stencil", lifespan=_lifespan(svc))
    app.add_middleware(_InternalErrors)
    app.state.engine = engine

    @app.exception_handler(RequestError)
    async def _bad(_req, e: RequestError):
        return _AsciiJSON(error_body(e.message, param=e.param, code=e.code,
                                     type_="invalid_request_error" if e.status < 500 else "server_error"),
                          status_code=e.status)

    device, dtype = lm.device, lm.dtype

    @app.get("/health")
    async def health():
        # step_seconds and step_rows are cumulative since the start: a client measures the mean
        # decode step (and its mean batch) between two readings, as the serve benchmark does
        return {"status": "ok", "running": engine.running, "waiting": engine.jobs.qsize(),
                "forward_passes": engine.steps, "step_seconds": engine.step_seconds, "step_rows": engine.step_rows,
                "step_phase_seconds": dict(engine.step_phases), "speculation": engine.speculation_stats(),
                "masks": engine.mask_stats(), "aligned": dict(engine.aligned_counts),
                "device": device, "dtype": dtype, "failed_rows": engine.failed_rows,
                "rss_bytes": resident_bytes(), "rss_limit": svc.limits.rss_limit,
                "resident": None if svc.resident is None else svc.resident.usage(),
                "grammar_memory": stencil.memory_usage(),
                # the collector: objects out of its reach (`stencil serve` freezes what it loaded)
                # and collections per generation since the start
                "gc": {"frozen": gc.get_freeze_count(), "collections": [g["collections"] for g in gc.get_stats()]}}

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": svc.name, "object": "model", "created": 0,
                                            "owned_by": "stencil"}]}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        body = await svc.read_body(request)
        req = svc.parse(ChatRequest, body)
        fmt = default_format if req.tool_format is None else _tool_format(lm, req.tool_format, "tool_format")
        messages, tools = chat_prompt(req.template_messages(), request_tools(body), fmt, template_tools)
        prompt_ids = await asyncio.to_thread(_encode_chat, lm, messages, tools)
        return await svc.run(request, req, body, prompt_ids, chat=True, tool_format=fmt)

    @app.post("/v1/responses")
    async def responses(request: Request):
        return await _responses(svc, request, default_format, template_tools)

    @app.post("/v1/completions")
    async def completions(request: Request):
        body = await svc.read_body(request)
        req = svc.parse(CompletionRequest, body)
        prompt_ids = await asyncio.to_thread(lm.encode_prompt, req.prompt, chat=False)
        return await svc.run(request, req, body, prompt_ids, chat=False)

    return app


def _lifespan(svc: Service):
    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        if svc.resident is not None:
            svc.resident.close()
        svc.engine.close()  # the thread ends and drops its rows (their matchers) before the interpreter
        await asyncio.to_thread(svc.engine.thread.join, 10)
    return lifespan


async def _responses(svc: Service, request: Request, fmt: str, template_tools: bool):
    """``/v1/responses``: the request translated into the chat request it means, generated as one."""
    body = await svc.read_body(request)
    req = svc.parse(ResponsesRequest, body)
    if req.tool_format is not None:
        fmt = _tool_format(svc.lm, req.tool_format, "tool_format")
    chat = chat_body(req)
    chat_req = svc.parse(ChatRequest, chat)   # (before the tools are read: their shapes are its)
    messages, tools = chat_prompt(chat_req.template_messages(), request_tools(chat), fmt, template_tools)
    prompt_ids = await asyncio.to_thread(_encode_chat, svc.lm, messages, tools)
    c, jobs, schema = await svc.submit(chat_req, chat, prompt_ids, fmt, body_bytes_of(request))
    if req.stream:
        return StreamingResponse(response_events(jobs[0], c, req, svc.name, len(prompt_ids), schema),
                                 media_type="text/event-stream")
    await wait_all(request, jobs)
    failed = jobs[0].result
    if failed.error:
        raise RequestError(failed.error, status=failed.error_status, code=failed.error_code)
    return response_object("resp_" + uuid.uuid4().hex, req, svc.name, int(time.time()), jobs[0], c, len(prompt_ids))


def _tool_format(lm, name: str, param: str | None = None) -> str:
    fmt = tool_format_for(lm.tokenizer, name)
    if fmt not in FORMATS:
        msg = f"tool_format must be auto or one of {', '.join(FORMATS)}, got {name!r}"
        if param is None:
            raise ValueError(msg)
        raise RequestError(msg, param=param)
    return fmt


def _encode_chat(lm, messages: list[dict], tools: list | None) -> list[int]:
    """The prompt's ids through the chat template; a 400 where the template refuses the
    conversation (Llama 3.1's raises on two calls in one turn)."""
    import jinja2
    try:
        return _render_chat(lm, messages, tools)
    except jinja2.TemplateError as e:
        raise RequestError(f"the model's chat template cannot render these messages: {e}", param="messages") from None


def _render_chat(lm, messages: list[dict], tools: list | None) -> list[int]:
    tok = lm.tokenizer
    if renders_own_chats(tok):
        return chat_ids(tok, messages, tools)
    if tools is None or not getattr(tok, "chat_template", None):
        return lm.encode_prompt(messages=messages)
    text = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    return list(tok(text, add_special_tokens=False)["input_ids"])


class _AsciiJSON(JSONResponse):
    """JSON with every non-ASCII character escaped: an error may quote a request's lone
    surrogate, which UTF-8 cannot encode (a 500 while writing the 400)."""

    def render(self, content) -> bytes:
        return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")


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
