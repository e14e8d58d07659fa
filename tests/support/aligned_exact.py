"""The exact answer for aligned sampling on small grammars: every valid output's probability under
the model, and a model stand-in that replays the model's own distributions.

``PrefixTree.build`` walks every token sequence the grammar allows within a token limit (the
matcher's budget-aware masks, as the samplers use them): each node is a prefix, its allowed
tokens are the mask's (EOS among them where the prefix is a complete output). ``evaluate`` runs
the real model once per node, depth by depth in batched passes that share the prompt's KV cache
(``stencil.runtime.aligned.HFParticles``), and keeps each node's logits of its allowed tokens and the
log-normalizer of its whole row at the sampling temperature. From these:

- the exact target, ``q(y_1) ... q(y_n | y_<n) q(EOS | y)`` normalized over the complete outputs
  (the model's distribution conditioned on the grammar, ``stencil.runtime.aligned``'s target);
- the law of plain masked sampling, the same product with each factor renormalized over the
  allowed tokens (what ``stencil.runtime.generate`` samples from);
- ``table_lm``, a stand-in for the model whose forward pass replays the tree: for a node it
  returns the model's logits of the allowed tokens and spreads the rest of the row's mass evenly
  over the other tokens. Every quantity a sampler computes from a masked row (the allowed tokens'
  probabilities, the mass the mask kept) is then the real model's, so ``stencil.runtime.generate`` itself,
  plain and aligned, draws thousands of samples without a forward pass of the model.

Example::

    tree = PrefixTree.build(stencil.Matcher(g), lm.tokenizer_info, max_tokens=6)
    tree.evaluate(HFParticles(lm.model), prompt_ids)
    exact = tree.string_law("target")                   # {text bytes: probability}
    stand_in = table_lm(tree, lm, len(prompt_ids))
    out = stencil.runtime.generate(stand_in, g, input_ids=prompt_ids, max_tokens=6, temperature=1.0, seed=0,
                                   sampling="aligned")
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch

import stencil
from stencil.bitmask import bitmask_to_bool

#: additive smoothing of the empirical distribution in KL(exact || empirical): each valid output
#: gets this many pseudo-counts (Jeffreys' prior), so an output never sampled costs a finite amount
KL_SMOOTHING = 0.5


@dataclass
class Node:
    """A prefix the grammar allows: its tokens, its allowed next tokens (EOS included where the
    prefix is complete) and the children by token; after ``evaluate``, the model's logits of the
    allowed tokens and the log-normalizer of the whole row, both at the tree's temperature."""

    prefix: tuple
    allowed: np.ndarray
    children: dict = field(default_factory=dict)
    logits: Any = None
    log_z: float = 0.0


class PrefixTree:
    """Every prefix of every token sequence a grammar allows within ``max_tokens`` tokens."""

    def __init__(self, nodes: list, info: Any, max_tokens: int):
        self.nodes, self.info, self.max_tokens = nodes, info, max_tokens
        self.eos = sorted(info.eos_token_ids)
        self.temperature = 1.0
        self.width = info.vocab_size   # the model's logits width, once evaluated
        self.passes = 0

    @classmethod
    def build(cls, matcher: stencil.Matcher, info: Any, max_tokens: int, max_nodes: int = 20_000) -> "PrefixTree":
        """The tree, breadth first; ValueError past ``max_nodes`` nodes (the grammar is not small)."""
        eos = set(info.eos_token_ids)
        bm = stencil.allocate_token_bitmask(1, info.vocab_size)
        nodes: list = []
        level = [((), matcher.fork())]
        while level:
            nxt = []
            for prefix, m in level:
                m.fill_next_token_bitmask(bm, 0, max_tokens - len(prefix))
                allowed = np.flatnonzero(bitmask_to_bool(bm, info.vocab_size)[0])
                node = Node(prefix, allowed)
                nodes.append(node)
                if len(nodes) > max_nodes:
                    raise ValueError(f"the grammar has more than {max_nodes} prefixes within {max_tokens} tokens")
                for t in allowed.tolist():
                    if t in eos:
                        continue
                    child = m.fork()
                    if not child.accept_token(t):
                        raise RuntimeError(f"token {t} is in the mask but refused")
                    node.children[t] = -1  # set below, once the child has its index
                    nxt.append((prefix + (t,), child))
            level = nxt
        index = {n.prefix: i for i, n in enumerate(nodes)}
        for n in nodes:
            for t in n.children:
                n.children[t] = index[n.prefix + (t,)]
        return cls(nodes, info, max_tokens)

    def depths(self) -> list:
        """Node indices by depth (prefix length)."""
        out: list = []
        for i, n in enumerate(self.nodes):
            while len(out) <= len(n.prefix):
                out.append([])
            out[len(n.prefix)].append(i)
        return out

    def evaluate(self, model: Any, prompt_ids: Sequence[int], temperature: float = 1.0) -> None:
        """The model's distribution at every node: one batched pass per depth (``model`` is a
        ``stencil.runtime.aligned.ParticleModel``, the real one: ``HFParticles(lm.model)``)."""
        self.temperature = temperature
        depths = self.depths()
        with torch.inference_mode():
            rows = model.start(prompt_ids)
            self._keep(depths[0], rows)
            for d in range(1, len(depths)):
                place = {node: i for i, node in enumerate(depths[d - 1])}
                parents = [place[self._parent(i)] for i in depths[d]]
                rows = model.step(parents, [self.nodes[i].prefix[-1] for i in depths[d]])
                self._keep(depths[d], rows)
        self.width = int(rows.shape[-1])
        self.passes = model.passes

    def assign(self, logits_of: Callable[[tuple], Any], temperature: float = 1.0) -> None:
        """Give every node the logits ``logits_of(prefix)`` (a whole row, temperature 1) instead
        of the model's: a hand-made model for tests."""
        self.temperature = temperature
        for i, n in enumerate(self.nodes):
            row = torch.as_tensor(np.asarray(logits_of(n.prefix), dtype=np.float64))
            self._keep([i], row[None])
            self.width = int(row.shape[-1])

    def _parent(self, i: int) -> int:
        return self.index[self.nodes[i].prefix[:-1]]

    @property
    def index(self) -> dict:
        if not hasattr(self, "_index"):
            self._index = {n.prefix: i for i, n in enumerate(self.nodes)}
        return self._index

    def _keep(self, ids: list, rows) -> None:
        scaled = rows.double() / self.temperature
        log_z = torch.logsumexp(scaled, dim=-1)
        for j, i in enumerate(ids):
            node = self.nodes[i]
            node.logits = scaled[j, torch.from_numpy(node.allowed)].numpy().copy()
            node.log_z = float(log_z[j])

    # -- exact laws --------------------------------------------------------------------------------
    def outputs(self, law: str) -> dict:
        """{token tuple: log-probability} of every complete output, normalized: ``law`` "target"
        (the model conditioned on the grammar) or "plain" (masked, renormalized sampling)."""
        logp: dict = {}
        eos = set(self.eos)
        stack = [(0, 0.0)]
        while stack:
            i, acc = stack.pop()
            node = self.nodes[i]
            norm = node.log_z if law == "target" else _logsumexp(node.logits)
            for t, lg in zip(node.allowed.tolist(), node.logits.tolist()):
                if t in eos:
                    logp[node.prefix] = np.logaddexp(logp.get(node.prefix, -math.inf), acc + lg - norm)
                else:
                    stack.append((node.children[t], acc + lg - norm))
        total = _logsumexp(np.array(list(logp.values())))
        return {k: v - total for k, v in logp.items()}

    def log_valid_mass(self) -> float:
        """log Z: the model's probability of writing a complete valid output within the limit."""
        eos = set(self.eos)
        out = -math.inf
        stack = [(0, 0.0)]
        while stack:
            i, acc = stack.pop()
            node = self.nodes[i]
            for t, lg in zip(node.allowed.tolist(), node.logits.tolist()):
                if t in eos:
                    out = float(np.logaddexp(out, acc + lg - node.log_z))
                else:
                    stack.append((node.children[t], acc + lg - node.log_z))
        return out

    def string_law(self, law: str) -> dict:
        """{output bytes: probability}: ``outputs(law)`` summed over the spellings of each text."""
        out: Counter = Counter()
        for tokens, lp in self.outputs(law).items():
            out[self.info.decode_bytes(list(tokens))] += math.exp(lp)
        return dict(out)


def table_lm(tree: PrefixTree, like: Any, prompt_len: int) -> Any:
    """A stand-in for the loaded model ``like`` (its tokenizers kept) whose forward passes replay
    ``tree``: ``stencil.runtime.generate`` runs on it as on the real model, plain and aligned alike
    (``prompt_len``: the prompt's token count, the root of the tree)."""
    return SimpleNamespace(model=TableLM(tree, prompt_len), tokenizer=like.tokenizer,
                           tokenizer_info=like.tokenizer_info, context_length=0, name="table")


class TableLM(torch.nn.Module):
    """A transformers-style causal LM (``forward(input_ids, past_key_values, use_cache,
    logits_to_keep)``) that replays a ``PrefixTree``. Its KV cache is a real ``DynamicCache`` with
    one layer whose keys are the token ids themselves, so that cropping, reordering and repeating
    rows (what ``generate`` and ``HFParticles`` do to a cache) keep the prefix of every row. The
    row after a prefix holds the real model's logits of the node's allowed tokens; every other
    token gets an equal share of the rest of the row's mass (no sampler reads them but through
    their sum). A prefix outside the tree (a draft token the model rejects) gets a flat row."""

    def __init__(self, tree: PrefixTree, prompt_len: int):
        super().__init__()
        self.tree, self.prompt_len = tree, prompt_len
        self.anchor = torch.nn.Parameter(torch.zeros(1))  # device and dtype for the callers
        self.rest = [self._rest_logit(n) for n in tree.nodes]
        self.calls = 0

    def _rest_logit(self, node: Node) -> float:
        tree = self.tree
        kept = _logsumexp(node.logits) - node.log_z
        if kept >= 0.0:
            return -math.inf
        rest = node.log_z + math.log(-math.expm1(kept)) - math.log(tree.width - len(node.allowed))
        return rest * tree.temperature   # logits at temperature 1

    def forward(self, input_ids, past_key_values=None, use_cache=True, logits_to_keep=1, **_):
        ids = input_ids.to(torch.float64)[:, None, :, None]
        keys, _ = past_key_values.update(ids, ids, 0)
        full = keys[:, 0, :, 0].long().tolist()
        keep = max(1, int(logits_to_keep))
        out = torch.zeros((len(full), keep, self.tree.width))
        for b, row in enumerate(full):
            for k in range(keep):
                out[b, k] = self._row(tuple(row[self.prompt_len:len(row) - keep + 1 + k]))
        self.calls += 1
        return SimpleNamespace(logits=out)

    def _row(self, prefix: tuple):
        i = self.tree.index.get(prefix)
        if i is None:
            return torch.zeros(self.tree.width)
        node = self.tree.nodes[i]
        row = torch.full((self.tree.width,), self.rest[i])
        row[torch.from_numpy(node.allowed)] = torch.from_numpy(node.logits * self.tree.temperature).float()
        return row


# -- divergences ---------------------------------------------------------------------------------
def kl_from_samples(exact: dict, samples: Iterable, smoothing: float = KL_SMOOTHING) -> float:
    """KL(exact || empirical), in nats, over the outputs of ``exact``; the empirical distribution
    has ``smoothing`` pseudo-counts per output (a sample outside ``exact`` is an error)."""
    counts = Counter(samples)
    stray = set(counts) - set(exact)
    if stray:
        raise ValueError(f"samples outside the valid outputs: {sorted(stray)[:3]}")
    total = sum(counts.values()) + smoothing * len(exact)
    return sum(p * math.log(p * total / (counts[k] + smoothing)) for k, p in exact.items() if p > 0)


def tv_from_samples(exact: dict, samples: Iterable) -> float:
    """Total variation distance between ``exact`` and the raw empirical distribution."""
    counts = Counter(samples)
    n = sum(counts.values())
    keys = set(exact) | set(counts)
    return 0.5 * sum(abs(exact.get(k, 0.0) - counts[k] / n) for k in keys)


def kl(p: dict, q: dict) -> float:
    """KL(p || q) between two exact distributions over the same outputs."""
    return sum(v * math.log(v / q[k]) for k, v in p.items() if v > 0)


def tv(p: dict, q: dict) -> float:
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


def _logsumexp(a) -> float:
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        return -math.inf
    m = float(a.max())
    return m if m == -math.inf else m + math.log(float(np.exp(a - m).sum()))
