"""``stencil serve``'s app in a thread of the calling process: for notebooks, tests and
benchmarks that want a real HTTP server over a model they already loaded.

Example::

    with serve_in_thread(stencil.runtime.models.load_model(), max_batch=8) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="none")
"""
from __future__ import annotations

import socket
import threading
import time
from typing import Any

from stencil.server.app import create_app

__all__ = ["BackgroundServer", "serve_in_thread"]


class BackgroundServer:
    """A running server: ``url`` (``http://host:port``), ``app`` (the FastAPI app; its engine is
    ``app.state.engine``) and ``stop()`` (the app's lifespan stops the engine; waits up to
    ``timeout`` seconds for the thread). A context manager that stops on exit."""

    def __init__(self, server: Any, thread: threading.Thread, url: str):
        self._server = server
        self._thread = thread
        self.url = url
        self.app = server.config.app

    def stop(self, timeout: float = 30.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_in_thread(lm: Any, *, host: str = "127.0.0.1", port: int = 0, start_timeout: float = 60.0,
                    **app_options: Any) -> BackgroundServer:
    """Start ``create_app(lm, **app_options)`` under uvicorn in a daemon thread and return once it
    serves. ``port=0`` takes a free port. Raises ``RuntimeError`` if it has not started within
    ``start_timeout`` seconds or its thread ended (the port taken, the app's startup failed)."""
    import uvicorn
    if port == 0:
        with socket.socket() as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(lm, **app_options), host=host, port=port,
                                           log_level="warning"))
    ended: list[BaseException] = []

    def run() -> None:
        try:
            server.run()
        except BaseException as e:   # (uvicorn exits its startup with SystemExit, after logging why)
            ended.append(e)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if not thread.is_alive():
            why = f": {ended[0]!r} (uvicorn's log says why)" if ended else ""
            raise RuntimeError(f"the server on {host}:{port} stopped before it served{why}")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the server on {host}:{port} did not start within {start_timeout:g} s")
        time.sleep(0.05)
    return BackgroundServer(server, thread, f"http://{host}:{port}")
