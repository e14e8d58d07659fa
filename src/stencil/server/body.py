"""A request's body: JSON only (its Content-Type checked before a byte is read), read within the
size and time limits, and parsed into a dict whose every string is valid Unicode and every integer
a number Python can convert. Each refusal is a RequestError that says what and where.

Example::

    body, size = await read_json(request, max_bytes=8 << 20, timeout=30.0)
"""
from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from fastapi import Request

from stencil.server.protocol import RequestError

#: a JSON escape of a UTF-16 surrogate: the only way a lone surrogate gets into a UTF-8 body
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


async def read_json(request: Request, max_bytes: int, timeout: float) -> tuple[dict, int]:
    """(the body as a dict, its size in bytes); a RequestError (400, 408, 413 or 415) otherwise."""
    _check_content_type(request.headers.get("content-type"))
    try:
        raw = await asyncio.wait_for(_read_limited(request, max_bytes), timeout)
    except asyncio.TimeoutError:
        # a client that stops sending (a chunked body without its last chunk, a Content-Length
        # above what it sends) would otherwise hold its connection and coroutine forever
        raise RequestError(f"the request body did not arrive within {timeout:g} s", status=408,
                           code="request_timeout") from None
    return parse_json(raw), len(raw)


def _check_content_type(value: str | None) -> None:
    # JSON only: a web page may POST text/plain (or form data) to 127.0.0.1 with no CORS preflight,
    # so a server reading such bodies as JSON would let any page start generations
    if (value or "").split(";")[0].strip().lower() != "application/json":
        got = f"Content-Type {value!r}" if value else "no Content-Type"
        raise RequestError(f"the request body must be JSON sent as Content-Type: application/json, got {got}",
                           status=415, code="unsupported_media_type")


async def _read_limited(request: Request, limit: int) -> bytes:
    too_big = RequestError(f"the request body is larger than the server's limit of {limit} bytes",
                           status=413, code="request_too_large")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


class _HugeInt:
    """An integer literal with more digits than Python converts (``sys.get_int_max_str_digits``)."""

    def __init__(self, digits: int):
        self.digits = digits


def parse_json(raw: bytes) -> dict:
    """The body as a dict; a 400 naming the field that holds a lone surrogate or a huge integer."""
    huge = []

    def parse_int(s: str) -> Any:
        try:
            return int(s)
        except ValueError:  # past the digit limit: named by its field below, not by json's message
            huge.append(s)
            return _HugeInt(len(s.lstrip("-")))
    try:
        text = raw.decode("utf-8-sig")
        body = json.loads(text, parse_constant=_not_json, parse_int=parse_int)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RequestError(f"the request body is not valid JSON: {e}") from None
    except RecursionError:
        raise RequestError("the request body nests too deeply to parse") from None
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    if huge or _SURROGATE_ESCAPE.search(text):
        _check_values(body)
    return body


def _not_json(constant: str):
    raise RequestError(f"the request body holds {constant}, which JSON does not allow")


#: the values that may hold a lone surrogate or a huge integer
_CHECKED = (str, dict, list, _HugeInt)


def _check_values(body: dict) -> None:
    """A 400 at the first huge integer or string (or key) with a lone surrogate (which no tokenizer
    encodes), naming its path as ``messages[0].content``."""
    stack: list[tuple[Any, str]] = [(body, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _HugeInt):
            raise RequestError(f"{path} is an integer of {value.digits} digits, too large for this server",
                               param=path)
        if isinstance(value, str) and _LONE_SURROGATE.search(value):
            raise RequestError(f"{path} holds a lone surrogate ({_printable(value)[:80]}), which is not "
                               "valid Unicode", param=path)
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for k, v in items:
            bad_key = isinstance(k, str) and _LONE_SURROGATE.search(k)
            if not (bad_key or isinstance(v, _CHECKED)):
                continue  # a number, a boolean, null: nothing to check
            at = f"{path}[{k}]" if isinstance(k, int) else f"{path}.{_printable(k)}" if path else _printable(k)
            if bad_key:
                raise RequestError(f"{at} is a key with a lone surrogate, which is not valid Unicode", param=at)
            stack.append((v, at))


def _printable(s: str) -> str:
    """``s`` with lone surrogates as ``\\udXXX`` escapes: writable as UTF-8 in an error body."""
    return s.encode("utf-8", "backslashreplace").decode("utf-8")
