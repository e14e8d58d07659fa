"""A vLLM structured-output backend: stencil's exact masks behind vLLM's V1 interface.

**It takes over one of vLLM's backend names.** vLLM chooses its structured-output backend by name
(``auto``, ``xgrammar``, ``guidance``, ``outlines``, ``lm-format-enforcer``) and has no hook for a
new one, so :func:`install` rebinds what vLLM runs for one of those names (default ``guidance``)
to stencil, without forking vLLM::

    import stencil.integrations.vllm as sv
    sv.install()                                   # in every process of the engine
    llm = vllm.LLM(model, structured_outputs_config={"backend": "guidance"})

With vLLM's multiprocess engine the same is done in every process by the ``vllm.general_plugins``
entry point this package declares (``stencil = stencil.integrations.vllm:register_plugin``); it
acts only when ``STENCIL_VLLM_BACKEND`` names the backend to replace (``STENCIL_VLLM_BACKEND=guidance
vllm serve ... --structured-outputs-config.backend guidance``). While installed, that name means
stencil: llguidance is not used by this process, vLLM's logs still say "guidance", and a vLLM
release that renames the internals below breaks the installation (``install`` then raises).

What ``install`` replaces for that name (see :mod:`stencil.integrations._vllm_hooks`):

- the backend class vLLM constructs (``StencilBackend``);
- the request validator vLLM runs in its front-end process (llguidance's refuses schemas stencil
  compiles, e.g. ``"format": "topic"``, ``not``, ``uniqueItems``): requests are compiled by
  stencil there, a bad one is a 400 / ``VLLMValidationError`` with stencil's message;
- the grammar's creation, so that it sees its request: the request's ``max_tokens`` (and the room
  left in the context) becomes the token budget of its masks, so outputs end valid within
  ``max_tokens``, with the end token inside it where the grammar leaves room for it;
- the batch's bitmask, filled by one call of ``stencil.fill_next_token_bitmasks`` (native threads,
  the GIL released; on the caller's thread alone where the model runs on the CPU, whose cores its
  own threads hold) instead of one request at a time; under speculative decoding (n-gram, draft
  models), one such call per draft position, each grammar advanced through its draft and rolled
  back after (``StencilBackend.fill_draft_bitmasks``). Drafts are cut at the first token the
  grammar refuses (``validate_tokens``) and matchers keep the history to roll a whole draft back.
  vLLM verifies the drafts on the logits of one batched pass, which round differently from
  one-token passes: greedy outputs equal those without speculation except at near ties (vLLM's
  own documentation: lossless up to the precision of hardware numerics); the masks are exact.

JSON numbers are written in plain spelling (no exponent, integers without a fraction), as ``stencil
serve`` writes them, and strings as llguidance writes them (characters raw, ``\\uXXXX`` only for the
controls): ``_requests.GENERATION_JSON_OPTIONS``. Options: ``disable_any_whitespace``
(config or request) gives compact JSON,
``disable_additional_properties`` (config or request) closes objects that list their properties
(``additionalProperties: false`` where the schema says nothing), and the request's
``whitespace_pattern`` is the white space allowed around JSON punctuation. Requests of every vLLM
kind are served: json, json_object, regex, choice, grammar (GBNF or Lark) and structural_tag
(XGrammar's format, the legacy structures/triggers form included).
"""
from __future__ import annotations

import contextvars
import copy
import importlib
import logging
import os
import threading
from collections import OrderedDict
from typing import Any, Iterable

import numpy as np

import stencil
from stencil.integrations._requests import bitmask_view, compile_request, load_spec, with_eos_token_ids

try:  # vLLM's own base classes where vLLM is installed; the adapter works without it (tests, docs)
    from vllm.v1.structured_output.backend_types import StructuredOutputBackend as _BackendBase
    from vllm.v1.structured_output.backend_types import StructuredOutputGrammar as _GrammarBase
except ImportError:  # pragma: no cover - depends on the installation
    _BackendBase = _GrammarBase = object

__all__ = ["StencilBackend", "StencilGrammar", "install", "register_plugin", "close_objects"]

# A child of vLLM's logger: the line that says stencil serves the engine shows where vLLM's own log does.
_log = logging.getLogger("vllm.stencil")

# Speculative decoding rolls back at most the draft length; this bounds the history a matcher keeps.
DEFAULT_MAX_ROLLBACK = 64


class StencilGrammar(_GrammarBase):
    """One request's grammar state (vLLM's ``StructuredOutputGrammar``).

    Tokens after termination are ignored, as vLLM expects: the request stops on EOS. ``accept_tokens``
    returns False (state unchanged past the last allowed token) when a token is not allowed.

    ``max_tokens``: the request's token budget (None: none). Each mask then allows only tokens
    after which the output can still be finished within it, keeping one token for the end token
    where the grammar leaves room (``reserve_end``), so vLLM stops on it ("stop") rather than at
    the limit. ``request``: vLLM's ``Request``, whose output tokens before the grammar started
    (reasoning) count against the budget too.
    """

    def __init__(self, grammar: stencil.CompiledGrammar, *, max_rollback: int = DEFAULT_MAX_ROLLBACK,
                 max_tokens: int | None = None, request: Any = None):
        self.matcher = stencil.Matcher(grammar, max_rollback=max_rollback)
        self.num_processed_tokens = 0
        self._terminated = False
        self.max_tokens = max_tokens
        self.reserve_end = 0
        self._request = request
        self._before: int | None = None   # output tokens before the grammar's first one
        if max_tokens is not None:
            self.reserve_end = _check_budget(self.matcher, max_tokens)

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

    def remaining_tokens(self) -> int | None:
        """The budget of the next mask: tokens that may still be generated, this one included, less
        the one kept for the end token (None without ``max_tokens``)."""
        if self.max_tokens is None:
            return None
        if self._before is None:
            # The first mask comes before any draft token is accepted, so here every token the
            # grammar took is in the request's output; the rest of that output preceded it.
            done = getattr(self._request, "num_output_tokens", None)
            self._before = max(0, int(done) - self.num_processed_tokens) if done is not None else 0
        return max(0, self.max_tokens - self._before - self.num_processed_tokens - self.reserve_end)

    def fill_bitmask(self, bitmask: Any, batch_index: int) -> None:
        _fill([self], [()], bitmask_view(bitmask), [batch_index], 1)

    def is_terminated(self) -> bool:
        return self._terminated

    def reset(self) -> None:
        self.matcher.reset()
        self.num_processed_tokens = 0
        self._terminated = False
        self._before = None


def _check_budget(matcher: stencil.Matcher, max_tokens: int) -> int:
    """How many tokens to keep for the end token (1 where the grammar's shortest output leaves room,
    else 0); GrammarError when that output needs more than ``max_tokens`` (a request that could
    only end cut, refused as ``stencil serve`` refuses it)."""
    need = matcher.min_completion_tokens()
    if need is not None and need > max_tokens:
        raise stencil.GrammarError(f"max_tokens is {max_tokens}, but the shortest output of the grammar needs "
                                   f"up to {need} tokens; raise max_tokens")
    return 1 if need is not None and need < max_tokens else 0


def _fill(grammars: Any, drafts: Any, bitmask: np.ndarray, first_rows: Any, num_threads: int | None) -> list:
    """The rows of each grammar's draft from ``first_rows[i]`` (``stencil.fill_draft_bitmasks``: one
    native call), each under its request's budget. The core fills a row that a spent budget left
    empty (a request whose tokens before the grammar ate it) again without the budget, so vLLM never
    samples from an empty mask; this says so in the log. Returns the core's refused positions."""
    budgets = [g.remaining_tokens() for g in grammars]
    refused = stencil.fill_draft_bitmasks([g.matcher for g in grammars], drafts, bitmask, first_rows,
                                          num_threads, budgets)
    # (a budget of one token or more keeps the cheapest tokens where none fits: only a spent one
    # leaves a row empty, where the output cannot end at once)
    for g, b in zip(grammars, budgets):
        if b == 0 and not g.is_terminated() and not g.matcher.is_accepting():
            _log.warning("stencil: the token budget of a request is spent before its output can end; "
                         "its mask is the unbudgeted one")
    return refused


def close_objects(schema: Any) -> Any:
    """A copy of ``schema`` where each object schema that lists ``properties`` or
    ``patternProperties`` and says nothing of ``additionalProperties`` gets
    ``additionalProperties: false`` (vLLM's ``disable_additional_properties``, as its guidance
    backend reads it), at every depth.

    Example::

        close_objects({"properties": {"a": {}}})   # {"properties": {"a": {}}, "additionalProperties": False}
    """
    schema = copy.deepcopy(schema)
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(node)
        elif isinstance(node, dict):
            if "additionalProperties" not in node and (isinstance(node.get("properties"), dict)
                                                       or isinstance(node.get("patternProperties"), dict)):
                node["additionalProperties"] = False
            for key, value in node.items():
                if key in _SCHEMA_MAPS and isinstance(value, dict):
                    todo.extend(value.values())
                elif key in _SUBSCHEMAS:
                    todo.append(value)
    return schema


# keywords whose value maps names to schemas, and keywords whose value is a schema or a list of them
# (the keywords vLLM's guidance backend walks: process_for_additional_properties, vLLM 0.32)
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SUBSCHEMAS = ("items", "prefixItems", "additionalItems", "contains", "allOf", "anyOf", "oneOf", "not",
               "if", "then", "else", "additionalProperties", "unevaluatedProperties", "unevaluatedItems",
               "propertyNames", "contentSchema")


def _close_tag_schemas(node: Any) -> Any:
    """A structural tag (parsed JSON) whose JSON schemas are closed by :func:`close_objects`: the
    legacy form's ``structures[i].schema`` and every ``json_schema`` format's ``json_schema`` (vLLM's
    guidance backend closes the schemas of a structural tag as it closes a json request's)."""
    if isinstance(node, list):
        return [_close_tag_schemas(x) for x in node]
    if not isinstance(node, dict):
        return node
    legacy = "begin" in node and "end" in node
    fmt = node.get("type") in ("json_schema", "qwen_xml_parameter")
    return {k: close_objects(v) if (k == "schema" and legacy) or (k == "json_schema" and fmt) else _close_tag_schemas(v)
            for k, v in node.items()}


def request_json_options(params: Any = None, config: Any = None) -> dict:
    """``compile_json_schema`` options of a request from vLLM's ``StructuredOutputsParams`` and
    ``StructuredOutputsConfig`` (either may be None), plus ``close`` (``disable_additional_properties``),
    which :func:`compile_vllm_request` applies to the schema."""
    opts: dict = {}
    pattern = getattr(params, "whitespace_pattern", None)
    if pattern is not None:   # the request's own white space wins over the engine's default
        if getattr(params, "disable_any_whitespace", False):
            raise stencil.GrammarError("whitespace_pattern and disable_any_whitespace are both set; choose one")
        opts["whitespace_pattern"] = pattern
    elif getattr(config, "disable_any_whitespace", False) or getattr(params, "disable_any_whitespace", False):
        opts["whitespace"] = "compact"
    if (getattr(config, "disable_additional_properties", False)
            or getattr(params, "disable_additional_properties", False)):
        opts["close"] = True
    return opts


def compile_vllm_request(compiler: stencil.GrammarCompiler, kind: Any, spec: Any, options: dict) -> stencil.CompiledGrammar:
    """Compile one vLLM request (``kind``: a ``StructuredOutputOptions`` or its name) with the
    options of :func:`request_json_options`."""
    kind = str(getattr(kind, "name", kind)).lower()
    opts = dict(options)
    if opts.pop("close", False) and kind in ("json", "structural_tag"):
        spec = load_spec(spec, kind)
        spec = close_objects(spec) if kind == "json" else _close_tag_schemas(spec)
    if kind not in ("json", "json_object", "structural_tag"):
        opts = {}
    return compile_request(compiler, kind, spec, json_options=opts)


class StencilBackend(_BackendBase):
    """vLLM's engine-level ``StructuredOutputBackend``: one tokenizer, compiled grammars cached.

    ``tokenizer``: the engine's Hugging Face tokenizer; ``vocab_size``: the model's logits width.
    ``tokenizer_info`` may be given instead of ``tokenizer`` (e.g. from a GGUF file). A request's
    ``stop_token_ids`` become the tokens that end it (masked until the grammar is complete).
    ``compiler``: the ``stencil.GrammarCompiler`` of requests that end at the tokenizer's own EOS.
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
        self.config = getattr(vllm_config, "structured_outputs_config", None)
        self.json_options = request_json_options(None, self.config)
        spec = getattr(vllm_config, "speculative_config", None)
        draft = getattr(spec, "num_speculative_tokens", None) or 0
        self.max_rollback = max_rollback if max_rollback is not None else max(DEFAULT_MAX_ROLLBACK, draft)
        self.max_model_len = getattr(getattr(vllm_config, "model_config", None), "max_model_len", None)
        # Where the model runs on the CPU its threads own the cores, and right after a forward pass
        # they still spin waiting for the next one: a second fill thread then waits for a core (on
        # two cores, a batch's fill took 1.5x as long as on the caller's thread alone).
        device = getattr(getattr(vllm_config, "device_config", None), "device_type", None)
        self.fill_threads = 1 if device == "cpu" else None
        self.compiler = stencil.GrammarCompiler(tokenizer_info)
        _log.info("stencil structured-output backend: %d tokens, vocab_size %d, max_rollback %d",
                  tokenizer_info.num_tokens, self.vocab_size, self.max_rollback)
        self._by_stops: OrderedDict[frozenset, stencil.GrammarCompiler] = OrderedDict()

    def _compiler_for(self, stop_token_ids: Any) -> stencil.GrammarCompiler:
        stops = frozenset(int(t) for t in stop_token_ids or ())
        if not stops or stops == frozenset(self.tokenizer_info.eos_token_ids):
            return self.compiler
        comp = self._by_stops.get(stops)
        if comp is None:  # few distinct stop sets in practice; bounded all the same
            info = with_eos_token_ids(self.tokenizer_info, sorted(stops))
            comp = self._by_stops[stops] = stencil.GrammarCompiler(info)
            if len(self._by_stops) > 8:
                self._by_stops.popitem(last=False)
        return comp

    def compile_grammar(self, request_type: Any, grammar_spec: str, stop_token_ids: set[int] | None = None, *,
                        max_tokens: int | None = None, params: Any = None, request: Any = None) -> StencilGrammar:
        """Compile a request; ``request_type`` is vLLM's ``StructuredOutputOptions`` (or its name).
        ``max_tokens``: the request's token budget; ``params``: its ``StructuredOutputsParams``
        (per-request options); ``request``: vLLM's ``Request`` (see :class:`StencilGrammar`)."""
        options = request_json_options(params, self.config) if params is not None else self.json_options
        grammar = compile_vllm_request(self._compiler_for(stop_token_ids), request_type, grammar_spec, options)
        return StencilGrammar(grammar, max_rollback=self.max_rollback, max_tokens=max_tokens, request=request)

    def compile_request(self, request: Any) -> StencilGrammar:
        """Compile a vLLM ``Request``: its structured-output key, stop tokens, options, and its
        ``max_tokens`` (bounded by the room its prompt leaves in the context) as the budget."""
        sp = request.sampling_params
        kind, spec = request.structured_output_request.structured_output_key
        limit = getattr(request, "max_tokens", None) or getattr(sp, "max_tokens", None)
        prompt = getattr(request, "num_prompt_tokens", None)
        if self.max_model_len and prompt is not None:
            room = self.max_model_len - prompt
            limit = room if limit is None else min(limit, room)
        return self.compile_grammar(kind, spec, sp.all_stop_token_ids, max_tokens=limit,
                                    params=sp.structured_outputs, request=request)

    def fill_bitmasks(self, bitmask: Any, rows: Iterable[tuple[Any, int, bool]]) -> None:
        """Fill a batch's rows at once: ``rows`` are vLLM's ``(grammar, row, apply)``; a row not
        applied (reasoning not over) or of a finished grammar allows every token."""
        self.fill_draft_bitmasks(bitmask, [(grammar, (), row, apply) for grammar, row, apply in rows])

    def fill_draft_bitmasks(self, bitmask: Any, requests: Iterable[tuple[Any, Any, int, bool]]) -> int:
        """The masks of a speculative step, as vLLM's scheduler lays them out: ``requests`` are
        ``(grammar, draft, first_row, apply)``, and request i gets ``len(draft) + 1`` rows from
        ``first_row``: the mask after ``draft[:j]`` at row ``first_row + j`` (the last one is the
        bonus token's). Each grammar is advanced through its draft and rolled back after, so its
        state is unchanged; every position of every request is filled in one native call
        (``stencil.fill_draft_bitmasks``). A draft is cut at vLLM's padding (-1, a draft token refused by
        ``validate_tokens``) and at a token its row refuses (the request's token budget): the rows
        after it allow every token, as vLLM's own loop leaves them after padding.
        A draft token the grammar refuses (vLLM validated the draft, so never expected) makes the
        rows after it copies of the last valid one. Returns the number of rows filled."""
        arr, requests = bitmask_view(bitmask), list(requests)
        rows: list[tuple[StencilGrammar, Any, int]] = []   # (grammar, draft, first row) of the rows filled
        for grammar, draft, first, apply in requests:
            if len(draft) == 0 and apply:   # (the usual row: no draft, nothing to clear)
                rows.append((grammar, (), first))
                continue
            draft = [int(t) for t in draft]
            cut = next((i for i, t in enumerate(draft) if t < 0), len(draft))
            arr[first + cut + 1:first + len(draft) + 1] = -1
            if not apply:
                arr[first:first + cut + 1] = -1
            else:
                rows.append((grammar, draft[:cut], first))
        if not rows:
            return sum(len(d) + 1 for _, d, _, _ in requests)
        grammars, drafts, firsts = zip(*rows)
        for r, d in zip(_fill(grammars, drafts, arr, firsts, self.fill_threads), drafts):
            if r is not None:
                _log.error("stencil: a draft token the grammar refuses reached the bitmask (%d)", d[r])
        return sum(len(d) + 1 for _, d, _, _ in requests)

    def allocate_token_bitmask(self, max_num_seqs: int):
        """An int32 torch tensor [max_num_seqs, ceil(vocab_size / 32)] (a numpy array without torch)."""
        arr = stencil.allocate_token_bitmask(max_num_seqs, self.vocab_size)
        try:
            import torch
        except ImportError:  # pragma: no cover - vLLM always has torch
            return arr
        return torch.from_numpy(arr)

    def destroy(self) -> None:
        self.compiler.clear_cache()
        self._by_stops.clear()


# -- taking over a vLLM backend name -----------------------------------------------------------------
_SO = "vllm.v1.structured_output"
# name: (module, backend class), (module, request validator vLLM runs in its front-end for that name)
_TAKEOVER = {
    "guidance": ((_SO, "GuidanceBackend"), (f"{_SO}.backend_guidance", "validate_guidance_grammar")),
    "xgrammar": ((_SO, "XgrammarBackend"), (f"{_SO}.backend_xgrammar", "validate_xgrammar_grammar")),
    "outlines": ((f"{_SO}.backend_outlines", "OutlinesBackend"),
                 (f"{_SO}.backend_outlines", "validate_structured_output_request_outlines")),
    "lm-format-enforcer": ((f"{_SO}.backend_lm_format_enforcer", "LMFormatEnforcerBackend"),
                           (f"{_SO}.backend_lm_format_enforcer",
                            "validate_structured_output_request_lm_format_enforcer")),
}

# The front-end's tokenizer and config, for the validator vLLM calls without them (set around
# SamplingParams._validate_structured_outputs, which has both).
_FRONT_END: contextvars.ContextVar = contextvars.ContextVar("stencil_vllm_front_end", default=(None, None))
_validation_compilers: OrderedDict = OrderedDict()   # id(tokenizer) -> (tokenizer, GrammarCompiler)
_validation_lock = threading.Lock()


def _validation_compiler(tokenizer: Any) -> stencil.GrammarCompiler:
    """A compiler over the front-end's tokenizer (one per tokenizer, the last two kept), or over
    the 256 bytes where there is none: what a request compiles to does not depend on it but for
    special tokens named in a grammar."""
    with _validation_lock:
        hit = _validation_compilers.get(id(tokenizer))
        if hit is not None and hit[0] is tokenizer:
            return hit[1]
    if tokenizer is None:
        info = stencil.TokenizerInfo([bytes([i]) for i in range(256)] + [b"</s>"], special_token_ids={256: "</s>"},
                                     eos_token_ids=[256])
    else:
        info = stencil.TokenizerInfo.from_huggingface(tokenizer)
    compiler = stencil.GrammarCompiler(info)
    with _validation_lock:
        _validation_compilers[id(tokenizer)] = (tokenizer, compiler)
        while len(_validation_compilers) > 2:
            _validation_compilers.popitem(last=False)
    return compiler


def validate_request(sampling_params: Any, tokenizer: Any = None) -> None:
    """vLLM's front-end validation of a structured-output request, by stencil: the request is
    compiled as the engine will compile it, and what does not compile is a ``VLLMValidationError``
    (an HTTP 400) with stencil's message, before the request reaches the engine."""
    so = getattr(sampling_params, "structured_outputs", None)
    if so is None:
        return
    from vllm.exceptions import VLLMValidationError
    from vllm.v1.structured_output.request import get_structured_output_key
    front_tokenizer, config = _FRONT_END.get()
    try:
        kind, spec = get_structured_output_key(so)
        compile_vllm_request(_validation_compiler(front_tokenizer), kind, spec, request_json_options(so, config))
    except (stencil.GrammarError, TypeError, ValueError) as e:
        raise VLLMValidationError(f"Grammar error (stencil): {e}") from None


def _with_front_end(original):
    def _validate_structured_outputs(self, model_config, structured_outputs_config, tokenizer):
        token = _FRONT_END.set((tokenizer, structured_outputs_config))
        try:
            return original(self, model_config, structured_outputs_config, tokenizer)
        finally:
            _FRONT_END.reset(token)
    _validate_structured_outputs.stencil_original = original
    return _validate_structured_outputs


def _create_grammar_hook(original):
    """StructuredOutputManager._create_grammar, which hands stencil's backend the whole request."""
    def _create_grammar(self, request):
        if not isinstance(self.backend, StencilBackend):
            return original(self, request)
        try:
            return self.backend.compile_request(request)
        except Exception:
            _log.exception("stencil: failed to compile the grammar of request %s", request.request_id)
            raise
    _create_grammar.stencil_original = original
    return _create_grammar


def _grammar_bitmask_hook(original):
    """StructuredOutputManager.grammar_bitmask: the batch's rows, every draft position of every
    request, by ``StencilBackend.fill_draft_bitmasks`` (one native fill per position). vLLM's own
    loop serves a batch where reasoning is not over (its grammar starts inside a draft) and
    diffusion models (no bonus token)."""
    def grammar_bitmask(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens):
        if (not isinstance(self.backend, StencilBackend) or not structured_output_request_ids
                or self.vllm_config.model_config.is_diffusion):
            return original(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens)
        plan, row = [], 0
        for rid in structured_output_request_ids:
            draft = scheduled_spec_decode_tokens.get(rid, ())
            kept = _unpadded(draft) if draft else []
            n = len(kept)
            start, constrain = self._get_constraint_bounds(requests[rid], kept)
            if (start, constrain) != (0, 0) and min(start, constrain) <= n:   # reasoning ends in the draft
                return original(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens)
            plan.append((requests[rid].structured_output_request.grammar, draft, row, constrain == 0))
            row += len(draft) + 1
        if self._grammar_bitmask is None:   # a row per draft position and one for the bonus token
            rows_per_request = 1 + self.vllm_config.num_speculative_tokens
            self._grammar_bitmask = self.backend.allocate_token_bitmask(
                self.vllm_config.scheduler_config.max_num_seqs * rows_per_request)
        filled = self.backend.fill_draft_bitmasks(self._grammar_bitmask, plan)
        return self._grammar_bitmask[:filled].numpy()
    grammar_bitmask.stencil_original = original
    return grammar_bitmask


def _unpadded(draft) -> list[int]:
    """A draft up to vLLM's padding (-1: a position whose draft token was refused)."""
    draft = list(draft)
    return draft[:next((i for i, t in enumerate(draft) if t < 0), len(draft))]


def _patch(owner: Any, name: str, make) -> None:
    """Replace ``owner.name`` by ``make(original)``, once (a second install keeps the first hook)."""
    current = getattr(owner, name, None)
    if current is None:
        raise RuntimeError(f"stencil cannot take over this vLLM: {getattr(owner, '__name__', owner)}.{name} "
                           "does not exist (a vLLM version stencil does not know)")
    if not hasattr(current, "stencil_original"):
        setattr(owner, name, make(current))


def install(replaces: str = "guidance") -> None:
    """Make vLLM run stencil where it would run the backend named ``replaces`` ("guidance",
    "xgrammar", "outlines" or "lm-format-enforcer"): its backend class, its front-end request
    validation, and the manager's grammar creation and batch fill for stencil's backend (see the
    module's docstring). Call it before the engine starts, in every process of the engine (or use
    the plugin entry point with ``STENCIL_VLLM_BACKEND``)."""
    if replaces not in _TAKEOVER:
        raise ValueError(f"install(replaces={replaces!r}): expected one of {', '.join(_TAKEOVER)}")
    import vllm.sampling_params as vsp  # ImportError: vLLM is not installed
    from vllm.v1.structured_output import StructuredOutputManager
    (backend_module, backend_cls), (check_module, check_fn) = _TAKEOVER[replaces]
    # grammar_init and _validate_structured_outputs look these names up in their modules at each call
    setattr(importlib.import_module(backend_module), backend_cls, StencilBackend)
    setattr(importlib.import_module(check_module), check_fn, validate_request)
    _patch(vsp.SamplingParams, "_validate_structured_outputs", _with_front_end)
    _patch(StructuredOutputManager, "_create_grammar", _create_grammar_hook)
    _patch(StructuredOutputManager, "grammar_bitmask", _grammar_bitmask_hook)


def register_plugin() -> None:
    """vLLM ``general_plugins`` entry point: installs the backend in every vLLM process when the
    environment variable ``STENCIL_VLLM_BACKEND`` names the backend to replace."""
    name = os.environ.get("STENCIL_VLLM_BACKEND")
    if name:
        install(name)
