"""Grammars that start free and become constrained after a trigger: reasoning, then an answer;
text, then tool calls. Builder-level pieces, so any front-end's rule can be the constrained part.

A *marker* (where free text ends) is a string, or a special-token id (an ``int``, or a list of
ids for any of them). Free text up to a string marker is one lazy lexeme "any text, then the
marker": it ends at the first occurrence of the marker, whatever tokens spell it. Free text up to
a special token is a plain text lexeme followed by the token: special tokens are never text, so
the text cannot run past it. The compiler's ``compile_*`` helpers turn a string that is the text
of a special token of the tokenizer into that token's id.

Example::

    b = stencil.GrammarBuilder()
    answer = build_json_schema(b, {"type": "object", "properties": {"x": {"type": "integer"}}})
    g = b.build(reasoning_then(b, answer, begin="<think>", end="</think>"))
"""
from __future__ import annotations

import json
from typing import Optional, Sequence, Union

from stencil._core import GrammarError, Symbol
from stencil.grammar.ebnf.ast import Namespaced, without_texts
from stencil.grammar.json.schema import build_json_schema
from stencil.grammar.json.schema.core.options import Options
from stencil.grammar.json.value import spaced_punctuation
from stencil.grammar.tagged.custom_tools import CustomTool, build_json_input, custom_tool

__all__ = ["Marker", "marker", "text_until", "text_without", "reasoning_then", "tool_calls",
           "tool_specs"]

Marker = Union[str, int, Sequence[int]]
_WS = [(0x20, 0x20), (0x09, 0x0A), (0x0D, 0x0D)]


def _special_ids(m) -> Optional[list]:
    if isinstance(m, bool):
        raise TypeError("a marker is a string or special-token id(s), not a bool")
    if isinstance(m, int):
        return [m]
    if isinstance(m, (list, tuple)) and m and all(isinstance(i, int) and not isinstance(i, bool) for i in m):
        return list(m)
    return None


def marker(b, m: Marker, name: str = "marker") -> Symbol:
    """The symbol of a marker: a literal, or a special token."""
    ids = _special_ids(m)
    if ids is not None:
        return b.special_token(ids, name)
    if not isinstance(m, str) or not m:
        raise GrammarError(f"{name}: a marker is a non-empty string or special-token id(s), got {m!r}")
    return b.literal(m, json.dumps(m))


def text_until(b, stop: Marker, *, name: str = "text") -> Symbol:
    """Free text ending with ``stop``, marker included (a sequence of two symbols when ``stop``
    is a special token)."""
    ids = _special_ids(stop)
    if ids is not None:
        return b.seq([b.lexeme(b.re_any_string(), name), b.special_token(ids, f"{name}-end")])
    if not isinstance(stop, str) or not stop:
        raise GrammarError(f"{name}: the stop marker is a non-empty string or special-token id(s), got {stop!r}")
    # lazy: the lexeme ends at the first place where "any text, then stop" matches
    return b.lexeme(b.re_concat([b.re_any_string(), b.re_literal(stop)]), name, True)


def text_without(b, marker_: Marker, *, name: str = "text") -> Symbol:
    """Free text (possibly empty) that does not contain the marker."""
    if _special_ids(marker_) is not None:
        return b.lexeme(b.re_any_string(), name)   # special tokens are never text
    return b.lexeme(b.re_and([b.re_any_string(), without_texts(b, [marker_])]), name)


def reasoning_then(b, answer: Symbol, *, begin: Optional[Marker] = "<think>", end: Marker = "</think>",
                   optional: bool = False, name: str = "reasoning") -> Symbol:
    """A rule: ``begin`` (if any), free reasoning text up to ``end``, then ``answer`` (a rule of
    the same builder). ``optional``: the model may also answer right away."""
    rule = b.rule(name)
    head = [marker(b, begin, "think-begin")] if begin is not None else []
    b.add_alternative(rule, head + [text_until(b, end, name=f"{name}-text"), optional_ws(b), answer])
    if optional:
        b.add_alternative(rule, [answer])
    return rule


def optional_ws(b) -> Symbol:
    """Optional white space between a marker and what follows (models put newlines there)."""
    return b.lexeme(b.re_repeat(b.re_char_ranges(_WS, False), 0, -1), "ws")


def tool_specs(tools) -> list[tuple[str, object]]:
    """(name, parameters schema) of each tool; accepts OpenAI's ``{"type": "function",
    "function": {...}}`` form and plain ``{"name", "parameters"}`` dicts. A custom tool (chat's
    ``{"type": "custom", "custom": {...}}`` or the Responses API's flat form) has a
    :class:`~stencil.grammar.tagged.custom_tools.CustomTool` in place of the schema."""
    out: list[tuple[str, object]] = []
    for i, t in enumerate(tools):
        if not isinstance(t, dict):
            raise GrammarError(f"tool #{i}: expected a dict, got {type(t).__name__}")
        try:
            custom = custom_tool(t)
        except GrammarError as e:
            raise GrammarError(f"tool #{i}: {e}") from None
        if custom is not None:
            out.append((custom.name, custom))
            continue
        fn = t.get("function") if t.get("type") == "function" else t
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise GrammarError(f"tool #{i}: needs a non-empty string 'name'")
        params = fn.get("parameters", {"type": "object"})
        if not isinstance(params, (dict, bool)):
            raise GrammarError(f"tool {fn['name']!r}: 'parameters' must be a JSON Schema")
        out.append((fn["name"], params))
    if not out:
        raise GrammarError("tool_calls needs at least one tool")
    names = [n for n, _ in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise GrammarError(f"tool names must be distinct: {sorted(dup)}")
    return out


def tool_calls(b, tools, *, trigger: Marker = "<tool_call>", end: Optional[Marker] = "</tool_call>",
               text_before: bool = True, require_call: bool = False, max_calls: Optional[int] = 1,
               name_key: str = "name", args_key: str = "arguments", json_options: Optional[dict] = None,
               name: str = "tool_calls") -> Symbol:
    """A rule for "free text, then ``trigger``, then a JSON object ``{name_key: <tool name>,
    args_key: <arguments valid for that tool's schema>}``, then ``end``", up to ``max_calls``
    calls (None: any number) with white space between them.

    ``text_before``: free text may come before the first trigger; ``require_call``: otherwise the
    output may also be plain text without the trigger. Each tool's arguments are compiled from its
    own schema (its ``$ref``/``$defs`` resolve against it), and the name fixes which one applies;
    a custom tool's are ``{"input": STRING}`` (:mod:`stencil.grammar.tagged.custom_tools`).
    """

    if max_calls is not None and max_calls < 1:
        raise GrammarError("max_calls must be at least 1 (or None for any number)")
    opts = dict(json_options or {})
    call = b.rule(f"{name}-call")
    # the wrapper object spaces its punctuation as the arguments do (defaults and checks: Options)
    ws = Options.make(**{k: opts[k] for k in ("whitespace", "max_whitespace_run") if k in opts})
    if ws.whitespace == "flexible":
        lit = spaced_punctuation(b, ws.max_whitespace_run)
    else:
        lit = {c: b.literal(c) for c in "{}:,"}
    shared: dict = {}   # the tools' schemas share their string encodings (Namespaced.shared)
    for i, (tool_name, params) in enumerate(tool_specs(tools)):
        view = Namespaced(b, f"{name}/{i}/", shared)
        try:
            if isinstance(params, CustomTool):
                args = build_json_input(view, params, json_options=opts)
            else:
                args = build_json_schema(view, params, **opts)
        except GrammarError as e:
            raise GrammarError(f"tool {tool_name!r}: {e}") from None
        b.add_alternative(call, [lit["{"], b.literal(json.dumps(name_key)), lit[":"],
                                 b.literal(json.dumps(tool_name, ensure_ascii=False)), lit[","],
                                 b.literal(json.dumps(args_key)), lit[":"], args, lit["}"]])
    one = [optional_ws(b), call] + ([optional_ws(b), marker(b, end, "call-end")] if end is not None else [])
    first = [text_until(b, trigger, name=f"{name}-text")] if text_before else [marker(b, trigger, "call-begin")]
    more = b.seq([optional_ws(b), marker(b, trigger, "call-begin")] + one)
    rest = b.repeat(more, 0, -1 if max_calls is None else max_calls - 1)
    rule = b.rule(name)
    b.add_alternative(rule, first + one + [rest, optional_ws(b)])
    if not require_call:
        b.add_alternative(rule, [text_without(b, trigger, name=f"{name}-plain")])
    return rule
