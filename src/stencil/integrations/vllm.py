"""A vLLM structured-output backend: stencil's exact masks behind vLLM's V1 interface.

vLLM picks its backend by name inside ``StructuredOutputManager.grammar_init`` and has no hook
for another one, so :func:`install` rebinds the class vLLM constructs for one of its backend
names (default ``"guidance"``) to :class:`StencilBackend`, without forking vLLM::

    import stencil.integrations.vllm as sv
    sv.install()                                   # in every process that runs the engine core
    llm = vllm.LLM(model, structured_outputs_config={"backend": "guidance"})

With vLLM's multiprocess engine the engine core runs in another process: there the same is done by
the ``vllm.general_plugins`` entry point this package declares (``stencil =
stencil.integrations.vllm:register_plugin``), which vLLM loads in every process; it installs the
backend when ``STENCIL_VLLM_BACKEND`` names the vLLM backend to replace (e.g. ``guidance``), and
does nothing otherwise. Requests of every vLLM kind are served: json, json_object, regex, choice,
grammar (GBNF or Lark) and structural_tag (XGrammar's format, the legacy structures/triggers form included).
"""
from __future__ import annotations

import logging
import os
from collections import OrderedDict
from typing import Any

import stencil
from stencil.integrations._requests import as_bitmask_array, compile_request, with_eos_token_ids

try:  # vLLM's own base classes where vLLM is installed; the adapter works without it (tests, docs)
    from vllm.v1.structured_output.backend_types import StructuredOutputBackend as _BackendBase
    from vllm.v1.structured_output.backend_types import StructuredOutputGrammar as _GrammarBase
except ImportError:  # pragma: no cover - depends on the installation
    _BackendBase = _GrammarBase = object

__all__ = ["StencilBackend", "StencilGrammar", "install", "register_plugin"]

# A child of vLLM's logger: the line that says stencil serves the engine shows where vLLM's own log does.
_log = logging.getLogger("vllm.stencil")

# Speculative decoding rolls back at most the draft length; this bounds the history a matcher keeps.
DEFAULT_MAX_ROLLBACK = 64


class StencilGrammar(_GrammarBase):
    """One request's grammar state (vLLM's ``StructuredOutputGrammar``).

    Tokens after termination are ignored, as vLLM expects: the request stops on EOS. ``accept_tokens``
    returns False (state unchanged past the last allowed token) when a token is not allowed.
    """

    def __init__(self, grammar: stencil.CompiledGrammar, *, max_rollback: int = DEFAULT_MAX_ROLLBACK):
        self.matcher = stencil.Matcher(grammar, max_rollback=max_rollback)
        self.num_processed_tokens = 0
        self._terminated = False

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        if self._terminated:
            return True
        for t in tokens:
            if not self.matcher.accept_token(int(t)):
                return False
            self.num_processed_tokens += 1
            if self.matcher.is_terminated():
                self._terminated = True
                break
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        """The longest prefix of ``tokens`` (a speculative draft) the grammar allows; state unchanged."""
        if self._terminated:
            return []
        return list(tokens[:self.matcher.validate_tokens([int(t) for t in tokens])])

    def rollback(self, num_tokens: int) -> None:
        if num_tokens > self.num_processed_tokens:
            raise ValueError(f"rollback of {num_tokens} tokens, but only {self.num_processed_tokens} were accepted")
        if num_tokens:
            self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens
        self._terminated = self.matcher.is_terminated()

    def fill_bitmask(self, bitmask: Any, batch_index: int) -> None:
        self.matcher.fill_next_token_bitmask(as_bitmask_array(bitmask), batch_index)

    def is_terminated(self) -> bool:
        return self._terminated

    def reset(self) -> None:
        self.matcher.reset()
        self.num_processed_tokens = 0
        self._terminated = False


class StencilBackend(_BackendBase):
    """vLLM's engine-level ``StructuredOutputBackend``: one tokenizer, compiled grammars cached.

    ``tokenizer``: the engine's Hugging Face tokenizer; ``vocab_size``: the model's logits width.
    ``tokenizer_info`` may be given instead of ``tokenizer`` (e.g. from a GGUF file). A request's
    ``stop_token_ids`` become the tokens that end it (masked until the grammar is complete).
    """

    def __init__(self, vllm_config: Any = None, tokenizer: Any = None, vocab_size: int | None = None, *,
                 tokenizer_info: stencil.TokenizerInfo | None = None, max_rollback: int | None = None):
        if tokenizer_info is None:
            if tokenizer is None:
                raise TypeError("StencilBackend needs a tokenizer or a tokenizer_info")
            tokenizer_info = stencil.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        self.vllm_config = vllm_config
        self.tokenizer = tokenizer
        self.tokenizer_info = tokenizer_info
        self.vocab_size = tokenizer_info.vocab_size
        so = getattr(vllm_config, "structured_outputs_config", None)
        self.json_options = {"whitespace": "compact"} if getattr(so, "disable_any_whitespace", False) else {}
        spec = getattr(vllm_config, "speculative_config", None)
        draft = getattr(spec, "num_speculative_tokens", None) or 0
        self.max_rollback = max_rollback if max_rollback is not None else max(DEFAULT_MAX_ROLLBACK, draft)
        self._compiler = stencil.GrammarCompiler(tokenizer_info)
        _log.info("stencil structured-output backend: %d tokens, vocab_size %d, max_rollback %d",
                  tokenizer_info.num_tokens, self.vocab_size, self.max_rollback)
        self._by_stops: OrderedDict[frozenset, stencil.GrammarCompiler] = OrderedDict()

    def _compiler_for(self, stop_token_ids: Any) -> stencil.GrammarCompiler:
        stops = frozenset(int(t) for t in stop_token_ids or ())
        if not stops or stops == frozenset(self.tokenizer_info.eos_token_ids):
            return self._compiler
        comp = self._by_stops.get(stops)
        if comp is None:  # few distinct stop sets in practice; bounded all the same
            info = with_eos_token_ids(self.tokenizer_info, sorted(stops))
            comp = self._by_stops[stops] = stencil.GrammarCompiler(info)
            if len(self._by_stops) > 8:
                self._by_stops.popitem(last=False)
        return comp

    def compile_grammar(self, request_type: Any, grammar_spec: str,
                        stop_token_ids: set[int] | None = None) -> StencilGrammar:
        """Compile a request; ``request_type`` is vLLM's ``StructuredOutputOptions`` (or its name)."""
        kind = getattr(request_type, "name", request_type)
        grammar = compile_request(self._compiler_for(stop_token_ids), kind, grammar_spec,
                                  json_options=self.json_options)
        return StencilGrammar(grammar, max_rollback=self.max_rollback)

    def allocate_token_bitmask(self, max_num_seqs: int):
        """An int32 torch tensor [max_num_seqs, ceil(vocab_size / 32)] (a numpy array without torch)."""
        arr = stencil.allocate_token_bitmask(max_num_seqs, self.vocab_size)
        try:
            import torch
        except ImportError:  # pragma: no cover - vLLM always has torch
            return arr
        return torch.from_numpy(arr)

    def destroy(self) -> None:
        self._compiler.clear_cache()
        self._by_stops.clear()


def install(replaces: str = "guidance") -> None:
    """Make vLLM construct :class:`StencilBackend` where it would construct the backend named
    ``replaces`` ("guidance", "xgrammar", "outlines" or "lm-format-enforcer"); request
    validation stays the one vLLM does for that name. Call it before the engine starts (or use
    the plugin entry point with ``STENCIL_VLLM_BACKEND``)."""
    import vllm.v1.structured_output as so  # noqa: F401  (ImportError: vLLM is not installed)
    names = {"guidance": ("vllm.v1.structured_output", "GuidanceBackend"),
             "xgrammar": ("vllm.v1.structured_output", "XgrammarBackend"),
             "outlines": ("vllm.v1.structured_output.backend_outlines", "OutlinesBackend"),
             "lm-format-enforcer": ("vllm.v1.structured_output.backend_lm_format_enforcer",
                                    "LMFormatEnforcerBackend")}
    if replaces not in names:
        raise ValueError(f"install(replaces={replaces!r}): expected one of {', '.join(names)}")
    import importlib
    module, cls = names[replaces]
    # grammar_init looks the class up in its module's namespace at each engine start
    setattr(importlib.import_module(module), cls, StencilBackend)


def register_plugin() -> None:
    """vLLM ``general_plugins`` entry point: installs the backend in every vLLM process when the
    environment variable ``STENCIL_VLLM_BACKEND`` names the backend to replace."""
    name = os.environ.get("STENCIL_VLLM_BACKEND")
    if name:
        install(name)
