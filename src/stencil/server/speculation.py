"""Speculative decoding for the server's rows: each row drafts from its grammar's forced text and
prompt lookup (``stencil.runtime.speculative.Drafter``), the batch step feeds every row its pending tokens
and its draft in one forward pass where each row pays for its own tokens (``KVBatch.step_rows``,
``runtime.ragged``), and each row verifies its draft (greedy output unchanged, sampling keeps its
distribution); its matcher and its cache rows (``KVBatch.rollback``) go back to the accepted prefix.

A row's draft length adapts to what its drafts earn (``stencil.runtime.draft_plan``): the step's draft
tokens go to the rows likeliest to keep them, as many as raise the step's expected tokens per
second, given what a pass of so many tokens takes (``StepCost``, measured). A row whose drafts
keep failing drafts nothing, then costs what a row that does not speculate costs, and tries a
one-token draft again after a wait that doubles while it keeps failing.

Rows that choose before their mask (``server.picks``: greedy, or a temperature without
truncation) draft without masks (``Drafter.draft(..., masks=False)``: each token taken within the
budget) and check the model's picks against the draft in ``Picks``; the others (top-k, top-p,
min-p) fill the mask of every draft position as they draft and verify with
``stencil.runtime.speculative.verify``.

A row with log-probabilities or ``ignore_eos`` does not speculate (``verify`` reports neither).

Greedy rows equal those of the server without speculation up to float rounding: a verifying pass
over several tokens rounds its sums differently from a one-token pass (about 1e-4 of a logit for
SmolLM2), so at a near tie (the two best allowed logits closer than that) the token can differ. So
can two runs without speculation: rows share batch passes whose shapes follow the other requests.
``stencil.runtime.generate`` decides such ties again on logits computed one token per pass
(``generate.EXACT_MARGIN``); the server does not, as it has no unbatched reference to match.
"""
from __future__ import annotations

from typing import Any, Sequence

from stencil.bitmask import allocate_token_bitmask
from stencil.runtime.draft_plan import DraftLength, DraftPrior
from stencil.runtime.speculative import Drafter, SpeculationOptions, speculation_options, verify

__all__ = ["RowSpeculation", "server_speculation"]


def server_speculation(speculate: bool | SpeculationOptions | None) -> tuple[SpeculationOptions, bool]:
    """(the options rows draft with, whether requests speculate by default) for the engine's
    ``speculate`` argument; a draft model is refused (rows draft by prompt lookup only)."""
    options = speculation_options(speculate)
    if options is not None and options.draft_model is not None:
        raise ValueError("speculate: the server drafts by prompt lookup only; draft_model is not supported")
    return options or SpeculationOptions(), options is not None


class RowSpeculation:
    """One row's drafting state: its Drafter, its draft length, the masks of its draft's
    positions where it fills them (row i: before draft token i), the draft of the step under way
    and the row's counts. ``masks`` False: drafts without masks (the row checks picks, ``Picks``).
    ``prior``: the engine's ``DraftPrior``, which the row starts from (as a row of ``kind``) and
    tells how its drafts fared."""

    def __init__(self, options: SpeculationOptions, lm: Any, prompt_ids: Sequence[int], masks: bool = True,
                 prior: DraftPrior | None = None, kind: Any = None):
        info = lm.tokenizer_info
        self.drafter = Drafter(options, info, lm.tokenizer, prompt_ids)
        self.length = DraftLength(options.max_draft, prior, kind)
        self.masks = masks   # (set again once the row's sampler is known)
        self.bitmask = allocate_token_bitmask(options.max_draft + 1, info.vocab_size)
        self.draft: list[int] = []
        self.drafted = 0   # draft tokens proposed
        self.accepted = 0  # of those, kept
        self.filled = 0    # masks filled while drafting

    def propose(self, matcher: Any, out: Sequence[int], left: int, most: int) -> list[int]:
        """This step's draft (at most ``most`` tokens) after the row's ``out`` tokens, with ``left``
        tokens of budget (one is kept for the token after the draft). The matcher has accepted it,
        each token within the budget; with ``masks``, ``bitmask`` holds the budget-aware mask of
        each position."""
        self.drafter.sync(out)
        limit = min(most, left - 1)
        if matcher is None:
            self.draft = self.drafter.draft(None, None, limit, None)
        elif self.masks:
            self.draft = self.drafter.draft(matcher, self.bitmask, limit, left)
            self.filled += len(self.draft) + 1
        else:
            self.draft = self.drafter.draft(matcher, None, limit, left, masks=False)
        return self.draft

    def check(self, matcher: Any, rows: Any, sampler: Any, out: Sequence[int]) -> tuple[int, int]:
        """(kept, token) of a row that drafted with masks: how many draft tokens the model keeps
        given ``rows`` (its logits before each draft token and after the last, modified in place),
        and the token after them; the matcher is rolled back to the kept prefix."""
        draft = self.draft
        n, t = verify(rows, draft, self.bitmask if matcher is not None else None, sampler, out)
        if matcher is not None and n < len(draft):
            matcher.rollback(len(draft) - n)
        self.kept(len(draft), n)
        return n, t

    def kept(self, drafted: int, n: int) -> None:
        """Count a verified draft of ``drafted`` tokens, ``n`` of them kept."""
        self.drafted += drafted
        self.accepted += n
        self.length.update(drafted, n)

    def only_eos(self, i: int, not_eos) -> bool:
        """Whether the mask before draft position ``i`` allows nothing but EOS."""
        return not (self.bitmask[i] & not_eos).any()
