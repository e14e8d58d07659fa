"""What the engine adapters share: compiling an engine's request (a kind and a spec string) with
the public GrammarCompiler, and viewing an engine's bitmask tensor as the array stencil fills.

Engines name the same request kinds differently (vLLM: json, json_object, regex, choice,
grammar, structural_tag; SGLang: json, regex, ebnf, structural_tag); both map onto one table here.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

import stencil

__all__ = ["compile_request", "load_spec", "as_bitmask_array", "bitmask_view", "with_eos_token_ids", "REQUEST_KINDS",
           "GENERATION_JSON_OPTIONS"]

REQUEST_KINDS = ("json", "json_object", "regex", "choice", "grammar", "ebnf", "structural_tag")

#: JSON options an engine's requests compile with unless they say otherwise. Numbers in plain
#: spelling (no exponent, integers without a fraction), as ``stencil serve`` and ``stencil
#: generate`` write them: with every spelling, a model that writes ``-123`` under ``minimum: -90``
#: stays valid (``-123.4e-1``), and a small one then writes digits until ``max_tokens`` ends it.
#: Strings as llguidance (vLLM's "guidance") writes them: characters raw, ``\uXXXX`` only for the
#: controls; with every character's ``\uXXXX`` spelling a ``format: uri`` beside a ``maxLength``
#: has a lexer several times larger, and its budget-aware masks cost milliseconds, not microseconds.
GENERATION_JSON_OPTIONS = {"number_spelling": "plain", "string_spelling": "controls"}


def load_spec(spec: Any, kind: str) -> Any:
    """A request's spec parsed as JSON (a non-string spec as it is); GrammarError naming the kind."""
    if not isinstance(spec, str):
        return spec
    try:
        return json.loads(spec)
    except json.JSONDecodeError as e:
        raise stencil.GrammarError(f"{kind} request: the spec is not JSON ({e.msg} at line {e.lineno} "
                                   f"column {e.colno})") from None


def compile_request(compiler: stencil.GrammarCompiler, kind: str, spec: Any, *,
                    json_options: dict | None = None) -> stencil.CompiledGrammar:
    """Compile an engine request: ``kind`` is one of ``REQUEST_KINDS`` (case-insensitive),
    ``spec`` its text (a JSON Schema, a regex, a JSON list of choices, a GBNF or Lark grammar, a
    structural tag). ``json_options`` are ``compile_json_schema``'s options for JSON requests
    (e.g. ``{"whitespace": "compact"}`` when the engine disables free whitespace), over
    ``GENERATION_JSON_OPTIONS``. Unknown kinds and bad specs raise GrammarError saying which
    request it was.
    """
    kind = str(kind).lower()
    opts = {**GENERATION_JSON_OPTIONS, **(json_options or {})}
    if kind == "json":
        return compiler.compile_json_schema(load_spec(spec, kind), **opts)
    if kind == "json_object":
        return compiler.compile_json_schema({"type": "object"}, **opts)
    if kind == "regex":
        return compiler.compile_regex(spec)
    if kind == "choice":
        choices = load_spec(spec, kind) if isinstance(spec, str) and spec.lstrip().startswith("[") else spec
        if isinstance(choices, str) or not isinstance(choices, (list, tuple)):
            raise stencil.GrammarError(f"choice request: expected a list of strings (or its JSON), got {spec!r:.80}")
        return compiler.compile_choice(list(choices))
    if kind in ("grammar", "ebnf"):
        if not isinstance(spec, str):
            raise TypeError(f"{kind} request: the grammar must be text, got {type(spec).__name__}")
        # GBNF (llama.cpp's, also what vLLM and SGLang call EBNF) defines rules with ::=; Lark with ':'.
        return compiler.compile_gbnf(spec) if "::=" in spec else compiler.compile_lark(spec)
    if kind == "structural_tag":
        # XGrammar's format (any form: {"type": "structural_tag", "format": ...}, a bare format,
        # or the legacy structures/triggers); GrammarError names the JSON path of a bad part
        try:
            return compiler.compile_structural_tag(spec, **opts)
        except stencil.GrammarError as e:
            raise stencil.GrammarError(f"structural_tag request: {e}") from None
    raise stencil.GrammarError(f"unknown request kind {kind!r}; expected one of {', '.join(REQUEST_KINDS)}")


def as_bitmask_array(bitmask: Any) -> np.ndarray:
    """The int32 [rows, words] numpy view of an engine's bitmask (a numpy array or a CPU torch
    tensor: the same memory, so filling the view fills the tensor). A GPU tensor is refused: its
    rows are filled on the CPU and copied by the engine."""
    if isinstance(bitmask, np.ndarray):
        return bitmask
    device = getattr(bitmask, "device", None)
    if device is not None and getattr(device, "type", "cpu") != "cpu":
        raise ValueError(f"the bitmask is on {device}; stencil fills a CPU bitmask (the engine moves it)")
    if hasattr(bitmask, "numpy"):
        return bitmask.numpy()
    raise TypeError(f"a bitmask must be a numpy array or a CPU torch tensor, got {type(bitmask).__name__}")


# The last tensor bitmask_view saw and its view, in one tuple (a thread reads both or neither).
_last_view: tuple[Any, np.ndarray] | None = None


def bitmask_view(bitmask: Any) -> np.ndarray:
    """``as_bitmask_array(bitmask)``, the view kept for the last tensor: an engine fills the same
    bitmask tensor step after step, and making its view (torch's ``.numpy()``) cost about 0.1 ms
    with the caches cold after a forward pass, a third of a vLLM step's grammar time on a CPU. The
    tensor is held, so its identity is not reused while the view is kept."""
    global _last_view
    last = _last_view
    if last is not None and last[0] is bitmask:
        return last[1]
    view = as_bitmask_array(bitmask)
    if view is not bitmask:
        _last_view = (bitmask, view)
    return view


def with_eos_token_ids(info: stencil.TokenizerInfo, eos_token_ids: list[int]) -> stencil.TokenizerInfo:
    """The same vocabulary with other end tokens (an engine request's stop ids); ids that are not
    special yet become special, since an end token is never text."""
    specials = dict(info.special_token_names)
    for i in eos_token_ids:
        if not 0 <= i < info.num_tokens:
            raise ValueError(f"stop token id {i} is out of range [0, {info.num_tokens})")
        specials.setdefault(i, info.token_bytes(i).decode("utf-8", "replace"))
    return stencil.TokenizerInfo([info.token_bytes(i) for i in range(info.num_tokens)], special_token_ids=specials,
                                 eos_token_ids=eos_token_ids, vocab_size=info.vocab_size,
                                 bos_token_id=info.bos_token_id, kind=info.kind,
                                 add_prefix_space=info.add_prefix_space, pattern=info.pattern, source=info.source)
