"""What a partial result needs of a JSON Schema: which properties an object requires, and the schema
of each member and item, so that ``missing_required`` can name the required properties still to come.

A schema node here is the tuple of the schema objects that all apply at one place (its *facets*):
the schema itself, what its ``$ref`` points to (resolved with the JSON Schema front-end's
:class:`~stencil.grammar.json.schema.core.resolve.Resolver`: ``$defs``, JSON pointers, ``$id``
bases, anchors, a ``registry`` of other documents), and the members of its ``allOf``, recursively.
A member's schema is its ``properties`` entry, the ``patternProperties`` whose pattern the key
matches (with Python's ``re``), else ``additionalProperties``; an item's is its ``prefixItems`` (or
draft 4-2019 ``items`` array) entry, else ``items`` (``additionalItems``).

What it does not read, so that every path it reports is certainly still to come (it may report
fewer than will come): ``anyOf``, ``oneOf``, ``if``/``then``/``else``, ``not``,
``dependentRequired``/``dependentSchemas``, ``$dynamicRef``, and the members of an object with a
``patternProperties`` pattern that Python's ``re`` does not compile. Required properties count from the start only below a
required property whose schema says ``"type": "object"`` (one that may be another type, or be
left out, counts once its object has started).

Example::

    view = SchemaView({"type": "object", "required": ["a"], "properties": {"a": {
        "type": "object", "required": ["b"]}}})
    view.requirements(view.root)     # (("a", (("b",),)),): "a" is required, and "b" inside it
"""
from __future__ import annotations

import json
import re
from typing import Any, Optional, Union

from stencil._core import GrammarError

__all__ = ["SchemaView", "Node"]

#: the schema objects (Locs of the front-end's resolver) that all apply at one place; None: unknown
Node = Optional[tuple]

#: how deep the view follows required object properties into each other (and ``$ref``/``allOf`` chains)
MAX_DEPTH = 32


class SchemaView:
    """A JSON Schema read for partial results: :meth:`child` (a member's or an item's schema),
    :meth:`requirements` (the required properties of an object, with those certain to come inside them)."""

    def __init__(self, schema: Any, registry: Optional[dict] = None):
        # the front-end loads only when a tracker is given a schema (`import stencil` stays light)
        from stencil.grammar.json.schema.core.resolve import Resolver
        if isinstance(schema, (str, bytes)):
            schema = json.loads(schema)
        self._resolver = Resolver(schema, registry)
        self._children: dict = {}
        self._requirements: dict = {}
        self._busy: set = set()
        self.root: Node = self._node(self._resolver.root)

    # -- facets --------------------------------------------------------------------------------
    def _node(self, *locs) -> Node:
        out: list = []
        seen: set = set()
        for loc in locs:
            self._collect(loc, out, seen, 0)
        return tuple(out) or None

    def _collect(self, loc, out: list, seen: set, depth: int) -> None:
        s = loc.schema
        if not isinstance(s, dict) or id(s) in seen or depth > MAX_DEPTH:
            return
        seen.add(id(s))
        ref = s.get("$ref")
        if not (isinstance(ref, str) and loc.draft <= 7):   # before 2019-09, $ref's siblings are ignored
            out.append(loc)
        if isinstance(ref, str):
            try:
                self._collect(self._resolver.resolve(ref, loc), out, seen, depth + 1)
            except GrammarError:   # (the grammar compiled, so this is another document's problem)
                pass
        every = s.get("allOf") if not (isinstance(ref, str) and loc.draft <= 7) else None
        if isinstance(every, list):
            for i, sub in enumerate(every):
                self._collect(self._resolver.child(loc, sub, "allOf", i), out, seen, depth + 1)

    # -- children ------------------------------------------------------------------------------
    def child(self, node: Node, key: Union[str, int]) -> Node:
        """The schema of member ``key`` (a str) or item ``key`` (an int) of a value at ``node``."""
        if node is None:
            return None
        hit = self._children.get((node, key))
        if hit is None and (node, key) not in self._children:
            locs = []
            for loc in node:
                locs += self._member(loc, key) if isinstance(key, str) else self._item(loc, key)
            hit = self._children[(node, key)] = self._node(*locs)
        return hit

    def _member(self, loc, key: str) -> list:
        s, found = loc.schema, []
        props = s.get("properties")
        if isinstance(props, dict) and key in props:
            found.append(self._resolver.child(loc, props[key], "properties", key))
        patterns = s.get("patternProperties")
        for p, sub in patterns.items() if isinstance(patterns, dict) else ():
            hit = _matches(p, key)
            if hit is None:   # unknown: this facet tells nothing of the member
                return []
            if hit:
                found.append(self._resolver.child(loc, sub, "patternProperties", p))
        if not found and "additionalProperties" in s:
            found.append(self._resolver.child(loc, s["additionalProperties"], "additionalProperties"))
        return found

    def _item(self, loc, i: int) -> list:
        s = loc.schema
        items, prefix = s.get("items"), s.get("prefixItems")
        if isinstance(items, list):   # drafts 4 to 2019-09: positional items, then additionalItems
            if i < len(items):
                return [self._resolver.child(loc, items[i], "items", i)]
            extra = s.get("additionalItems")
            return [] if extra is None else [self._resolver.child(loc, extra, "additionalItems")]
        if isinstance(prefix, list) and i < len(prefix):
            return [self._resolver.child(loc, prefix[i], "prefixItems", i)]
        return [] if items is None else [self._resolver.child(loc, items, "items")]

    # -- requirements --------------------------------------------------------------------------
    def required(self, node: Node) -> list:
        """The properties an object at ``node`` requires, in the order the schema lists them."""
        keys: dict = {}
        for loc in node or ():
            req = loc.schema.get("required")
            if isinstance(req, list):
                keys.update((k, None) for k in req if isinstance(k, str))
        return list(keys)

    @staticmethod
    def certainly_object(node: Node) -> bool:
        """Whether a value at ``node`` must be an object (some facet's ``type`` is "object")."""
        for loc in node or ():
            t = loc.schema.get("type")
            if t == "object" or t == ["object"]:
                return True
        return False

    def requirements(self, node: Node) -> tuple:
        """((required key, paths under it certainly to come once it is there), ...) of an object at
        ``node``: the paths are those of the required properties of a required member whose
        schema says ``"type": "object"``, recursively."""
        if node is None:
            return ()
        hit = self._requirements.get(node)
        if hit is not None:
            return hit
        if node in self._busy or len(self._busy) > MAX_DEPTH:   # (a required object inside itself)
            return ()
        self._busy.add(node)
        try:
            out = []
            for key in self.required(node):
                sub = self.child(node, key)
                below: tuple = ()
                if self.certainly_object(sub):
                    below = tuple(p for k2, under in self.requirements(sub) for p in ((k2,),) + tuple(
                        (k2,) + q for q in under))
                out.append((key, below))
        finally:
            self._busy.discard(node)
        hit = self._requirements[node] = tuple(out)
        return hit


def _matches(pattern: str, key: str) -> Optional[bool]:
    """Whether ``key`` matches a ``patternProperties`` pattern (unanchored), read by Python's ``re``;
    None for a pattern it cannot read (the view then knows nothing of that member, never wrongly)."""
    try:
        return re.search(pattern, key) is not None
    except (re.error, TypeError):
        return None
