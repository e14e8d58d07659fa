"""stencil's runtime: generation over a transformers model, on top of the library (issue 42).

``stencil`` is the library: tokenizers, the compiler, matchers, bitmasks, errors. This package
uses it to generate: :func:`generate` (the loop, with speculation, token healing, aligned
sampling, think-then-constrain and opportunistic masks), :mod:`~stencil.runtime.models` (locate
and load a model), :func:`stream_partial` (a generation as typed partial objects). ``stencil
generate`` and ``stencil serve`` are its users; the library never imports it.

- :mod:`stencil.runtime.generate`: the loop and :class:`GenerationResult`;
- :mod:`stencil.runtime.models`: :func:`load_model`, :func:`default_model_path`,
  :func:`tokenizer_info_for`, :class:`ModelError`;
- :mod:`stencil.runtime.sampling`, :mod:`~stencil.runtime.stops`: one token from a row of logits,
  the tokens that end a generation;
- :mod:`stencil.runtime.speculative` with :mod:`~stencil.runtime.draft_plan`,
  :mod:`~stencil.runtime.opportunistic`, :mod:`~stencil.runtime.healing`,
  :mod:`~stencil.runtime.aligned`, :mod:`~stencil.runtime.think`: the loop's modes;
- :mod:`stencil.runtime.stream`: :func:`stream_partial`.

The same names under ``stencil`` (``stencil.generate``, ``stencil.models``, ...) still work for
one release, with a ``DeprecationWarning``.

Example::

    import stencil
    import stencil.runtime
    lm = stencil.runtime.load_model()
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_regex(r"(yes|no)")
    out = stencil.runtime.generate(lm, g, "Is the sky blue?")
    print(out.text, out.finish_reason)          # yes grammar
"""
from stencil.runtime.generate import GenerationResult, generate
from stencil.runtime.models import LoadedModel, ModelError, default_model_path, load_model, tokenizer_info_for
from stencil.runtime.speculative import SpeculationOptions
from stencil.runtime.stream import stream_partial
from stencil.runtime.think import ThinkOptions

__all__ = [
    "generate", "GenerationResult", "SpeculationOptions", "ThinkOptions", "stream_partial",
    "load_model", "LoadedModel", "default_model_path", "tokenizer_info_for", "ModelError",
]
