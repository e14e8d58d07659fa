"""What is settled in a JSON output that is still being generated: :class:`PartialResult`.

A path is a tuple of object keys (``str``) and array indices (``int``) from the root value: ``()``
is the whole value, ``("items", 0, "name")`` the name of the first item.

Example::

    p = tracker.snapshot()           # after the text {"name":"Ada","tags":["x","y  (a PartialTracker)
    p.value                          # {"name": "Ada", "tags": ["x", "y"]}
    p.complete_paths                 # (("name",), ("tags", 0))
    p.open_path                      # ("tags", 1): the string "y" is still being written
    p.missing_required               # (("born",),): required by the schema, not started yet
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

__all__ = ["PartialResult", "Path"]

#: a place in a JSON value: object keys and array indices from the root
Path = tuple[Union[str, int], ...]


@dataclass(frozen=True)
class PartialResult:
    """A snapshot of a JSON output in progress, holding only what the rest of the output cannot change.

    - ``value``: the settled content. Complete scalars and finished containers are there as in the
      final value; containers being written hold what they hold so far (an array its items, an
      object its members); the string being written is there as far as it is written (its path is
      ``open_path``), cut before an escape or UTF-8 character that is not complete. A number is
      left out until the byte after it ends it (``12`` may become ``123``), as is a ``true``,
      ``false`` or ``null`` not written out. ``None`` until the root value has started as a
      string, an object or an array (or completed as a scalar). Snapshots share the finished parts
      of the value: read them, do not change them.
    - ``complete_paths``: the paths of every value that is complete (final), in the order they
      completed; each later snapshot starts with these.
    - ``open_path``: the path of the value being written (a string, a number or literal not ended
      yet, a container, or a member whose key is written but whose value has not started); None
      once the whole value is complete.
    - ``missing_required``: paths of properties the schema requires that have not started yet, in
      the objects being written and, from the start, in the objects that required properties
      certainly hold (a required property whose schema has ``"type": "object"``); each of them is in
      the final value. Empty without a schema. What the schema view reads is in
      :mod:`stencil.partial.schema`.

    Example::

        p = tracker.snapshot()       # after {"name":"Ad
        p.value, p.open_path         # ({"name": "Ad"}, ("name",))
        p.to_json()                  # the same as JSON-ready lists: what `stencil serve` streams
    """

    value: Any = None
    complete_paths: tuple[Path, ...] = ()
    open_path: Optional[Path] = ()
    missing_required: tuple[Path, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether the whole value is complete (then ``value`` is the final value)."""
        return self.open_path is None

    def to_json(self) -> dict:
        """The snapshot as a JSON-ready dict (paths as lists), the ``partial`` field that
        ``stencil serve`` streams with ``stream_options: {"include_partial": true}``."""
        return {"value": self.value, "complete_paths": [list(p) for p in self.complete_paths],
                "open_path": None if self.open_path is None else list(self.open_path),
                "missing_required": [list(p) for p in self.missing_required]}
