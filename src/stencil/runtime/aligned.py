"""Aligned sampling: outputs drawn from the model's own distribution conditioned on the grammar.

Plain constrained sampling masks the disallowed tokens and renormalizes at every step. That draws
from a distribution that is *not* the model's distribution conditioned on validity: a token the
model likes is taken as often as the model likes it even when, after it, the model gives the
grammar's continuations almost no probability (it wanted to stop, or to say something else). The
exact conditional discounts such a token by how little mass the valid continuations keep; the
masked sampler cannot see that, since it never looks past the current step.

The target. For a model ``q`` (its next-token distribution at ``temperature``, after the
penalties and ``logit_bias``, if any), a grammar ``L`` and a token limit ``k``, the target is

    P(y) = q(y_1) q(y_2 | y_1) ... q(y_n | y_<n) q(EOS | y) / Z,    y in L, n <= k,

the probability that the model, sampling freely, writes ``y`` and stops, given that what it writes
is a valid output within ``k`` tokens; ``Z`` is the model's probability of doing so. Every
tokenization of a string is a different ``y`` (the model may spell a string in several ways);
the probability of a string is the sum over its spellings. Truncations (top-k, top-p, min-p) are
not part of it: they are not offered with aligned sampling.

The method: sequential Monte Carlo (a particle filter) with the grammar as the potential, in the
discrete form of Fearnhead and Clifford (2003), as SMC steering of language models uses it (Lew
et al., 2023). At most ``N`` particles, each a distinct prefix with an importance weight, grow one
token per step in one batched forward pass that shares the prompt's KV cache (the prompt is
computed once; a particle's children copy its cache row). At each step every child of every
particle is weighed exactly, ``weight(prefix + t) = weight(prefix) * q(t | prefix)``, for every
token ``t`` the grammar allows (the masks are exact: a token is allowed exactly when a valid
completion within the budget follows it, so nothing is weighed that cannot finish). Children
ending with EOS are complete outputs and are kept, with their weights, to the end. Of the other
children, those whose weight is at least a threshold ``c`` are kept with their own weights; the
rest are kept at random, each with probability ``weight / c`` and then weight ``c``, by
systematic sampling, ``c`` chosen so that ``N`` children are kept in expectation (Fearnhead and
Clifford's optimal resampling: every weight stays unbiased, and no prefix is ever kept twice).
The output is drawn from the complete outputs in proportion to their weights.

Against masking, the difference is that the choice between children looks at all of them at
once: a token the model likes that leads into a branch where the model gives the grammar little
mass loses its weight one step later, against the children of every other particle. Every
complete output's weight includes ``q(EOS | y)``, so each finished particle costs a forward pass
that plain sampling skips once the grammar allows nothing but EOS.

What is exact and what is asymptotic: the weights are unbiased for any ``N`` (``exp(log_evidence)``
is an unbiased estimate of ``Z``); the drawn output follows the target exactly when ``N`` is at
least the number of prefixes at the widest depth of the grammar's tree of token sequences (no
child is ever dropped: the complete outputs are then every valid output with its exact
probability), and asymptotically as ``N`` grows otherwise, its error shrinking like ``1/N``. The
alternative, ASAp (adaptive sampling with approximate expected futures), corrects the bias across
many samples of the same prompt and grammar by remembering the mass lost below each prefix; it
converges over repeated samples rather than within one, and keeps state between calls. SMC was
chosen because each call stands alone (a server request, a batch of independent samples), its
particles run as one batch on the shared cache, and its cost is bounded in advance (at most ``N``
rows per step).

Example::

    import stencil
    from stencil.runtime.models import load_model
    lm = load_model()
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_regex(r"(yes|no|maybe)")
    out = stencil.runtime.generate(lm, g, "Is the sky blue?", temperature=1.0, seed=0,
                                   sampling="aligned", particles=16)
    out.text, out.aligned.log_evidence      # the output; log P(the model writes a valid output)
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from stencil._core import Matcher
from stencil.bitmask import allocate_token_bitmask, fill_next_token_bitmasks
from stencil.runtime.attention import shape_stable_attention
from stencil.runtime.sampling import MIN_TEMPERATURE, Sampler

__all__ = ["SAMPLING_MODES", "DEFAULT_PARTICLES", "MAX_PARTICLES", "PENALTIES", "Particle", "AlignedSample",
           "ParticleModel", "HFParticles", "sample_aligned", "check_particles"]

#: the values of ``generate(..., sampling=...)`` and of the server's ``"sampling"`` field
SAMPLING_MODES = ("plain", "aligned")

#: particles per output when none are given: the draw's bias against the exact conditional falls
#: like 1/N; 16 rows in one forward pass cost a small model on a CPU about twice one row
DEFAULT_PARTICLES = 16

#: the most particles one output may ask for (each holds a row of the KV cache)
MAX_PARTICLES = 256

#: penalties ``sample_aligned`` takes: each changes the model's logits before the mask, so the
#: target is the penalized model's distribution; truncations (top-k/p, min-p) are not among them
PENALTIES = ("repetition_penalty", "frequency_penalty", "presence_penalty", "logit_bias")


@dataclass
class Particle:
    """A complete output among the particles: its tokens (EOS left out), the log of its
    importance weight, and why it stopped ("eos", "grammar": nothing but EOS was allowed,
    "max_tokens": the limit)."""

    token_ids: list[int]
    log_weight: float
    finish_reason: str


@dataclass
class AlignedSample:
    """What ``sample_aligned`` drew, from which complete outputs, and what it cost.

    ``particles``: every complete output the particles reached, with its weight (the output was
    drawn from them in proportion to their weights); ``log_evidence``: the log of their summed
    weights, an unbiased estimate of ``Z``, the model's probability of writing a valid output
    within the limit (at the temperature, EOS included). ``passes``: forward passes (the prompt's
    included); ``rows``: token rows those passes computed after the prompt (a pass over ``n``
    particles is ``n`` rows); ``resamples``: steps at which children were dropped (with fewer
    children than particles every one is kept, and the weights are exact)."""

    token_ids: list[int]
    finish_reason: str
    log_evidence: float
    particles: list[Particle] = field(default_factory=list)
    passes: int = 0
    rows: int = 0
    resamples: int = 0
    steps: int = 0


class ParticleModel(Protocol):
    """What the particles need of a model: the logits after the prompt, then batched one-token
    steps in which each row continues a row of the previous step (rows may be repeated or dropped).

    ``start(prompt_ids)`` -> logits ``[1, vocab]`` (a torch tensor, float32, CPU);
    ``step(parents, tokens)`` -> logits ``[len(tokens), vocab]``: new row i is the previous step's
    row ``parents[i]`` followed by ``tokens[i]``. ``passes`` and ``rows`` count the work done."""

    passes: int
    rows: int

    def start(self, prompt_ids: Sequence[int]) -> Any: ...

    def step(self, parents: Sequence[int], tokens: Sequence[int]) -> Any: ...


class HFParticles:
    """A transformers causal LM as a :class:`ParticleModel`: one DynamicCache whose batch rows are
    the particles. The prompt runs once (one row); each step selects the parents' rows (index
    select: a resampled particle copies its parent's keys and values) and feeds one token per row.
    Every row holds as many tokens as the others (particles advance together), so no padding or
    attention mask is needed.

    Example::

        net = HFParticles(lm.model)
        first = net.start(prompt_ids)             # [1, vocab]
        nxt = net.step([0, 0, 0], [5, 9, 5])      # three rows continuing the prompt
    """

    def __init__(self, model: Any):
        import torch
        from transformers import DynamicCache
        self.torch, self.model, self._new_cache = torch, model, DynamicCache
        self.device = next(model.parameters()).device
        params = inspect.signature(model.forward).parameters
        self._keep = {a: 1 for a in ("logits_to_keep", "num_logits_to_keep") if a in params}
        self._cache_arg = "cache" if "cache" in params else "past_key_values"  # transformers 5 renamed it
        self.cache: Any = None
        self.batch = 0
        self.passes = 0
        self.rows = 0

    def start(self, prompt_ids: Sequence[int]):
        self.cache = self._new_cache()
        self.batch = 1
        return self._run([list(prompt_ids)])

    def step(self, parents: Sequence[int], tokens: Sequence[int]):
        torch = self.torch
        if list(parents) != list(range(self.batch)):
            self.cache.reorder_cache(torch.tensor(list(parents), dtype=torch.long, device=self.device))
        self.batch = len(tokens)
        self.rows += len(tokens)
        return self._run([[int(t)] for t in tokens])

    def _run(self, ids: list[list[int]]):
        torch = self.torch
        inputs = torch.tensor(ids, dtype=torch.long, device=self.device)
        kw = dict(self._keep)
        kw[self._cache_arg] = self.cache
        with shape_stable_attention(self.device):
            out = self.model(input_ids=inputs, use_cache=True, **kw)
        self.passes += 1
        return out.logits[:, -1].float().cpu()


def check_particles(particles: Any) -> int:
    """``particles`` as an int in ``1..MAX_PARTICLES``; ValueError otherwise."""
    if isinstance(particles, bool) or not isinstance(particles, int) or not 1 <= particles <= MAX_PARTICLES:
        raise ValueError(f"particles must be an integer from 1 to {MAX_PARTICLES}, got {particles!r}")
    return particles


class _State:
    """A running particle: its matcher, tokens and log weight. Its row in the model's last step
    is its index in the list of running particles."""

    __slots__ = ("matcher", "out", "logw")

    def __init__(self, matcher: Matcher, out: list[int], logw: float):
        self.matcher, self.out, self.logw = matcher, out, logw


def sample_aligned(model: ParticleModel, matcher: Matcher, info: Any, prompt_ids: Sequence[int], *,
                   particles: int = DEFAULT_PARTICLES, max_tokens: int = 256, temperature: float = 1.0,
                   seed: int | None = None, penalties: Mapping[str, Any] | None = None,
                   num_threads: int | None = None) -> AlignedSample:
    """One output drawn from the model's distribution at ``temperature`` conditioned on the
    grammar of ``matcher`` (at its start state; it is not changed) and on ending within
    ``max_tokens`` tokens, by SMC over at most ``particles`` particles (see the module's docstring).

    ``model``: a :class:`ParticleModel` (``HFParticles(lm.model)``); ``info``: the
    ``TokenizerInfo`` (vocabulary size, EOS ids); ``penalties``: the ``Sampler`` options named in
    ``PENALTIES``; ``num_threads``: threads filling the particles' masks (default: the CPUs).

    Example::

        net = HFParticles(lm.model)
        s = sample_aligned(net, stencil.Matcher(g), lm.tokenizer_info, prompt_ids, particles=16, seed=1)
        lm.tokenizer_info.decode_bytes(s.token_ids), s.log_evidence, s.passes
    """
    check_particles(particles)
    if temperature < MIN_TEMPERATURE:
        raise ValueError(f"aligned sampling draws from the model's distribution: temperature must be > 0, "
                         f"got {temperature}")
    unknown = sorted(set(penalties or ()) - set(PENALTIES))
    if unknown:
        raise ValueError(f"aligned sampling takes {', '.join(PENALTIES)}, not {', '.join(unknown)} (a truncation "
                         "would change the distribution it is aligned with)")
    need = matcher.min_completion_tokens()
    if need is not None and need > max_tokens:
        raise ValueError(f"the shortest output of the grammar needs up to {need} tokens, more than max_tokens "
                         f"({max_tokens})")
    run = _Run(model, matcher, info, particles, max_tokens, Sampler(temperature, seed, **(penalties or {})),
               num_threads)
    return run.run(prompt_ids)


class _Run:
    """The particles of one ``sample_aligned`` call: the running ones and the complete outputs."""

    def __init__(self, model: ParticleModel, matcher: Matcher, info: Any, n: int, limit: int, sampler: Sampler,
                 num_threads: int | None):
        self.model, self.info, self.n, self.limit, self.sampler = model, info, n, limit, sampler
        self.torch = sampler.torch
        self.num_threads = num_threads
        self.eos = np.array(sorted(info.eos_token_ids), dtype=np.int64)
        self.bm = allocate_token_bitmask(n, info.vocab_size)
        self.not_eos = np.full(self.bm.shape[1], -1, np.int32)
        for t in self.eos.tolist():
            self.not_eos[t // 32] &= ~np.int32(np.uint32(1 << (t % 32)).view(np.int32))
        self.live = [_State(matcher.fork(), [], 0.0)]  # one particle: the prompt
        self.done: list[Particle] = []
        self.resamples = 0
        self.steps = 0

    def run(self, prompt_ids: Sequence[int]) -> AlignedSample:
        with self.torch.inference_mode():
            logits = self.model.start(prompt_ids)
            while True:
                parents, tokens = self._step(logits)
                if not tokens:
                    break
                logits = self.model.step(parents, tokens)
        return self._result()

    def _step(self, logits) -> tuple[list[int], list[int]]:
        """Weigh every allowed child of every running particle (row i of ``logits`` is particle
        i's next-token logits), keep the complete ones, and keep at most ``n`` of the others (the
        new running particles); returns their parents' rows and their last tokens."""
        torch, live = self.torch, self.live
        bm = self.bm[:len(live)]
        fill_next_token_bitmasks([p.matcher for p in live], bm, num_threads=self.num_threads,
                                 remaining_tokens=[self.limit - len(p.out) for p in live])
        for i, p in enumerate(live):
            self.sampler.penalize(logits[i], p.out)
        scaled = logits / self.sampler.temperature
        log_z = torch.logsumexp(scaled, dim=-1).double()  # the model's normalizer, over the whole row
        # Only the columns some row allows are needed past here: grammars allow few tokens at most
        # steps, and weighing every row of the vocabulary would cost ten times more.
        cols, allowed = _allowed_columns(bm)
        child = scaled[:, torch.from_numpy(cols)].double() - log_z[:, None]
        child += torch.tensor([p.logw for p in live], dtype=torch.float64)[:, None]
        child[~torch.from_numpy(allowed)] = -math.inf
        self._finish(child, cols, bm)
        picks, logw = _resample(child.flatten(), self.n, self.sampler.gen)
        self.resamples += int(picks.numel()) < int(torch.isfinite(child).sum())
        self.steps += 1
        rows, tokens = (picks // len(cols)).tolist(), cols[(picks % len(cols)).numpy()].tolist()
        self.live = self._children(rows, tokens, logw.tolist())
        return rows, tokens

    def _finish(self, child, cols: np.ndarray, bm: np.ndarray) -> None:
        """Children that end with EOS are complete outputs: kept with their weights, and out of
        ``child`` (set to -inf)."""
        eos_cols = np.flatnonzero(np.isin(cols, self.eos))
        if not len(eos_cols):
            return
        only_eos = ~np.any(bm & self.not_eos, axis=1)
        ends = child[:, eos_cols]
        for i, j in self.torch.nonzero(self.torch.isfinite(ends)).tolist():
            p = self.live[i]
            why = "max_tokens" if len(p.out) >= self.limit else "grammar" if only_eos[i] else "eos"
            self.done.append(Particle(list(p.out), float(ends[i, j]), why))
        child[:, eos_cols] = -math.inf

    def _children(self, rows: list[int], tokens: list[int], logw: list[float]) -> list[_State]:
        """The kept children as running particles: each takes its parent's matcher (forked when
        the parent has several kept children) with its token accepted."""
        last = {r: k for k, r in enumerate(rows)}  # the parent's last child takes its matcher itself
        out = []
        for k, (r, t, w) in enumerate(zip(rows, tokens, logw)):
            parent = self.live[r]
            m = parent.matcher if last[r] == k else parent.matcher.fork()
            if not m.accept_token(t):
                raise RuntimeError(f"internal error: token {t} is allowed but refused: {m.debug_state()}")
            out.append(_State(m, parent.out + [t], w))
        return out

    def _result(self) -> AlignedSample:
        torch = self.torch
        if not self.done:
            raise RuntimeError("aligned sampling: no particle finished (every weight underflowed)")
        logw = torch.tensor([p.log_weight for p in self.done], dtype=torch.float64)
        total = torch.logsumexp(logw, 0)
        if not bool(torch.isfinite(total)):
            raise RuntimeError("aligned sampling: every complete output has weight 0 (underflow)")
        pick = int(torch.multinomial(torch.exp(logw - total), 1, generator=self.sampler.gen))
        chosen = self.done[pick]
        return AlignedSample(list(chosen.token_ids), chosen.finish_reason, float(total), list(self.done),
                             passes=self.model.passes, rows=self.model.rows, resamples=self.resamples,
                             steps=self.steps)


def _resample(logw, n: int, gen) -> tuple[Any, Any]:
    """Fearnhead and Clifford's optimal resampling of the finite entries of ``logw`` (log
    weights, float64) down to at most ``n``: (their indices, their new log weights). Entries
    whose weight is at least ``c`` keep it; each other one is kept with probability ``weight / c``
    (systematic sampling: the kept ones are spread over the whole range) and then weighs ``c``;
    ``c`` is such that ``n`` are kept. No entry is kept twice, and every weight stays unbiased."""
    import torch
    idx = torch.nonzero(torch.isfinite(logw))[:, 0]
    lw = logw[idx]
    if len(idx) <= n:
        return idx, lw
    top = float(lw.max())
    w = torch.exp(lw - top)
    big, order = torch.topk(w, n)
    rest = float(w.sum())
    kept = 0
    c = rest / n
    while kept < n and float(big[kept]) >= c:  # the largest ones are kept as they are
        rest -= float(big[kept])
        kept += 1
        c = rest / (n - kept) if kept < n else math.inf
    sure = order[:kept]
    others = torch.ones(len(w), dtype=torch.bool)
    others[sure] = False
    pool = torch.nonzero(others)[:, 0]
    picked = torch.empty(0, dtype=torch.long)
    if kept < n:
        cum = torch.cumsum(w[pool] / c, 0)
        u = float(torch.rand((), generator=gen, dtype=torch.float64))
        at = torch.arange(n - kept, dtype=torch.float64) + u
        picked = torch.unique(torch.searchsorted(cum, at, right=True).clamp(max=len(pool) - 1))
        picked = pool[picked]
    new = torch.cat([lw[sure], torch.full((len(picked),), math.log(c) + top, dtype=torch.float64)])
    return idx[torch.cat([sure, picked])], new


def _allowed_columns(bm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the token ids some row of ``bm`` allows, ``[rows, len(ids)]`` booleans: which row allows
    which); a row that allows nothing is an internal error (masks are exact)."""
    words = np.bitwise_or.reduce(bm, axis=0).view(np.uint32)
    cols = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))
    allowed = ((bm.view(np.uint32)[:, cols // 32] >> (cols % 32).astype(np.uint32)) & 1).astype(bool)
    if not allowed.any(axis=1).all():
        raise RuntimeError("internal error: the grammar allows no token and not EOS")
    return cols, allowed
