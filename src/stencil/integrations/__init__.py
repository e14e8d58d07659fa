"""Integrations with inference engines.

- ``stencil.integrations.transformers``: a ``LogitsProcessor`` for ``model.generate``.

Adapters for llama-cpp-python and vLLM are not included: neither engine can be installed and run
on the machines this package is developed and tested on (llama-cpp-python compiles llama.cpp at
install time; vLLM needs a GPU build), and an adapter that was never run against the real engine
would be a guess.
"""
