"""Schema locations and ``$ref`` resolution: ``$id`` base URIs, ``$anchor``, JSON pointers, drafts
and a registry of other documents.

A :class:`Loc` is a schema at a place: its value, the base URI in force there, its JSON pointer and
its draft. Locations are created as the compiler descends (an ``$id`` changes the base URI of
everything below it), so only the reachable part of a schema is visited. ``$ref`` is resolved
against the base URI where it stands; a fragment is a JSON pointer (``#/$defs/a``) or an anchor
(``#a``). When a reference names an anchor or a resource not met yet, the documents are indexed
once in full: every schema reached through the keywords whose values are schemas (so an ``$id``
inside ``enum`` or an unknown keyword is not a resource), each embedded resource (``$id``; ``id``
in draft 4) and anchor (``$anchor``, ``$dynamicAnchor``, draft-07 ``$id: "#name"``). Documents
not found are looked up in the registry (absolute URI to schema), then among the drafts'
metaschemas that stencil ships (``core/metaschemas``).

Drafts come from ``$schema`` (04, 06, 07, 2019-09, 2020-12); without it a document is read as
2020-12, with the older keywords (``definitions``, ``dependencies``, array ``items`` with
``additionalItems``) understood too. A custom metaschema found in the registry whose
``$vocabulary`` leaves out validation switches the validation keywords off.

Example::

    r = Resolver({"$defs": {"a": {"type": "integer"}}, "$ref": "#/$defs/a"})
    target = r.resolve("#/$defs/a", r.root)
"""
from __future__ import annotations

import sys
from urllib.parse import unquote, urldefrag, urljoin

from stencil._core import GrammarError
from stencil.grammar.json.schema.core.content import ContentNumbers
from stencil.grammar.json.schema.core.document import json_pointer
from stencil.grammar.json.schema.core.keywords import SCHEMA_MAPS, subschemas
from stencil.grammar.json.schema.core.metaschemas import BUNDLED_URIS, bundled_metaschema, referenced_metaschemas
from stencil.grammar.json.schema.core.model import next_serial

__all__ = ["Resolver", "Loc", "DEFAULT_BASE", "draft_of"]

DEFAULT_BASE = "https://stencil.invalid/schema.json"

_DRAFTS = {
    "json-schema.org/draft-04/schema": 4,
    "json-schema.org/draft-06/schema": 6,
    "json-schema.org/draft-07/schema": 7,
    "json-schema.org/draft/2019-09/schema": 2019,
    "json-schema.org/draft/2020-12/schema": 2020,
}


def draft_of(uri) -> int | None:
    if not isinstance(uri, str):
        return None
    u = uri.split("://", 1)[-1].rstrip("#")
    return _DRAFTS.get(u)


def _has_dynamic_anchor(text: str) -> bool:
    """Whether a document may declare a $dynamicAnchor anywhere (a quick search of its repr,
    cheaper than json.dumps; a string value that spells the key only costs a full index)."""
    return "'$dynamicAnchor'" in text


_RESOURCE_KEYS = frozenset(("$id", "id", "$schema"))


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _extend(pointer: str, path: tuple) -> str:
    """A JSON pointer with keys or indexes appended."""
    for p in path:
        p = str(p)
        pointer += "/" + (_escape(p) if ("~" in p or "/" in p) else p)
    return pointer


def deepest_point(doc) -> tuple[int, str]:
    """The nesting depth of a JSON document (a scalar is 0) and the JSON pointer of its deepest
    value, found without recursion (the document may be deeper than Python's stack)."""
    best, where = 0, ""
    stack = [(doc, 0, "")]
    while stack:
        v, d, p = stack.pop()
        if d > best:
            best, where = d, p
        if isinstance(v, dict):
            stack.extend((c, d + 1, f"{p}/{_escape(str(k))}") for k, c in v.items())
        elif isinstance(v, list):
            stack.extend((c, d + 1, f"{p}/{i}") for i, c in enumerate(v))
    return best, where


class Loc:
    """A schema at a place: its value, base URI, JSON pointer in its document, draft, and (only
    for schemas with dynamic anchors) the dynamic scope: for each ``$dynamicAnchor`` name, the
    schema of the outermost resource entered so far that declares it."""
    __slots__ = ("schema", "base", "pointer", "draft", "doc", "dyn", "serial")

    def __init__(self, schema, base: str, pointer: str, draft: int, doc: str, dyn: tuple = ()):
        self.schema, self.base, self.pointer, self.draft, self.doc = schema, base, pointer, draft, doc
        self.dyn = dyn
        self.serial = next_serial()  # a Sub's atoms are read in creation order (model.atom_order)

    def where(self) -> str:
        """The JSON pointer, prefixed with the document's URI when it is not the root document."""
        return (self.pointer or "/") if self.doc == "" else f"{self.doc}#{self.pointer}"

    def __repr__(self):
        return f"Loc({self.where()})"


def _text(doc) -> str:
    """A document's text, scanned for the metaschemas and dynamic anchors it names. An integer past
    Python's conversion limit (4,300 digits unless sys.set_int_max_str_digits says otherwise) has no
    text: neither this scan nor the value's own spelling could write it, a GrammarError naming it."""
    try:
        return repr(doc)
    except ValueError:
        path = _unprintable(doc, ())
        if path is None:
            raise
        raise GrammarError(f"JSON Schema: the integer at {json_pointer(list(path)) or '/'} has more digits than "
                           f"Python prints ({sys.get_int_max_str_digits():,}; sys.set_int_max_str_digits)") from None


def _unprintable(v, path: tuple):
    """The path of the first integer in ``v`` whose repr fails, or None."""
    if isinstance(v, dict):
        items = v.items()
    elif isinstance(v, list):
        items = enumerate(v)   # type: ignore[assignment]
    else:
        try:
            repr(v)
            return None
        except ValueError:
            return path
    for k, x in items:
        found = _unprintable(x, path + (k,))
        if found is not None:
            return found
    return None


class Resolver:
    """The locations of a schema and its registry's documents, and where their ``$ref`` lead.

    ``share_equal``: schema objects that say the same (:mod:`.content`) reached with the same base
    URI, draft and dynamic scope are one location, the first met, so that a compiler reads and
    emits them once; their errors then name that first place. Off where places themselves matter.
    """

    def __init__(self, root, registry=None, base_uri: str = DEFAULT_BASE, share_equal: bool = False):
        self._content = ContentNumbers() if share_equal else None
        self.registry = {}
        for uri, doc in (registry or {}).items():
            self.registry[urldefrag(uri)[0]] = doc
        #: base URIs whose ``format`` is an annotation: the shipped metaschemas declare it so
        self.format_annotations: set = set()
        # the drafts' metaschemas resolve without a registry (the user's documents take precedence)
        texts = [_text(d) for d in (root, *self.registry.values()) if isinstance(d, dict)]
        for uri, doc in referenced_metaschemas(*texts).items():
            if uri not in self.registry:
                self._ship(uri, doc)
                texts.append(repr(doc))
        self.resources: dict = {}        # absolute URI without fragment -> Loc
        self.anchors: dict = {}          # URI#name -> Loc
        self.no_validation: set = set()  # base URIs whose metaschema leaves out the validation vocabulary
        self._locs: dict = {}
        self._docs: dict = {}            # document URI -> root Loc
        self._indexed: set = set()
        self._ref_documents: dict = {}   # base URI -> the document URI of its "#..." references
        # dynamic scopes are tracked only where some document declares a dynamic anchor
        self.dynamic = any(_has_dynamic_anchor(t) for t in texts)
        self._resource_anchors: dict = {}   # resource base URI -> ((name, anchor Loc), ...)
        self._scoped = False                # dynamic scopes are tracked once the index is built
        if self.dynamic:
            for uri, doc in self.registry.items():
                self._add_document(doc, uri, uri)
        self.root = self._add_document(root, base_uri, "")
        if self.dynamic:
            self._index_all()
            self._scoped = True
            self.root = self.enter_scope(self.root, ())

    def _ship(self, uri: str, doc) -> None:
        self.registry[uri] = doc
        self.format_annotations.add(uri)

    # -- entering schemas -------------------------------------------------------------------------
    def _enter(self, node, base: str, draft: int, pointer: str, doc: str, is_root: bool, dyn: tuple = ()) -> Loc:
        """The Loc of ``node`` reached with ``base``/``draft``; registers a resource it starts."""
        if isinstance(node, dict):
            meta = node.get("$schema")
            d = draft_of(meta)
            id_key = "id" if (d or draft) == 4 else "$id"
            idv = node.get(id_key)
            if d is not None and (is_root or isinstance(idv, str)):
                draft = d
            if isinstance(idv, str) and not ("$ref" in node and draft <= 7) and \
                    not (idv.startswith("#") and draft <= 7):
                base = urldefrag(urljoin(base, idv))[0]
            if d is None and meta is not None and self._validation_off(meta):
                self.no_validation.add(base)
        loc = self.loc(node, base, pointer, draft, doc)
        if isinstance(node, dict) or is_root:
            self.resources.setdefault(base, loc)
        if self._scoped:
            loc = self.enter_scope(loc, dyn)
        return loc

    def _add_document(self, schema, uri: str, doc: str) -> Loc:
        uri = urldefrag(uri)[0]
        loc = self._enter(schema, uri, 2020, "", doc, True)
        self._docs[uri] = loc
        self.resources.setdefault(uri, loc)
        return loc

    def loc(self, schema, base: str, pointer: str, draft: int, doc: str = "", dyn: tuple = (), path: tuple = ()) -> Loc:
        """The Loc of ``schema`` at ``pointer`` extended by ``path`` (keys or indexes; written out
        only where a new Loc needs it, or where it tells a boolean schema's Locs apart)."""
        if not isinstance(schema, dict):
            pointer, path = _extend(pointer, path), ()
            key = (schema, base, pointer) + dyn
        elif self._content is not None:
            key = (self._content.schema(schema), base, draft) + dyn
        else:
            key = (id(schema), base) + dyn
        loc = self._locs.get(key)
        if loc is None:
            loc = self._locs[key] = Loc(schema, base, _extend(pointer, path), draft, doc, dyn)
        return loc

    def child(self, parent: Loc, schema, *path) -> Loc:
        """The Loc of a sub-schema of ``parent`` reached through ``path`` (keys or indexes)."""
        if isinstance(schema, dict) and not _RESOURCE_KEYS.isdisjoint(schema):
            return self._enter(schema, parent.base, parent.draft, _extend(parent.pointer, path), parent.doc, False,
                               parent.dyn)
        return self.loc(schema, parent.base, parent.pointer, parent.draft, parent.doc, parent.dyn, path)

    # -- dynamic scope ------------------------------------------------------------------------------
    def enter_scope(self, loc: Loc, dyn: tuple) -> Loc:
        """``loc`` reached with the dynamic scope ``dyn``, its own resource entered as well (the
        outermost declaration of an anchor name wins, so names already in scope are kept)."""
        if not self._scoped:
            return loc
        names = dict(dyn)
        for name, anchor in self._resource_anchors.get(loc.base, ()):
            names.setdefault(name, anchor)
        new = tuple(sorted(names.items(), key=lambda kv: kv[0]))
        if new == loc.dyn:
            return loc
        return self.loc(loc.schema, loc.base, loc.pointer, loc.draft, loc.doc, new)

    def dynamic_target(self, name: str, initial: Loc, at: Loc) -> Loc:
        """Where ``$dynamicRef: "#name"`` at ``at`` leads, its static target being ``initial``."""
        anchor = dict(at.dyn).get(name, initial)
        return self.enter_scope(anchor, at.dyn)

    # -- full index (anchors, resources not met yet) ------------------------------------------------
    def _index(self, start: Loc) -> None:
        if id(start.schema) in self._indexed:
            return
        self._indexed.add(id(start.schema))
        stack = [start]
        while stack:
            loc = stack.pop()
            node = loc.schema
            if not isinstance(node, dict):
                continue
            base, dr = loc.base, loc.draft
            idv = node.get("id" if dr == 4 else "$id")
            if isinstance(idv, str) and idv.startswith("#") and dr <= 7 and "$ref" not in node:
                self.anchors.setdefault(urldefrag(base)[0] + idv, loc)
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(node.get(key), str):
                    self.anchors.setdefault(f"{base}#{node[key]}", loc)
            if isinstance(node.get("$dynamicAnchor"), str):
                name = node["$dynamicAnchor"]
                plain = self.loc(node, base, loc.pointer, dr, loc.doc)
                have = self._resource_anchors.setdefault(base, ())
                if name not in dict(have):
                    self._resource_anchors[base] = have + ((name, plain),)
            stack.extend(self.child(loc, x, *path) for path, x in subschemas(node))

    def _index_all(self) -> None:
        for loc in list(self._docs.values()):
            self._index(loc)

    def _validation_off(self, meta) -> bool:
        """A custom metaschema (from the registry) whose $vocabulary leaves out validation."""
        if not isinstance(meta, str):
            return False
        doc = self.registry.get(urldefrag(meta)[0])
        if not isinstance(doc, dict) or not isinstance(doc.get("$vocabulary"), dict):
            return False
        return not any(v.endswith("/vocab/validation") for v in doc["$vocabulary"])

    # -- resolution -------------------------------------------------------------------------------
    def resolve(self, ref: str, at: Loc) -> Loc:
        """The schema a ``$ref`` at ``at`` points to; GrammarError when it cannot be found."""
        if not isinstance(ref, str):
            raise GrammarError(f"$ref at {at.where()}: must be a string, got {type(ref).__name__}")
        # (most references: the fragment is the rest, unless it holds a tab or newline, which
        # urllib removes)
        if ref.startswith("#") and ref.isprintable():
            doc_uri, frag = self._document_of(at.base), ref[1:]
        else:
            doc_uri, frag = urldefrag(urljoin(at.base, ref))
        frag = unquote(frag)
        anchor = bool(frag) and not frag.startswith("/")
        for attempt in range(3):
            if anchor:
                hit = self.anchors.get(f"{doc_uri}#{frag}")
            else:
                hit = self.resources.get(doc_uri)
            if hit is not None:
                break
            if attempt == 0:
                self._index_all()
            elif attempt == 1:
                if doc_uri not in self.registry and doc_uri in BUNDLED_URIS:
                    self._ship(doc_uri, bundled_metaschema(doc_uri))   # reached by a relative URI
                if doc_uri not in self.registry or doc_uri in self._docs:
                    break
                self._index(self._add_document(self.registry[doc_uri], doc_uri, doc_uri))
        if hit is None:
            if anchor and doc_uri in self.resources:
                raise GrammarError(f"$ref {ref!r} at {at.where()}: no anchor {frag!r} in {doc_uri}")
            raise GrammarError(f"$ref {ref!r} at {at.where()}: cannot resolve {doc_uri!r} (not in this "
                               "schema nor in the registry)")
        hit = self.enter_scope(hit, at.dyn)
        if anchor or not frag:
            return hit
        return self._walk(hit, frag, ref, at)

    def _document_of(self, base: str) -> str:
        """The document URI of a ``#...`` reference at ``base``, as urldefrag writes it (memoized:
        a schema has a few base URIs and many such references, and urllib's parsing is slow)."""
        uri = self._ref_documents.get(base)
        if uri is None:
            uri = self._ref_documents[base] = urldefrag(urldefrag(base)[0] + "#")[0]
        return uri

    def _walk(self, start: Loc, frag: str, ref: str, at: Loc) -> Loc:
        loc = start
        node = start.schema
        path = []
        for raw in frag.split("/")[1:]:
            tok = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and tok in node:
                node = node[tok]
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                node = node[int(tok)]
            else:
                raise GrammarError(f"$ref {ref!r} at {at.where()}: JSON pointer {frag!r} does not exist")
            path.append(tok)
            # Carry base URIs and drafts down the path through its objects, but for a map of
            # schemas (`definitions`) right below one carried, which is no schema and spells no
            # $id: numbered as a schema, it would cost a repr of every entry (most references
            # pass one).
            if isinstance(node, dict) and not (len(path) == 1 and tok in SCHEMA_MAPS and
                                               _RESOURCE_KEYS.isdisjoint(node)):
                loc = self.child(loc, node, *path)
                path = []
        if not isinstance(node, (dict, bool)):
            raise GrammarError(f"$ref {ref!r} at {at.where()}: {frag!r} is not a schema")
        return loc if not path else self.child(loc, node, *path)
