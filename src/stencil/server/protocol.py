"""OpenAI's error JSON, the refusal a request model's validators raise for a place under the
value they validate (``refuse_at``: ``server.request.parse_request`` answers it with that path),
and the check of a Responses item's content."""
from __future__ import annotations

from typing import Any, NoReturn

from pydantic_core import PydanticCustomError

#: OpenAI's error code for a field or value the server does not implement: ignored, it would
#: change the output (an image part: the model would answer a prompt without it)
UNSUPPORTED = "unsupported_parameter"
#: the pydantic error type of ``refuse_at``
PLACED = "stencil_placed"


class RequestError(Exception):
    """A bad request: becomes HTTP ``status`` with OpenAI's error JSON."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None, status: int = 400):
        super().__init__(message)
        self.message, self.param, self.code, self.status = message, param, code, status


def error_body(message: str, *, param: str | None = None, code: str | None = None,
               type_: str = "invalid_request_error") -> dict:
    """The body OpenAI's API answers errors with (the openai client raises BadRequestError on it)."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def refuse_at(at: tuple[str | int, ...], message: str, code: str | None = None) -> NoReturn:
    """From a validator: a 400 naming the place ``at`` under the value it validates (``()``: the
    value itself; ``("content", 1, "type")``), with OpenAI's error ``code``. A validator knows
    the value's fields, not its own path: ``parse_request`` joins the two."""
    raise PydanticCustomError(PLACED, "{message}", {"message": message, "at": at, "code": code})


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
