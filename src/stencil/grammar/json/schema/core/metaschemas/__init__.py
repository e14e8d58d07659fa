"""The drafts' own metaschemas (04, 06, 07, 2019-09, 2020-12 with their vocabularies), shipped so a
``$ref`` to one resolves without a registry or a network.

The JSON files are the json-schema.org documents as the ``jsonschema-specifications`` package
(MIT, Julian Berman) distributes them. Their own ``format`` keywords (``"regex"``) are annotations,
as the metaschemas declare (2020-12's format-annotation vocabulary, 2019-09's format vocabulary
set to false): a schema validated against a metaschema is not asked to be a regex the compiler
cannot describe.

Example::

    doc = bundled_metaschema("https://json-schema.org/draft/2020-12/schema")
    docs = referenced_metaschemas(repr({"$ref": "http://json-schema.org/draft-07/schema#"}))
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from urllib.parse import urldefrag

__all__ = ["bundled_metaschema", "referenced_metaschemas", "BUNDLED_URIS"]

_HERE = Path(__file__).parent
_DRAFT_DIRS = ("draft4", "draft6", "draft7", "draft201909", "draft202012")


@lru_cache(maxsize=1)
def _bundle() -> dict:
    """URI (no fragment) -> (draft folder, file) for every shipped document, read once."""
    out = {}
    for folder in _DRAFT_DIRS:
        for path in sorted((_HERE / folder).glob("*.json")):
            doc = json.loads(path.read_text(encoding="utf-8"))
            uri = doc.get("$id", doc.get("id"))
            out[urldefrag(uri)[0]] = (folder, path)
    return out


BUNDLED_URIS = frozenset(_bundle())


@lru_cache(maxsize=None)
def _load(uri: str) -> dict:
    return json.loads(_bundle()[uri][1].read_text(encoding="utf-8"))


def bundled_metaschema(uri: str) -> dict | None:
    """A fresh copy of the shipped document at ``uri`` (fragment ignored), or None."""
    uri = urldefrag(uri)[0]
    if uri not in _bundle():
        return None
    return json.loads(json.dumps(_load(uri)))  # callers may not share a cached dict


# a reference to json-schema.org spelled in a dict's repr (cheaper than walking the schema)
_REF = re.compile(r"""'\$(?:dynamicRef|recursiveRef|ref)': '(https?://json-schema\.org/[^'#]*)""")


def referenced_metaschemas(*texts: str) -> dict:
    """{uri: document} for every shipped draft that one of ``texts`` (schemas' reprs, which the
    resolver reads anyway) references by absolute URI, with its vocabularies (their dynamic
    anchors must be known before references are followed)."""
    folders = set()
    for text in texts:
        for uri in _REF.findall(text):
            hit = _bundle().get(uri)
            if hit is not None:
                folders.add(hit[0])
    return {uri: bundled_metaschema(uri) for uri, (folder, _) in _bundle().items() if folder in folders}
