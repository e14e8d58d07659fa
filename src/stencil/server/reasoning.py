"""Outputs that begin with a ``<think>`` block (a request's ``reasoning: true``), or inside one
the prompt opened (``opened``: DeepSeek's generation prompt ends with ``<think>``): the block is
``reasoning_content``, the rest ``content``, in a whole output and as it streams.

Example::

    split_reasoning("<think>\\nplan\\n</think>\\n\\n{}")   # -> ("plan", "{}")
    s = ThinkStream(); s.feed("<think>pl")                # -> ("pl", None): no content yet
"""
from __future__ import annotations

OPEN, CLOSE = "<think>", "</think>"


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
