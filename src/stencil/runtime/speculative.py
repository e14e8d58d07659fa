"""Speculative decoding under a grammar: draft several tokens, verify them in one forward pass.

Structured output is often copied from the prompt (names, dates, ids from a document) and partly
forced by the grammar (keys, punctuation). A :class:`Drafter` proposes the next tokens from

- the grammar's forced text (``Matcher.forced_bytes``), in the tokenizer's own tokenization;
- prompt lookup: the longest suffix of the text so far (prompt and output, at least
  ``min_match`` bytes) found earlier in that text, and the text that followed it there, as far as
  the occurrence before agrees (``": "`` recurs before every value of an object). The match
  is on bytes, not token ids, because a value copied into JSON is often tokenized differently
  from the document (``"John`` against `` John``);
- or a small draft model with the same tokenizer (``SpeculationOptions(draft_model=...)``), greedy
  under the grammar's masks.

How many tokens a pass guesses (prompt lookup, the draft model) follows what guesses earn
(:class:`DraftBudget`, ``stencil.runtime.draft_plan``): the chance that the next guessed token is kept,
from the recent drafts, against what a pass of one more token costs, measured; none while guesses
keep failing (sampled free text, where lookup seldom matches), so speculation costs what plain
decoding does there. The grammar's forced text is drafted whatever the plan (plain decoding drafts
it too, ``generate(draft=True)``).

Each proposal is cut at the first token the grammar refuses (``validate_tokens``); the matcher
walks the draft, writing the mask of every position into one bitmask row, and is rolled back to
the accepted prefix after :func:`verify`. The model scores ``feed + draft`` in one pass; the
accepted prefix is where the draft agrees with the model, then one more token comes from the row
of the first disagreement (or the row after the whole draft), so every pass yields at least one
token. Greedy output is the same as without speculation, token for token; sampling keeps the
target distribution (see :func:`verify`).

Token for token means the same logits: a pass over several tokens rounds its float32 sums
differently from the one-token passes of plain decoding (by up to about 1e-4 of a logit for
SmolLM2), which decides the greedy token only where the two best allowed tokens are that close.
``generate`` finds such rows (:func:`first_near_tie`) and recomputes them as plain decoding would.

Example::

    out = stencil.runtime.generate(lm, grammar, prompt, speculate=True)           # prompt lookup
    out = stencil.runtime.generate(lm, grammar, prompt,
                                   speculate=SpeculationOptions(max_draft=8, draft_model=small_lm))
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from stencil.bitmask import apply_token_bitmask_inplace
from stencil.runtime.draft_plan import DraftLength, DraftPrior, StepCost, plan_drafts

__all__ = ["SpeculationOptions", "DraftBudget", "Drafter", "TextLookup", "first_near_tie", "model_prior",
           "speculation_options", "verify"]

#: per model: the chance a generate call's drafts start with, from the calls before on that model
_PRIORS: "weakref.WeakKeyDictionary[Any, DraftPrior]" = weakref.WeakKeyDictionary()


def model_prior(model: Any) -> DraftPrior:
    """The ``DraftPrior`` of the calls on ``model`` (made at the first)."""
    got = _PRIORS.get(model)
    if got is None:
        got = _PRIORS[model] = DraftPrior()
    return got


@dataclass(frozen=True)
class SpeculationOptions:
    """How ``generate(..., speculate=...)`` drafts: ``speculate=True`` is ``SpeculationOptions()``.

    - ``max_draft``: most tokens proposed per forward pass;
    - ``min_match`` / ``max_match``: prompt lookup searches for the longest suffix of the text so
      far between these lengths, in bytes;
    - ``draft_model``: a ``stencil.runtime.models.LoadedModel`` with the target's tokenizer; it drafts
      instead of prompt lookup (forced text is still taken as it is);
    - ``adaptive`` (``generate``): guess as many tokens per pass as the recent drafts' acceptance
      and the measured cost of a pass make worth it (:class:`DraftBudget`); False: up to
      ``max_draft`` every pass, whatever they earn (the server always adapts).

    Example::

        generate(lm, g, prompt, speculate=SpeculationOptions(max_draft=8))
    """

    max_draft: int = 12
    min_match: int = 3
    max_match: int = 64
    draft_model: Any = None
    adaptive: bool = True

    def __post_init__(self):
        for name in ("max_draft", "min_match", "max_match"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"SpeculationOptions: {name} must be an integer >= 1, got {value!r}")
        if self.max_match < self.min_match:
            raise ValueError(f"SpeculationOptions: max_match ({self.max_match}) must be >= min_match ({self.min_match})")
        if self.draft_model is not None and not hasattr(self.draft_model, "model"):
            raise TypeError("SpeculationOptions: draft_model must be a stencil.runtime.models.LoadedModel, got "
                            f"{type(self.draft_model).__name__}")


def speculation_options(speculate: bool | SpeculationOptions | None) -> SpeculationOptions | None:
    """``generate``'s ``speculate`` argument as options (None: off)."""
    if speculate is None or speculate is False:
        return None
    if speculate is True:
        return SpeculationOptions()
    if isinstance(speculate, SpeculationOptions):
        return speculate
    raise TypeError(f"generate: speculate must be a bool or SpeculationOptions, got {type(speculate).__name__}")


class TextLookup:
    """The bytes of prompt and output, searched for the longest earlier match of their suffix."""

    def __init__(self, text: bytes, min_match: int, max_match: int):
        self.text = bytearray(text)
        self.min_match, self.max_match = min_match, max_match

    def extend(self, data: bytes) -> None:
        self.text += data

    def continuation(self, tail: bytes, size: int) -> bytes:
        """Up to ``size`` bytes that followed, earlier in the text, the longest suffix of
        ``text + tail`` (``tail``: a draft not yet accepted); b"" when no suffix of ``min_match``
        bytes occurs. The most recent occurrence's, cut where the occurrence before it went on
        differently: a short suffix that recurs with different continuations (``": "`` before each
        value of a JSON object) says nothing of what comes next, and a draft of it fails."""
        text = self.text
        recent = (bytes(text[-self.max_match:]) + tail)[-self.max_match:]
        end = len(text) - 1  # the match must end before the text does, so that something follows

        def find(n: int) -> int:
            return text.rfind(recent[-n:], 0, end) if n <= len(recent) else -1

        # A suffix that occurs has all its shorter suffixes occur too: binary search on the length.
        lo, hi = self.min_match, min(self.max_match, len(recent))
        if hi < lo or (pos := find(lo)) < 0:
            return b""
        while lo < hi:
            mid = (lo + hi + 1) // 2
            p = find(mid)
            if p >= 0:
                lo, pos = mid, p
            else:
                hi = mid - 1
        start = pos + lo
        got = bytes(text[start:start + size])
        before = text.rfind(recent[-lo:], 0, start - 1)
        if before < 0:
            return got
        other = text[before + lo:before + lo + len(got)]
        same = 0
        while same < len(other) and other[same] == got[same]:
            same += 1
        return got[:same]


class Drafter:
    """One sequence's drafting state: the text for prompt lookup (or the draft model's cache),
    kept in step with the tokens the sequence accepted. The server keeps one per row.

    ``draft`` walks ``matcher`` through the draft it proposes, writing the mask of each position
    into the rows of ``bitmask``; the caller verifies and rolls the matcher back (``Matcher``
    needs ``max_rollback >= options.max_draft``).
    """

    def __init__(self, options: SpeculationOptions, info: Any, hf_tokenizer: Any, prompt_ids: Sequence[int],
                 draft_net: Any = None):
        self.options, self.info, self.tokenizer = options, info, hf_tokenizer
        self.ids = [int(t) for t in prompt_ids]
        self.prompt_len = len(self.ids)
        self.lookup = TextLookup(info.decode_bytes(self.ids), options.min_match, options.max_match)
        self.specials = set(info.special_token_ids) | set(info.eos_token_ids)
        self.draft_net = draft_net      # a generate._Model over the draft model, or None
        self.draft_fed: list[int] = []  # the tokens in the draft model's KV cache
        self.masks = 0                  # masks computed by draft()
        self.guessed: list[bool] = []   # per token of the last draft: guessed (not forced text)

    def sync(self, output: Sequence[int]) -> None:
        """Take in the output tokens accepted since the last call (``output``: all of them)."""
        new = [int(t) for t in output[len(self.ids) - self.prompt_len:]]
        if new:
            self.ids.extend(new)
            self.lookup.extend(self.info.decode_bytes(new))

    def draft(self, matcher: Any, bitmask: np.ndarray | None, limit: int, remaining: int | None,
              masks: bool = True, guesses: int | None = None) -> list[int]:
        """Up to ``min(limit, max_draft)`` tokens, at most ``guesses`` of them from prompt lookup or
        the draft model (None: no other limit; the grammar's forced text is not a guess, and
        ``guessed`` says which tokens were). With a matcher, each is allowed by the grammar,
        the matcher has accepted them all, and row i of ``bitmask`` holds the mask before draft
        token i (rows 0..len(draft)); ``remaining`` is the token budget of row 0 (None: none).
        ``masks`` False (verification that checks each row's pick with the grammar,
        ``stencil.runtime.opportunistic.verify_checked``): no mask is computed, and the draft ends before a
        token the budget refuses (``accept_token(t, remaining_tokens)``, the budgeted mask's rule)."""
        limit = min(limit, self.options.max_draft)
        guesses = limit if guesses is None else guesses
        out: list[int] = []
        guessed: list[bool] = []
        self.guessed = guessed
        if matcher is not None and masks:
            matcher.fill_next_token_bitmask(bitmask, 0, remaining)
            self.masks += 1
        while len(out) < limit:
            proposal, guess = self._propose(matcher, out, bitmask if masks else None,
                                            limit - len(out), guesses - sum(guessed))
            if matcher is not None:
                proposal = proposal[:matcher.validate_tokens(proposal)] if proposal else []
            if not proposal:
                break
            # One mask per drafted position: the model's row there is verified against it.
            for t in proposal:
                rem = None if remaining is None else remaining - len(out)
                if matcher is not None and not matcher.accept_token(t, None if masks else rem):
                    return out   # (masks False) refused by the budget
                out.append(t)
                guessed.append(guess)
                if matcher is not None and masks:
                    matcher.fill_next_token_bitmask(bitmask, len(out), None if rem is None else rem - 1)
                    self.masks += 1
        return out

    def judged(self, kept: int) -> tuple[int, int]:
        """(guessed tokens the model judged, kept of them) in the last draft, whose first ``kept``
        tokens were kept: the guesses before the first refused token, and that one if a guess."""
        got = sum(self.guessed[:kept])
        return got + (kept < len(self.guessed) and self.guessed[kept]), got

    def _propose(self, matcher: Any, draft: list[int], bitmask: np.ndarray | None, size: int,
                 guesses: int) -> tuple[list[int], bool]:
        """(the next tokens to try after ``draft``, whether they are guesses): the grammar's forced
        text, else up to ``guesses`` from prompt lookup or the draft model; cut before any special
        token."""
        forced = matcher.forced_bytes() if matcher is not None else b""
        if forced:
            ids = self._encode(forced)
        elif guesses <= 0:
            return [], True
        elif self.draft_net is not None:
            ids = self._from_draft_model(draft, bitmask)
        else:
            size = min(size, guesses)
            tail = self.info.decode_bytes(draft) if draft else b""
            ids = self._encode(self.lookup.continuation(tail, 8 * size))
        ids = ids[:size]
        for i, t in enumerate(ids):
            if t in self.specials:
                return ids[:i], not forced
        return ids, not forced

    def _encode(self, data: bytes) -> list[int]:
        text = data.decode("utf-8", errors="ignore")  # drops a partial character at either end
        return list(self.tokenizer.encode(text, add_special_tokens=False)) if text else []

    def _from_draft_model(self, draft: list[int], bitmask: np.ndarray | None) -> list[int]:
        """The draft model's greedy next token after ``ids + draft``, under the mask of that
        position (row ``len(draft)``, filled by ``draft``)."""
        net, fed = self.draft_net, self.draft_fed
        want = self.ids + draft
        keep = 0  # the cache's longest prefix still on the path: rejected drafts are cropped
        while keep < min(len(fed), len(want) - 1) and fed[keep] == want[keep]:
            keep += 1
        net.truncate(keep)
        del fed[keep:]
        logits = net.forward(want[keep:])[-1]
        fed.extend(want[keep:])
        if bitmask is not None:
            apply_token_bitmask_inplace(logits, bitmask[len(draft)])
        return [int(logits.argmax())]


class DraftBudget:
    """How many tokens one sequence guesses per pass: ``stencil.runtime.draft_plan`` with one row. The
    chance that a guessed token is kept (``DraftLength``, from the drafts the model judged) against
    the seconds of a step by its tokens in the pass (``StepCost``: drafting, the pass, verifying),
    so that the guesses raise the expected tokens per second; none while they keep failing, with a
    one-token try after a wait that doubles. ``options.adaptive`` False: ``max_draft`` always."""

    def __init__(self, options: SpeculationOptions, prior: DraftPrior | None = None, kind: Any = None):
        self.adaptive = options.adaptive
        self.length = DraftLength(options.max_draft, prior, kind)   # (starts from the prior, and tells it)
        self.cost = StepCost()

    def guesses(self, fed: int) -> int:
        """The most tokens to guess this step, for a pass fed ``fed`` tokens besides the draft."""
        if not self.adaptive:
            return self.length.max_draft
        return plan_drafts({0: self.length}, rows=1, tokens=fed, cost=self.cost)[0]

    def learn(self, tokens: int, seconds: float | None, judged: int, kept: int) -> None:
        """A step whose pass took ``tokens`` tokens in ``seconds`` (drafting and verifying
        included; None: not a measure of that), ``kept`` of its ``judged`` guessed tokens kept
        (``Drafter.judged``)."""
        if seconds is not None:
            self.cost.add(tokens, seconds)
        self.length.update(judged, kept)


def verify(rows: Any, draft: list[int], bitmask: np.ndarray | None, sampler: Any,
           generated: Sequence[int]) -> tuple[int, int]:
    """(accepted, token): how many draft tokens the model keeps, and the token that follows them.

    ``rows[i]`` holds the model's logits before draft token i (``len(draft) + 1`` rows), modified
    in place; ``bitmask`` row i the grammar's mask there (None: no grammar); ``generated`` the
    output before the draft (for penalties).

    Greedy: draft token i is kept when it is the argmax of its masked row, so the result is the
    one of plain greedy decoding. Sampling: a prompt-lookup (or greedy draft-model) draft is a
    deterministic function of the context, so its distribution q is a point mass on d. Standard
    speculative sampling keeps d with probability min(1, p(d)/q(d)) = p(d) and otherwise samples
    from the residual max(p - q, 0), renormalized, which is p with d removed. Then
    P(d) = p(d) and, for t != d, P(t) = (1 - p(d)) * p(t) / (1 - p(d)) = p(t): each kept or
    replaced token is distributed as the masked target distribution. The row's own draw t from p
    does just that (d kept when t == d, else t, which is p without d): each token takes the draws
    plain sampling takes, so a seed gives plain sampling's output whatever the draft lengths (up
    to the rounding of passes over several tokens).
    """
    n = len(draft)
    if getattr(sampler, "plain_greedy", False):
        # Every row at once: one mask application and one argmax over the draft.
        if bitmask is not None:
            apply_token_bitmask_inplace(rows, bitmask[:n + 1])
        best = rows.argmax(dim=-1).tolist()
        i = 0
        while i < n and best[i] == draft[i]:
            i += 1
        return i, int(best[i])
    for i in range(n + 1):
        row = rows[i]
        sampler.penalize(row, list(generated) + draft[:i])
        if bitmask is not None:
            apply_token_bitmask_inplace(row, bitmask[i])
        sampler.truncate(row)
        t = sampler.sample(row)
        if i == n or t != draft[i]:
            return i, t
    raise AssertionError("unreachable")


def first_near_tie(rows: Any, margin: float) -> int | None:
    """The index of the first of ``rows`` (masked logits, ``[k, vocab]``) whose two best tokens lie
    within ``margin`` of each other, or None: where the rounding of a batched pass could pick
    another greedy token than plain decoding. A row with one allowed token is never a tie."""
    if margin <= 0 or rows.shape[-1] < 2:
        return None
    top = rows.topk(2, dim=-1).values
    close = (top[:, 0] - top[:, 1]) <= margin  # -inf - -inf is nan: not close
    hits = close.nonzero()
    return int(hits[0, 0]) if len(hits) else None
