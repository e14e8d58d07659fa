"""The tokens that end a generation under a grammar: the tokenizer's end-of-sequence ids, except
those the grammar writes as part of its text. gpt-oss ends a tool call with ``<|call|>``, which is
also one of its end-of-sequence tokens: a loop that stopped there would cut every call before its
end; the matcher takes the token, the text keeps it, and the grammar's own end (only EOS allowed)
ends the output.

Example::

    stops = stop_token_ids(info.eos_token_ids, matcher)   # matcher None: every EOS id
    words = other_token_words(stops, bitmask.shape[1])    # mask words of every token but those
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

__all__ = ["stop_token_ids", "other_token_words"]


def stop_token_ids(eos_token_ids: Iterable[int], matcher: Any = None) -> set[int]:
    """The ids that end the output of ``matcher`` (a ``stencil.Matcher`` or None): the EOS ids its
    grammar does not write as text (``Grammar.special_token_ids``)."""
    eos = {int(t) for t in eos_token_ids}
    if matcher is None:
        return eos
    return eos.difference(matcher.grammar.grammar.special_token_ids)


def other_token_words(stops: Iterable[int], num_words: int) -> np.ndarray:
    """int32 mask words with every bit set but those of ``stops`` (``mask & words`` is empty when the
    mask allows nothing but a stop)."""
    words = np.full(num_words, 0xFFFFFFFF, np.uint32)
    for t in stops:
        words[t // 32] &= ~np.uint32(1 << (t % 32))
    return words.view(np.int32)
