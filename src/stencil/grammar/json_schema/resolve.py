"""Schema locations and ``$ref`` resolution: ``$id`` base URIs, ``$anchor``, JSON pointers, drafts
and a registry of other documents.

The resolver walks every schema of a document (through the keywords whose values are schemas, as
the specification says, so an ``$id`` inside ``enum`` or an unknown keyword is not a resource) and
records each embedded resource (``$id``; ``id`` in draft 4) and anchor (``$anchor``,
``$dynamicAnchor``, and draft-07 ``$id: "#name"``). ``$ref`` is resolved against the base URI
in force where it stands; a fragment is a JSON pointer (``#/$defs/a``) or an anchor (``#a``).
Documents not found are looked up in the registry (a mapping from absolute URI to schema).

Drafts come from ``$schema`` (04, 06, 07, 2019-09, 2020-12); without it the document is read as
2020-12, with the older keywords (``definitions``, ``dependencies``, array ``items`` with
``additionalItems``) understood too.

Example::

    r = Resolver({"$defs": {"a": {"type": "integer"}}, "$ref": "#/$defs/a"})
    target = r.resolve("#/$defs/a", r.root)
"""
from __future__ import annotations

from urllib.parse import unquote, urldefrag, urljoin

from stencil._core import GrammarError

__all__ = ["Resolver", "Loc", "DEFAULT_BASE", "draft_of"]

DEFAULT_BASE = "https://stencil.invalid/schema.json"

_DRAFTS = {
    "json-schema.org/draft-04/schema": 4,
    "json-schema.org/draft-06/schema": 6,
    "json-schema.org/draft-07/schema": 7,
    "json-schema.org/draft/2019-09/schema": 2019,
    "json-schema.org/draft/2020-12/schema": 2020,
}

#: keywords whose value is a schema / a list of schemas / a map of name to schema
SCHEMA_VALUED = ("additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if",
                 "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "items")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
               "dependencies")


def draft_of(uri) -> int | None:
    if not isinstance(uri, str):
        return None
    u = uri.split("://", 1)[-1].rstrip("#")
    return _DRAFTS.get(u)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class Loc:
    """A schema at a place: its value, base URI, JSON pointer in its document, draft."""
    __slots__ = ("schema", "base", "pointer", "draft", "doc")

    def __init__(self, schema, base: str, pointer: str, draft: int, doc: str):
        self.schema, self.base, self.pointer, self.draft, self.doc = schema, base, pointer, draft, doc

    def where(self) -> str:
        """The JSON pointer, prefixed with the document's URI when it is not the root document."""
        p = self.pointer or "/"
        return p if self.doc == "" else f"{self.doc}#{self.pointer}"

    def __repr__(self):
        return f"Loc({self.where()})"


class Resolver:
    def __init__(self, root, registry=None, base_uri: str = DEFAULT_BASE):
        self.registry = {}
        for uri, doc in (registry or {}).items():
            self.registry[urldefrag(uri)[0]] = doc
        self.resources: dict = {}   # absolute URI without fragment -> Loc
        self.anchors: dict = {}     # URI#name -> Loc
        self.dynamic_anchors: dict = {}  # name -> set of resource base URIs declaring it
        self.no_validation: set = set()  # base URIs whose metaschema leaves out the validation vocabulary
        self.index: dict = {}       # id(schema dict) -> (base, pointer, draft, doc)
        self._locs: dict = {}
        self._docs_loaded: set = set()
        self.root = self._add_document(root, base_uri, "")

    # -- indexing ---------------------------------------------------------------------------------
    def _add_document(self, schema, uri: str, doc: str) -> Loc:
        uri = urldefrag(uri)[0]
        self._docs_loaded.add(uri)
        draft = (draft_of(schema.get("$schema")) if isinstance(schema, dict) else None) or 2020
        root = None
        stack = [(schema, uri, "", draft, True)]
        while stack:
            node, base, ptr, dr, is_root = stack.pop()
            if not isinstance(node, dict):
                loc = self.loc(node, base, ptr, dr, doc)
                if is_root:
                    root = loc
                    self.resources.setdefault(base, loc)
                continue
            d = draft_of(node.get("$schema"))
            if d is not None and ("$id" in node or "id" in node or is_root):
                dr = d
            meta_off = d is None and self._validation_off(node.get("$schema"))
            id_key = "id" if dr == 4 else "$id"
            idv = node.get(id_key)
            if isinstance(idv, str) and not ("$ref" in node and dr <= 7):
                if idv.startswith("#") and dr <= 7:
                    self.anchors.setdefault(base + idv, (node, base, ptr, dr))
                else:
                    base = urldefrag(urljoin(base, idv))[0]
                    self.resources.setdefault(base, (node, base, ptr, dr))
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(node.get(key), str):
                    self.anchors.setdefault(f"{base}#{node[key]}", (node, base, ptr, dr))
            if isinstance(node.get("$dynamicAnchor"), str):
                self.dynamic_anchors.setdefault(node["$dynamicAnchor"], set()).add(base)
            if meta_off:
                self.no_validation.add(base)
            self.index.setdefault(id(node), (base, ptr, dr, doc))
            if is_root:
                self.resources.setdefault(uri, (node, base, ptr, dr))
                root = self.loc(node, base, ptr, dr, doc)
            for key in SCHEMA_VALUED:
                v = node.get(key)
                if isinstance(v, (dict, bool)):
                    stack.append((v, base, f"{ptr}/{_escape(key)}", dr, False))
            for key in SCHEMA_LISTS:
                v = node.get(key)
                if isinstance(v, list):
                    for i, x in enumerate(v):
                        stack.append((x, base, f"{ptr}/{key}/{i}", dr, False))
            for key in SCHEMA_MAPS:
                v = node.get(key)
                if isinstance(v, dict):
                    for name, x in v.items():
                        if isinstance(x, (dict, bool)):
                            stack.append((x, base, f"{ptr}/{key}/{_escape(name)}", dr, False))
        return root

    def loc(self, schema, base: str, pointer: str, draft: int, doc: str = "") -> Loc:
        key = (id(schema), base) if isinstance(schema, dict) else (schema, base, pointer)
        loc = self._locs.get(key)
        if loc is None:
            loc = self._locs[key] = Loc(schema, base, pointer, draft, doc)
        return loc

    def child(self, parent: Loc, schema, *path) -> Loc:
        """The Loc of a sub-schema of ``parent`` reached through ``path`` (keys or indexes)."""
        ptr = parent.pointer + "".join("/" + _escape(str(p)) for p in path)
        if isinstance(schema, dict):
            hit = self.index.get(id(schema))
            if hit is not None:
                base, _, dr, doc = hit
                return self.loc(schema, base, ptr, dr, doc)
        return self.loc(schema, parent.base, ptr, parent.draft, parent.doc)

    # -- resolution -------------------------------------------------------------------------------
    def resolve(self, ref: str, at: Loc) -> Loc:
        """The schema a ``$ref`` at ``at`` points to; GrammarError when it cannot be found."""
        if not isinstance(ref, str):
            raise GrammarError(f"$ref at {at.where()}: must be a string, got {type(ref).__name__}")
        if ref.startswith("#"):
            uri = urldefrag(at.base)[0] + ref
        else:
            uri = urljoin(at.base, ref)
        doc_uri, frag = urldefrag(uri)
        frag = unquote(frag)
        if not frag.startswith("/") and frag:
            hit = self.anchors.get(f"{doc_uri}#{frag}")
            if hit is None:
                self._load(doc_uri, ref, at)
                hit = self.anchors.get(f"{doc_uri}#{frag}")
            if hit is None:
                raise GrammarError(f"$ref {ref!r} at {at.where()}: no anchor {frag!r} in {doc_uri}")
            return self._loc_of(hit)
        res = self.resources.get(doc_uri)
        if res is None:
            self._load(doc_uri, ref, at)
            res = self.resources.get(doc_uri)
        start = res if isinstance(res, Loc) else self._loc_of(res)
        if not frag:
            return start
        return self._walk(start, frag, ref, at)

    def _loc_of(self, hit) -> Loc:
        node, base, ptr, dr = hit
        doc = self.index.get(id(node), (None, None, None, ""))[3] if isinstance(node, dict) else ""
        return self.loc(node, base, ptr, dr, doc)

    def _validation_off(self, meta) -> bool:
        """A custom metaschema (from the registry) whose $vocabulary leaves out validation."""
        if not isinstance(meta, str):
            return False
        doc = self.registry.get(urldefrag(meta)[0])
        if not isinstance(doc, dict) or not isinstance(doc.get("$vocabulary"), dict):
            return False
        return not any(v.endswith("/vocab/validation") for v in doc["$vocabulary"])

    def load_all(self) -> None:
        """Index every registry document (a dynamic reference may land in any of them)."""
        for uri, doc in self.registry.items():
            if uri not in self._docs_loaded:
                self._add_document(doc, uri, uri)

    def dynamic_anchor_count(self, name: str) -> int:
        return len(self.dynamic_anchors.get(name, ()))

    def _load(self, doc_uri: str, ref: str, at: Loc) -> None:
        if doc_uri in self._docs_loaded or doc_uri not in self.registry:
            raise GrammarError(f"$ref {ref!r} at {at.where()}: cannot resolve {doc_uri!r} (not in this "
                               "schema nor in the registry)")
        self._add_document(self.registry[doc_uri], doc_uri, doc_uri)

    def _walk(self, start: Loc, frag: str, ref: str, at: Loc) -> Loc:
        node, base, draft = start.schema, start.base, start.draft
        ptr = start.pointer
        for raw in frag.split("/")[1:]:
            tok = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and tok in node:
                node = node[tok]
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                node = node[int(tok)]
            else:
                raise GrammarError(f"$ref {ref!r} at {at.where()}: JSON pointer {frag!r} does not exist")
            ptr += "/" + raw
            if isinstance(node, dict):
                hit = self.index.get(id(node))
                if hit is not None:
                    base, _, draft, _ = hit
        if not isinstance(node, (dict, bool)):
            raise GrammarError(f"$ref {ref!r} at {at.where()}: {frag!r} is not a schema")
        hit = self.index.get(id(node)) if isinstance(node, dict) else None
        if hit is not None:
            return self.loc(node, hit[0], hit[1], hit[2], hit[3])
        return self.loc(node, base, ptr, draft, start.doc)
