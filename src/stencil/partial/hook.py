"""``stencil.runtime.generate``'s ``on_partial``: a snapshot after every step of a generation.

:class:`PartialHook` sits where ``generate`` passes the text of each step's accepted tokens on
(its ``on_text``): the text pieces are exactly the accepted bytes, decoded (a UTF-8 character cut
between tokens comes with its last byte), so the tracker reads each byte once, in order. After the
last step, a complete output is finished (a number at its very end settles) and, where that
settled something, ``on_partial`` gets the final snapshot.

Example::

    hook = PartialHook(print, schema=schema)   # what generate(..., on_partial=print, schema=schema) does
    hook("{\\"a\\": 1")                           # prints the snapshot
    hook.end(complete=True)
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from stencil.partial.result import PartialResult
from stencil.partial.tracker import PartialTracker

__all__ = ["PartialHook"]


class PartialHook:
    """An ``on_text`` callback that feeds a :class:`PartialTracker` and calls ``on_partial`` with a
    :class:`PartialResult` after each piece (then ``on_text``, if given, with the piece)."""

    def __init__(self, on_partial: Callable[[PartialResult], Any], on_text: Optional[Callable[[str], Any]] = None,
                 schema: Any = None, registry: Optional[dict] = None):
        self.tracker = PartialTracker(schema, registry=registry)
        self.on_partial, self.on_text = on_partial, on_text
        self.last: Optional[PartialResult] = None

    def __call__(self, piece: str) -> None:
        if self.on_text is not None:
            self.on_text(piece)
        self.tracker.feed(piece)
        self.last = self.tracker.snapshot()
        self.on_partial(self.last)

    def end(self, complete: bool) -> None:
        """The generation ended; ``complete``: its output is a complete value of the grammar."""
        if complete and not self.tracker.done:
            self.tracker.finish()
            self.last = self.tracker.snapshot()
            self.on_partial(self.last)
