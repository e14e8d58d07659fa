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

With a grammar the loop also keeps to ``max_tokens`` (``budget``, on by default): each mask
allows only tokens after which the output can still be completed in the tokens left
(``Matcher.fill_next_token_bitmask(..., remaining_tokens=k)``), so the output is valid when the
budget runs out instead of cut mid-string. Where the budget does not bind the masks, and so the
output, are those of the unbudgeted run. A ``max_tokens`` too small for the grammar's shortest
output is a ``ValueError`` before anything is generated.

Example::

    import stencil
    from stencil.models import load_model
    lm = load_model()
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_regex(r"(yes|no)")
    out = stencil.generate(lm, g, "Is the sky blue?")
    print(out.text, out.finish_reason)          # yes grammar
"""
from __future__ import annotations

import codecs
import inspect
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from stencil._core import CompiledGrammar, Matcher
from stencil.bitmask import allocate_token_bitmask, apply_token_bitmask_inplace

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
    seconds: float = 0.0
    prefill_seconds: float = 0.0
    #: whether the text is a complete output of the grammar (None without a grammar)
    complete: bool | None = None

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens per second after the prompt was processed."""
        decode = self.seconds - self.prefill_seconds
        return len(self.token_ids) / decode if decode > 0 else float("nan")


class _Model:
    """Forward passes over one sequence with a transformers DynamicCache."""

    def __init__(self, model: Any):
        import torch
        from transformers import DynamicCache
        self.torch = torch
        self.model = model
        self.device = next(model.parameters()).device
        self.cache = DynamicCache()
        self.length = 0
        self.passes = 0
        self.first_pass_done: float | None = None  # perf_counter when the prompt was processed
        # Only the last rows' logits are needed: the LM head over 49k-150k ids is the biggest
        # matmul of a small model, so computing it for every prompt position would dominate.
        params = inspect.signature(model.forward).parameters
        self._keep_arg = next((a for a in ("logits_to_keep", "num_logits_to_keep") if a in params), None)

    def forward(self, tokens: Sequence[int], keep: int = 1):
        """Logits (float32, CPU) after each of the last ``keep`` of ``tokens``: ``[keep, vocab]``."""
        torch = self.torch
        ids = torch.tensor([list(tokens)], dtype=torch.long, device=self.device)
        kw = {self._keep_arg: keep} if self._keep_arg else {}
        out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True, **kw)
        self.cache = out.past_key_values
        self.length += len(tokens)
        self.passes += 1
        logits = out.logits[0, -keep:].float().cpu()
        if self.first_pass_done is None:
            self.first_pass_done = time.perf_counter()
        return logits

    def truncate(self, length: int) -> None:
        """Forget the cached keys and values past ``length`` tokens."""
        if length < self.length:
            self.cache.crop(length - self.length)  # negative: remove that many (transformers 4 and 5)
            self.length = length


class _Sampler:
    def __init__(self, temperature: float, seed: int | None, repetition_penalty: float = 1.0):
        import torch
        self.torch = torch
        self.temperature = float(temperature)
        self.penalty = float(repetition_penalty)
        self.gen = None
        if self.temperature > 0:
            self.gen = torch.Generator()
            self.gen.manual_seed(int(seed) if seed is not None else int(torch.seed()))

    def penalize(self, logits, generated: Sequence[int]) -> None:
        """transformers' repetition penalty, over the generated tokens only (the prompt holds the
        schema's keys, which the output must repeat): positive logits divided, negative ones
        multiplied. Applied before the mask, so allowed tokens stay allowed."""
        if self.penalty == 1.0 or not generated:
            return
        torch = self.torch
        idx = torch.tensor(sorted(set(generated)), dtype=torch.long)
        idx = idx[idx < logits.shape[-1]]
        vals = logits[idx]
        logits[idx] = torch.where(vals > 0, vals / self.penalty, vals * self.penalty)

    def probs(self, logits):
        return self.torch.softmax(logits / self.temperature, dim=-1)

    def sample(self, logits) -> int:
        if self.gen is None:
            return int(self.torch.argmax(logits))
        return int(self.torch.multinomial(self.probs(logits), 1, generator=self.gen))

    def verify(self, logits, draft: int) -> int:
        """Keep ``draft`` or replace it, so that the result is distributed as ``sample(logits)``."""
        torch = self.torch
        if self.gen is None:
            return int(torch.argmax(logits))
        p = self.probs(logits)
        if float(torch.rand((), generator=self.gen)) < float(p[draft]):
            return draft
        p[draft] = 0.0  # rejected: the residual max(p - q, 0) of a one-token draft q is p without d
        if float(p.sum()) <= 0.0:
            return draft
        return int(torch.multinomial(p, 1, generator=self.gen))


class _Stream:
    """Token bytes -> text pieces for ``on_text``, never splitting a UTF-8 character."""

    def __init__(self, info, on_text: Callable[[str], None] | None):
        self.info = info
        self.on_text = on_text
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def emit(self, tokens: Sequence[int]) -> None:
        if self.on_text is not None:
            piece = self.decoder.decode(self.info.decode_bytes(list(tokens)))
            if piece:
                self.on_text(piece)

    def close(self) -> None:
        if self.on_text is not None:
            piece = self.decoder.decode(b"", final=True)
            if piece:
                self.on_text(piece)


_MASK_THREAD: ThreadPoolExecutor | None = None


def _mask_thread() -> ThreadPoolExecutor:
    """One worker thread, shared by all generations, that fills masks during forward passes."""
    global _MASK_THREAD
    if _MASK_THREAD is None:
        _MASK_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stencil-mask")
    return _MASK_THREAD


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
             draft: bool = True, budget: bool = True,
             on_text: Callable[[str], None] | None = None) -> GenerationResult:
    """Generate from ``lm`` (a ``stencil.models.LoadedModel``) under ``grammar`` (None: free).

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

    Example::

        g = compiler.compile_regex(r"[0-9]{4}")
        out = generate(lm, g, "In which year did the Berlin wall fall?", max_tokens=8)
        assert out.finish_reason == "grammar" and len(out.text) == 4
    """
    import torch

    info = lm.tokenizer_info
    if input_ids is None:
        input_ids = lm.encode_prompt(prompt, messages=messages, system=system)
    prompt_ids = [int(t) for t in input_ids]
    if not prompt_ids:
        raise ValueError("generate: the prompt is empty")
    if max_tokens < 0:
        raise ValueError(f"generate: max_tokens must be >= 0, got {max_tokens}")
    ctx = int(getattr(lm, "context_length", 0) or 0)
    if ctx and len(prompt_ids) >= ctx:
        raise ValueError(f"the prompt has {len(prompt_ids)} tokens, but the model's context holds {ctx}")
    limit, cut_by = max_tokens, "max_tokens"
    if ctx and ctx - len(prompt_ids) < limit:
        limit, cut_by = ctx - len(prompt_ids), "context"

    t_start = time.perf_counter()
    net = _Model(lm.model)
    if repetition_penalty <= 0:
        raise ValueError(f"generate: repetition_penalty must be > 0, got {repetition_penalty}")
    sampler = _Sampler(temperature, seed, repetition_penalty)
    stream = _Stream(info, on_text)
    eos = set(info.eos_token_ids)
    matcher = Matcher(grammar) if grammar is not None else None
    if matcher is not None and budget:
        need = matcher.min_completion_tokens()
        if need is not None and need > limit:
            what = "max_tokens" if cut_by == "max_tokens" else "the room left in the model's context"
            raise ValueError(f"generate: the shortest output of the grammar needs up to {need} tokens, "
                             f"more than {what} ({limit}); raise max_tokens, or pass budget=False to stop mid-output")
    # The budget of the step being masked: tokens that may still be generated, this one included.
    remaining = (lambda: limit - len(out)) if matcher is not None and budget else (lambda: None)
    bm = allocate_token_bitmask(1, info.vocab_size)
    eos_words = allocate_token_bitmask(1, info.vocab_size) * 0
    for t in eos:
        eos_words[0, t // 32] |= np.int32(np.uint32(1 << (t % 32)).view(np.int32))

    out: list[int] = []
    feed = prompt_ids          # tokens accepted but not yet run through the model
    logits = None              # next-token logits once feed is empty
    finish = None
    res = GenerationResult("", out, "", len(prompt_ids))
    with torch.inference_mode():
        while finish is None:
            if len(out) >= limit:
                finish = cut_by
                break
            if matcher is not None:
                if jump_forward:
                    # Forced tokens fit the budget: when one token is allowed, it is the first
                    # byte token of every completion, the one the budget keeps.
                    forced = matcher.forced_tokens()[:limit - len(out)]
                    if forced:
                        for t in forced:
                            if not matcher.accept_token(t):
                                raise RuntimeError(f"internal error: forced token {t} was refused")
                        out.extend(forced)
                        feed = feed + forced
                        res.forced_tokens += len(forced)
                        stream.emit(forced)
                        continue
                drafts = _draft_tokens(matcher, lm.tokenizer, limit - len(out)) if draft else []
                if drafts:  # forced text ahead: more than EOS is allowed
                    # Drafts are checked against the budgeted masks: one the budget refuses is rejected.
                    matcher.fill_next_token_bitmask(bm, 0, remaining())
                    finish, feed, logits = _verify_drafts(net, matcher, sampler, stream, bm, feed, logits, drafts,
                                                          out, eos, res, remaining)
                    continue
                if feed and not matcher.is_accepting():
                    # EOS is not allowed, so the step samples whatever the mask says. The mask does
                    # not depend on the logits: it is filled on another thread while the forward
                    # pass runs (the core releases the GIL), and costs the step nothing.
                    pending = _mask_thread().submit(matcher.fill_next_token_bitmask, bm, 0, remaining())
                    try:
                        logits = net.forward(feed)[-1]
                        feed = []
                    finally:
                        pending.result()
                    if not np.any(bm):
                        raise RuntimeError("the grammar allows no token and not EOS: " + matcher.debug_state())
                else:
                    matcher.fill_next_token_bitmask(bm, 0, remaining())
                    if not np.any(bm & ~eos_words):
                        if not np.any(bm):
                            raise RuntimeError("the grammar allows no token and not EOS: " + matcher.debug_state())
                        finish = "grammar"  # nothing but EOS is allowed: the output is complete
                        break
            if feed:
                logits = net.forward(feed)[-1]
                feed = []
            sampler.penalize(logits, out)
            if matcher is not None:
                apply_token_bitmask_inplace(logits, bm)
            t = sampler.sample(logits)
            logits = None
            if t in eos:
                finish = "eos"
                break
            if matcher is not None and not matcher.accept_token(t):
                raise RuntimeError(f"internal error: sampled token {t} is not allowed: {matcher.debug_state()}")
            out.append(t)
            feed = [t]
            stream.emit([t])
    stream.close()
    res.finish_reason = finish
    res.complete = None if matcher is None else matcher.is_accepting()
    res.text = info.decode_bytes(out).decode("utf-8", errors="replace")
    res.forward_passes = net.passes
    res.prefill_seconds = (net.first_pass_done or t_start) - t_start
    res.seconds = time.perf_counter() - t_start
    return res


def _verify_drafts(net: _Model, matcher, sampler: _Sampler, stream: _Stream, bm, feed: list[int], logits,
                   drafts: list[int], out: list[int], eos: set[int], res: GenerationResult,
                   remaining: Callable[[], int | None]):
    """Run ``feed + drafts`` through the model in one pass and keep the draft tokens the model
    would have produced itself. Returns (finish, feed, logits) for the main loop. On entry ``bm``
    holds the mask of the matcher's current state, and ``logits`` the next-token logits when
    ``feed`` is empty."""
    if feed:
        rows = net.forward(list(feed) + drafts, keep=len(drafts) + 1)
    else:
        torch = sampler.torch
        rows = torch.cat([logits.unsqueeze(0), net.forward(drafts, keep=len(drafts))])
    res.drafted_tokens += len(drafts)
    for i, d in enumerate(drafts):
        if i:
            matcher.fill_next_token_bitmask(bm, 0, remaining())
        row = rows[i]
        sampler.penalize(row, out)
        apply_token_bitmask_inplace(row, bm)
        t = sampler.verify(row, d)
        if t == d:
            if not matcher.accept_token(d):
                raise RuntimeError(f"internal error: draft token {d} was refused")
            out.append(d)
            stream.emit([d])
            continue
        # Rejected: the cache holds the drafts after position i, which the model never chose.
        res.rejected_draft_tokens += len(drafts) - i
        net.truncate(net.length - (len(drafts) - i))
        if t in eos:
            return "eos", [], None
        if not matcher.accept_token(t):
            raise RuntimeError(f"internal error: token {t} is not allowed: {matcher.debug_state()}")
        out.append(t)
        stream.emit([t])
        return None, [t], None
    return None, [], rows[len(drafts)]
