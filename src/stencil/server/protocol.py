"""OpenAI's error JSON, and the refusal a request model's validators raise for a place under the
value they validate (``refuse_at``: ``server.request.parse_request`` answers it with that path)."""
from __future__ import annotations

from typing import NoReturn

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
