"""A real `stencil serve` app on 127.0.0.1 (uvicorn in a thread of the test process, sharing the
model the generation tests load), one per test module."""
from __future__ import annotations

import importlib.util
import socket
import threading
import time

import pytest

from generation_model import default_model


def start_server(**app_options):
    """(base_url, stop) for a server over the default model; skips without the server extra."""
    for m in ("fastapi", "uvicorn", "openai", "httpx"):
        if importlib.util.find_spec(m) is None:
            pytest.skip(f"the server tests need {m} (pip install 'stencil-llm[server,dev]')")
    import uvicorn
    from stencil.server import create_app
    lm = default_model()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(lm, **app_options), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            pytest.fail("the server did not start")
        time.sleep(0.05)

    def stop():
        server.should_exit = True
        thread.join(10)
    return f"http://127.0.0.1:{port}", stop


def assert_idle_soon(url, within=15.0):
    """Dropped requests leave the batch: /health shows nothing running or waiting within
    seconds. (A job that went on to its max_tokens after its client left would hold its slot for
    tens of seconds, while a later request still succeeds: that alone shows no leak.)"""
    import httpx
    deadline = time.monotonic() + within
    while True:
        h = httpx.get(url + "/health", timeout=30).json()
        if h["running"] == 0 and h["waiting"] == 0:
            return
        assert time.monotonic() < deadline, f"still busy {within:g} s after the clients left: {h}"
        time.sleep(0.1)


def openai_client(base_url: str, timeout: float = 120):
    """The openai client of a server that :func:`start_server` started; skips without openai."""
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=base_url + "/v1", api_key="none", max_retries=0, timeout=timeout)
