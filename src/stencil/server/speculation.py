"""Speculative decoding for the server's rows: each row drafts from its grammar's forced text and
prompt lookup (``stencil.speculative.Drafter``), the batch step feeds every row its pending tokens
and its draft in one forward pass (``KVBatch.step(..., keep=...)``), and each row verifies its
draft (``stencil.speculative.verify``: greedy output unchanged, sampling keeps its distribution);
its matcher and its cache rows (``KVBatch.rollback``) go back to the accepted prefix.

A row with log-probabilities or ``ignore_eos`` does not speculate (``verify`` reports neither).

Greedy rows equal those of the server without speculation up to float rounding: a verifying pass
over several tokens rounds its sums differently from a one-token pass (about 1e-4 of a logit for
SmolLM2), so at a near tie (the two best allowed logits closer than that) the token can differ. So
can two runs without speculation: rows share padded batch passes whose shapes follow the other
requests. ``stencil.generate`` decides such ties again on logits computed one token per pass
(``generate.EXACT_MARGIN``); the server does not, as it has no unbatched reference to match.
"""
from __future__ import annotations

from typing import Any, Sequence

from stencil.bitmask import allocate_token_bitmask
from stencil.speculative import Drafter, SpeculationOptions, speculation_options, verify

__all__ = ["RowSpeculation", "server_speculation"]


def server_speculation(speculate: bool | SpeculationOptions | None) -> tuple[SpeculationOptions, bool]:
    """(the options rows draft with, whether requests speculate by default) for the engine's
    ``speculate`` argument; a draft model is refused (rows draft by prompt lookup only)."""
    options = speculation_options(speculate)
    if options is not None and options.draft_model is not None:
        raise ValueError("speculate: the server drafts by prompt lookup only; draft_model is not supported")
    return options or SpeculationOptions(), options is not None


class RowSpeculation:
    """One row's drafting state: its Drafter, the masks of its draft's positions (row i: before
    draft token i), the draft of the step under way and the row's counts."""

    def __init__(self, options: SpeculationOptions, lm: Any, prompt_ids: Sequence[int]):
        info = lm.tokenizer_info
        self.drafter = Drafter(options, info, lm.tokenizer, prompt_ids)
        self.bitmask = allocate_token_bitmask(options.max_draft + 1, info.vocab_size)
        self.draft: list[int] = []
        self.drafted = 0   # draft tokens proposed
        self.accepted = 0  # of those, kept

    def propose(self, matcher: Any, out: Sequence[int], left: int) -> list[int]:
        """This step's draft after the row's ``out`` tokens, with ``left`` tokens of budget (one is
        kept for the token after the draft). The matcher has accepted it, and ``bitmask`` holds the
        budget-aware mask of each position."""
        self.drafter.sync(out)
        bm = self.bitmask if matcher is not None else None
        self.draft = self.drafter.draft(matcher, bm, left - 1, left if matcher is not None else None)
        return self.draft

    def check(self, matcher: Any, rows: Any, sampler: Any, out: Sequence[int]) -> tuple[int, int]:
        """(kept, token): how many draft tokens the model keeps given ``rows`` (its logits before
        each draft token and after the last, modified in place), and the token after them; the
        matcher is rolled back to the kept prefix."""
        draft = self.draft
        n, t = verify(rows, draft, self.bitmask if matcher is not None else None, sampler, out)
        if matcher is not None and n < len(draft):
            matcher.rollback(len(draft) - n)
        self.drafted += len(draft)
        self.accepted += n
        return n, t

    def only_eos(self, i: int, not_eos) -> bool:
        """Whether the mask before draft position ``i`` allows nothing but EOS."""
        return not (self.bitmask[i] & not_eos).any()
