"""Token healing: a prompt that ends inside what would be one token is backed up to a token
boundary, and the output is made to start with the text that was removed.

A raw prompt such as ``'"url": "https:'`` ends with the token ``:`` although the tokenizer would
write ``://`` as one token had the text gone on: the model has seen ``https`` ``:`` followed by
``//`` almost never, and continues badly. Healing removes the prompt's last tokens whose text is a
proper prefix of some other token (at most ``MAX_HEAL_TOKENS`` tokens and ``MAX_HEAL_BYTES``
bytes, the longest such suffix) and constrains the first generated tokens to spell that text
again: each must be a prefix of what is left of it, or start with all of it. A token that runs
past the removed text (``://``) hands its remainder (``//``) to the grammar, when there is one,
which must accept it: the removed text belongs to the prompt, the grammar constrains what follows.
The removed tokens themselves are always allowed, so healing never leaves the model without a way
to write the prompt's own tokenization.

The vocabulary is indexed once per tokenizer (:class:`PrefixIndex`: token bytes sorted, so the
tokens that start with a text are one range found by bisection), never scanned per request.

Example::

    plan = plan_healing(tok, prompt_ids)           # prompt_ids end with ... " https" ":"
    plan.prefix                                    # b" https:" (it depends on the vocabulary)
    healer = Healer(tok, plan.prefix, matcher)     # matcher: the grammar's, at its start, or None
    healer.fill(bitmask, 0)                        # the first token's mask
    healer.accept_token(t)                         # then again until healer.done
"""
from __future__ import annotations

import bisect
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

__all__ = ["MAX_HEAL_TOKENS", "MAX_HEAL_BYTES", "HealingPlan", "PrefixIndex", "plan_healing", "Healer", "start_healing"]

#: at most this many prompt tokens are removed (guidance's and llguidance's look-back is alike)
MAX_HEAL_TOKENS = 3
#: and at most this many bytes: longer text is no longer "inside one token"
MAX_HEAL_BYTES = 16


class PrefixIndex:
    """A tokenizer's non-special tokens sorted by their bytes (built once per tokenizer: :meth:`of`).

    Example::

        idx = PrefixIndex.of(tok)
        idx.extends(b"https:")          # True where a token such as "https://" exists
        idx.exact(b":")                 # the ids whose bytes are b":"
    """

    def __init__(self, info: Any):
        pairs = sorted((info.token_bytes(i), i) for i in range(info.num_tokens) if not info.is_special(i))
        pairs = [(b, i) for b, i in pairs if b]
        self.keys: list[bytes] = [b for b, _ in pairs]           # sorted, one per token (repeats kept)
        self.ids = np.array([i for _, i in pairs], dtype=np.int64)  # the token of each key
        self.by_bytes: dict[bytes, list[int]] = {}
        for b, i in pairs:
            self.by_bytes.setdefault(b, []).append(i)
        self.vocab_size = int(info.vocab_size)

    _cache: "weakref.WeakKeyDictionary[Any, PrefixIndex]" = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, info: Any) -> "PrefixIndex":
        """The index of ``info`` (a ``TokenizerInfo``), built on first use and kept while it lives."""
        index = cls._cache.get(info)
        if index is None:
            index = cls._cache[info] = cls(info)
        return index

    def range_longer(self, text: bytes) -> tuple[int, int]:
        """Positions ``[lo, hi)`` in :attr:`keys` of the tokens that start with ``text`` and are longer."""
        lo = bisect.bisect_right(self.keys, text)   # past text itself, which sorts first
        return lo, bisect.bisect_left(self.keys, _after_prefix(text), lo) if text else len(self.keys)

    def extends(self, text: bytes) -> bool:
        """Whether ``text`` is a proper prefix of some token's bytes."""
        lo, hi = self.range_longer(text)
        return hi > lo

    def exact(self, text: bytes) -> list[int]:
        """The ids of the tokens whose bytes are ``text`` (none: empty)."""
        return self.by_bytes.get(text, [])

    def spell_cost(self, text: bytes) -> int | None:
        """The fewest tokens whose bytes, concatenated, are exactly ``text`` (None: no way)."""
        n = len(text)
        cost: list[int | None] = [None] * n + [0]
        for i in range(n - 1, -1, -1):
            best = None
            for j in range(i + 1, n + 1):
                after = cost[j]
                if after is not None and (best is None or after + 1 < best) and text[i:j] in self.by_bytes:
                    best = after + 1
            cost[i] = best
        return cost[0]


def _fits(need: int | None, left: int) -> bool:
    """Whether a shortest completion of ``need`` tokens (None: unknown) fits in ``left``."""
    return need is None or need <= left


def _after_prefix(text: bytes) -> bytes:
    """The least byte string greater than every string that starts with ``text`` (b"": none)."""
    t = text.rstrip(b"\xff")
    return t[:-1] + bytes([t[-1] + 1]) if t else b"\xff" * (len(text) + 1)


@dataclass(frozen=True)
class HealingPlan:
    """What healing does to a prompt: ``prompt_ids`` to run (the prompt without its last
    ``removed_ids``), and ``prefix``, the removed tokens' bytes, which the output must start with."""

    prompt_ids: list[int]
    removed_ids: list[int] = field(default_factory=list)
    prefix: bytes = b""

    @property
    def healed(self) -> bool:
        return bool(self.removed_ids)


def plan_healing(info: Any, prompt_ids: Sequence[int], max_tokens: int = MAX_HEAL_TOKENS,
                 max_bytes: int = MAX_HEAL_BYTES) -> HealingPlan:
    """The healing of ``prompt_ids`` under tokenizer ``info``: the longest run of last tokens (at most
    ``max_tokens`` and ``max_bytes``, never a special token, never the whole prompt) whose text is a
    proper prefix of some token and starts on a character boundary; no tokens removed where none is.

    Example::

        plan = plan_healing(tok, tok_encode('"url": "https:'))
        plan.removed_ids, plan.prefix                  # e.g. [id(":")], b":"
    """
    ids = [int(t) for t in prompt_ids]
    index = PrefixIndex.of(info)
    text, best = b"", 0
    for k in range(1, min(max_tokens, len(ids) - 1) + 1):
        t = ids[-k]
        if not 0 <= t < info.num_tokens or info.is_special(t):
            break
        text = info.token_bytes(t) + text
        if len(text) > max_bytes:
            break
        # a prefix that starts inside a character could not be reported as text
        if text and (text[0] & 0xC0) != 0x80 and index.extends(text):
            best = k
    if not best:
        return HealingPlan(ids)
    removed = ids[len(ids) - best:]
    return HealingPlan(ids[:len(ids) - best], removed, info.decode_bytes(removed))


class Healer:
    """The healing constraint of one generation: the masks of its first tokens, until the output
    holds the removed text ``prefix`` (:attr:`done`). ``matcher`` (None: free text) is the grammar's,
    at its start: it receives the bytes of the token that runs past the prefix beyond it, and
    nothing else, so it sees only the output after the prefix.

    With ``remaining_tokens`` (the token budget, as ``Matcher.fill_next_token_bitmask`` takes it) and
    a matcher, a token is allowed only if the output can still be finished in the tokens left: the
    rest of the prefix in its fewest tokens then the grammar's shortest output, or after a token
    that runs past the prefix, the grammar's shortest completion from there. A generation whose
    budget holds ``len(removed tokens) + matcher.min_completion_tokens()`` always finishes valid.

    Example::

        healer = Healer(tok, b"https:", matcher)
        while not healer.done:
            healer.fill(bm, 0)
            t = sample(apply(logits, bm))
            assert healer.accept_token(t)
    """

    def __init__(self, info: Any, prefix: bytes, matcher: Any = None):
        self.index = PrefixIndex.of(info)
        self.info = info
        self.prefix = bytes(prefix)
        self.rest = self.prefix          # what the output has yet to spell of the prefix
        self.matcher = matcher
        self._start_need: int | None = None

    @property
    def done(self) -> bool:
        """Whether the output holds the whole prefix (the grammar's own masks take over)."""
        return not self.rest

    def allowed(self, remaining_tokens: int | None = None) -> np.ndarray:
        """The ids the next token may be, sorted."""
        # the budget binds the grammar's output only: free text has none
        left = None if remaining_tokens is None or self.matcher is None else remaining_tokens - 1
        out = self._spelling(left) + self._crossing(left)
        return np.unique(np.concatenate(out)) if out else np.zeros(0, np.int64)

    def fill(self, bitmask: np.ndarray, index: int = 0, remaining_tokens: int | None = None) -> None:
        """Write :meth:`allowed` into row ``index`` of ``bitmask`` (``stencil.allocate_token_bitmask``)."""
        ids = self.allowed(remaining_tokens)
        words = np.zeros(bitmask.shape[1], np.uint32)
        np.bitwise_or.at(words, ids >> 5, (np.uint32(1) << (ids & 31).astype(np.uint32)))
        bitmask[index] = words.view(np.int32)

    def accept_token(self, token: int) -> bool:
        """Take the generated ``token``: True, or False with nothing changed where the healing
        refuses it. A token past the prefix gives the grammar its remaining bytes."""
        if self.done or not 0 <= token < self.info.num_tokens or self.info.is_special(token):
            return False
        b = self.info.token_bytes(token)
        if b and self.rest.startswith(b):
            self.rest = self.rest[len(b):]
            return True
        if len(b) > len(self.rest) and b.startswith(self.rest):
            if self.matcher is not None and not self.matcher.accept_bytes(b[len(self.rest):]):
                return False
            self.rest = b""
            return True
        return False

    # -- the two kinds of allowed token ------------------------------------------------------------
    def _need(self) -> int:
        """The grammar's shortest output from its start, in tokens (0: unknown or empty)."""
        if self._start_need is None:
            self._start_need = (self.matcher.min_completion_tokens() or 0) if self.matcher is not None else 0
        return self._start_need

    def _spelling(self, left: int | None) -> list[np.ndarray]:
        """Tokens whose bytes are a prefix of the rest (the whole rest included)."""
        rest, out = self.rest, []
        for i in range(1, len(rest) + 1):
            same = self.index.exact(rest[:i])
            if not same:
                continue
            if left is not None:
                cost = 0 if i == len(rest) else self.index.spell_cost(rest[i:])
                if cost is None or cost + self._need() > left:
                    continue
            out.append(np.asarray(same, np.int64))
        return out

    def _crossing(self, left: int | None) -> list[np.ndarray]:
        """Tokens that start with the whole rest and go on: their remainder must be a prefix of the
        grammar's language (and leave room within the budget)."""
        lo, hi = self.index.range_longer(self.rest)
        if self.matcher is None or lo == hi:
            return [self.index.ids[lo:hi]]
        keys, n, keep = self.index.keys, len(self.rest), []
        p = lo
        while p < hi:   # by the remainder's first byte: a byte the grammar refuses skips its tokens
            b0 = keys[p][n]
            q = bisect.bisect_left(keys, self.rest + bytes([b0 + 1]), p, hi) if b0 < 255 else hi
            first = self.matcher.fork()
            if first.accept_bytes(bytes([b0])):
                for r in range(p, q):
                    tail = keys[r][n + 1:]
                    m = first.fork() if tail else first
                    if tail and not m.accept_bytes(tail):
                        continue
                    if left is None or _fits(m.min_completion_tokens(), left):
                        keep.append(int(self.index.ids[r]))
            p = q
        return [np.asarray(keep, np.int64)]


def start_healing(info: Any, prompt_ids: Sequence[int], matcher: Any = None,
                  limit: int | None = None) -> tuple[HealingPlan, Healer | None]:
    """The plan for ``prompt_ids`` and the :class:`Healer` of its first tokens (None: nothing to heal).
    ``limit`` (the token budget of a generation under ``matcher``) bounds the tokens removed, so that
    the removed tokens and the grammar's shortest output still fit in it.

    Example::

        plan, healer = start_healing(tok, prompt_ids, matcher, limit=max_tokens)
        run(plan.prompt_ids)                   # the model reads the prompt without its last tokens
    """
    most = MAX_HEAL_TOKENS
    if limit is not None and matcher is not None:
        most = min(most, limit - (matcher.min_completion_tokens() or 0))
    plan = plan_healing(info, prompt_ids, max_tokens=most)
    return plan, Healer(info, plan.prefix, matcher) if plan.healed else None
