"""A small constrained generation loop over a transformers model, with a KV cache.

At every step the grammar's token mask is applied to the model's logits before sampling, so the
output is always in the grammar's language. Two exact speed-ups skip work the model would do for
nothing:

- forced tokens (``jump_forward``): a run of tokens each of which is the only token the mask
  allows is appended without sampling and fed to the model in one forward pass. Sampling a token
  whose masked probability is 1 always returns it, so the output distribution is unchanged.
- drafts (``draft``): when the grammar forces some text but several tokenizations of it are
  allowed (``{"name": "`` can be ``{"`` ``name`` ... or ``{`` ``"name`` ...), the text's own
  tokenization is proposed as a draft and checked by the model in the same forward pass, as in
  speculative decoding: greedy keeps a draft token only if it is the argmax; sampling keeps draft
  token d with probability p(d) and otherwise samples from p without d, which is exactly p.

Both feed the model several tokens per pass, which rounds float32 sums differently from plain
decoding's one-token passes (up to 8e-5 of a logit for SmolLM2). Greedy decoding of a float32
model stays token for token that of plain decoding (``jump_forward=False, draft=False``) all the
same: where the two best allowed logits of such a row lie within ``EXACT_MARGIN`` (1e-3), the
token is chosen from logits computed as plain decoding computes them, the tokens since the last
such point run again one per pass (``GenerationResult.replayed_tokens``). In 54 extraction cases 3
choices came that close: 125 of 4,240 tokens replayed, speculation 8% slower for it (57.6 against
53.0 tokens/s). Models with 16-bit weights may still differ at near ties.

Masks are opportunistic (``opportunistic=True``, ``stencil.runtime.opportunistic``): the token the model
picked is checked with ``Matcher.accept_token(t, remaining_tokens)`` and the mask is computed only
where the grammar refuses it (and where the output is complete, to see whether only EOS is left);
draft rows are verified the same way (a sampled draft token is kept when the row's draw is it). ``GenerationResult.masks_computed`` counts them.

With a grammar the loop also keeps to ``max_tokens`` (``budget``, on by default): each mask
allows only tokens after which the output can still be completed in the tokens left
(``Matcher.fill_next_token_bitmask(..., remaining_tokens=k)``), so the output is valid when the
budget runs out instead of cut mid-string. Where the budget does not bind the masks, and so the
output, are those of the unbudgeted run. A ``max_tokens`` too small for the grammar's shortest
output is a ``ValueError`` before anything is generated.

Example::

    import stencil
    from stencil.runtime.models import load_model
    lm = load_model()
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_regex(r"(yes|no)")
    out = stencil.runtime.generate(lm, g, "Is the sky blue?")
    print(out.text, out.finish_reason)          # yes grammar
"""
from __future__ import annotations

import codecs
import contextlib
import inspect
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from stencil._core import CompiledGrammar, Matcher
from stencil.bitmask import allocate_token_bitmask, apply_token_bitmask_inplace, fill_next_token_bitmasks_async
from stencil.partial.hook import PartialHook
from stencil.partial.result import PartialResult
from stencil.runtime.aligned import DEFAULT_PARTICLES, AlignedSample, HFParticles, sample_aligned
from stencil.runtime.attention import shape_stable_attention
from stencil.runtime.draft_plan import draft_kind
from stencil.runtime.healing import Healer, start_healing
from stencil.runtime.opportunistic import Picker, verify_checked
from stencil.runtime.ragged import RaggedModel
from stencil.runtime.sampling import Sampler
from stencil.runtime.speculative import (DraftBudget, Drafter, SpeculationOptions, first_near_tie, model_prior,
                                        speculation_options, verify)
from stencil.runtime.stops import other_token_words, stop_token_ids
from stencil.runtime.think import ThinkOptions, generate_thinking

__all__ = ["generate", "GenerationResult"]

#: finish reasons: EOS sampled, the grammar allows nothing but EOS, the token budget, the context
FINISH_REASONS = ("eos", "grammar", "max_tokens", "context")


@dataclass
class GenerationResult:
    """What ``generate`` produced, why it stopped, and what it cost."""

    text: str
    token_ids: list[int]
    finish_reason: str
    prompt_tokens: int
    forward_passes: int = 0
    forced_tokens: int = 0
    drafted_tokens: int = 0
    rejected_draft_tokens: int = 0
    #: tokens run through the model again, one per pass, to decide a near tie as plain decoding does
    replayed_tokens: int = 0
    #: token masks the grammar computed (``opportunistic``: only where the model's pick was refused)
    masks_computed: int = 0
    seconds: float = 0.0
    prefill_seconds: float = 0.0
    #: whether the text is a complete output of the grammar (None without a grammar)
    complete: bool | None = None
    #: ``heal=True``: the text of the prompt's last tokens that were removed and generated again
    #: (the output started with it; ``text`` and ``on_text`` leave it out). "" when nothing was healed
    healed_prefix: str = ""
    #: ``sampling="aligned"``: the particles' complete outputs, their weights and counts
    aligned: AlignedSample | None = None
    #: ``think=...``: the free part before the answer (``text``), and its generated tokens
    thought: str | None = None
    thought_tokens: int = 0

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens per second after the prompt was processed."""
        decode = self.seconds - self.prefill_seconds
        return len(self.token_ids) / decode if decode > 0 else float("nan")

    @property
    def masks_per_token(self) -> float:
        """Masks computed per generated token (1 or a little more with full masks, 0 without a grammar)."""
        return self.masks_computed / len(self.token_ids) if self.token_ids else float("nan")


class _Model:
    """Forward passes over one sequence with a transformers DynamicCache.

    It also knows how far its cache is *exact*: computed as plain decoding computes it, the prompt
    in one pass and then one token per pass. A pass over several tokens (forced tokens, a draft)
    rounds differently (float32 sums over other shapes), by about 1e-4 of a logit for SmolLM2;
    :meth:`exact_logits` recomputes what plain decoding would have seen, for the rare near tie
    where that difference could change the greedy token.
    """

    def __init__(self, model: Any, prompt_len: int = 0):
        import torch
        from transformers import DynamicCache
        self.torch = torch
        self.model = model
        self.device = next(model.parameters()).device
        self._new_cache = DynamicCache
        self.cache = DynamicCache()
        self.length = 0
        self.ids: list[int] = []      # the tokens in the cache
        self.prompt_len = prompt_len  # plain decoding's first pass
        self.exact = 0                # the cache's prefix computed as plain decoding computes it
        self.replayed = 0             # generated tokens run again by exact_logits
        self.passes = 0
        self.first_pass_done: float | None = None  # perf_counter when the prompt was processed
        # Only the last rows' logits are needed: the LM head over 49k-150k ids is the biggest
        # matmul of a small model, so computing it for every prompt position would dominate.
        params = inspect.signature(model.forward).parameters
        self._keep_arg = next((a for a in ("logits_to_keep", "num_logits_to_keep") if a in params), None)
        # transformers 5 renamed past_key_values to cache (the old name warns on every call, in the
        # middle of the streamed text); either way the DynamicCache is updated in place.
        self._cache_arg = _cache_arg(model)
        # Replayed tokens need their keys and values only: the decoder without the LM head computes
        # them alike, in four fifths of a one-token pass of SmolLM2. Only the usual layout of a
        # causal LM (``XForCausalLM.model``, what transformers' GGUF loading makes) is trusted.
        decoder = getattr(model, "model", None)
        self._decoder = decoder if isinstance(decoder, torch.nn.Module) and decoder is not model else None
        self._decoder_cache_arg = _cache_arg(self._decoder) if self._decoder is not None else self._cache_arg
        # A CPU BLAS picks its kernel by shape, and decoding's products of a few rows are its slow
        # ones: the ragged model's calibrated products (``Matmuls``: weight @ x.T where faster) make
        # a one-token pass of SmolLM2 a fifth faster and one of two tokens cost what one did (MKL on
        # this 2-core AVX-512 host). Every pass goes through them, so one-token passes stay alike.
        ragged = RaggedModel.of(model) if self.device.type == "cpu" else None
        self._ragged = ragged if ragged is not None and ragged.supported else None

    def forward(self, tokens: Sequence[int], keep: int = 1):
        """Logits (float32, CPU) after each of the last ``keep`` of ``tokens``: ``[keep, vocab]``."""
        out = self._run(tokens, self.model, {self._keep_arg: keep} if self._keep_arg else {}, keep)
        logits = out.logits[0, -keep:].float().cpu()
        if self.first_pass_done is None:
            self.first_pass_done = time.perf_counter()
        return logits

    def _run(self, tokens: Sequence[int], module: Any, kw: dict[str, Any], keep: int = 1) -> Any:
        """One pass of ``module`` (the model, or its decoder) over ``tokens``, into the cache."""
        ids = self.torch.tensor([list(tokens)], dtype=self.torch.long, device=self.device)
        kw[self._cache_arg if module is self.model else self._decoder_cache_arg] = self.cache
        n = len(tokens)
        products = self._ragged.run([n], [min(keep, n)], n, False) if self._ragged else contextlib.nullcontext()
        with shape_stable_attention(self.device), products:
            out = module(input_ids=ids, use_cache=True, **kw)
        if len(tokens) == (1 if self.length else self.prompt_len) and self.exact == self.length:
            self.exact += len(tokens)
        self.length += len(tokens)
        self.ids.extend(int(t) for t in tokens)
        self.passes += 1
        return out

    def truncate(self, length: int) -> None:
        """Forget the cached keys and values past ``length`` tokens."""
        if length < self.length:
            self.cache.crop(length - self.length)  # negative: remove that many (transformers 4 and 5)
            self.length = length
            del self.ids[length:]
            self.exact = min(self.exact, length)

    def is_exact(self) -> bool:
        """Whether the last pass's last row is what plain decoding computes after these tokens."""
        return self.exact == self.length

    def exact_logits(self):
        """The logits after the cached tokens as plain decoding computes them, bit for bit: the
        tokens past the exact prefix are run again, one per pass (the prompt again in one pass if
        it shared its pass with other tokens). ``[vocab]``, float32, CPU."""
        ids = list(self.ids)
        start = min(self.exact, len(ids) - 1)  # at least the last token runs again
        if start < self.prompt_len:
            self.cache, self.length, self.ids, self.exact = self._new_cache(), 0, [], 0
            runs = [ids[:self.prompt_len]] + [[t] for t in ids[self.prompt_len:]]
        else:
            self.truncate(start)
            runs = [[t] for t in ids[start:]]
        for tokens in runs[:-1]:  # keys and values only
            self._run(tokens, self._decoder or self.model, {})
        self.replayed += len(ids) - max(start, self.prompt_len)
        return self.forward(runs[-1])[-1]


def _cache_arg(module: Any) -> str:
    """The name under which ``module``'s forward takes the KV cache."""
    return "cache" if "cache" in inspect.signature(module.forward).parameters else "past_key_values"


class _Stream:
    """Token bytes -> text pieces for ``on_text``, never splitting a UTF-8 character."""

    def __init__(self, info, on_text: Callable[[str], None] | None):
        self.info = info
        self.on_text = on_text
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.skip = 0  # bytes not to pass on: a healed prefix, which belongs to the prompt

    def emit(self, tokens: Sequence[int]) -> None:
        if self.on_text is not None:
            data = self.info.decode_bytes(list(tokens))
            cut, self.skip = min(self.skip, len(data)), self.skip - min(self.skip, len(data))
            piece = self.decoder.decode(data[cut:])
            if piece:
                self.on_text(piece)

    def close(self) -> None:
        if self.on_text is not None:
            piece = self.decoder.decode(b"", final=True)
            if piece:
                self.on_text(piece)


def _draft_tokens(matcher: Matcher, hf_tokenizer: Any, limit: int) -> list[int]:
    """The tokenizer's own tokenization of the text the grammar forces next, cut to what the
    matcher allows (never more than ``limit`` tokens)."""
    forced = matcher.forced_bytes()
    if not forced or limit <= 0:
        return []
    text = forced.decode("utf-8", errors="ignore")  # drops a trailing partial character
    if not text:
        return []
    ids = list(hf_tokenizer.encode(text, add_special_tokens=False))[:limit]
    return ids[:matcher.validate_tokens(ids)] if ids else []


def generate(lm: Any, grammar: CompiledGrammar | None = None, prompt: str | None = None, *,
             messages: Sequence[dict] | None = None, system: str | None = None,
             input_ids: Sequence[int] | None = None, max_tokens: int = 256, temperature: float = 0.0,
             seed: int | None = None, repetition_penalty: float = 1.0, jump_forward: bool = True,
             draft: bool = True, budget: bool = True, speculate: bool | SpeculationOptions | None = None,
             heal: bool = False, on_text: Callable[[str], None] | None = None,
             on_partial: Callable[[PartialResult], None] | None = None, partial_schema: Any = None,
             sampling: str = "plain", particles: int = DEFAULT_PARTICLES,
             think: bool | ThinkOptions = False, opportunistic: bool = True) -> GenerationResult:
    """Generate from ``lm`` (a ``stencil.runtime.models.LoadedModel``) under ``grammar`` (None: free).

    The prompt is ``prompt`` (one user message), ``messages`` (chat messages) or ``input_ids``;
    the chat template is applied to the first two. Greedy when ``temperature`` is 0, otherwise
    sampled with ``seed``; ``repetition_penalty`` > 1 discourages tokens already generated (as in
    transformers, but over the generated tokens only), which keeps small models out of loops
    inside long strings. Stops at EOS, when the grammar allows nothing but EOS, after
    ``max_tokens`` tokens or at the end of the model's context (``finish_reason`` says which).
    ``on_text(piece)`` receives the text as it is generated.

    ``budget`` (with a grammar): finish valid within ``max_tokens`` (and the context). Each token
    must leave room for a completion, so the output is complete when the budget runs out
    (``finish_reason`` is then "max_tokens" and ``complete`` True); a ``max_tokens`` that cannot
    hold the grammar's shortest output (``Matcher.min_completion_tokens()``) raises ValueError at
    the start. ``budget=False``: the old behaviour, the output may stop mid-way.

    ``speculate`` (on by default: None is ``True`` except with ``sampling="aligned"``; False turns it
    off; or ``stencil.runtime.speculative.SpeculationOptions``): draft several tokens per step from prompt
    lookup (text copied from the prompt) or a draft model, merged with the grammar's forced text,
    and verify them in one forward pass (``stencil.runtime.speculative``). Greedy output is unchanged token
    for token (float32 models: near ties are decided again on plain decoding's logits, see the
    module's docstring); sampled output keeps its distribution, and each token takes the random
    draws plain sampling takes. How many tokens a pass guesses adapts to their acceptance and to
    the measured cost of a pass (none while guesses keep failing), so speculating is not slower
    than plain decoding where drafts fail. It replaces ``draft`` (forced text is part of every
    speculative draft).

    ``heal`` (token healing, for raw prompts that end inside what would be one token, such as
    ``'"url": "https:'``): the prompt's last tokens whose text some longer token extends are removed
    and the first generated tokens must spell that text again, then the grammar constrains what
    follows it (``stencil.runtime.healing``). ``text`` and ``on_text`` leave the healed text out;
    ``healed_prefix`` holds it.

    ``on_partial(snapshot)`` (a JSON grammar): after each step, what is settled of the output, a
    ``stencil.PartialResult`` read from the accepted bytes (``stencil.partial``); once more at the end
    where a number ending the output settles. ``partial_schema``: the grammar's JSON Schema, for its
    ``missing_required``.

    ``sampling="aligned"`` (a grammar, ``temperature`` > 0): draw from the model's own distribution
    conditioned on the grammar, not the masked one, by SMC over ``particles`` rows (``stencil.runtime.aligned``);
    ``on_text`` gets the text once, at the end; ``aligned`` holds the particles.

    ``think`` (True or ``stencil.runtime.ThinkOptions``): think, then constrain; a bounded free part, then the
    answer under the grammar, within ``max_tokens`` (``stencil.runtime.think``); ``thought`` is the free part.

    ``opportunistic`` (on by default): check the token the model picked with the grammar first and
    compute the mask only where it is refused (``stencil.runtime.opportunistic``): greedy output is that of
    full-mask decoding token for token, sampled output keeps its distribution (rejection sampling,
    3 draws, then the mask), not the draws of a seed. ``masks_computed`` counts the masks.

    Example::

        g = compiler.compile_regex(r"[0-9]{4}")
        out = generate(lm, g, "In which year did the Berlin wall fall?", max_tokens=8)
        assert out.finish_reason == "grammar" and len(out.text) == 4
    """
    if think:   # two passes of this function: every argument but think goes to them as given
        return generate_thinking(generate, {k: v for k, v in locals().items() if k != "think"}, think)
    prompt_ids, limit, cut_by, t_start = _prompt_and_limit(lm, prompt, messages, system, input_ids, max_tokens,
                                                           repetition_penalty)
    spec = speculation_options(sampling == "plain" if speculate is None else speculate)
    matcher = Matcher(grammar, max_rollback=spec.max_draft if spec else 0) if grammar is not None else None
    if matcher is not None and budget:
        _check_room(matcher, limit, cut_by)
    if sampling != "plain":
        return _aligned(lm, matcher, prompt_ids, (limit, cut_by, t_start, on_text),
                        (sampling, particles, temperature, seed, repetition_penalty), (spec, heal, on_partial, budget))
    return _plain(lm, matcher, prompt_ids, spec, (limit, cut_by, t_start, budget, opportunistic),
                  (temperature, seed, repetition_penalty, jump_forward, draft, heal), (on_text, on_partial, partial_schema))


def _plain(lm: Any, matcher: Matcher | None, prompt_ids: list[int], spec: SpeculationOptions | None, limits: tuple,
           how: tuple, hooks: tuple) -> GenerationResult:
    """``generate``'s loop (plain sampling or greedy). ``limits``: (tokens that may be generated, the
    finish reason then, start time, budget, opportunistic); ``how``: (temperature, seed, repetition_penalty,
    jump_forward, draft, heal); ``hooks``: (on_text, on_partial, partial_schema)."""
    import torch
    limit, cut_by, t_start, budget, opportunistic = limits
    temperature, seed, repetition_penalty, jump_forward, draft, heal = how
    on_text, on_partial, partial_schema = hooks
    result = GenerationResult("", [], "", len(prompt_ids))
    healer = None
    if heal:
        plan, healer = start_healing(lm.tokenizer_info, prompt_ids, matcher, limit if budget else None)
        prompt_ids = plan.prompt_ids
    net = _Model(lm.model, len(prompt_ids))
    hook = PartialHook(on_partial, on_text, partial_schema) if on_partial is not None else None
    loop = _Loop(lm, net, Sampler(temperature, seed, repetition_penalty), _Stream(lm.tokenizer_info, hook or on_text),
                 matcher, (limit, budget, opportunistic), result)
    loop.heal(healer)
    if spec is not None:
        loop.speculate(spec, prompt_ids)
    with torch.inference_mode():
        finish = loop.run(prompt_ids, cut_by, jump_forward, draft)
    result = loop.finish(finish, t_start)
    if hook is not None:
        hook.end(bool(result.complete))
    return result


def _prompt_and_limit(lm: Any, prompt: str | None, messages: Sequence[dict] | None, system: str | None,
                      input_ids: Sequence[int] | None, max_tokens: int,
                      repetition_penalty: float) -> tuple[list[int], int, str, float]:
    """``generate``'s start: the prompt's token ids, how many tokens may be generated and the
    finish reason when they run out (``_token_limit``), and the start time."""
    if input_ids is None:
        input_ids = lm.encode_prompt(prompt, messages=messages, system=system)
    prompt_ids = [int(t) for t in input_ids]
    limit, cut_by = _token_limit(lm, prompt_ids, max_tokens)
    if repetition_penalty <= 0:
        raise ValueError(f"generate: repetition_penalty must be > 0, got {repetition_penalty}")
    return prompt_ids, limit, cut_by, time.perf_counter()


def _aligned(lm: Any, matcher: Matcher | None, prompt_ids: list[int], limits: tuple, how: tuple,
             others: tuple) -> GenerationResult:
    """``generate(..., sampling="aligned")``: one output of ``stencil.runtime.aligned.sample_aligned``.
    ``limits``: (tokens that may be generated, the finish reason then, start time, on_text);
    ``how``: (sampling, particles, temperature, seed, repetition_penalty); ``others``: generate's
    (speculation options, heal, on_partial, budget), which aligned sampling does not combine with."""
    limit, cut_by, t_start, on_text = limits
    sampling, particles, temperature, seed, penalty = how
    spec, heal, on_partial, budget = others
    refused = [n for n, on in (("speculate", spec), ("heal", heal), ("on_partial", on_partial),
                               ("budget=False", not budget)) if on]
    if sampling != "aligned":
        raise ValueError(f"generate: sampling must be 'plain' or 'aligned', got {sampling!r}")
    if matcher is None:
        raise ValueError("generate: sampling='aligned' needs a grammar (without one it is plain sampling)")
    if refused:
        raise ValueError(f"generate: sampling='aligned' does not combine with {', '.join(refused)}")
    s = sample_aligned(HFParticles(lm.model), matcher, lm.tokenizer_info, prompt_ids, particles=particles,
                       max_tokens=limit, temperature=temperature, seed=seed,
                       penalties={"repetition_penalty": penalty} if penalty != 1.0 else None)
    text = lm.tokenizer_info.decode_bytes(s.token_ids).decode("utf-8", errors="replace")
    if on_text is not None and text:
        on_text(text)
    finish = cut_by if s.finish_reason == "max_tokens" else s.finish_reason
    return GenerationResult(text, s.token_ids, finish, len(prompt_ids), forward_passes=s.passes,
                            seconds=time.perf_counter() - t_start, complete=True, aligned=s)


def _token_limit(lm: Any, prompt_ids: list[int], max_tokens: int) -> tuple[int, str]:
    """(how many tokens may be generated, the finish reason when they run out): ``max_tokens`` or
    the room left in the model's context, whichever is smaller."""
    if not prompt_ids:
        raise ValueError("generate: the prompt is empty")
    if max_tokens < 0:
        raise ValueError(f"generate: max_tokens must be >= 0, got {max_tokens}")
    ctx = int(getattr(lm, "context_length", 0) or 0)
    if ctx and len(prompt_ids) >= ctx:
        raise ValueError(f"the prompt has {len(prompt_ids)} tokens, but the model's context holds {ctx}")
    if ctx and ctx - len(prompt_ids) < max_tokens:
        return ctx - len(prompt_ids), "context"
    return max_tokens, "max_tokens"


def _check_room(matcher: Matcher, limit: int, cut_by: str) -> None:
    """ValueError before anything is generated when the grammar's shortest output needs more than
    ``limit`` tokens (the budget could not keep the output valid)."""
    need = matcher.min_completion_tokens()
    if need is not None and need > limit:
        what = "max_tokens" if cut_by == "max_tokens" else "the room left in the model's context"
        raise ValueError(f"generate: the shortest output of the grammar needs up to {need} tokens, "
                         f"more than {what} ({limit}); raise max_tokens, or pass budget=False to stop mid-output")


#: a grammar step consumed tokens without sampling (forced or drafted): the loop goes round again
_AGAIN = "again"

#: Greedy with a float32 model: where the two best allowed logits of a row from a pass over several
#: tokens lie within this margin, the token is chosen from logits computed as plain decoding
#: computes them (``_Model.exact_logits``). The two kinds of pass differ by at most 8e-5 of a logit
#: on SmolLM2 (1,000 rows measured), which moves a margin by at most 1.6e-4; 1e-3 leaves room for
#: larger models. 3 of 3,837 greedy choices in 54 extraction cases came this close (one at 1.05e-4).
#: 16-bit weights round far more coarsely (bfloat16 steps of 0.125 near 20): not covered.
EXACT_MARGIN = 1e-3


class _Loop:
    """The state of one generation: tokens out, tokens accepted but not yet run through the model
    (``feed``), the next-token logits once ``feed`` is empty, and the mask of the step."""

    def __init__(self, lm: Any, net: _Model, sampler: Sampler, stream: _Stream, matcher: Matcher | None,
                 how: tuple[int, bool, bool], res: GenerationResult):
        info = lm.tokenizer_info
        self.lm, self.net, self.sampler, self.stream, self.matcher = lm, net, sampler, stream, matcher
        (self.limit, self.budget, opportunistic), self.res = how, res
        self.info = info
        self.out: list[int] = res.token_ids
        self.feed: list[int] = []
        self.logits: Any = None   # a torch tensor once a forward pass ran
        self.eos = stop_token_ids(info.eos_token_ids, matcher)   # (those the grammar writes are its text)
        self.bm = allocate_token_bitmask(1, info.vocab_size)
        self.eos_words = ~other_token_words(self.eos, self.bm.shape[1])[None, :]
        self.drafter: Drafter | None = None
        self.plan: DraftBudget | None = None   # the drafter's guesses per pass
        self.healer: Healer | None = None
        # Only greedy rows of a float32 model are held to plain decoding's exact tokens.
        float32 = next(lm.model.parameters()).dtype == sampler.torch.float32
        self.tie_margin = EXACT_MARGIN if sampler.gen is None and float32 else 0.0
        # Every mask is computed through the picker (counted); opportunistic: only on a refusal.
        self.picker = Picker(matcher, sampler, self.bm, info, opportunistic=opportunistic and matcher is not None,
                             tie_margin=self.tie_margin)
        self.masked = False       # bm[0] holds the mask of this step (filled while the forward pass ran)
        self.row_checks = self.picker.opportunistic  # draft rows verified by checked picks, without masks

    def speculate(self, options: SpeculationOptions, prompt_ids: list[int]) -> None:
        """Draft and verify several tokens per forward pass from now on (``stencil.runtime.speculative``)."""
        draft_lm = options.draft_model
        if draft_lm is not None and draft_lm.tokenizer_info.vocab_size != self.info.vocab_size:
            raise ValueError("generate: the draft model's tokenizer is not the model's "
                             f"(vocabulary of {draft_lm.tokenizer_info.vocab_size} against {self.info.vocab_size})")
        draft_net = _Model(draft_lm.model) if draft_lm is not None else None
        self.drafter = Drafter(options, self.info, self.lm.tokenizer, prompt_ids, draft_net)
        self.plan = DraftBudget(options, model_prior(self.lm.model),
                                draft_kind(self.matcher is not None, self.sampler.temperature))
        self.bm = self.picker.bitmask = allocate_token_bitmask(options.max_draft + 1, self.info.vocab_size)
        self.row_checks = self.row_checks and draft_net is None  # the draft model drafts under masks

    def heal(self, healer: Healer | None) -> None:
        """Start with token healing: the first tokens spell ``healer.prefix`` (left out of the text)."""
        self.healer = healer
        if healer is not None:
            self.stream.skip = len(healer.prefix)
            self.res.healed_prefix = healer.prefix.decode("utf-8", errors="replace")

    def remaining(self) -> int | None:
        """The budget of the step being masked: tokens that may still be generated, this one included."""
        return self.limit - len(self.out) if self.matcher is not None and self.budget else None

    def run(self, prompt_ids: list[int], cut_by: str, jump_forward: bool, draft: bool) -> str:
        """Generate until a finish reason; returns it."""
        self.feed = prompt_ids
        while self.healer is not None and not self.healer.done:   # the healed prefix comes first
            if len(self.out) >= self.limit:
                return cut_by
            self._heal_step()
        while True:
            if len(self.out) >= self.limit:
                return cut_by
            if self.drafter is not None:
                if self.matcher is not None and jump_forward and self._take_forced():
                    continue
                finish = self._speculative_step()
                if finish is not None:
                    return finish
                continue
            if self.matcher is not None:
                step = self._grammar_step(jump_forward, draft)
                if step == _AGAIN:
                    continue
                if step is not None:
                    return step
            finish = self._sample()
            if finish is not None:
                return finish

    def finish(self, finish: str, t_start: float) -> GenerationResult:
        self.stream.close()
        res = self.res
        res.finish_reason = finish
        healed = self.healer is None or self.healer.done
        res.complete = None if self.matcher is None else healed and self.matcher.is_accepting()
        skip = len(self.healer.prefix) if self.healer is not None else 0
        res.text = self.info.decode_bytes(self.out)[skip:].decode("utf-8", errors="replace")
        res.forward_passes = self.net.passes
        res.replayed_tokens = self.net.replayed
        res.masks_computed = self.picker.masks + (self.drafter.masks if self.drafter is not None else 0)
        res.prefill_seconds = (self.net.first_pass_done or t_start) - t_start
        res.seconds = time.perf_counter() - t_start
        return res

    def _grammar_step(self, jump_forward: bool, draft: bool) -> str | None:
        """Forced tokens and drafts are taken here (then _AGAIN, or a finish reason a draft step
        reached); "grammar" when only EOS is allowed; otherwise None, with ``bm`` the step's mask
        where ``masked`` says so (opportunistic steps leave it to the pick in _sample)."""
        matcher = self.matcher
        assert matcher is not None   # the grammar's steps run with a grammar only
        if jump_forward and self._take_forced():
            return _AGAIN
        drafts = _draft_tokens(matcher, self.lm.tokenizer, self.limit - len(self.out)) if draft else []
        self.masked = False
        if drafts:  # forced text ahead: more than EOS is allowed
            # Drafts are checked against the budgeted masks: one the budget refuses is rejected.
            if not self.row_checks:
                self.picker.fill(0, self.remaining())
            return self._verify_drafts(drafts) or _AGAIN
        if self.picker.opportunistic and not matcher.is_accepting():
            return None   # EOS is not allowed: the model's pick is checked after the pass (_sample)
        if self.feed and not matcher.is_accepting():
            # EOS is not allowed, so the step samples whatever the mask says. The mask does not
            # depend on the logits: a thread of the core fills it while the forward pass runs, and
            # never takes the GIL, which launching the forward pass on a GPU needs all the time.
            pending = fill_next_token_bitmasks_async([matcher], self.bm, num_threads=1,
                                                     remaining_tokens=[self.remaining()])
            self.picker.masks += 1
            self.masked = True
            try:
                self.logits = self.net.forward(self.feed)[-1]
                self.feed = []
            finally:
                error = pending.wait()[0]
            if error is not None:
                raise error
            if not np.any(self.bm):
                raise RuntimeError("the grammar allows no token and not EOS: " + matcher.debug_state())
            return None
        self.picker.fill(0, self.remaining())
        self.masked = True
        if not np.any(self.bm & ~self.eos_words):
            if not np.any(self.bm):
                raise RuntimeError("the grammar allows no token and not EOS: " + matcher.debug_state())
            return "grammar"  # nothing but EOS is allowed: the output is complete
        return None

    def _take_forced(self) -> bool:
        """Accept the run of forced tokens, if any. They fit the budget: when one token is
        allowed, it is the first byte token of every completion, the one the budget keeps."""
        matcher = self.matcher
        assert matcher is not None   # called by _grammar_step
        forced = matcher.forced_tokens()[:self.limit - len(self.out)]
        if not forced:
            return False
        for t in forced:
            if not matcher.accept_token(t):
                raise RuntimeError(f"internal error: forced token {t} was refused")
        self.out.extend(forced)
        self.feed = self.feed + forced
        self.res.forced_tokens += len(forced)
        self.stream.emit(forced)
        return True

    def _heal_step(self) -> None:
        """One token of the healed prefix, sampled under the healing mask (one-token passes from the
        prompt on, so greedy needs no near-tie check); EOS is not among the allowed tokens."""
        healer = self.healer
        assert healer is not None   # run() heals only with a healer
        if self.feed:
            self.logits = self.net.forward(self.feed)[-1]
            self.feed = []
        logits, self.logits = self.logits, None
        self.sampler.penalize(logits, self.out)
        mask = self.bm[:1]   # (speculation keeps more rows)
        healer.fill(mask, 0, self.remaining())
        self.picker.masks += 1
        apply_token_bitmask_inplace(logits, mask)
        t = self.sampler.sample(logits)
        if not healer.accept_token(t):
            raise RuntimeError(f"internal error: token {t} does not continue the healed prefix {healer.rest!r}")
        self.out.append(t)
        self.feed = [t]
        self.stream.emit([t])

    def _sample(self) -> str | None:
        """Sample one token from the (masked) logits; "eos" when it is EOS."""
        if self.feed:
            self.logits = self.net.forward(self.feed)[-1]
            self.feed = []
        logits, self.logits = self.logits, None  # the logits after the whole cache
        self.sampler.penalize(logits, self.out)
        ties = not self.net.is_exact()   # a pass over several tokens: near ties are decided again
        if self.matcher is not None:
            # The mask of the step (self.masked), or the model's pick checked and the mask on a refusal.
            t = self.picker.pick(logits, self.remaining(), ties=ties, masked=self.masked)
            if t is None:   # a near tie of the allowed logits
                t = self._exact_token(self.bm, self.out)
                if t not in self.eos and not self.matcher.accept_token(t):
                    raise RuntimeError(f"internal error: token {t} is not allowed: {self.matcher.debug_state()}")
        elif ties and first_near_tie(logits[None], self.tie_margin) is not None:
            t = self._exact_token(None, self.out)
        else:
            t = self.sampler.sample(logits)
        if t in self.eos or self._ended():
            return "eos"
        self.out.append(t)
        self.feed = [t]
        self.stream.emit([t])
        return None

    def _verify_drafts(self, drafts: list[int]) -> str | None:
        """Run ``feed + drafts`` through the model in one pass and keep the draft tokens the model
        would have produced itself; a finish reason ("eos") or None. On entry ``bm`` holds the
        mask of the matcher's current state, and ``logits`` the next-token logits when ``feed``
        is empty."""
        net, matcher, sampler, bm = self.net, self.matcher, self.sampler, self.bm
        assert matcher is not None   # called by _grammar_step
        exact0 = not self.feed and net.is_exact()  # row 0 is then the logits of the last pass
        if self.feed:
            rows = net.forward(list(self.feed) + drafts, keep=len(drafts) + 1)
        else:
            torch = sampler.torch
            rows = torch.cat([self.logits.unsqueeze(0), net.forward(drafts, keep=len(drafts))])
        self.res.drafted_tokens += len(drafts)
        self.feed, self.logits = [], None
        for i, d in enumerate(drafts):
            row = rows[i]
            sampler.penalize(row, self.out)
            ties = not (i == 0 and exact0)
            end = net.length - (len(drafts) - i)  # the cache before draft token i
            if self.row_checks:   # the pick checked with the grammar; the mask only on a refusal
                got = self.picker.pick(row, self.remaining(), ties=ties)
                t, taken, tie = (d, False, True) if got is None else (got, got not in self.eos, False)
            else:
                if i:
                    self.picker.fill(0, self.remaining())
                apply_token_bitmask_inplace(row, bm)
                t, taken = sampler.sample(row), False   # kept when the row's draw is d (speculative.verify)
                tie = ties and first_near_tie(row[None], self.tie_margin) is not None
            if tie:
                net.truncate(end)  # decided again on exact logits; the draft's later rows are dropped
                t = self._exact_token(bm, self.out)
            elif t == d:
                if not taken and not matcher.accept_token(d):
                    raise RuntimeError(f"internal error: draft token {d} was refused")
                self.out.append(d)
                self.stream.emit([d])
                continue
            # Rejected: the cache holds the drafts after position i, which the model never chose.
            self.res.rejected_draft_tokens += len(drafts) - i - (t == d)
            net.truncate(end)
            return self._take_own(t, matcher, taken)
        self.logits = rows[len(drafts)]
        return None

    def _take_own(self, t: int, matcher, taken: bool) -> str | None:
        """The pass's own token ``t`` after the drafts it kept: "eos" where it ends the output, else
        taken (``taken``: the matcher already accepted it; one it refuses is an internal error)."""
        if t in self.eos:
            return "eos"
        if matcher is not None and not taken and not matcher.accept_token(t):
            raise RuntimeError(f"internal error: token {t} is not allowed: {matcher.debug_state()}")
        if self._ended():
            return "eos"
        self.out.append(t)
        self.feed = [t]
        self.stream.emit([t])
        return None

    def _exact_token(self, mask: np.ndarray | None, generated: list[int]) -> int:
        """The greedy token after the cached tokens, from logits computed as plain decoding
        computes them (penalized and masked as ``_sample`` does): for a near tie in the row of a
        pass over several tokens."""
        logits = self.net.exact_logits()
        self.sampler.penalize(logits, generated)
        if mask is not None:
            apply_token_bitmask_inplace(logits, mask)
        return self.sampler.sample(logits)

    def _ended(self) -> bool:
        """The matcher took the last token as the end: an EOS id its grammar also writes as text
        (stencil.runtime.stops), where the output was complete."""
        return self.matcher is not None and self.matcher.is_terminated()

    def _only_eos(self, row: int) -> bool:
        return not np.any(self.bm[row] & ~self.eos_words[0])

    def _speculative_step(self) -> str | None:
        """One forward pass over ``feed`` and a draft: the accepted draft tokens and one more are
        appended; a finish reason or None."""
        matcher, net, drafter, plan = self.matcher, self.net, self.drafter, self.plan
        assert drafter is not None and plan is not None   # set by speculate(), which turns these steps on
        started, fed, replayed = time.perf_counter(), len(self.feed), net.replayed
        drafter.sync(self.out)
        bm = self.bm if matcher is not None else None
        # No draft rides on the prompt's pass: tokens/s leaves prefill out, and a draft there would
        # be counted as generated for free. One token of room is kept for the token after the draft.
        room = self.limit - len(self.out) - 1 if net.passes else 0
        # Row checks: no mask per draft position; each row's pick is checked with the grammar as verified.
        checks = matcher is not None and self.row_checks
        drafts = drafter.draft(matcher, bm, room, self.remaining(), masks=not checks,
                               guesses=plan.guesses(fed) if room else 0)
        masked0 = not checks
        if matcher is not None and not drafts and (masked0 or matcher.is_accepting()):
            if not masked0:   # only EOS may be allowed where the output is complete
                self.picker.fill(0, self.remaining())
                masked0 = True
            if self._only_eos(0):
                if not np.any(self.bm[0]):
                    raise RuntimeError("the grammar allows no token and not EOS: " + matcher.debug_state())
                return "grammar"  # nothing but EOS is allowed: the output is complete
        rows = net.forward(list(self.feed) + drafts, keep=len(drafts) + 1)
        self.feed = []
        before = net.length - len(drafts)  # the cache without the draft
        taken = False   # whether the matcher has taken t already
        if checks:
            assert matcher is not None and bm is not None
            matcher.rollback(len(drafts))   # the rows are checked from the draft's start
            n, got = verify_checked(self.picker, rows, drafts, self.out, self.remaining(), not net.is_exact(), masked0)
            if got is None:  # a near tie of the allowed logits at row n: decided again on exact logits
                net.truncate(before + n)
                t = self._exact_token(bm[n], self.out + drafts[:n])
            else:
                t, taken = got, got not in self.eos
        else:
            n, t = verify(rows, drafts, bm, self.sampler, self.out)
            tie = None if net.is_exact() else first_near_tie(rows[:n + 1], self.tie_margin)
            if tie is not None:  # decided again on exact logits; the draft after it is dropped
                n = tie
                net.truncate(before + n)
                t = self._exact_token(None if bm is None else bm[n], self.out + drafts[:n])
        rejected = len(drafts) - n
        if room:   # (not the prompt's pass; a step that replayed tokens at a near tie is no pass's cost)
            plan.learn(fed + len(drafts), None if net.replayed > replayed else time.perf_counter() - started,
                       *drafter.judged(n))
        # The cache (and, without checks, the matcher) holds the whole draft: back to the accepted prefix.
        net.truncate(before + n)
        if matcher is not None and rejected and not checks:
            matcher.rollback(rejected)
        self.res.drafted_tokens += len(drafts)
        self.res.rejected_draft_tokens += rejected
        self.out.extend(drafts[:n])
        self.stream.emit(drafts[:n])
        if matcher is not None and n and (not checks or t in self.eos):
            if checks:   # EOS after the draft: the mask says whether the output could only end
                self.picker.fill(n, self.remaining())
            if self._only_eos(n):
                return "grammar"
        return self._take_own(t, matcher, taken)
