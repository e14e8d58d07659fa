"""Walks at the budget's edge, shared by ``python -m benchmarks.tight_budgets`` (which counts what
goes wrong over many schemas) and ``test_budget_tight_walks.py`` (which asserts nothing does).

A walk under a budget of k starts where ``min_completion_tokens()`` is k (or a little below) and
keeps choosing, among a sample of the tokens the budget-aware mask keeps, one whose cost after uses
the whole budget (``min_completion_tokens()`` of a fork equal to the tokens left - 1), so that every
step is one where a wrong bound shows. The mask is asked before any cost after a token: what the
cost memos hold must not decide it.

Example::

    walk = tight_walk(stencil.Matcher(g), k, bm, set(info.eos_token_ids), random.Random(0), info.vocab_size)
    walk.end, walk.over   # "done" and 0 for a consistent bound
"""
from __future__ import annotations

import random
from typing import NamedTuple, Optional

import numpy as np

import stencil
from stencil.kernels.numpy import bitmask_to_bool


class TightWalk(NamedTuple):
    """How a walk ended: ``end`` "done" (complete within the budget) or "cornered" (no token kept
    before the output was complete, or the budget ran out first); ``over``: the kept tokens sampled
    whose cost after exceeds the tokens left after them; ``taken``: the tokens taken; ``first``:
    the matcher's state where the first thing went wrong (None when nothing did)."""
    end: str
    over: int
    taken: list
    first: Optional[str]


def allowed(m: stencil.Matcher, bm: np.ndarray, k: int | None = None) -> list[int]:
    """Every token the mask under ``k`` tokens left (None: no budget) keeps, end of sequence included."""
    m.fill_next_token_bitmask(bm, 0, remaining_tokens=k)
    return np.flatnonzero(np.unpackbits(bm[0].view(np.uint8), bitorder="little")).tolist()


def kept_tokens(m: stencil.Matcher, bm: np.ndarray, left: int, vocab: int, eos: set) -> list[int]:
    """The tokens but end of sequence that the mask under ``left`` tokens left keeps."""
    m.fill_next_token_bitmask(bm, 0, remaining_tokens=left)
    return [t for t in np.flatnonzero(bitmask_to_bool(bm[0], vocab)).tolist() if t not in eos]


def tight_walk(m: stencil.Matcher, k: int, bm: np.ndarray, eos: set, rng: random.Random, vocab: int,
               sample: int = 24, tight: float = 0.8, stop: float = 0.15) -> TightWalk:
    """One walk from m under a budget of k: ``sample`` kept tokens' costs asked per step, a tight
    one taken with probability ``tight``, the walk ended where the output may end with probability
    ``stop`` (or where nothing is kept, or no token is left)."""
    over, taken, first = 0, [], None
    for used in range(k + 1):
        left = k - used
        ids = kept_tokens(m, bm, left, vocab, eos)
        if m.is_accepting() and (not ids or rng.random() < stop or left == 0):
            return TightWalk("done", over, taken, first)
        if not ids:
            return TightWalk("cornered", over, taken, first or f"no token fits {left} left: {m.debug_state()}")
        fits = []
        for t in rng.sample(ids, min(sample, len(ids))):
            f = m.fork()
            c = f.min_completion_tokens() if f.accept_token(t) else None
            if c is None or c > left - 1:
                over += 1
                first = first or f"token {t} costs {c} after it with {left} left: {m.debug_state()}"
            elif c == left - 1:
                fits.append(t)
        taken.append(rng.choice(fits) if fits and rng.random() < tight else rng.choice(ids))
        if not m.accept_token(taken[-1]):
            return TightWalk("cornered", over, taken, first or f"kept token {taken[-1]} refused: {m.debug_state()}")
    return TightWalk("cornered", over, taken, first or f"the budget of {k} ran out: {m.debug_state()}")
