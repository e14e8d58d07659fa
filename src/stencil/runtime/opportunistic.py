"""Opportunistic masking (DOMINO): check the token the model picked, compute the mask only when the
grammar refuses it.

``Matcher.accept_token(t, remaining_tokens=k)`` takes a token exactly where the budgeted mask
``fill_next_token_bitmask(bm, row, remaining_tokens=k)`` allows it, for about a microsecond, and
leaves the state unchanged on refusal. So:

- greedy: the argmax of the (penalized) unmasked logits, when the grammar takes it, is the argmax of
  the masked logits (the masked maximum is at most the unmasked one, which the allowed argmax
  reaches; ``torch.argmax`` returns the first index of the maximum in both). Otherwise the mask is
  computed and the masked argmax taken, as full-mask decoding does.
- sampling at a temperature, without truncation: a draw from the unmasked distribution p that the
  grammar takes is returned, else up to ``tries`` draws in all, then a draw from the masked
  distribution. With A the allowed mass, an allowed token t comes out with probability
  p(t) (1 + (1-A) + ... + (1-A)^(tries-1)) + (1-A)^tries p(t) / A = p(t) / A: the masked
  distribution exactly (rejection sampling with a fall-back).
- truncation (top-k, top-p, min-p) keeps the most likely *allowed* tokens, which the unmasked
  distribution does not know: such samplers always take the mask (``Picker.opportunistic`` False).

End of sequence is allowed where the output is complete (``Matcher.is_accepting()``); the picker
does not accept it (``generate`` stops there without feeding it to the matcher).

Greedy exactness at near ties (``stencil.runtime.generate``'s ``EXACT_MARGIN``): when a row comes from a
pass over several tokens, ``generate`` recomputes it as plain decoding would where the two best
*allowed* logits lie within the margin. If the unmasked argmax is allowed, the masked margin is at
least the unmasked one, so a row whose unmasked margin exceeds it needs no mask for that check;
a row with an unmasked near tie takes the mask and is checked as before.

One difference from full-mask decoding remains where a budget binds: the budgeted mask may refuse a
token whose completion cost its search could not finish within its work limit, which
``accept_token`` takes (its own cost is exact); the output is valid and complete all the same.

Example::

    picker = Picker(matcher, Sampler(0.0), allocate_token_bitmask(1, info.vocab_size), info)
    sampler.penalize(logits, generated)
    t = picker.pick(logits, remaining=limit - len(generated))   # accepted by matcher (EOS excepted)
    picker.masks                                                # masks computed so far
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from stencil.bitmask import apply_token_bitmask_inplace
from stencil.runtime.speculative import first_near_tie
from stencil.runtime.stops import stop_token_ids

__all__ = ["DEFAULT_TRIES", "Picker", "truncates", "verify_checked"]

#: draws from the unmasked distribution before a sampled row takes the mask
DEFAULT_TRIES = 3


def truncates(sampler: Any) -> bool:
    """Whether ``sampler`` (a ``stencil.runtime.sampling.Sampler``) truncates a sampled row (top-k, top-p,
    min-p): the truncation of the unmasked distribution is not that of the masked one."""
    if getattr(sampler, "gen", None) is None:
        return False
    vocab_wide = getattr(sampler, "top_k", 0) > 0
    return vocab_wide or getattr(sampler, "top_p", 1.0) < 1.0 or getattr(sampler, "min_p", 0.0) > 0.0


class Picker:
    """Chooses each token of one sequence under ``matcher``, with the mask (row ``row`` of
    ``bitmask``) computed only where needed; ``masks`` counts the masks computed.

    ``opportunistic`` False: every pick computes the mask (full-mask decoding). It is forced off for
    samplers that truncate. ``tie_margin`` > 0: rows from passes over several tokens are checked for
    near ties of their allowed logits (``pick(..., ties=True)``).
    """

    def __init__(self, matcher: Any, sampler: Any, bitmask: np.ndarray, info: Any, *, opportunistic: bool = True,
                 tie_margin: float = 0.0, tries: int = DEFAULT_TRIES):
        if tries < 1:
            raise ValueError(f"Picker: tries must be >= 1, got {tries}")
        self.matcher, self.sampler, self.bitmask = matcher, sampler, bitmask
        self.eos = stop_token_ids(info.eos_token_ids, matcher)   # (those the grammar writes are its text)
        self.vocab_size = int(info.vocab_size)   # logits may be wider than the tokenizer
        self.opportunistic = bool(opportunistic) and not truncates(sampler)
        self.tie_margin, self.tries = tie_margin, tries
        self.masks = 0

    @property
    def greedy(self) -> bool:
        return self.sampler.gen is None

    def fill(self, row: int, remaining: int | None) -> None:
        """Compute the mask of the matcher's state into row ``row`` of the bitmask."""
        self.matcher.fill_next_token_bitmask(self.bitmask, row, remaining)
        self.masks += 1

    def allowed(self, token: int, remaining: int | None) -> bool:
        """Whether the budgeted mask allows ``token``; a non-EOS token that it allows is accepted."""
        if token in self.eos:
            return bool(self.matcher.is_accepting())
        if token >= self.vocab_size:
            return False
        return bool(self.matcher.accept_token(token, remaining))

    def pick(self, logits: Any, remaining: int | None, *, row: int = 0, ties: bool = False,
             masked: bool = False) -> int | None:
        """The next token from ``logits`` (``[vocab]``, penalized; masked in place where the mask is
        computed), accepted by the matcher unless it is EOS; None at a near tie (``ties``: the row
        came from a pass over several tokens), with the row's mask in ``bitmask[row]`` and applied,
        for the caller to decide on exact logits. ``masked``: ``bitmask[row]`` already holds the
        mask of this step (filled while the forward pass ran)."""
        if not masked:
            if self.opportunistic:
                t = self._try(logits, remaining, ties)
                if t is not None:
                    return t
            self.fill(row, remaining)
        mask = self.bitmask[row]
        apply_token_bitmask_inplace(logits, mask)
        self.sampler.truncate(logits)
        if ties and first_near_tie(logits[None], self.tie_margin) is not None:
            return None
        t = self.sampler.sample(logits)
        if t not in self.eos and not self.matcher.accept_token(t):
            raise RuntimeError(f"internal error: token {t} is not allowed: {self.matcher.debug_state()}")
        return t

    def _try(self, logits: Any, remaining: int | None, ties: bool) -> int | None:
        """The model's own pick when the grammar takes it (accepted), else None."""
        sampler = self.sampler
        if self.greedy:
            if ties and first_near_tie(logits[None], self.tie_margin) is not None:
                return None  # an unmasked near tie may be a masked one: decided on the mask
            t = int(sampler.torch.argmax(logits))
            return t if self.allowed(t, remaining) else None
        draws = sampler.torch.multinomial(sampler.probs(logits), self.tries, replacement=True, generator=sampler.gen)
        for t in draws.tolist():
            if self.allowed(int(t), remaining):
                return int(t)
        return None


def verify_checked(picker: Picker, rows: Any, draft: Sequence[int], generated: Sequence[int],
                  remaining: int | None, ties: bool, masked0: bool = False) -> tuple[int, int | None]:
    """Verification of ``draft`` without a mask per position: (accepted, token).

    ``rows[i]``: the model's logits before draft token i (``len(draft) + 1`` rows, penalized here,
    in place); the matcher is in the state before the draft. Row by row, the token is picked as
    :meth:`Picker.pick` does (a draft token the grammar takes and that is the argmax needs no mask);
    the first row whose token is not the draft's ends it. Greedy, that is full-mask verification.
    Sampled, the row's draw t from the masked distribution p keeps draft token d when t == d: d is
    kept with probability p(d), and otherwise t is distributed as p without d, renormalized, which
    is standard speculative sampling for a draft that is a point mass on d (``speculative.verify``). The matcher then holds the accepted draft
    tokens and the token after them (not EOS); ``token`` None: a near tie at row ``accepted``, whose
    mask is in ``bitmask[accepted]``, for the caller to decide on exact logits. ``remaining``: the
    budget before the draft (None: none); ``masked0``: ``bitmask[0]`` holds the mask of row 0.
    """
    sampler = picker.sampler
    for i in range(len(draft) + 1):
        row = rows[i]
        sampler.penalize(row, list(generated) + list(draft[:i]))
        t = picker.pick(row, None if remaining is None else remaining - i, row=i, ties=ties, masked=masked0 and not i)
        if t is None or i == len(draft) or t != draft[i]:
            return i, t
    raise AssertionError("unreachable")
