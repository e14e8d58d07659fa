"""Integrations with inference engines; each uses only stencil's public API.

- ``stencil.integrations.transformers``: a ``LogitsProcessor`` for ``model.generate``.
- ``stencil.integrations.llama_cpp``: a ``LogitsProcessor`` for llama-cpp-python's ``Llama``, and
  the tokenizer read from the GGUF file (extra ``llama``, ``make test-integrations``).
- ``stencil.integrations.vllm``: a vLLM V1 structured-output backend (``install()`` or the
  ``vllm.general_plugins`` entry point with ``STENCIL_VLLM_BACKEND``).
- ``stencil.integrations.sglang``: an SGLang grammar backend (``register()``), jump-forward from
  forced tokens.

The engine packages are optional: a module imports without its engine, and registering with an
engine that is not installed raises ImportError.
"""
