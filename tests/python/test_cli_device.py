"""`stencil generate` and `stencil serve` take --device (cpu, cuda, auto) and --dtype (auto,
float32, float16, bfloat16): the model is loaded in what they ask for (read back from its
parameters), auto resolves to what the machine has, and cuda without CUDA or an unknown value is
a clear message naming the option with exit status 2, before any model loads."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import pytest

from stencil import cli
from tiny_model import tiny_model_folder

torch = pytest.importorskip("torch")
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def loads(monkeypatch):
    """The models the CLI loads, through the real load_model."""
    import stencil.runtime.models
    real, loaded = stencil.runtime.models.load_model, []

    def spy(*a, **k):
        loaded.append(real(*a, **k))
        return loaded[-1]
    monkeypatch.setattr(stencil.runtime.models, "load_model", spy)
    return loaded


def _generate(capsys, *options):
    return run_cli(capsys, "generate", "--regex", "[a-z]{3}", "--prompt", "hi", "--max-tokens", "8",
                   "--model", tiny_model_folder(), *options)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_generate_loads_the_model_in_the_dtype_asked(capsys, loads, dtype):
    code, out, err = _generate(capsys, "--device", "cpu", "--dtype", dtype)
    assert code == 0, err
    assert re.fullmatch(r"[a-z]{3}\n", out)
    assert {str(p.dtype) for p in loads[0].model.parameters()} == {f"torch.{dtype}"}
    assert {p.device.type for p in loads[0].model.parameters()} == {"cpu"}
    assert f"(cpu, {dtype})" in err  # the progress line reads both from the parameters


@no_cuda
def test_auto_is_cpu_and_float32_without_cuda(capsys, loads):
    code, out, err = _generate(capsys)  # --device auto --dtype auto are the defaults
    assert code == 0, err
    assert loads[0].dtype == "float32" and loads[0].device == "cpu" and "(cpu, float32)" in err
    code, out, err = _generate(capsys, "--device", "auto", "--dtype", "bfloat16")
    assert code == 0 and loads[1].dtype == "bfloat16" and "(cpu, bfloat16)" in err


@no_cuda
@pytest.mark.parametrize("command", [["generate", "--regex", "[a-z]+"], ["serve", "--port", "1"]])
def test_cuda_without_cuda_is_a_clear_error(capsys, monkeypatch, command):
    import stencil.runtime.models
    monkeypatch.setattr(stencil.runtime.models, "load_model", lambda *a, **k: pytest.fail("the model must not load"))
    code, out, err = run_cli(capsys, *command, "--device", "cuda")
    assert code == 2 and out == ""
    assert "--device cuda" in err and "CUDA is not available" in err and "Traceback" not in err


@pytest.mark.parametrize("command", [["generate", "--regex", "[a-z]+"], ["serve"]])
@pytest.mark.parametrize("option", [["--device", "tpu"], ["--dtype", "float64"], ["--device", "CUDA"]])
def test_unknown_values_name_the_option(capsys, command, option):
    with pytest.raises(SystemExit) as e:
        cli.main(command + option)
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert f"argument {option[0]}: invalid choice: '{option[1]}'" in err and "Traceback" not in err


def test_load_model_refuses_unknown_names():
    from stencil.runtime.models import ModelError, load_model, resolve_dtype
    with pytest.raises(ModelError, match="unknown dtype 'float64'"):
        load_model(tiny_model_folder(), dtype="float64")
    with pytest.raises(ModelError, match="unknown device 'tpu'"):
        load_model(tiny_model_folder(), device="tpu")
    assert resolve_dtype("auto", "cpu") == "float32"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_loads_the_model_in_the_dtype_asked():
    """The real `stencil serve` in a process of its own: /health reports what its parameters are,
    and the objects it froze after loading."""
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("uvicorn")
    port = _free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "stencil.cli", "serve", "--model", tiny_model_folder(),
                             "--device", "cpu", "--dtype", "bfloat16", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        health, deadline = None, time.time() + 180
        while health is None and time.time() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
            except httpx.TransportError:
                time.sleep(0.5)
        assert health is not None, proc.stderr.read() if proc.poll() is not None else "no answer in 180 s"
        assert health["device"] == "cpu" and health["dtype"] == "bfloat16"
        # what it loaded is out of the collector's reach (gc.freeze): no full collection walks it
        assert health["gc"]["frozen"] > 10_000, health["gc"]
        r = httpx.post(f"http://127.0.0.1:{port}/v1/completions", timeout=60,
                       json={"prompt": "hi", "max_tokens": 5, "ignore_eos": True}).json()
        assert r["usage"]["completion_tokens"] == 5 and r["choices"][0]["finish_reason"] == "length"
    finally:
        proc.terminate()
        proc.wait(30)
