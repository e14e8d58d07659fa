"""Tool-call formats of common model families, as structural tags (see
:mod:`stencil.grammar.tagged.structural_tag`): the exact text each family's chat template writes for a
tool call, with each tool's arguments constrained by its JSON Schema.

- ``llama3``: ``{"name": "NAME", "parameters": ARGS}``, also after ``<|python_tag|>``
  (Llama 3.1, 3.2);
- ``qwen``: ``<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>`` (Qwen2.5, Qwen3);
- ``qwen-coder``: ``<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n...
  </function>\\n</tool_call>`` (Qwen3-Coder; see :mod:`stencil.grammar.tagged.xml_params`);
- ``deepseek``: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n
  ARGS\\n```<｜tool▁call▁end｜>`` ... ``<｜tool▁calls▁end｜>`` (V3, R1; calls joined by a newline);
- ``deepseek-v3.1``: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS
  <｜tool▁call▁end｜>`` ... ``<｜tool▁calls▁end｜>``;
- ``kimi``: ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX
  <|tool_call_argument_begin|>ARGS<|tool_call_end|>`` ... ``<|tool_calls_section_end|>`` (K2);
- ``mistral``: ``[TOOL_CALLS][{"name": "NAME", "arguments": ARGS, "id": "ID"}, ...]`` (the id
  optional);
- ``harmony``: ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS<|call|>``
  (gpt-oss; also the template's ``to=`` first forms), messages joined by ``<|start|>assistant``.

ARGS is JSON valid for the tool's ``parameters`` schema (line breaks above are for reading only).
Free text may come before a call (``tool_choice="auto"``); several calls are allowed unless
``parallel=False``. ``reasoning=True`` puts the family's reasoning block first (``<think>...
</think>``; harmony's analysis channel); ``reasoning="opened"``: the prompt already opened it.

Example::

    spec = tool_call_format("qwen", tools, reasoning=True)   # a structural tag (a dict)
    g = compiler.compile_structural_tag(spec)                  # = compile_tool_calls(tools, format="qwen", ...)
"""
from __future__ import annotations

import json
from typing import Union

from stencil._core import GrammarError
from stencil.grammar.tagged.triggers import tool_specs

__all__ = ["tool_call_format", "FORMATS"]

DS_CALLS_BEGIN, DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CALL_BEGIN, DS_CALL_END, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
KIMI_SECTION_BEGIN, KIMI_SECTION_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
HARMONY_END = ["<|end|>", "<|return|>"]


def _json(schema) -> dict:
    return {"type": "json_schema", "json_schema": schema}


def _tag(begin, content, end) -> dict:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def _const(value: str) -> dict:
    return {"type": "const_string", "value": value}


def _triggered(triggers, tags, choice, parallel) -> dict:
    return {"type": "triggered_tags", "triggers": triggers, "tags": tags,
            "at_least_one": choice != "auto", "stop_after_first": not parallel}


def _section(begin: str, end: str, calls: list, sep: str, choice, parallel) -> dict:
    """Calls inside one section ``begin ... end`` (DeepSeek, Kimi): the section starts the tool calls."""
    inner = {"type": "tags_with_separator", "tags": calls, "separator": sep, "at_least_one": True,
             "stop_after_first": not parallel}
    return _triggered([begin], [_tag(begin, inner, end)], choice, False)


def _llama3(tools, choice, parallel):
    tags = []
    for prefix in ("", "<|python_tag|>"):
        tags += [_tag(f'{prefix}{{"name": {json.dumps(n, ensure_ascii=False)}, "parameters": ', _json(p), "}")
                 for n, p in tools]
    return _triggered(['{"name": ', "<|python_tag|>"], tags, choice, parallel)


def _qwen(tools, choice, parallel):
    tags = [_tag(f'<tool_call>\n{{"name": {json.dumps(n, ensure_ascii=False)}, "arguments": ', _json(p),
                 "}\n</tool_call>") for n, p in tools]
    return _triggered(["<tool_call>"], tags, choice, parallel)


def _qwen_coder(tools, choice, parallel):
    tags = [_tag(f"<tool_call>\n<function={n}>\n", {**_json(p), "style": "qwen_xml"}, "</function>\n</tool_call>")
            for n, p in tools]
    return _triggered(["<tool_call>"], tags, choice, parallel)


def _deepseek(tools, choice, parallel):
    calls = [_tag(f"{DS_CALL_BEGIN}function{DS_SEP}{n}\n```json\n", _json(p), f"\n```{DS_CALL_END}") for n, p in tools]
    return _section(DS_CALLS_BEGIN, DS_CALLS_END, calls, "\n", choice, parallel)


def _deepseek_v31(tools, choice, parallel):
    calls = [_tag(f"{DS_CALL_BEGIN}{n}{DS_SEP}", _json(p), DS_CALL_END) for n, p in tools]
    return _section(DS_CALLS_BEGIN, DS_CALLS_END, calls, "", choice, parallel)


def _kimi(tools, choice, parallel):
    calls = [_tag(f"<|tool_call_begin|>functions.{n}:", {"type": "sequence", "elements": [
        {"type": "regex", "pattern": "[0-9]+"}, _const("<|tool_call_argument_begin|>"), _json(p)]},
        "<|tool_call_end|>") for n, p in tools]
    return _section(KIMI_SECTION_BEGIN, KIMI_SECTION_END, calls, "", choice, parallel)


def _mistral(tools, choice, parallel):
    # mistral-common writes each call with its 9-character id; a model may leave it out
    call_id = {"type": "optional", "content": {"type": "regex", "pattern": ', "id": "[A-Za-z0-9]{9}"'}}
    calls = [_tag(f'{{"name": {json.dumps(n, ensure_ascii=False)}, "arguments": ',
                  {"type": "sequence", "elements": [_json(p), call_id]}, "}") for n, p in tools]
    listed = {"type": "tags_with_separator", "tags": calls, "separator": ", ", "at_least_one": True,
              "stop_after_first": not parallel}
    # the SentencePiece tokenizers put a space after [TOOL_CALLS]
    content = {"type": "sequence", "elements": [{"type": "regex", "pattern": " ?\\["}, listed]}
    return _triggered(["[TOOL_CALLS]"], [_tag("[TOOL_CALLS]", content, "]")], choice, False)


def _harmony_calls(tools) -> list:
    tags = []
    for n, p in tools:
        for begin in (f"<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>",
                      f"<|channel|>commentary to=functions.{n}<|constrain|>json<|message|>",
                      f" to=functions.{n}<|channel|>commentary json<|message|>",
                      f" to=functions.{n}<|channel|>commentary <|constrain|>json<|message|>"):
            tags.append(_tag(begin, _json(p), "<|call|>"))
    return tags


_BUILDERS = {"llama3": _llama3, "qwen": _qwen, "qwen-coder": _qwen_coder, "deepseek": _deepseek,
             "deepseek-v3.1": _deepseek_v31, "kimi": _kimi, "mistral": _mistral}
FORMATS = tuple(_BUILDERS) + ("harmony",)


def tool_call_format(format: str, tools, *, reasoning: Union[bool, str] = False, tool_choice: str = "auto",
                     parallel: bool = True) -> dict:
    """The structural tag (a dict) of ``format``'s tool calls for ``tools`` (OpenAI-style
    ``{"type": "function", "function": {...}}`` or ``{"name", "parameters"}`` dicts).

    ``tool_choice``: "auto" (text, calls or both), "required" (the output starts with a call, after
    white space at most), or
    a tool name (exactly that tool). ``parallel``: several calls may follow each other.
    ``reasoning``: False, True (the model writes the whole reasoning block), or "opened" (the
    prompt opened it: the output starts inside it).
    """
    if format not in FORMATS:
        raise GrammarError(f"unknown tool-call format {format!r}; expected one of {', '.join(FORMATS)}")
    if reasoning not in (False, True, "opened"):
        raise GrammarError(f"reasoning must be False, True or 'opened', got {reasoning!r}")
    specs = tool_specs(tools)
    choice = tool_choice
    if choice not in ("auto", "required"):
        if not isinstance(choice, str) or choice not in dict(specs):
            raise GrammarError(f"tool_choice must be 'auto', 'required' or a tool name of {[n for n, _ in specs]}, "
                               f"got {tool_choice!r}")
        specs, choice, parallel = [(n, p) for n, p in specs if n == tool_choice], "required", False
    if format == "harmony":
        return _harmony(specs, choice, parallel, reasoning)
    calls = _BUILDERS[format](specs, choice, parallel)
    if choice != "auto":
        # a call that must come first may follow white space: templates write "\n" before it, and
        # models a blank line after </think>
        calls = {"type": "sequence", "elements": [{"type": "regex", "pattern": "\\s*"}, calls]}
    if not reasoning:
        return {"type": "structural_tag", "format": calls}
    think = _tag("<think>" if reasoning is True else "", {"type": "any_text"}, "</think>")
    return {"type": "structural_tag", "format": {"type": "sequence", "elements": [think, calls]}}


def _harmony(specs, choice, parallel, reasoning) -> dict:
    """Harmony messages after the prompt's ``<|start|>assistant``: an analysis message (reasoning),
    tool calls on the commentary channel, a final answer; messages joined by ``<|start|>assistant``."""
    calls = _harmony_calls(specs)
    analysis = _tag("<|channel|>analysis<|message|>", {"type": "any_text"}, HARMONY_END)
    final = _tag("<|channel|>final<|message|>", {"type": "any_text"}, HARMONY_END)
    sep = "<|start|>assistant"
    if reasoning == "opened":
        raise GrammarError("harmony: reasoning is the analysis channel, which the model opens; use reasoning=True")
    head = [analysis] if reasoning else []
    if choice == "auto":
        messages = {"type": "tags_with_separator", "tags": calls + [final], "separator": sep, "at_least_one": True,
                    "stop_after_first": not parallel}
    else:
        messages = {"type": "tags_with_separator", "tags": calls, "separator": sep, "at_least_one": True,
                    "stop_after_first": not parallel}
    if not head:
        return {"type": "structural_tag", "format": messages}
    return {"type": "structural_tag", "format": {"type": "sequence", "elements": [
        *head, _const(sep), messages]}}
