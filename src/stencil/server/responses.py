"""The answers of the completion routes: waiting for jobs, OpenAI's response and chunk shapes,
server-sent events."""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from fastapi import Request

from stencil.server.job import DONE, Job
from stencil.server.partials import ChoicePartials, job_complete
from stencil.server.protocol import error_body
from stencil.server.reasoning import ThinkStream, reasoning_end, reasoning_tokens, split_reasoning
from stencil.server.toolcalls import ToolStream, split_tool_calls


async def wait_all(request: Request, jobs: list[Job]) -> None:
    """Wait until every job is done; a client that left cancels them all."""
    try:
        for j in jobs:
            while True:
                try:
                    if (await asyncio.wait_for(j.stream.out.get(), 0.5)) is DONE:
                        break
                except asyncio.TimeoutError:
                    # uvicorn does not cancel a handler whose client left: look, and free the slot
                    if await request.is_disconnected():
                        raise asyncio.CancelledError from None
    except asyncio.CancelledError:
        for j in jobs:
            j.stream.cancelled = True
        raise


async def stream_events(request: Request, jobs: list[Job], rid: str, chat: bool, c, name: str,
                        prompt_tokens: int | None = None, partial_schema: Any = None):
    """Server-sent events of the jobs' text, as OpenAI streams it (chunks, then ``[DONE]``); with
    ``prompt_tokens`` (``stream_options.include_usage``) a last chunk with no choices holds the usage;
    with ``partial_schema`` (``stream_options.include_partial``) each choice that holds content, and
    each choice's last, carries ``partial`` (server.partials)."""
    created = int(time.time())
    obj = "chat.completion.chunk" if chat else "text_completion"
    lp_sent = [0] * len(jobs)
    partials = None if partial_schema is None else [ChoicePartials(partial_schema) for _ in jobs]

    def chunk(i: int, delta: dict | str, finish=None, upto: int | None = None) -> str:
        choice = ({"index": i, "delta": delta, "finish_reason": finish} if chat
                  else {"index": i, "text": delta, "finish_reason": finish})
        if upto is not None and jobs[i].params.logprobs is not None:
            choice["logprobs"] = logprobs_of(jobs[i].result.token_logprobs[lp_sent[i]:upto], chat)
            lp_sent[i] = upto
        if finish is not None and jobs[i].grammar.healed_prefix:
            choice["healed_prefix"] = jobs[i].grammar.healed_prefix
        if partials is not None:
            content = delta.get("content") if isinstance(delta, dict) else delta
            if finish is not None:
                choice["partial"] = partials[i].end(job_complete(jobs[i]))
            elif content:
                choice["partial"] = partials[i].feed(content)
        return _event({"id": rid, "object": obj, "created": created, "model": name, "choices": [choice]})

    # the n choices' pieces, interleaved as they come, each tagged with its index
    merged: asyncio.Queue = asyncio.Queue()
    tasks = [asyncio.create_task(_forward(i, j, merged)) for i, j in enumerate(jobs)]
    try:
        if chat:
            for i in range(len(jobs)):
                yield chunk(i, {"role": "assistant", "content": ""})
        # a <think> block as reasoning deltas, then the content; tool calls as they come (names,
        # then arguments)
        split = [_ChoiceStream(c) for _ in jobs] if chat else None
        left = len(jobs)
        while left:
            i, item = await merged.get()
            job = jobs[i]
            if item is not DONE:
                if split is None:
                    yield chunk(i, item[0], upto=item[1])
                    continue
                for k, d in enumerate(split[i].feed(item[0])):
                    yield chunk(i, d, upto=item[1] if k == 0 else None)
                continue
            left -= 1
            if job.result.error:
                yield "data: " + json.dumps(job_error_body(job)) + "\n\n"
                continue
            for d in split[i].feed("", final=True) if split is not None else []:
                yield chunk(i, d, upto=len(job.result.token_logprobs))
            yield chunk(i, {} if chat else "", _finish(job, _message(job, c) if c.tools else None))
        if prompt_tokens is not None:
            yield _event({"id": rid, "object": obj, "created": created, "model": name, "choices": [],
                          "usage": usage(prompt_tokens, jobs, c)})
        yield "data: [DONE]\n\n"
    finally:
        for job in jobs:
            job.stream.cancelled = True  # a dropped connection ends the generations (no-op once done)
        for t in tasks:
            t.cancel()


async def _forward(i: int, job: Job, merged: asyncio.Queue) -> None:
    """Copy the job's pieces into ``merged``, tagged with its index ``i``, up to its end."""
    while True:
        item = await job.stream.out.get()
        await merged.put((i, item))
        if item is DONE:
            return


class _ChoiceStream:
    """One chat choice's text as it grows, into OpenAI deltas: ``reasoning_content`` from a
    ``<think>`` block (``reasoning``), then ``content``, or tool-call deltas (``tools``)."""

    def __init__(self, c):
        self.text = ""
        self.think = ThinkStream(c.reasoning == "opened") if c.reasoning else None
        self.calls = ToolStream(c.tool_format, c.tools) if c.tools is not None else None
        self.sent = 0  # characters of content sent (without tools)

    def feed(self, piece: str, final: bool = False) -> list[dict]:
        self.text += piece
        out: list[dict] = []
        content: str | None = self.text
        if self.think is not None:
            thought, content = self.think.feed(self.text, final)
            if thought:
                out.append({"reasoning_content": thought})
        if content is None:   # (the thought has not ended: no content yet)
            return out
        if self.calls is not None:
            return out + self.calls.feed(content, final)
        if len(content) > self.sent:
            out.append({"content": content[self.sent:]})
            self.sent = len(content)
        return out


def _finish(job: Job, msg: dict[str, Any] | None) -> str:
    """"tool_calls" where the message (the chat message read from the output) holds calls."""
    return "tool_calls" if msg is not None and msg.get("tool_calls") else job.result.finish_reason


def _message(job: Job, c) -> dict[str, Any]:
    text = job.result.text
    reasoning, text = split_reasoning(text, c.reasoning == "opened") if c.reasoning else (None, text)
    msg: dict[str, Any] = {"role": "assistant", "content": text, "reasoning_content": reasoning}
    if c.tools is not None:
        content, thought, calls = split_tool_calls(text, c.tool_format, c.tools)
        if c.tool_format == "harmony":   # all messages: the analysis channel's and the final one's
            msg["reasoning_content"], msg["content"] = thought, content
        if calls:
            msg["content"] = content or None
            msg["tool_calls"] = calls
    return msg


def _event(obj: dict) -> str:
    return "data: " + json.dumps(obj) + "\n\n"


def usage(prompt_tokens: int, jobs: list[Job], c=None) -> dict:
    """OpenAI's usage; ``completion_tokens_details``: the reasoning tokens where the constraint
    ``c`` has the output reason first (a ``<think>`` block, Harmony's analysis message), and with
    speculative decoding the draft tokens accepted and rejected (the fields of OpenAI's predicted
    outputs)."""
    done = sum(j.result.completion_tokens for j in jobs)
    out: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": done,
                           "total_tokens": prompt_tokens + done}
    details: dict[str, int] = {}
    if c is not None and (c.reasoning or c.tool_format == "harmony"):
        details["reasoning_tokens"] = sum(job_reasoning_tokens(j, c) for j in jobs)
    drafted = sum(j.result.drafted_tokens for j in jobs)
    if drafted:
        accepted = sum(j.result.accepted_tokens for j in jobs)
        details.update(accepted_prediction_tokens=accepted, rejected_prediction_tokens=drafted - accepted)
    if details:
        out["completion_tokens_details"] = details
    return out


def job_reasoning_tokens(job: Job, c) -> int:
    """The tokens of ``job``'s output that its reasoning took (its markers included)."""
    r = job.result
    end = reasoning_end(r.text, c.reasoning, c.tool_format)
    if end is None:  # no reasoning section: the tokens' ends are not needed
        return 0
    return reasoning_tokens(r.text, r.token_ends(), len(job.grammar.healed_prefix.encode("utf-8")), end)


def logprobs_of(entries: list[dict], chat: bool, start: int = 0) -> dict:
    """OpenAI's ``logprobs`` object of a choice: chat's ``content`` list, or the completions form,
    whose ``text_offset`` counts from ``start`` (the text's first character is 0: a healed prefix's
    tokens come before it, at negative offsets)."""
    if chat:
        return {"content": entries}
    offsets, at = [], start
    for e in entries:
        offsets.append(at)
        at += len(e["token"])
    return {"tokens": [e["token"] for e in entries], "token_logprobs": [e["logprob"] for e in entries],
            "top_logprobs": [{t["token"]: t["logprob"] for t in e["top_logprobs"]} for e in entries],
            "text_offset": offsets}


def choice(i: int, job: Job, chat: bool, c, logprobs: bool = False) -> dict:
    healed = job.grammar.healed_prefix
    lp = logprobs_of(job.result.token_logprobs, chat, -len(healed)) if logprobs else None
    if chat:
        msg = _message(job, c)
        return {"index": i, "message": msg, "finish_reason": _finish(job, msg), "logprobs": lp}
    out = {"index": i, "text": job.result.text, "finish_reason": job.result.finish_reason, "logprobs": lp}
    if healed:   # stencil's own: the prompt's end that token healing generated again
        out["healed_prefix"] = healed
    return out


def job_error_body(job: Job) -> dict:
    """OpenAI's error JSON for a failed job (a 4xx is the request's fault, a 5xx the server's)."""
    r = job.result
    return error_body(r.error or "", code=r.error_code,
                      type_="invalid_request_error" if r.error_status < 500 else "server_error")
