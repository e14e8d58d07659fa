"""Opportunistic masks in the server's decoding step (DOMINO; the runtime's ``stencil.runtime.opportunistic``).

After the forward pass, a row under a grammar checks the token the model picked first
(``Matcher.accept_token(t, remaining_tokens=k)``: taken exactly where the budgeted mask would allow
it, about a microsecond, the state unchanged on refusal); only the rows whose pick is refused get
their mask, all of them in one native call (``Fills``: ``fill_next_token_bitmasks_async`` over
those rows, under their grammar time), and choose under it. Rounds repeat until every row has
chosen (a speculating row may need a mask at two positions of its draft; most steps need none).

- Greedy: the argmax of the (penalized) unmasked logits, when the grammar takes it, is the argmax
  of the masked logits (the masked maximum cannot exceed it; ``argmax`` returns the first index of
  the maximum in both). Otherwise the masked argmax, as full-mask decoding. Outputs are those of
  the server that fills every mask (the test compares them).
- A temperature without truncation: up to ``tries`` draws from the unmasked distribution, the
  first the grammar takes is the token, else a draw from the masked distribution: rejection
  sampling with a fall-back, exactly the masked distribution (``stencil.runtime.opportunistic`` shows it,
  and tests it).
- Top-k, top-p and min-p keep the most likely *allowed* tokens, which the unmasked distribution
  does not know, and log-probabilities report the masked distribution: such rows fill their mask
  during the forward pass as before (``opportunistic`` False).

A speculating row (its matcher has accepted its whole draft) goes through its draft position by
position: a pick equal to the draft token keeps it (the drafter had the grammar take it within
the budget), with no grammar call; the first other pick is checked at its position (the matcher
rolled back there), and ends the draft. Sampling this way keeps the draft token with probability
p(d) under the masked distribution and otherwise draws from it without d: speculative sampling of
a one-token draft (``stencil.runtime.speculative.verify``), so the target distribution is kept.

End of sequence is allowed where the output is complete (``Matcher.is_accepting()``); the row then
ends without the matcher taking it, as before. ``PickCounts`` counts the masks filled and the
picks checked, which ``/health`` reports per generated token.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generator, Sequence

import numpy as np

from stencil.bitmask import apply_token_bitmask_inplace
from stencil.runtime.opportunistic import DEFAULT_TRIES, truncates
from stencil.server.grammar_time import Fills

__all__ = ["DeadEnd", "Pick", "Picks", "opportunistic"]


class DeadEnd(RuntimeError):
    """The grammar allows no token and not EOS: a bug of the engine (masks are exact)."""


def opportunistic(sampler: Any, logprobs: Any) -> bool:
    """Whether a row with ``sampler`` (``stencil.runtime.sampling.Sampler``) and ``logprobs`` (None: none)
    may choose before its mask: greedy, or a temperature without top-k, top-p or min-p."""
    return logprobs is None and not truncates(sampler)


@dataclass
class Pick:
    """One row's choice this step: ``rows`` its logits (before each draft token and after the
    last; unmasked, changed in place), ``draft`` what its matcher has accepted beyond its state,
    ``remaining_tokens`` its token budget before the draft, ``generated`` its output (for penalties), ``call``
    runs a call on its matcher under its grammar time (``_Row.grammar``), ``clock`` its
    ``RowClock``; ``best`` the argmax of each row where precomputed (plain greedy rows), ``no_eos``
    for ``ignore_eos`` (EOS ids, a tensor). The result: (draft tokens kept, the token after them;
    None where only EOS is allowed: the grammar ended the output)."""

    matcher: Any
    sampler: Any
    rows: Any
    draft: Sequence[int]
    remaining_tokens: int
    generated: Sequence[int]
    call: Callable
    clock: Any
    best: Sequence[int] | None = None
    no_eos: Any = None
    masks: int = 0
    refused: bool = False   # (its greedy pick, without a draft, was checked and refused)
    # the tokens that end the row and the mask words of the others (``Row.stops``); None: EOS's
    stops: set[int] | None = None
    not_stops: np.ndarray | None = None


class _Ask:
    """A mask wanted by a row: its matcher's current state within ``remaining_tokens`` (what ``Fills``
    reads of a row)."""

    def __init__(self, pick: Pick, remaining_tokens: int):
        self.matcher, self.remaining_tokens, self.clock = pick.matcher, remaining_tokens, pick.clock


class Picks:
    """The choices of one step's rows; counts what they cost (``filled``: masks, ``checked``:
    picks checked by ``accept_token``)."""

    def __init__(self, eos: set[int], not_eos: np.ndarray, vocab_size: int, bitmask: np.ndarray, threads: int,
                 tries: int = DEFAULT_TRIES):
        self.eos, self.not_eos, self.vocab_size = eos, not_eos, vocab_size
        self.bitmask, self.threads, self.tries = bitmask, threads, tries
        self.filled = 0
        self.checked = 0

    def run(self, picks: dict[int, Pick]) -> dict[int, Any]:
        """Each row's (kept, token), or the exception that fails it alone."""
        out: dict[int, Any] = {}
        waiting: dict[int, tuple[Generator[int, Any, Any], int]] = {}
        for i, p in picks.items():
            if p.best is not None and not p.draft:   # most rows: the greedy pick checked, taken
                try:
                    self.checked += 1
                    if self._allowed(p, int(p.best[0]), p.remaining_tokens):
                        out[i] = (0, int(p.best[0]))
                        continue
                except Exception as e:  # noqa: BLE001 - one row's failure must not touch the others
                    out[i] = e
                    continue
                p.refused = True
            self._advance(i, self._choose(p), None, out, waiting)
        while waiting:
            order = list(waiting)
            asks = [_Ask(picks[i], waiting[i][1]) for i in order]
            errors = Fills(asks, self.bitmask, self.threads).wait()
            self.filled += len(order)
            for j, i in enumerate(order):
                gen, _ = waiting.pop(i)
                picks[i].masks += 1
                if errors[j] is not None:
                    out[i] = errors[j]
                    gen.close()
                else:
                    self._advance(i, gen, self.bitmask[j], out, waiting)
        return out

    @staticmethod
    def _advance(i: int, gen: Generator[int, Any, Any], mask, out: dict, waiting: dict) -> None:
        try:
            left = gen.send(mask) if mask is not None else next(gen)
        except StopIteration as done:
            out[i] = done.value
        except Exception as e:  # noqa: BLE001 - one row's failure must not touch the others
            out[i] = e
        else:
            waiting[i] = (gen, left)

    def _choose(self, p: Pick) -> Generator[int, Any, tuple[int, int | None]]:
        """(kept, token) for row ``p``; yields the budget of a mask it needs (of its matcher's state
        then) and receives it."""
        draft, m = p.draft, p.matcher
        stops = self.eos if p.stops is None else p.stops
        at = len(draft)   # the draft tokens the matcher holds
        i = 0
        while True:
            logits = p.rows[i]
            if p.best is None:
                p.sampler.penalize(logits, list(p.generated) + list(draft[:i]))
            if p.no_eos is not None:   # (ignore_eos: also under the mask, where the grammar allows EOS)
                logits.index_fill_(0, p.no_eos, float("-inf"))
            remaining = p.remaining_tokens - i
            token = None
            for t in [] if p.refused else self._candidates(p, logits, i):
                if i < len(draft) and t == draft[i]:
                    token = t   # the draft's token: the grammar took it when it was drafted
                    break
                at = self._back_to(p, at, i)
                self.checked += 1
                if self._allowed(p, t, remaining):
                    return i, t
            if token is None:   # every pick refused: the mask of position i
                at = self._back_to(p, at, i)
                mask = yield remaining
                token = self._masked(p, logits, mask)
                if token is None:
                    return i, None
                if token in stops or i >= len(draft) or token != draft[i]:
                    if token not in stops and not p.call(m.accept_token, token):
                        raise RuntimeError(f"internal error: token {token} is not allowed: {m.debug_state()}")
                    return i, token
            if at == i:   # the draft token again, after a rollback to its position
                if not p.call(m.accept_token, token):
                    raise RuntimeError(f"internal error: draft token {token} was refused: {m.debug_state()}")
                at += 1
            i += 1

    def _candidates(self, p: Pick, logits, i: int) -> list[int]:
        """The model's picks at row ``i``, most to least preferred: the argmax (greedy), or
        ``tries`` draws (sampling)."""
        s = p.sampler
        if p.best is not None:
            return [int(p.best[i])]
        if s.gen is None:
            return [int(logits.argmax())]
        draws = s.torch.multinomial(s.probs(logits), self.tries, replacement=True, generator=s.gen)
        return [int(t) for t in draws.tolist()]

    def _allowed(self, p: Pick, t: int, remaining: int) -> bool:
        """Whether the budgeted mask allows ``t``; a token other than EOS is then accepted."""
        if t in (self.eos if p.stops is None else p.stops):
            return bool(p.call(p.matcher.is_accepting))
        if t >= self.vocab_size:
            return False
        return bool(p.call(p.matcher.accept_token, t, remaining))

    def _masked(self, p: Pick, logits, mask: np.ndarray) -> int | None:
        """The token under ``mask`` (applied to ``logits``); None where it allows EOS alone."""
        if not np.any(mask & (self.not_eos if p.not_stops is None else p.not_stops)):
            if not np.any(mask):
                raise DeadEnd("the grammar allows no token and not EOS: " + p.matcher.debug_state())
            return None
        apply_token_bitmask_inplace(logits, mask)
        return int(p.sampler.sample(logits))

    @staticmethod
    def _back_to(p: Pick, at: int, i: int) -> int:
        """The matcher rolled back from draft position ``at`` to ``i``."""
        if at > i:
            p.call(p.matcher.rollback, at - i)
        return min(at, i)
