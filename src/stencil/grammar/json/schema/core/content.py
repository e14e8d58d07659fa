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

# what a keyword's value is: 0 an annotation (left out), 1 a schema, 2 a map of schemas, 3 a list
# of schemas, 4 either a schema or a list of them (``items``); other keywords hold values
_KINDS = {**dict.fromkeys(UNREAD_ANNOTATIONS, 0), **dict.fromkeys(SCHEMA_VALUED, 1),
          **dict.fromkeys(SCHEMA_MAPS, 2), **dict.fromkeys(SCHEMA_LISTS, 3),
          **dict.fromkeys(set(SCHEMA_VALUED) & set(SCHEMA_LISTS), 4)}


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
        parts: list = []
        kinds = _KINDS
        # (every schema object of a document passes here once: the common cases are tested first,
        # and an entry of a map or list of schemas is numbered in line, no call per entry; a map
        # of `dependencies` holds lists of names beside schemas, and a list of schemas may hold a
        # malformed entry, which the reader reports: both keyed as values)
        for k, v in node.items():
            kind = kinds.get(k)
            if type(v) is str:   # (most values: a type name, a pattern, a $ref)
                if kind != 0:
                    parts.append((k, v))
            elif kind is None:
                parts.append((k, self._value(v)))
            elif kind == 0:
                continue
            elif isinstance(v, dict) and kind != 3:
                parts.append((k, tuple([(name, self.schema(x) if isinstance(x, dict) else self._value(x))
                                        for name, x in v.items()]) if kind == 2 else self.schema(v)))
            elif isinstance(v, (list, tuple)) and kind >= 3:
                parts.append((k, tuple([self.schema(x) if isinstance(x, dict) else self._value(x) for x in v])))
            else:
                parts.append((k, self._value(v)))
        key = tuple(parts)
        n = self._numbers.get(key)
        if n is None:
            n = self._numbers[key] = len(self._numbers)
        self._of[id(node)] = n
        self._keep.append(node)
        return n

    @staticmethod
    def _value(v):
        if isinstance(v, (dict, list, tuple)):
            return ("repr", type(v), repr(v))
        return (type(v), v)
