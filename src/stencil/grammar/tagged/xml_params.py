"""Tool arguments as XML parameters, the way Qwen3-Coder's chat template writes them:
``<parameter=city>\\nParis\\n</parameter>\\n<parameter=days>\\n3\\n</parameter>\\n``.

A string parameter is raw text (up to the first ``</parameter>``; ``minLength``, ``maxLength``,
``pattern`` and ``format`` apply to it), or one of its ``enum`` values;
any other parameter is JSON valid for its schema (the template writes ``tojson`` for objects and
arrays and Python's ``str`` for numbers and booleans, so ``True``/``False`` are accepted for a
boolean besides ``true``/``false``). White space may surround JSON values and separate parameters.
A parameter that may be a string or something else through ``anyOf`` / ``oneOf`` / ``enum`` is
written as JSON; Qwen3.6's template writes such a string raw in a history, so reading
(:func:`read_xml_value`) takes the JSON where the text is JSON valid for the schema's types (and
``enum`` values), else the raw string, as Qwen's own parser tries the schema first and falls back
to the string: what the grammar writes reads back the same, and a rendered history reads back
except where a string's raw text is JSON of another allowed type (the string ``"5"`` of
``anyOf: [string, integer]`` is rendered ``5``, read back as 5).
Properties come in definition order, required ones once, optional ones at most once; with
``any_order``, any declared parameter may come in any position (no count or presence checks, as
in XGrammar's ``any_order``). Undeclared parameters (raw text values) are allowed unless
``additionalProperties`` is false.

Example::

    b = stencil.GrammarBuilder()
    params = build_xml_parameters(b, {"type": "object", "properties": {"city": {"type": "string"}},
                                      "required": ["city"]})
"""
from __future__ import annotations

import json
from typing import NamedTuple, Optional

from stencil._core import GrammarError, Symbol
from stencil.grammar.ebnf.ast import Excluding, Namespaced, shared_expr, without_texts
from stencil.grammar.json.schema import build_json_schema
from stencil.grammar.json.schema.core.formats import format_spec
from stencil.grammar.regex import build_regex
from stencil.grammar.tagged.triggers import optional_ws

__all__ = ["build_xml_parameters", "read_xml_value", "write_xml_parameters", "writes_json", "value_end"]

_OPEN, _CLOSE = "<parameter=", "</parameter>"
# keywords that say nothing about the value's text
_ANNOTATIONS = {"description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}
_NAME = [(ord("a"), ord("z")), (ord("A"), ord("Z")), (ord("0"), ord("9")), (ord("_"), ord("_")),
         (ord("-"), ord("-")), (ord("."), ord("."))]


def build_xml_parameters(b, schema, *, any_order: bool = False, json_options: Optional[dict] = None,
                         checked: bool = False) -> Symbol:
    """Add the rule for the parameters of an object ``schema`` to builder ``b`` and return it.
    ``checked``: ``schema`` lies in a document the caller passed through ``check_document`` (as
    ``build_json_schema`` takes it), so its parameters' schemas are not walked again."""
    if schema is True or schema == {}:
        schema = {"type": "object"}
    if not isinstance(schema, dict):
        raise GrammarError(f"qwen_xml: the arguments schema must be an object schema, got {json.dumps(schema)[:60]}")
    if schema.get("type", "object") != "object":
        raise GrammarError(f"qwen_xml: the arguments schema must have type object, got {schema.get('type')!r}")
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise GrammarError("qwen_xml: /properties must be an object")
    required = schema.get("required", [])
    missing = [r for r in required if r not in props]
    if missing and schema.get("additionalProperties", True) is False:
        raise GrammarError(f"qwen_xml: required {missing} are not in /properties")
    defs = {k: schema[k] for k in ("$defs", "definitions") if k in schema}
    ws = optional_ws(b)
    params = []
    shared = getattr(b, "shared", None)
    shared = {} if shared is None else shared   # (the parameters' views share their encodings)
    for i, (key, sub) in enumerate(props.items()):
        value = _value(Namespaced(b, f"p{i}/", shared), sub, defs, f"/properties/{key}", json_options or {}, ws,
                       checked)
        params.append((key, b.seq([b.literal(f"{_OPEN}{key}>"), value, ws])))
    extra = None
    if schema.get("additionalProperties", True) is not False:
        extra = _extra(b, list(props), ws)
    rule = b.rule("xml-parameters")
    if any_order:
        units = [p for _, p in params] + ([extra] if extra is not None else [])
        one = b.rule("xml-parameter")
        for u in units:
            b.add_alternative(one, [u])
        b.add_alternative(rule, [ws, b.repeat(one, 0, -1)] if units else [ws])
        return rule
    seq = [ws]
    for key, p in params:
        seq.append(p if key in required else b.optional(p))
    if extra is not None:
        seq.append(b.repeat(extra, 0, -1))
    b.add_alternative(rule, seq)
    return rule


def _raw_text(b, name: str, sub: Optional[dict] = None, pointer: str = "") -> Symbol:
    """Raw text up to the first ``</parameter>``, that marker included. With a string schema
    ``sub``, its ``minLength``/``maxLength``/``pattern``/``format`` apply to the text without the newline
    the template writes on each side (parsers strip one on each side)."""
    parts = [b.re_any_string(), without_texts(b, [_CLOSE])]
    sub = sub or {}
    if "minLength" in sub or "maxLength" in sub:
        char = b.re_char_ranges([(0, 0x10FFFF)], False)
        parts.append(b.re_repeat(char, int(sub.get("minLength", 0)), int(sub.get("maxLength", -1))))
    if "pattern" in sub:
        try:   # (a tool set's parameters share their patterns: each is read once)
            pattern = sub["pattern"]
            parts.append(shared_expr(b, ("xml-pattern", pattern), lambda: build_regex(b, pattern, anchored=False)))
        except GrammarError as e:
            raise GrammarError(f"pattern at {pointer}/pattern: {e}") from None
    if isinstance(sub.get("format"), str):
        try:
            spec = format_spec(sub["format"])
        except KeyError:
            raise GrammarError(f"format at {pointer}/format: {sub['format']!r} cannot be enforced") from None
        if spec is not None:   # (an unknown format is an annotation)
            node, max_len = spec
            parts.append(shared_expr(b, ("xml-format", sub["format"]), lambda: build_regex(b, node)))
            if max_len is not None:
                parts.append(b.re_repeat(b.re_char_ranges([(0, 0x10FFFF)], False), 0, max_len))
    value = b.re_and(parts)
    if len(parts) > 2:
        nl = b.re_repeat(b.re_literal("\n"), 0, 1)
        value = b.re_concat([nl, value, nl])
    return b.lexeme(b.re_concat([value, b.re_literal(_CLOSE)]), name, True)


def _extra(b, declared: list, ws) -> Symbol:
    """An undeclared parameter: a name that is not a declared one, and raw text."""
    name = b.re_repeat(b.re_char_ranges(_NAME, False), 1, -1)
    if declared:
        name = b.re_and([name, b.re_not(b.re_or([b.re_literal(k) for k in declared]))])
    head = b.lexeme(b.re_concat([b.re_literal(_OPEN), name, b.re_literal(">")]), "xml-extra-name")
    return b.seq([head, _raw_text(b, "xml-extra-value"), ws])


def _enum_literal(b, c: str, pointer: str) -> Symbol:
    """A string ``enum`` value, written raw: one that holds ``</parameter>`` could not be read back."""
    if _CLOSE in c:
        raise GrammarError(f"qwen_xml: {pointer}: the enum value {c!r} holds {_CLOSE!r}, which ends a parameter")
    return b.literal(c)


def _writes_json(sub) -> bool:
    """Whether the grammar writes a parameter of schema ``sub`` as JSON (else raw text, which never
    holds ``</parameter>``)."""
    if not isinstance(sub, dict) or sub == {}:
        return False
    choices = sub.get("enum", [sub["const"]] if "const" in sub else None)
    if choices and all(isinstance(c, str) for c in choices):
        return False
    return "string" not in _types(sub)


def _json_only(sub, defs: dict) -> bool:
    """A parameter the grammar and the chat template both write as JSON (it cannot be a string:
    the template writes strings raw): its strings may hold ``</parameter>``, and its end is the
    first one outside them. One that may also be a string is written with no ``</parameter>`` in
    it (the grammar excludes it), as a rendered raw string may hold unpaired quotes."""
    return _writes_json(sub) and "string" not in _allowed(sub, defs).types


def writes_json(schema, key: str) -> bool:
    """Whether parameter ``key`` of object ``schema`` ends at the first ``</parameter>`` outside
    its JSON strings (:func:`value_end`), rather than at the first one."""
    if not isinstance(schema, dict):
        return False
    sub = schema.get("properties", {}).get(key, True) if isinstance(schema.get("properties"), dict) else True
    return _json_only(sub, {k: schema[k] for k in ("$defs", "definitions") if k in schema})


def value_end(text: str, start: int, json_value: bool) -> int:
    """Where the parameter value starting at ``start`` ends (its ``</parameter>``), or -1: the
    first one, or with ``json_value`` the first outside a JSON string."""
    if not json_value:
        return text.find(_CLOSE, start)
    inside = escaped = False
    i = start
    while i < len(text):
        c = text[i]
        if inside:
            inside, escaped = (not (c == '"' and not escaped)), (c == "\\" and not escaped)
        elif c == '"':
            inside = True
        elif c == "<" and text.startswith(_CLOSE, i):
            return i
        i += 1
    return -1


def _types(sub) -> set:
    t = sub.get("type")
    return {t} if isinstance(t, str) else set(t) if isinstance(t, list) else set()


def _value(b, sub, defs: dict, pointer: str, json_options: dict, ws, checked: bool) -> Symbol:
    if sub is True or sub == {}:
        return _raw_text(b, "xml-value")
    if not isinstance(sub, dict):
        raise GrammarError(f"qwen_xml: {pointer} is not a schema")
    choices = sub.get("enum", [sub["const"]] if "const" in sub else None)
    if choices is not None and choices and all(isinstance(c, str) for c in choices):
        rule = b.rule("xml-enum")
        for c in choices:
            b.add_alternative(rule, [_enum_literal(b, c, pointer)])
        return b.seq([ws, rule, ws, b.literal(_CLOSE)])
    if "string" in _types(sub):
        # the template writes strings raw: their text cannot be checked against JSON string keywords
        unchecked = sorted(set(sub) - _ANNOTATIONS - {"type", "enum", "const", "minLength", "maxLength", "pattern",
                                                      "format"})
        if unchecked:
            raise GrammarError(f"qwen_xml: {pointer}: string keyword(s) {unchecked} cannot be enforced on raw "
                               "parameter text")
        return _raw_text(b, "xml-string", sub, pointer)
    json_sub = {**sub, **defs} if defs else sub
    # (a value that may be a string holds no </parameter>: see _json_only)
    view = b if _json_only(sub, defs) else Excluding(b, [_CLOSE], f"qwen_xml: {pointer}")
    value = build_json_schema(view, json_sub, checked=checked, **json_options)
    if _types(sub) == {"boolean"} and set(sub) - _ANNOTATIONS == {"type"}:
        rule = b.rule("xml-bool")
        b.add_alternative(rule, [value])
        b.add_alternative(rule, [b.lexeme(b.re_or([b.re_literal("True"), b.re_literal("False")]), "py-bool")])
        value = rule
    return b.seq([ws, value, ws, b.literal(_CLOSE)])


_ALL_TYPES = frozenset({"string", "number", "integer", "boolean", "null", "object", "array"})


class _Allowed(NamedTuple):
    """The JSON types a parameter schema allows (``integer`` for a whole number), the types that
    only its ``enum`` / ``const`` values allow (``closed``) and those values (``choices``)."""
    types: frozenset
    closed: frozenset = frozenset()
    choices: tuple = ()


def _json_types(v) -> set:
    if v is None:
        return {"null"}
    if isinstance(v, bool):
        return {"boolean"}
    if isinstance(v, int):
        return {"integer", "number"}
    if isinstance(v, float):
        return {"number", "integer"} if v.is_integer() else {"number"}
    return {"string"} if isinstance(v, str) else {"array"} if isinstance(v, list) else {"object"}


def _meet(a: frozenset, b: frozenset) -> frozenset:
    out = set(a) & set(b)
    if ("integer" in a and "number" in b) or ("number" in a and "integer" in b):
        out.add("integer")
    return frozenset(out)


def _allowed(sub, defs: dict, depth: int = 0) -> _Allowed:
    """What values a parameter schema ``sub`` allows, by type (``anyOf``, ``oneOf``, ``enum``,
    ``const``, ``type`` and local ``$ref`` followed; other keywords are not judged)."""
    if not isinstance(sub, dict) or depth > 16:
        return _Allowed(_ALL_TYPES)
    if isinstance(sub.get("$ref"), str):
        for k in ("$defs", "definitions"):
            head = f"#/{k}/"
            if sub["$ref"].startswith(head) and isinstance(defs.get(k), dict) and sub["$ref"][len(head):] in defs[k]:
                return _allowed(defs[k][sub["$ref"][len(head):]], defs, depth + 1)
        return _Allowed(_ALL_TYPES)
    types = frozenset(_types(sub)) if "type" in sub else _ALL_TYPES
    closed: frozenset = frozenset()
    choices: tuple = ()
    if isinstance(sub.get("enum", [sub["const"]] if "const" in sub else None), list):
        values = sub.get("enum", [sub.get("const")])
        types = _meet(types, frozenset().union(*map(_json_types, values)))
        closed, choices = types, tuple(values)
    parts = [_allowed(x, defs, depth + 1) for k in ("anyOf", "oneOf") if isinstance(sub.get(k), list) for x in sub[k]]
    if parts:
        union = frozenset().union(*(p.types for p in parts))
        closed |= frozenset(t for t in union if all(t in p.closed for p in parts if t in p.types))
        types, choices = _meet(types, union), choices + tuple(c for p in parts for c in p.choices)
    return _Allowed(types, closed & types, choices)


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def read_xml_value(schema, key: str, text: str):
    """The JSON value of parameter ``key`` of an object ``schema`` from the text between
    ``<parameter=key>`` and ``</parameter>``, read as the grammar above wrote it: raw text (one
    newline stripped on each side, as the template writes them) for strings, undeclared and
    unconstrained parameters; the value itself for string enums; JSON (with Python's ``True`` and
    ``False`` for booleans) otherwise. Where the schema also allows a string (``anyOf``,
    ``oneOf``, ``enum``), the JSON the text is when it is of a type the schema allows (one of
    its values, for a type only ``enum`` allows), else the raw string (the template writes
    strings raw)."""
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    sub = props.get(key, True)
    raw = text[1:] if text.startswith("\n") else text
    raw = raw[:-1] if raw.endswith("\n") else raw
    if not isinstance(sub, dict) or sub == {}:
        return raw
    choices = sub.get("enum", [sub["const"]] if "const" in sub else None)
    if choices and all(isinstance(c, str) for c in choices):
        return text.strip(" \t\r\n")
    if "string" in _types(sub):
        return raw
    value = text.strip(" \t\r\n")
    allowed = _allowed(sub, {k: schema[k] for k in ("$defs", "definitions") if k in schema})
    if "string" not in allowed.types:
        return {"True": True, "False": False}[value] if value in ("True", "False") else json.loads(value)
    if value in ("True", "False"):
        return value == "True" if "boolean" in allowed.types else raw
    try:
        parsed = json.loads(value, parse_constant=_no_constant)
    except ValueError:
        return raw
    kinds = _json_types(parsed) & allowed.types
    if kinds - allowed.closed or kinds and any(parsed == c and isinstance(parsed, bool) == isinstance(c, bool)
                                               for c in allowed.choices):
        return parsed
    return raw


def write_xml_parameters(args: dict, schema=None) -> str:
    """``args`` (a JSON object) as Qwen3-Coder's template writes parameters: strings raw, other
    values as JSON, each between newlines (read back by :func:`read_xml_value`). With the
    arguments' ``schema``, as the grammar writes them: a string is raw where the parameter is a
    string, a string enum or undeclared, JSON where it may also be something else."""
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}

    def raw(k, v) -> bool:
        sub = props.get(k, True)
        if not isinstance(v, str) or schema is None or not isinstance(sub, dict) or sub == {} or "string" in _types(sub):
            return isinstance(v, str)
        choices = sub.get("enum", [sub["const"]] if "const" in sub else None)
        return isinstance(choices, list) and bool(choices) and all(isinstance(c, str) for c in choices)
    return "".join(f"{_OPEN}{k}>\n{v if raw(k, v) else json.dumps(v, ensure_ascii=False)}\n{_CLOSE}\n"
                   for k, v in args.items())
