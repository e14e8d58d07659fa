"""A cheap check that a Python object given as a JSON document is one: a tree of dicts and lists,
string keys, not deeper than a limit.

A schema (or a structural tag) given as Python objects may be deeper than any recursion allows, may
contain itself (``s["properties"]["a"] = s``), or may have keys that are not strings. Every later
phase walks the document recursively or copies it, so these are refused first, by a walk without
recursion that keeps no path (a cycle only shows as a value past the limit); where that walk
meets a problem, a second one, which stops at the first problem and keeps the path to the current
value, names it. In both, a container shared by several places (not a cycle) is walked again only
when it is met deeper than before (``{"anyOf": [s, s]}`` nested 100 times costs 100 steps, not
2**100).

Example::

    s = {"type": "object", "properties": {}}
    s["properties"]["a"] = s
    check_document(s, 1000, "JSON Schema")   # GrammarError: ... the value at /properties/a is the
                                             # object at / again (a cycle) ...
"""
from __future__ import annotations

from typing import Callable

from stencil._core import GrammarError

__all__ = ["check_document", "json_pointer", "short_pointer"]

_CONTAINERS = (dict, list, tuple)


def json_pointer(path: list) -> str:
    """The JSON pointer of a path of keys and indexes ("" is the whole document)."""
    return "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in path)


def short_pointer(pointer: str) -> str:
    """A pointer short enough for an error message ("/" for the whole document)."""
    return pointer or "/" if len(pointer) <= 120 else f"{pointer[:50]}...{pointer[-60:]}"


def _depth_if_plain(doc, limit: int) -> int | None:
    """check_document's answer for a document it passes (the level of the deepest value), by a
    cheaper walk that keeps no path; None where the document may fail (a key not exactly a str,
    a value deeper than ``limit``: a cycle gets there too), for the walk that names the place.
    Most containers are small dicts met once, so the per-container work is what counts."""
    deepest = 0
    entered: dict[int, int] = {}   # id -> the deepest level its values were walked at
    stack = [(doc, 1)]             # (container, the level of its values)
    pop, push, entered_at = stack.pop, stack.append, entered.get
    while stack:
        node, depth = pop()
        if isinstance(node, dict):
            for k in node:
                if type(k) is not str:
                    return None
            node = node.values()
        if not node:
            continue
        if depth > deepest:
            if depth > limit:
                return None
            deepest = depth
        depth += 1
        for v in node:
            if isinstance(v, _CONTAINERS) and entered_at(id(v), 0) < depth:
                entered[id(v)] = depth
                push((v, depth))
    return deepest


def _items(v):
    return iter(v.items()) if isinstance(v, dict) else enumerate(v)


def check_document(doc, limit: int, what: str, render: Callable[[list], str] | None = None) -> int:
    """Raise GrammarError (``what: ...``, naming the place) when ``doc`` nests a value more than
    ``limit`` levels deep (a scalar at the top is level 0), contains itself, or has a dict key
    that is not a str; else return the level of its deepest value (a caller that checked a
    document need not check the documents inside it again). ``render`` turns a path into the
    place's name (default: a JSON pointer)."""
    if not isinstance(doc, _CONTAINERS):
        return 0
    quick = _depth_if_plain(doc, limit)
    if quick is not None:
        return quick
    deepest = 0
    name = render or (lambda p: short_pointer(json_pointer(p)))
    path: list = []                       # keys from the root to the container on top of the stack
    on_path = {id(doc): 0}                # id -> depth, for the containers of the current path
    checked: dict[int, int] = {}          # id -> the smallest depth its whole subtree held at
    stack = [(id(doc), isinstance(doc, dict), _items(doc))]
    while stack:
        _, is_dict, items = stack[-1]
        depth = len(stack)                # the depth of the values of this container
        for key, child in items:
            if is_dict and not isinstance(key, str):
                raise GrammarError(f"{what}: the key {key!r:.60} at {name(path)} is not a str but "
                                   f"{type(key).__name__} (the keys of a JSON object are strings)")
            if depth > deepest:
                if depth > limit:
                    raise GrammarError(f"{what}: the document nests more than {limit} levels deep (at "
                                       f"{name(path + [key])}); stencil takes up to {limit}")
                deepest = depth
            if not isinstance(child, _CONTAINERS):
                continue
            cid = id(child)
            if cid in on_path:
                raise GrammarError(f"{what}: the value at {name(path + [key])} is the "
                                   f"{'object' if isinstance(child, dict) else 'array'} at "
                                   f"{name(path[:on_path[cid]])} again (a cycle: a JSON document cannot "
                                   "contain itself)")
            if checked.get(cid, -1) >= depth:   # shared, and already checked from as deep
                continue
            path.append(key)
            on_path[cid] = depth
            stack.append((cid, isinstance(child, dict), _items(child)))
            break
        else:
            cid = stack.pop()[0]
            d = on_path.pop(cid)
            checked[cid] = d
            if path:
                path.pop()
    return deepest
