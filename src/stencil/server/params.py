"""What a request asks of each of its choices, checked (``server.request`` builds them from the
request's pydantic model): ``GenerationParams``, how long it runs and what it reports, and
``SamplingParams``, how its tokens are drawn. The engine reads nothing else of the request.

Example::

    sampling = SamplingParams(temperature=0.7, seed=1, top_k=40)
    sampler = sampling.sampler()          # a stencil.runtime.sampling.Sampler, one per row
    GenerationParams(max_tokens=64, stop=("\\n",)).logprobs is None
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from stencil.runtime.aligned import PENALTIES
from stencil.runtime.sampling import MIN_TEMPERATURE, Sampler

__all__ = ["GenerationParams", "SamplingParams"]


@dataclass(frozen=True)
class SamplingParams:
    """How a choice's tokens are drawn: the ``Sampler``'s options (``top_k`` 0: off), each already
    in its range (``logit_bias``: token ids of the model's vocabulary)."""

    temperature: float = 0.0
    seed: Optional[int] = None
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0   # vLLM's: > 1 keeps small models out of loops inside strings
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    logit_bias: Optional[Mapping[int, float]] = None

    def sampler(self) -> Sampler:
        """A fresh ``Sampler`` (its own random generator, seeded by ``seed``)."""
        return Sampler(self.temperature, self.seed, self.repetition_penalty, top_p=self.top_p, top_k=self.top_k,
                       min_p=self.min_p, frequency_penalty=self.frequency_penalty,
                       presence_penalty=self.presence_penalty, logit_bias=self.logit_bias)

    def truncates(self) -> bool:
        """Whether a sampled (not greedy) row keeps only some allowed tokens: top-k, top-p, min-p."""
        return self.temperature >= MIN_TEMPERATURE and (self.top_p < 1.0 or bool(self.top_k) or bool(self.min_p))

    def penalties(self) -> dict:
        """The options ``stencil.runtime.aligned.sample_aligned`` takes as ``penalties`` (those set)."""
        out = {k: getattr(self, k) for k in PENALTIES if getattr(self, k)}
        out["repetition_penalty"] = self.repetition_penalty
        return out


@dataclass(frozen=True)
class GenerationParams:
    """How long a choice runs and what it reports: ``max_tokens`` (the row's ``remaining_tokens``
    start from it), ``stop`` strings, ``ignore_eos`` (vLLM's: the end-of-sequence token is never
    sampled, so an unconstrained row runs to ``max_tokens``), ``logprobs`` (top log-probabilities
    per token, 0: the chosen token's only; None: none), ``speculate`` (None: the engine's default)
    and ``aligned`` (``sampling: "aligned"``, ``stencil.runtime.aligned``: the particles; None: plain)."""

    max_tokens: int
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False
    logprobs: Optional[int] = None
    speculate: Optional[bool] = None
    aligned: Optional[int] = None
