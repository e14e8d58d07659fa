"""JSON Schema (Draft 2020-12, with the keywords of 2019-09, 07, 06 and 04) to grammar IR.

Phases, one folder each, importing downwards only (core <- lang <- read <- emit):

- ``core``: what all phases share: the normalized model (:mod:`.core.model`), number and string
  formulas (:mod:`.core.formulas`) over the pattern and format languages (:mod:`.core.patterns`,
  :mod:`.core.formats`), options and ``$ref`` resolution (:mod:`.core.resolve`);
- ``lang``: scalar lexemes: numbers and strings as regexes that carry every constraint exactly
  (:mod:`.lang.numbers`, :mod:`.lang.strings`, :mod:`.lang.scalars`);
- ``read``: each schema object normalized into a union over JSON types of per-type constraints
  (:mod:`.read.context` holds the compilation's state, :mod:`.read.types` dispatches keywords to
  :mod:`.read.arrays`, :mod:`.read.objects` and :mod:`.read.compose`);
- ``emit``: normalized schemas as rules (:mod:`.emit.emitter`, :mod:`.emit.arrays`,
  :mod:`.emit.objects`), with the core's completion checks for what no context-free grammar can
  say (unique items, duplicate keys, required keys in any order).

A new keyword: its name in the group of its reader in :mod:`.read.common` (``KEYWORD_GROUPS``), the kind of value it takes in
:mod:`.core.keywords` (``KEYWORD_VALUES``, checked before any keyword is read), its reading in the
reader of its type, and, when the model needs a new field, that field in :mod:`.core.model` and its grammar in
``emit``.

Unsupported keywords raise :class:`stencil.GrammarError` naming the keyword and its JSON pointer;
with ``lenient=True`` they are ignored and listed in a :class:`SchemaInfo`.

Example::

    b = stencil.GrammarBuilder()
    start = build_json_schema(b, {"type": "object", "properties": {"a": {"type": "integer"}}})
    grammar = b.build(start)
    # or, in one go:
    grammar = json_schema_grammar({"type": "array", "items": {"type": "string"}}, whitespace="compact")
"""
from __future__ import annotations

import json

from stencil._core import GrammarBuilder, GrammarError
from stencil.grammar.json.schema import native

native.use_sources_if_stale()   # before any compiled module is imported: all or none of them compiled
# ruff: noqa: E402 (the imports below come after that choice)
from stencil.grammar.json.schema.core.document import check_document, short_pointer
from stencil.grammar.json.schema.core.model import FALSE_SUB, TRUE_SUB, Unsupported
from stencil.grammar.json.schema.core.options import Options
from stencil.grammar.json.schema.core.resolve import Resolver, deepest_point
from stencil.grammar.json.schema.emit.emitter import Emitter
from stencil.grammar.json.schema.read.context import Context
from stencil.schema_options import SchemaInfo

__all__ = ["build_json_schema", "json_schema_grammar", "SchemaInfo", "Options", "load_schema"]


#: How deeply a schema document may nest (objects and arrays; the deepest of the 7,880 MaskBench
#: schemas nests 63 levels). Deeper documents are refused up front, before any recursion or copy,
#: by a walk that stops at the first value past the limit (as are cyclic and non-str keys); below
#: it, subschemas nested or chained through $ref deeper than the compiler's recursion allows
#: get an error too (about 250 levels of anyOf, 600 of items).
MAX_SCHEMA_NESTING = 1000


def load_schema(schema, what: str = "JSON Schema"):
    """A schema given as a dict, a bool or JSON text; ``what`` names it in errors."""
    if isinstance(schema, (str, bytes, bytearray)):
        try:
            schema = json.loads(schema)
        except ValueError as e:
            raise GrammarError(f"{what}: not valid JSON: {e}") from None
        except RecursionError:
            raise GrammarError(f"{what}: the document nests too deeply to read (stencil takes up to "
                               f"{MAX_SCHEMA_NESTING} levels)") from None
    if not isinstance(schema, (dict, bool)):
        raise GrammarError(f"{what}: a schema is an object or a boolean, got {type(schema).__name__}")
    # Before anything walks or copies it: a Python document may be deeper than any recursion, or
    # contain itself, and every later phase would run out of memory or time on it.
    check_document(schema, MAX_SCHEMA_NESTING, what)
    return schema


def _too_deep(schema, registry) -> GrammarError:
    """The error for a schema whose subschemas chain deeper than the compiler's recursion (deep
    nesting, or long $ref chains), pointing at the deepest place of its documents."""
    depth, where = max((deepest_point(d) for d in [schema, *(registry or {}).values()]), key=lambda t: t[0])
    return GrammarError(f"JSON Schema: subschemas are nested or chained through $ref too deeply to compile "
                        f"(the document is {depth} levels deep, deepest at {short_pointer(where)})")


def build_json_schema(builder, schema, *, registry=None, info: SchemaInfo | None = None, standalone: bool = False,
                      checked: bool = False, **options):
    """Add the rules of ``schema`` to ``builder`` and return the start rule (does not build).

    Options: those of ``stencil.JsonSchemaOptions``. ``registry`` maps URIs to other schema
    documents for ``$ref``. Flexible white space goes inside the value only (none before or after
    it), so that the rest of the grammar keeps its own rules; ``standalone=True`` (the whole grammar is this value) makes it one ignored lexeme,
    still not before or after the value unless ``whitespace_around=True``. ``checked``: a dict or
    bool ``schema`` lies in a document the caller passed through ``check_document`` and found no
    deeper than ``MAX_SCHEMA_NESTING`` (a structural tag's schemas), so it is not walked again.

    Example::

        b = stencil.GrammarBuilder()
        g = b.build(build_json_schema(b, {"enum": ["red", "green"]}))
    """
    opts = Options.make(**options)
    if not (checked and isinstance(schema, (dict, bool))):
        schema = load_schema(schema)
    for uri, doc in (registry or {}).items():
        load_schema(doc, f"JSON Schema {uri!r} of the registry")
    try:
        resolver = Resolver(schema, registry, share_equal=True)
        ctx = Context(resolver, opts)
        em = Emitter(builder, ctx, scoped_whitespace=not standalone)
        root = TRUE_SUB if schema is True else FALSE_SUB if schema is False else frozenset([resolver.root])
        top = em.value(root)
        em.run()
        start = em.fresh("start")
        builder.add_alternative(start, [top])
    except Unsupported as e:  # a size limit met while emitting (not a keyword one can ignore)
        raise GrammarError(f"JSON Schema: {e.keyword}: {e.reason}") from None
    except RecursionError:
        raise _too_deep(schema, registry) from None
    if info is not None:
        info.ignored.extend(ctx.ignored)
        info.unknown_keywords.update(ctx.unknown)
        info.unknown_formats.update(ctx.unknown_formats)
        info.checks += em.checks
    return start


def json_schema_grammar(schema, *, registry=None, info: SchemaInfo | None = None, **options):
    """The grammar of the JSON texts valid for ``schema`` (dict, bool or JSON text).

    Example::

        g = json_schema_grammar({"type": "integer", "minimum": 0})
        compiled = compiler.compile_grammar(g)
    """
    b = GrammarBuilder()
    start = build_json_schema(b, schema, registry=registry, info=info, standalone=True, **options)
    try:
        return b.build(start)
    except GrammarError as e:
        if "empty" in str(e).lower():
            raise GrammarError(f"JSON Schema: no JSON value satisfies this schema ({e})") from None
        raise
