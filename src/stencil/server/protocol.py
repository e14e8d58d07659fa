"""OpenAI's error JSON and small request checks shared by the routes."""
from __future__ import annotations

import math
from typing import Any


class RequestError(Exception):
    """A bad request: becomes HTTP ``status`` with OpenAI's error JSON."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None, status: int = 400):
        super().__init__(message)
        self.message, self.param, self.code, self.status = message, param, code, status


def error_body(message: str, *, param: str | None = None, code: str | None = None,
               type_: str = "invalid_request_error") -> dict:
    """The body OpenAI's API answers errors with (the openai client raises BadRequestError on it)."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def number(body: dict, key: str, default, lo=None, hi=None, kind=float):
    """``body[key]`` as ``kind`` within [lo, hi], or a RequestError naming the parameter."""
    v = body.get(key, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and not isinstance(v, int)):
        raise RequestError(f"{key} must be a {'integer' if kind is int else 'number'}, got {v!r}", param=key)
    if isinstance(v, float) and not math.isfinite(v):  # json reads NaN and Infinity; NaN passes every comparison
        raise RequestError(f"{key} must be a finite number, got {v!r}", param=key)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise RequestError(f"{key} must be between {lo} and {hi}, got {v}", param=key)
    return kind(v)


def flag(body: dict, key: str, default: bool = False) -> bool:
    """``body[key]`` as a bool (absent or null: ``default``), or a RequestError naming it."""
    v = body.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise RequestError(f"{key} must be true or false, got {v!r}", param=key)
    return v


def stop_list(body: dict) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop) and len(stop) <= 4:
        return [s for s in stop if s]
    raise RequestError("stop must be a string or a list of at most 4 strings", param="stop")


def message_text(content: Any, where: str = "messages", kinds: tuple[str, ...] = ("text",)) -> str:
    """A message's content: a string or a list of text parts of the types ``kinds`` (chat's "text";
    the Responses API's "input_text", "output_text"); ``where`` names it in errors. A part of any
    other type (an image, audio, a file) is a 400 naming it: dropped, the model would answer
    a prompt without it."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RequestError(f"{where} must be a string or a list of parts", param=where)
    texts = []
    for k, p in enumerate(content):
        kind = p.get("type") if isinstance(p, dict) else None
        if kind not in kinds:
            raise RequestError(f"{where}[{k}].type {kind!r} is not supported here: this server reads text only "
                               f"(parts of type {' or '.join(kinds)})", param=f"{where}[{k}].type",
                               code="unsupported_parameter")
        if not isinstance(p.get("text"), str):
            raise RequestError(f"{where}[{k}].text must be a string, got {type(p.get('text')).__name__}",
                               param=f"{where}[{k}].text")
        texts.append(p["text"])
    return "".join(texts)
