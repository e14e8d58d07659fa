"""The report behind ``stencil check SCHEMA.json``: what a schema uses, what is enforced, what is
ignored and why, and whether it compiles.

Example::

    text, ok = check_report({"type": "object", "x-internal": 1, "properties": {"a": {"format": "int32"}}})
    print(text)
"""
from __future__ import annotations

from collections import Counter

from stencil._core import GrammarError, LimitError
from stencil.grammar.json.schema import SchemaInfo, json_schema_grammar, load_schema
from stencil.grammar.json.schema.core.keywords import subschemas
from stencil.grammar.json.schema.read.common import ANNOTATIONS, NOT_ENFORCEABLE, UNDERSTOOD

__all__ = ["check_report"]


def _keywords(schema) -> Counter:
    """Keyword counts over every schema object reached through schema-valued keywords."""
    out: Counter = Counter()
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        out.update(node.keys())
        stack.extend(x for _, x in subschemas(node))
    return out


def check_report(schema, **options) -> tuple[str, bool]:
    """A human-readable report and whether the schema compiles: exactly, or with ``lenient=True``
    once what cannot be enforced is ignored (``stencil check --lenient``).

    ``schema`` is a dict, a bool or JSON text; ``options`` are those of the compiler
    (``registry``, ``whitespace``, ``property_order``, ``lenient``, ...). When the schema does not
    compile exactly, it is compiled again leniently to list everything that is not supported, not
    just the first.
    """
    lenient = bool(options.pop("lenient", False))
    try:
        schema = load_schema(schema)
    except GrammarError as e:
        return f"not a schema: {e}", False
    lines = []
    counts = _keywords(schema)
    used = sorted(k for k in counts if k in UNDERSTOOD)
    annotations = sorted(k for k in counts if k in ANNOTATIONS)
    info = SchemaInfo()
    strict = dict(options, lenient=False)
    ok = True
    error = None
    try:
        g = json_schema_grammar(schema, info=info, **strict)
    except (GrammarError, LimitError) as e:   # (a limit is reported like a refusal)
        ok, error, g = False, str(e), None
    if ok:
        lines.append(f"OK: the schema compiles exactly ({g.num_rules} rules, {g.num_lexemes} lexemes, "
                     f"{info.checks} completion checks)")
    else:
        lines.append(f"NOT SUPPORTED: {error}")
        info = SchemaInfo()
        try:
            g = json_schema_grammar(schema, info=info, **dict(options, lenient=True))
            lines.append(f"with lenient=True it compiles ({g.num_rules} rules, {g.num_lexemes} lexemes), "
                         "ignoring what is listed below")
            ok = lenient
        except (GrammarError, LimitError) as e:
            lines.append(f"even with lenient=True it does not compile: {e}")
    lines.append("enforced keywords: " + (", ".join(f"{k} x{counts[k]}" for k in used) or "none"))
    if annotations:
        lines.append("annotations (no effect on validity): " + ", ".join(annotations))
    if info.unknown_keywords:
        lines.append("unknown keywords, ignored as the specification says:")
        lines += [f"  {k} (first at {p})" for k, p in sorted(info.unknown_keywords.items())]
    if info.unknown_formats:
        lines.append("unknown formats, annotations only (not enforced):")
        lines += [f"  {k} (first at {p})" for k, p in sorted(info.unknown_formats.items())]
    not_enforceable = sorted(k for k in counts if k in NOT_ENFORCEABLE)
    if info.ignored:
        lines.append("not supported (ignored under lenient=True):")
        lines += [f"  {kw} at {where}: {reason}" for kw, where, reason in info.ignored]
    elif not_enforceable and error is not None:
        lines += [f"  {k}: {NOT_ENFORCEABLE[k]}" for k in not_enforceable]
    return "\n".join(lines), ok
