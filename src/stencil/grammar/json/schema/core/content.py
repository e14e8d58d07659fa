"""Numbers for what schema objects mean, equal for two objects that say the same: generated
schemas repeat inline sub-schemas (one item schema written out at each of 24 arrays, one object
schema at each of a hundred places), and a compiler that knows them equal reads and emits each
once (:class:`~.resolve.Resolver` with ``share_equal``).

Two schema objects get one number when their keywords are the same in the same order, annotations
aside (``title``, ``description``, ``default``, ``examples``...: nothing the compiler reads), with
equal sub-schemas in the places the keyword table says hold schemas and equal values elsewhere
(same types: ``1``, ``1.0`` and ``true`` differ). A value that is not a schema is keyed by its
``repr`` (one pass in C: large ``enum`` lists and unknown keywords' payloads cost little); a
sub-schema by its own number, memoized per object, so a document costs one pass however often
its parts are asked.

Example::

    c = ContentNumbers()
    c.schema({"type": "string", "title": "a"}) == c.schema({"type": "string", "title": "b"})   # True
"""
from __future__ import annotations

from stencil.grammar.json.schema.core.keywords import SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_VALUED

__all__ = ["ContentNumbers", "UNREAD_ANNOTATIONS"]

#: keywords whose values the compiler never reads (and that hold no schemas it could index)
UNREAD_ANNOTATIONS = frozenset("title description default examples example $comment deprecated readOnly "
                               "writeOnly".split())

_VALUED = frozenset(SCHEMA_VALUED)
_LISTS = frozenset(SCHEMA_LISTS)
_MAPS = frozenset(SCHEMA_MAPS)


class ContentNumbers:
    """Content numbers of schema objects (see the module's docstring)."""

    def __init__(self):
        self._of: dict = {}       # id of a schema object -> its number
        self._numbers: dict = {}  # content key -> number
        self._keep: list = []     # the objects numbered (their ids stay theirs while numbers are kept)

    def schema(self, node: dict) -> int:
        """The content number of the schema object ``node``."""
        found = self._of.get(id(node))
        if found is not None:
            return found
        parts: list[tuple[str, object]] = []
        for k, v in node.items():
            part: object
            if k in UNREAD_ANNOTATIONS:
                continue
            if isinstance(v, dict) and (k in _VALUED or k in _MAPS):
                if k in _MAPS:
                    part = tuple((name, self._sub(x)) for name, x in v.items())
                else:
                    part = self.schema(v)
            elif isinstance(v, list) and k in _LISTS:
                part = tuple(self._sub(x) for x in v)
            else:
                part = self._value(v)
            parts.append((k, part))
        key = tuple(parts)
        n = self._numbers.get(key)
        if n is None:
            n = self._numbers[key] = len(self._numbers)
        self._of[id(node)] = n
        self._keep.append(node)
        return n

    def _sub(self, v):
        # (a map of `dependencies` holds lists of names beside schemas; a list of schemas may hold
        # a malformed entry, which the reader reports: both keyed as values)
        return self.schema(v) if isinstance(v, dict) else self._value(v)

    @staticmethod
    def _value(v):
        if isinstance(v, (dict, list)):
            return ("repr", repr(v))
        return (type(v), v)
