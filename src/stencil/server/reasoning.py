"""Outputs that begin with a ``<think>`` block (a request's ``reasoning: true``), or inside one
the prompt opened (``opened``: DeepSeek's generation prompt ends with ``<think>``): the block is
``reasoning_content``, the rest ``content``, in a whole output and as it streams.

Example::

    split_reasoning("<think>\\nplan\\n</think>\\n\\n{}")   # -> ("plan", "{}")
    s = ThinkStream(); s.feed("<think>pl")                # -> ("pl", None): no content yet
"""
from __future__ import annotations

import bisect

from stencil.grammar.tagged.tool_presets import HARMONY_END

OPEN, CLOSE = "<think>", "</think>"
#: Harmony's analysis message (gpt-oss's reasoning) and the ends of a message
ANALYSIS, MESSAGE_ENDS = "<|channel|>analysis<|message|>", tuple(HARMONY_END)


def reasoning_end(text: str, reasoning: bool | str, tool_format: str) -> int | None:
    """Where the reasoning at the start of an output ends (its closing marker included), or None:
    a ``<think>`` block (``reasoning`` True, or "opened" by the prompt) or Harmony's analysis
    message; a block still open runs to the end of the text."""
    if tool_format == "harmony":
        if not text.startswith(ANALYSIS):
            return None
        ends = [i + len(e) for i, e in ((text.find(e, len(ANALYSIS)), e) for e in MESSAGE_ENDS) if i >= 0]
        return min(ends, default=len(text))
    if not reasoning or (reasoning is True and not text.lstrip().startswith(OPEN)):
        return None
    i = text.find(CLOSE)
    return len(text) if i < 0 else i + len(CLOSE)


def reasoning_tokens(text: str, token_ends: list[int], skipped: int, end: int | None) -> int:
    """How many of an output's tokens (``token_ends``: each token's end, in bytes of the decoded
    tokens, whose first ``skipped`` bytes are not in ``text``) hold some of ``text[:end]``."""
    if end is None or not token_ends:
        return 0
    edge = skipped + len(text[:end].encode("utf-8"))
    return bisect.bisect_left([0, *token_ends[:-1]], edge)


def split_reasoning(text: str, opened: bool = False) -> tuple[str | None, str]:
    """(reasoning, content) of a whole output; (None, text) when the block never closed, or
    (the text, "") when the prompt ``opened`` it."""
    if CLOSE not in text:
        return (text.strip(), "") if opened else (None, text)
    head, _, rest = text.partition(CLOSE)
    return head.replace(OPEN, "", 1).strip(), rest.lstrip()


class ThinkStream:
    """The output read as it grows: ``feed(text)`` takes the whole text so far and returns (the
    new piece of reasoning, the content so far or None while the block is open). The pieces add
    up to ``split_reasoning``'s reasoning: white space is held back at the block's edges and a
    possible start of ``</think>`` until the next text tells."""

    def __init__(self, opened: bool = False):
        self.pos = 0          # characters of the text read
        self.state = "think" if opened else "open"   # open (before <think>), think, after
        self.started = False  # a reasoning character was sent (leading white space is dropped)
        self.content_at = -1  # where the content starts, once known

    def feed(self, text: str, final: bool = False) -> tuple[str, str | None]:
        piece = ""
        if self.state == "open":
            at = text.find(OPEN)
            if at < 0:
                return "", None
            self.pos, self.state = at + len(OPEN), "think"
        if self.state == "think":
            end = text.find(CLOSE, self.pos)
            if end >= 0:
                piece = self._take(text[self.pos:end].rstrip())
                self.pos, self.state = end + len(CLOSE), "after"
            else:
                held = len(text) if final else len(text) - len(CLOSE) + 1
                piece = self._take(text[self.pos:max(self.pos, held)].rstrip())
        if self.state == "after" and self.content_at < 0:
            rest = text[self.pos:]
            if rest.strip() or final:
                self.content_at = self.pos + len(rest) - len(rest.lstrip())
        return piece, (text[self.content_at:] if self.content_at >= 0 else None)

    def _take(self, chunk: str) -> str:
        """``chunk`` (already without trailing white space) from ``pos`` on, leading white space
        dropped before the first reasoning character; ``pos`` moves past what was taken."""
        taken = len(chunk)
        if not self.started:
            chunk = chunk.lstrip()
        self.started = self.started or bool(chunk)
        if taken:
            self.pos += taken
        return chunk
