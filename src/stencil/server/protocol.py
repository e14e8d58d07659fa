"""OpenAI's error JSON, and the check of a message's content that the chat and Responses routes
share (the request's own fields are checked by its model, ``server.request``)."""
from __future__ import annotations

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
