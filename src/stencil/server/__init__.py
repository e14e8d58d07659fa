"""An OpenAI-compatible HTTP server over stencil (``stencil serve``).

Modules, one idea each: ``protocol`` (OpenAI's error JSON, request checks), ``limits`` (what one
request may cost), ``body`` (a request's body: JSON only, read within its size and time limits),
``constraints`` (a request's response_format / tools / structured_outputs -> a
compile call), ``service`` (a request's way in: body, parameters, grammar compiled and warmed
under its deadline, jobs queued), ``engine`` (the generation thread: continuous batching with
per-row isolation), ``responses`` (OpenAI's response shapes and SSE streaming),
``openai_responses`` and ``response_items`` (the Responses API and its output items), ``toolcalls``
(model text -> OpenAI ``tool_calls``), ``app`` (the FastAPI routes) and ``background`` (the app in a
thread of the calling process).
"""
from stencil.server.app import create_app
from stencil.server.background import BackgroundServer, serve_in_thread
from stencil.server.limits import ServerLimits

__all__ = ["create_app", "serve_in_thread", "BackgroundServer", "ServerLimits"]
