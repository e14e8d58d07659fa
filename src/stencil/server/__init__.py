"""An OpenAI-compatible HTTP server over stencil (``stencil serve``).

Modules, one idea each: ``protocol`` (OpenAI's error JSON, request checks), ``constraints``
(a request's response_format / tools / structured_outputs -> a compiled grammar), ``engine``
(the generation thread and per-request queues), ``toolcalls`` (model text -> OpenAI ``tool_calls``)
and ``app`` (the FastAPI routes and SSE streaming).
"""
from stencil.server.app import create_app

__all__ = ["create_app"]
