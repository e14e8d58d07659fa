"""Sampling one token from a row of logits: penalties and biases before the grammar mask,
truncations (top-k, top-p, min-p) after it, then temperature; all in torch ops over the whole row
(no Python per vocabulary token).

The order is vLLM's and llama.cpp's: ``penalize`` (repetition, frequency and presence penalties,
``logit_bias``) changes the model's logits; the caller applies the grammar mask; ``truncate``
keeps the most likely allowed tokens; ``sample`` draws (greedy at a temperature below
``MIN_TEMPERATURE``, as vLLM: dividing the logits by a tinier one overflows them to inf).
``logprobs`` gives the log-probabilities of the distribution ``sample`` draws from (the masked,
truncated one; at temperature 0 the temperature-1 distribution, as OpenAI reports it).

Example::

    s = Sampler(0.7, seed=1, top_k=40, frequency_penalty=0.5)
    s.penalize(logits, generated)                  # before the mask
    stencil.apply_token_bitmask_inplace(logits, mask)
    s.truncate(logits)
    token = s.sample(logits)
"""
from __future__ import annotations

from typing import Mapping, Sequence

__all__ = ["MIN_TEMPERATURE", "Sampler"]

#: temperatures below this one sample greedily (vLLM's ``_SAMPLING_EPS``): ``1e-300`` would make
#: the logits divided by it inf and the probabilities NaN
MIN_TEMPERATURE = 1e-5


class Sampler:
    """One sequence's sampling state (its random generator) and parameters."""

    def __init__(self, temperature: float, seed: int | None = None, repetition_penalty: float = 1.0, *,
                 top_p: float = 1.0, top_k: int = 0, min_p: float = 0.0, frequency_penalty: float = 0.0,
                 presence_penalty: float = 0.0, logit_bias: Mapping[int, float] | None = None):
        import torch
        self.torch = torch
        self.temperature = float(temperature) if temperature >= MIN_TEMPERATURE else 0.0
        self.penalty = float(repetition_penalty)
        self.top_p, self.top_k, self.min_p = float(top_p), int(top_k or 0), float(min_p)
        self.frequency, self.presence = float(frequency_penalty), float(presence_penalty)
        self.bias = None
        if logit_bias:
            ids = sorted(logit_bias)
            self.bias = (torch.tensor(ids, dtype=torch.long),
                         torch.tensor([float(logit_bias[i]) for i in ids], dtype=torch.float32))
        self.gen = None
        if self.temperature > 0:
            self.gen = torch.Generator()
            self.gen.manual_seed(int(seed) if seed is not None else int(torch.seed()))

    @property
    def plain_greedy(self) -> bool:
        """Greedy with no penalty or bias: the token is the argmax of the masked logits."""
        return (self.gen is None and self.penalty == 1.0 and not self.frequency and not self.presence
                and self.bias is None)

    def penalize(self, logits, generated: Sequence[int]) -> None:
        """Before the mask, in place: transformers' repetition penalty over the generated tokens
        only (the prompt holds the schema's keys, which the output must repeat: positive logits
        divided, negative ones multiplied), OpenAI's frequency and presence penalties (minus
        ``count * frequency + presence`` for each generated token) and ``logit_bias``. Allowed
        tokens stay allowed: the mask comes after."""
        torch = self.torch
        if self.bias is not None:
            ids, vals = self.bias
            if ids.device != logits.device:
                self.bias = ids, vals = ids.to(logits.device), vals.to(logits.device)
            logits.index_add_(0, ids, vals.to(logits.dtype))
        if not generated or (self.penalty == 1.0 and not self.frequency and not self.presence):
            return
        idx, counts = torch.unique(torch.tensor(list(generated), dtype=torch.long), return_counts=True)
        keep = idx < logits.shape[-1]
        idx, counts = idx[keep].to(logits.device), counts[keep].to(logits.device, logits.dtype)
        vals = logits[idx]
        if self.penalty != 1.0:
            vals = torch.where(vals > 0, vals / self.penalty, vals * self.penalty)
        if self.frequency or self.presence:
            vals = vals - counts * self.frequency - self.presence
        logits[idx] = vals

    def truncate(self, logits) -> None:
        """After the mask, in place: top-k, then top-p (the most likely tokens whose probabilities
        first sum to ``top_p``), then min-p (tokens below ``min_p`` times the most likely one's
        probability) set to -inf; the most likely token always stays. Greedy needs none of it."""
        if self.gen is None:
            return
        torch = self.torch
        if 0 < self.top_k < logits.shape[-1]:
            kth = torch.topk(logits, self.top_k).values[-1]
            logits.masked_fill_(logits < kth, float("-inf"))
        if self.top_p < 1.0:
            probs = self.probs(logits)
            order = torch.argsort(probs, descending=True)
            before = torch.cumsum(probs[order], dim=-1) - probs[order]  # mass of the more likely tokens
            drop = before >= self.top_p
            drop[0] = False
            logits[order[drop]] = float("-inf")
        if self.min_p > 0.0:
            probs = self.probs(logits)
            logits.masked_fill_(probs < self.min_p * probs.max(), float("-inf"))

    def probs(self, logits):
        return self.torch.softmax(logits / self.temperature, dim=-1)

    def logprobs(self, logits):
        """Log-probabilities of the distribution ``sample`` draws from (temperature 1 when greedy)."""
        t = self.temperature if self.temperature > 0 else 1.0
        return self.torch.log_softmax(logits.float() / t, dim=-1)

    def sample(self, logits) -> int:
        if self.gen is None:
            return int(self.torch.argmax(logits))
        return int(self.torch.multinomial(self.probs(logits), 1, generator=self.gen))
