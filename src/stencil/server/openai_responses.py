"""OpenAI's Responses API (``/v1/responses``) over the chat pipeline: a request is translated into
the chat request it means (instructions and input items into messages, ``text.format`` into
``response_format``, function and custom tools into chat tools), generated as chat requests are,
and the result written back as a ``response`` object or its stream of typed events
(``function_call`` and ``custom_tool_call`` items for the calls).

Example (the ``openai`` client)::

    r = client.responses.parse(model="m", input="A city.", text_format=City)   # r.output_parsed: City
"""
from __future__ import annotations

import itertools
import json
import time
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, field_validator

from stencil.server.job import DONE, Job
from stencil.server.partials import ChoicePartials, job_complete
from stencil.server.messages import InputItem, StringOr, content_text
from stencil.server.protocol import RequestError, refuse_at
from stencil.server.request import StreamOptions, _Unchanging
from stencil.server.response_items import OutputItems, new_id
from stencil.server.responses import job_reasoning_tokens
from stencil.server.shapes import ResponsesTool


class ResponsesRequest(_Unchanging):
    """``/v1/responses``: the fields that change the output are implemented or refused (a 400
    naming them); ``store``, ``metadata`` and the like change nothing and pass."""

    input: Annotated[Union[str, list[InputItem]], StringOr(list[InputItem], "items", nullable=False)]
    instructions: Optional[str] = None
    max_output_tokens: Optional[int] = Field(None, ge=1)
    temperature: Optional[float] = Field(None, ge=0.0, le=2.0)
    top_p: Optional[float] = Field(None, ge=0.0, le=1.0)
    seed: Optional[int] = Field(None, ge=0)  # not OpenAI's: vLLM's and stencil's, for sampled tests
    text: Optional[dict] = None
    tools: Optional[list[ResponsesTool]] = None
    tool_choice: Union[str, dict, None] = None
    parallel_tool_calls: Optional[bool] = None
    stream: Optional[bool] = None
    #: stencil's ``include_partial`` only (server.partials): the output text's events carry ``partial``
    stream_options: Optional[StreamOptions] = None
    truncation: Optional[Literal["disabled"]] = None
    include: Optional[list[Any]] = Field(None, max_length=0)  # logprobs and other inclusions: not done
    background: Optional[Literal[False]] = None
    tool_format: Optional[str] = None  # stencil's: how tool calls are written (stencil serve --tool-format)
    #: OpenAI's ``{"effort", "summary"}``: an effort other than "none" lets the model think first
    #: (a ``<think>`` block, Harmony's analysis channel), answered as a ``reasoning`` item whose
    #: summary is the reasoning's text
    reasoning: Optional[dict] = None

    @field_validator("input")
    @classmethod
    def _some(cls, items: Union[str, list[InputItem]]) -> Union[str, list[InputItem]]:
        if isinstance(items, list) and not items:
            refuse_at((), "must be a string or a non-empty list of items")
        return items


#: OpenAI's reasoning efforts and summary kinds (the openai package's ``Reasoning``)
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
SUMMARIES = ("auto", "concise", "detailed")


def thinks(req: ResponsesRequest) -> bool:
    """Whether ``req.reasoning`` asks for reasoning (a 400 naming the field of a malformed one)."""
    r = req.reasoning
    if r is None:
        return False
    if not isinstance(r, dict):
        raise RequestError("reasoning must be an object", param="reasoning")
    for key, allowed in (("effort", EFFORTS), ("summary", SUMMARIES), ("generate_summary", SUMMARIES)):
        if r.get(key) is not None and r[key] not in allowed:
            raise RequestError(f"reasoning.{key} must be one of {', '.join(allowed)}, got {r[key]!r}",
                               param=f"reasoning.{key}")
    unknown = sorted(set(r) - {"effort", "summary", "generate_summary"})
    if unknown:
        raise RequestError(f"reasoning.{unknown[0]} is not supported", param=f"reasoning.{unknown[0]}",
                           code="unsupported_parameter")
    return r.get("effort") != "none"


def chat_body(req: ResponsesRequest) -> dict:
    """The chat-completions body that ``req`` means."""
    body: dict[str, Any] = {"messages": _messages(req)}
    for src, dst in (("max_output_tokens", "max_tokens"), ("temperature", "temperature"), ("top_p", "top_p"),
                     ("seed", "seed"), ("parallel_tool_calls", "parallel_tool_calls")):
        if getattr(req, src) is not None:
            body[dst] = getattr(req, src)
    text = req.text or {}
    fmt = _response_format(text.get("format"))
    if set(text) - {"format", "verbosity"}:
        raise RequestError(f"text.{sorted(set(text) - {'format', 'verbosity'})[0]} is not supported",
                           param="text", code="unsupported_parameter")
    if fmt is not None:
        body["response_format"] = fmt
    if thinks(req):
        body["reasoning"] = True
    if req.tools:
        body["tools"] = [_tool(t) for t in req.tools]
    if req.tool_choice is not None:
        body["tool_choice"] = _tool_choice(req.tool_choice)
    if req.stream_options is not None and req.stream_options.include_usage is not None:
        raise RequestError("stream_options.include_usage is chat's: a response's usage is in its "
                           "response.completed event", param="stream_options.include_usage",
                           code="unsupported_parameter")
    if req.stream_options is not None:   # (checked with the answer's constraint: server.partials)
        body["stream"], body["stream_options"] = req.stream, {"include_partial": req.stream_options.include_partial}
    return body


def _messages(req: ResponsesRequest) -> list[dict]:
    """The chat messages of the instructions and the input items (checked: ``server.messages``)."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": req.instructions}] if req.instructions else []
    if isinstance(req.input, str):
        return msgs + [{"role": "user", "content": req.input}]
    thought = None   # a reasoning item's text, waiting for the assistant turn it belongs to
    for item in req.input:
        if item.type == "message":
            msgs.append({"role": "system" if item.role == "developer" else item.role,
                         "content": content_text(item.content)})
            if item.role == "assistant" and thought is not None:
                msgs[-1]["reasoning_content"], thought = thought, None
        elif item.type == "reasoning":   # a past answer's reasoning: the next assistant turn's
            thought = item.thought()
        elif item.type in ("function_call", "custom_tool_call"):
            if msgs and msgs[-1]["role"] == "assistant" and msgs[-1].get("tool_calls") is not None:
                msgs[-1]["tool_calls"].append(item.call())  # parallel calls: one assistant turn
            else:
                msgs.append({"role": "assistant", "content": "", "tool_calls": [item.call()]})
                if thought is not None:
                    msgs[-1]["reasoning_content"], thought = thought, None
        else:   # a call's output
            msgs.append({"role": "tool", "tool_call_id": item.call_id, "content": content_text(item.output)})
    return msgs


def _response_format(fmt) -> Optional[dict]:
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        if not isinstance(fmt.get("schema"), dict):
            raise RequestError("text.format.schema must be a JSON Schema object", param="text.format.schema")
        spec = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": spec}
    raise RequestError(f"text.format.type must be text, json_schema or json_object, got {kind!r}",
                       param="text.format.type")


def _tool(tool: ResponsesTool) -> dict:
    """The chat tool a Responses tool (its shape checked: ``server.shapes``) means."""
    t = tool.model_dump(exclude_unset=True)
    if t["type"] == "custom":   # chat nests the tool, and a grammar format's syntax and definition
        spec = {k: t[k] for k in ("name", "description", "format") if k in t}
        fmt = spec.get("format")
        if isinstance(fmt, dict) and fmt.get("type") == "grammar" and "grammar" not in fmt:
            spec["format"] = {"type": "grammar", "grammar": {k: fmt[k] for k in ("syntax", "definition") if k in fmt}}
        return {"type": "custom", "custom": spec}
    fn = {k: t[k] for k in ("name", "description", "parameters", "strict") if k in t}
    return {"type": "function", "function": fn}


def _tool_choice(choice) -> Union[str, dict]:
    if isinstance(choice, dict) and choice.get("type") in ("function", "custom"):
        return {"type": choice["type"], choice["type"]: {"name": choice.get("name")}}
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        # Responses writes {"type": "allowed_tools", "mode", "tools"}; chat nests them
        return {"type": "allowed_tools", "allowed_tools": {k: choice.get(k) for k in ("mode", "tools")}}
    return choice  # auto, none, required: as in chat (the chat path checks them)


# -- the answer ---------------------------------------------------------------------------------
def response_object(rid: str, req: ResponsesRequest, name: str, created: int, job: Optional[Job] = None,
                    c=None, prompt_tokens: int = 0, output: Optional[list[dict]] = None) -> dict:
    """The ``response`` object: in progress (no ``job``), or the finished job's output items
    (``output``: those its stream wrote, else read from its whole text)."""
    status = "in_progress"
    incomplete = None
    if job is not None:
        if output is None:
            items = OutputItems(c)
            items.feed(job.result.text, final=True)
            output = items.items
        status = "completed"
        if job.result.finish_reason == "length":
            status, incomplete = "incomplete", {"reason": "max_output_tokens"}
    out_tokens = job.result.completion_tokens if job is not None else 0
    thought = job_reasoning_tokens(job, c) if job is not None and c is not None else 0
    return {"id": rid, "object": "response", "created_at": created, "status": status, "error": None,
            "incomplete_details": incomplete, "instructions": req.instructions,
            "max_output_tokens": req.max_output_tokens, "model": name, "output": output or [],
            "parallel_tool_calls": req.parallel_tool_calls is not False, "temperature": req.temperature,
            "top_p": req.top_p, "tool_choice": req.tool_choice or "auto",
            "tools": [t.model_dump(exclude_unset=True) for t in req.tools or ()],
            "text": req.text or {"format": {"type": "text"}}, "truncation": "disabled",
            "reasoning": {"effort": (req.reasoning or {}).get("effort"), "summary": (req.reasoning or {}).get("summary")},
            "metadata": req.metadata or {}, "store": False,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": out_tokens,
                      "total_tokens": prompt_tokens + out_tokens, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": thought}}}


async def response_events(job: Job, c, req: ResponsesRequest, name: str, prompt_tokens: int,
                          partial_schema: Any = None):
    """The stream of a response: ``response.created``, the output items as they are written
    (reasoning, text and each tool call's arguments or input as deltas while they are generated,
    each item added, grown and done in turn: :class:`OutputItems`), then ``response.completed``
    (or ``response.incomplete``; ``error`` for a failed generation). With ``partial_schema``
    (``stream_options.include_partial``) the output text's delta and done events carry ``partial``."""
    rid, created = new_id("resp"), int(time.time())
    seq = itertools.count()
    partials = None if partial_schema is None else ChoicePartials(partial_schema)

    def ev(kind: str, fields: dict) -> str:
        if partials is not None and kind == "response.output_text.delta":
            fields = {**fields, "partial": partials.feed(fields["delta"])}
        elif partials is not None and kind == "response.output_text.done":
            fields = {**fields, "partial": partials.end(job_complete(job))}
        return f"event: {kind}\ndata: {json.dumps({'type': kind, 'sequence_number': next(seq), **fields})}\n\n"
    start = response_object(rid, req, name, created, prompt_tokens=prompt_tokens)
    yield ev("response.created", {"response": start})
    yield ev("response.in_progress", {"response": start})
    items = OutputItems(c)
    try:
        while (item := await job.stream.out.get()) is not DONE:
            for kind, fields in items.feed(item[0]):
                yield ev(kind, fields)
        if job.result.error:
            yield ev("error", {"code": job.result.error_code, "message": job.result.error, "param": None})
            return
        for kind, fields in items.feed("", final=True):
            yield ev(kind, fields)
        final = response_object(rid, req, name, created, job, c, prompt_tokens, items.items)
        yield ev("response.completed" if final["status"] == "completed" else "response.incomplete", {"response": final})
    finally:
        job.stream.cancelled = True  # a dropped connection ends the generation (no-op once done)
