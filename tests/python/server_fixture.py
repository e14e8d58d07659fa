"""A real `stencil serve` app on 127.0.0.1 (uvicorn in a thread of the test process, sharing the
model the generation tests load), one per test module."""
from __future__ import annotations

import importlib.util
import time

import pytest

from generation_model import default_model


def start_server(**app_options):
    """(base_url, stop) for a server over the default model; skips without the server extra."""
    for m in ("fastapi", "uvicorn", "openai", "httpx"):
        if importlib.util.find_spec(m) is None:
            pytest.skip(f"the server tests need {m} (pip install 'stencil-llm[server,dev]')")
    from stencil.server import serve_in_thread
    try:
        server = serve_in_thread(default_model(), start_timeout=30, **app_options)
    except RuntimeError as e:
        pytest.fail(str(e))
    return server.url, lambda: server.stop(10)


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
