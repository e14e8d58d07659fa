"""An SGLang grammar backend: stencil's exact masks behind SGLang's ``BaseGrammarBackend``.

With stencil installed, select it by name; nothing else is needed::

    sglang serve --model-path ... --grammar-backend stencil
    python -m sglang.launch_server --model-path ... --grammar-backend stencil

SGLang loads the ``sglang.srt.plugins`` entry points in each of its processes (the launcher before
it parses its arguments, the scheduler it spawns, ...); this package declares one
(``stencil = stencil.integrations.sglang:register_plugin``), which registers the backend and adds
``stencil`` to the choices of ``--grammar-backend``. ``SGLANG_PLUGINS`` (SGLang's list of plugins
to load) must name ``stencil`` where it is set. :func:`register` does the same by hand, for a
process SGLang's loader does not reach.

SGLang asks the backend for json, regex, ebnf (GBNF or Lark) and structural_tag requests;
``--constrained-json-whitespace-pattern``, ``--constrained-json-disable-any-whitespace`` and
``--constrained-json-max-whitespace-cnt`` apply to JSON (``StencilGrammarBackend.from_server_args``); numbers
are written in plain spelling, as ``stencil serve`` writes them, strings with ``\\uXXXX`` only for the
controls, as llguidance writes them. Jump-forward comes from the matcher's forced text and tokens (``forced_bytes``,
``forced_tokens``): SGLang appends the text and retokenizes, and the grammar follows the new ids.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

import stencil
from stencil.integrations._requests import bitmask_view, compile_request, with_eos_token_ids

try:  # SGLang's own base classes where SGLang is installed; the adapter runs without it
    from sglang.srt.constrained.base_grammar_backend import BaseGrammarBackend as _BackendBase
    from sglang.srt.constrained.base_grammar_backend import BaseGrammarObject as _ObjectBase
    from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject
except ImportError:  # pragma: no cover - depends on the installation
    _BackendBase = _ObjectBase = object
    InvalidGrammarObject = None

__all__ = ["StencilGrammarObject", "StencilGrammarBackend", "register", "register_plugin"]

MAX_ROLLBACK = 64  # speculative decoding and retokenization roll back a few tokens at most


class StencilGrammarObject(_ObjectBase):
    """One request's grammar state (SGLang's ``BaseGrammarObject``)."""

    def __init__(self, grammar: stencil.CompiledGrammar, tokenizer_info: stencil.TokenizerInfo):
        if _ObjectBase is not object:
            super().__init__()
        else:
            self._finished = False
            self.current_token = None
        self.grammar = grammar
        self.tokenizer_info = tokenizer_info
        self.matcher = stencil.Matcher(grammar, max_rollback=MAX_ROLLBACK)

    @property
    def finished(self) -> bool:
        return self._finished

    @finished.setter
    def finished(self, value: bool) -> None:
        self._finished = value

    def accept_token(self, token: int) -> None:
        if not self.matcher.accept_token(int(token)):
            raise ValueError(f"token {token} is not allowed by the grammar here (the sampler ignored the mask?)")

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def copy(self) -> "StencilGrammarObject":
        """A fresh state on the same compiled grammar (SGLang copies cached grammars per request)."""
        return StencilGrammarObject(self.grammar, self.tokenizer_info)

    @staticmethod
    def allocate_vocab_mask(vocab_size: int, batch_size: int, device: Any = None):
        import torch
        return torch.from_numpy(stencil.allocate_token_bitmask(batch_size, vocab_size))

    def fill_vocab_mask(self, vocab_mask: Any, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(bitmask_view(vocab_mask), idx)

    @staticmethod
    def reset_vocab_mask(vocab_mask: Any) -> None:
        vocab_mask.fill_(-1) if hasattr(vocab_mask, "fill_") else np.copyto(vocab_mask, -1)

    @staticmethod
    def move_vocab_mask(vocab_mask: Any, device: Any):
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: Any, vocab_mask: Any) -> None:
        stencil.apply_token_bitmask_inplace(logits, vocab_mask)

    # -- jump-forward: the forced tokens, their text, and following SGLang's retokenization ----
    def try_jump_forward(self, tokenizer: Any) -> Optional[Tuple[List[int], str]]:
        """(forced tokens, forced text) or None. The text is ``Matcher.forced_bytes`` (all the
        bytes every continuation starts with, cut before a partial UTF-8 character); the tokens
        are ``Matcher.forced_tokens``, the run of tokens each the only one allowed, often empty
        in a BPE vocabulary where a forced text has several spellings. SGLang appends the text and
        retokenizes; ``jump_and_retokenize`` then follows the new ids."""
        text = self.matcher.forced_bytes().decode("utf-8", errors="ignore")
        forced = self.matcher.forced_tokens()
        if not text:
            return None
        return forced, text

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: List[int], new_output_ids: List[int], next_state: int) -> None:
        """Follow SGLang's retokenized output: roll back to the common prefix, accept the rest."""
        k = 0
        for a, b in zip(old_output_ids, new_output_ids):
            if a != b:
                break
            k += 1
        if k < len(old_output_ids):
            self.matcher.rollback(len(old_output_ids) - k)
        for i in range(k, len(new_output_ids)):
            if not self.matcher.accept_token(int(new_output_ids[i])):
                raise ValueError(f"retokenized output: token {new_output_ids[i]} at position {i} is not allowed")


class StencilGrammarBackend(_BackendBase):
    """SGLang's ``BaseGrammarBackend``: compiles requests with one ``GrammarCompiler``.

    ``tokenizer``: the server's Hugging Face tokenizer (or pass ``tokenizer_info``);
    ``vocab_size``: the model's logits width; ``eos_token_ids``: the model's end tokens;
    ``json_options``: ``compile_json_schema`` options for json requests (e.g. ``whitespace``).
    A request that does not compile becomes SGLang's ``InvalidGrammarObject`` (the request fails
    with the message) where SGLang is installed, else the GrammarError is raised.
    """

    def __init__(self, tokenizer: Any = None, vocab_size: int | None = None, eos_token_ids: Any = None, *,
                 tokenizer_info: stencil.TokenizerInfo | None = None, json_options: dict | None = None):
        if _BackendBase is not object:
            super().__init__()
        if tokenizer_info is None:
            if tokenizer is None:
                raise TypeError("StencilGrammarBackend needs a tokenizer or a tokenizer_info")
            tokenizer_info = stencil.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        if eos_token_ids:
            eos = sorted({int(t) for t in eos_token_ids})
            if eos != sorted(tokenizer_info.eos_token_ids):
                tokenizer_info = with_eos_token_ids(tokenizer_info, eos)
        self.tokenizer_info = tokenizer_info
        self.json_options = dict(json_options or {})
        self.compiler = stencil.GrammarCompiler(tokenizer_info)

    @classmethod
    def from_server_args(cls, server_args: Any, tokenizer: Any, vocab_size: int | None = None,
                         eos_token_ids: Any = None, *,
                         tokenizer_info: stencil.TokenizerInfo | None = None) -> "StencilGrammarBackend":
        """The backend SGLang's grammar-backend registry builds (what :func:`register` registers),
        with SGLang's JSON white-space options from its ``ServerArgs``:
        ``constrained_json_whitespace_pattern`` (the white space allowed around JSON punctuation),
        else ``constrained_json_disable_any_whitespace`` (compact JSON), and
        ``constrained_json_max_whitespace_cnt`` (longest run of white space).

        Example::

            backend = StencilGrammarBackend.from_server_args(server_args, tokenizer, len(tokenizer))
        """
        return cls(tokenizer, vocab_size, eos_token_ids, tokenizer_info=tokenizer_info,
                   json_options=_json_options(server_args))

    def _dispatch(self, kind: str, key_string: str):
        try:
            grammar = compile_request(self.compiler, kind, key_string, json_options=self.json_options)
        except (stencil.GrammarError, stencil.LimitError, TypeError) as e:   # (too expensive: refused too)
            if InvalidGrammarObject is None:
                raise
            return InvalidGrammarObject(f"{kind}: {e}")
        return StencilGrammarObject(grammar, self.tokenizer_info)

    def dispatch_json(self, key_string: str):
        return self._dispatch("json", key_string)

    def dispatch_regex(self, key_string: str):
        return self._dispatch("regex", key_string)

    def dispatch_ebnf(self, key_string: str):
        return self._dispatch("ebnf", key_string)

    def dispatch_structural_tag(self, key_string: str):
        return self._dispatch("structural_tag", key_string)

    def reset(self) -> None:
        if _BackendBase is not object:
            super().reset()
        self.compiler.clear_cache()


def _json_options(server_args: Any) -> dict:
    """``compile_json_schema`` options from SGLang's server arguments (its JSON white-space flags)."""
    opts: dict = {}
    pattern = getattr(server_args, "constrained_json_whitespace_pattern", None)
    if pattern:
        opts["whitespace_pattern"] = pattern
    elif getattr(server_args, "constrained_json_disable_any_whitespace", False):
        opts["whitespace"] = "compact"
    run = getattr(server_args, "constrained_json_max_whitespace_cnt", None)
    if run is not None and not opts:   # XGrammar's bound on a run of white space; 0: none at all
        opts = {"whitespace": "compact"} if run == 0 else {"max_whitespace_run": run}
    return opts


def register(name: str = "stencil") -> None:
    """Register the backend with SGLang under ``name`` (its grammar-backend registry and the
    choices of ``--grammar-backend``); idempotent. The plugin entry point calls it in every SGLang
    process."""
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    from sglang.srt.constrained.base_grammar_backend import register_grammar_backend

    register_grammar_backend(name, StencilGrammarBackend.from_server_args)
    if name not in GRAMMAR_BACKEND_CHOICES:   # the list argparse's choices= holds
        GRAMMAR_BACKEND_CHOICES.append(name)


def register_plugin() -> None:
    """SGLang ``sglang.srt.plugins`` entry point: :func:`register` with the name ``stencil``."""
    register()
