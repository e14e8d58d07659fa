"""Tools in the server: the prompt (the chat template's own tool rendering where it has one, the
whole tool history kept), the tool-call format (the model family's preset, or the generic
``<tool_call>`` JSON), and the output read back into OpenAI's ``tool_calls``, also as it streams.

Example::

    fmt = tool_format_for(lm.tokenizer)          # "qwen" for a Qwen2.5 template, "generic" for SmolLM2
    calls = ToolStream(fmt, tools)               # the request's tools
    calls.feed(text)                             # -> content and tool-call deltas, as they come
"""
from __future__ import annotations

import json
from typing import Any, Optional

from stencil.grammar.tagged.custom_tools import custom_tool, function_view, input_style
from stencil.grammar.tagged.tool_presets import FAMILIES, FORMATS as PRESETS, call_syntax, family_of_template
from stencil.grammar.tagged.tool_reading import CallReader, read_calls, write_calls
from stencil.runtime.models import renders_own_chats

TRIGGER, END = "<tool_call>", "</tool_call>"

#: the formats the server writes and reads back: "generic" (`<tool_call>` + JSON with "name" and
#: "arguments" + `</tool_call>`, announced in a system message) and every model family's preset
#: (stencil.grammar.tagged.tool_presets.FAMILIES: one table writes and reads each)
FORMATS = ("generic",) + PRESETS


def tool_name(tool: dict) -> str:
    """The name of a checked chat tool (a function or a custom tool)."""
    return tool["custom" if tool["type"] == "custom" else "function"]["name"]


def as_function(tool: dict) -> dict:
    """A chat tool as a template takes it: a custom tool as the function of one string parameter
    ``input`` that its calls' arguments are (``custom_tools.function_view``)."""
    custom = custom_tool(tool)
    return tool if custom is None else function_view(custom)


def template_text(hf_tokenizer: Any) -> str:
    """The tokenizer's chat template source (its named templates joined), or ""."""
    template = getattr(hf_tokenizer, "chat_template", None) or ""
    return " ".join(template.values()) if isinstance(template, dict) else template


def renders_tools(hf_tokenizer: Any) -> bool:
    """Whether the tokenizer's chat rendering writes tools and tool calls (its template names
    ``tools``, or mistral-common renders the chat); otherwise the server announces them."""
    return "tools" in template_text(hf_tokenizer) or renders_own_chats(hf_tokenizer)


def tool_format_for(hf_tokenizer: Any, requested: Optional[str] = None) -> str:
    """The tool-call format: ``requested`` ("auto" or None: the family's, from the chat template;
    "generic" where the template writes no tool calls of a known family)."""
    if requested not in (None, "auto"):
        return requested
    if renders_own_chats(hf_tokenizer):   # mistral-common writes [TOOL_CALLS] itself
        return "mistral"
    template = template_text(hf_tokenizer)
    return (family_of_template(template) if "tool" in template else None) or "generic"


def chat_prompt(messages: list[dict], tools: Optional[list], fmt: str,
                template_tools: bool = True) -> tuple[list[dict], Optional[list]]:
    """(messages, tools) for the chat template: tool results as ``tool`` messages with their
    ``tool_call_id``; assistant ``tool_calls`` passed on with their arguments as the family's
    template takes them (an object, or JSON text for templates that concatenate it; a custom
    call's ``{"input": ...}``, custom tools shown as functions by :func:`as_function`). Where the
    format is generic, or the template writes no tools (``template_tools`` False: a small model's),
    the calls are written into the assistant's text in the format's own words and the tools are
    announced in a first system message with a call written that way."""
    out = []
    announce = fmt == "generic" or not template_tools
    as_text = fmt != "generic" and FAMILIES[fmt].history_arguments == "text"
    for m in messages:
        calls = m.get("tool_calls") or []
        if announce and calls:
            written = write_calls(call_syntax(fmt), [(_name(c), _args(c)) for c in calls], tools)
            m = {"role": "assistant", "content": (m.get("content") or "") + written}
        elif calls:
            m = dict(m, tool_calls=[{"type": "function", "id": c.get("id"), "function": {
                "name": _name(c), "arguments": json.dumps(_as_object(c), ensure_ascii=False) if as_text
                else _as_object(c)}} for c in calls])
        out.append(m)
    if not announce or not tools:
        return out, [_described(as_function(t)) for t in tools] if tools else None
    return [{"role": "system", "content": tools_prompt(tools, fmt)}] + out, None


def _described(tool: dict) -> dict:
    """A function tool with a ``description`` ("" where the request gives none: OpenAI's is
    optional, and templates such as gpt-oss's read it unguarded)."""
    fn = tool.get("function")
    if isinstance(fn, dict) and "description" not in fn:
        return dict(tool, function=dict(fn, description=""))
    return tool


def _name(call: dict) -> str:
    return call["custom" if call.get("type") == "custom" else "function"]["name"]


def _as_object(call: dict) -> Any:
    """A past call's arguments as a template takes them: a custom call's ``{"input": ...}``."""
    return {"input": _args(call)} if call.get("type") == "custom" else _args(call)


def _args(call: dict) -> Any:
    """A past call's arguments (the JSON value of their text, else the text), or a custom call's
    raw input (a checked call: ``server.messages.ToolCall``)."""
    if call.get("type") == "custom":
        return call["custom"]["input"]
    try:
        return json.loads(call["function"]["arguments"])
    except json.JSONDecodeError:
        return call["function"]["arguments"]


def tools_prompt(tools: list, fmt: str = "generic") -> str:
    """A system message telling the model its tools and the call format the grammar enforces."""
    specs = [as_function(t)["function"] for t in tools if isinstance(t, dict)]
    syntax = call_syntax(fmt)
    if fmt == "generic":
        example = TRIGGER + '{"name": <function name>, "arguments": <arguments object>}' + END
    else:
        args: Any = {"<name>": "<value>"} if syntax.args == "xml" else "<arguments object>"
        example = write_calls(syntax, [("<function name>", args)]).replace('"<arguments object>"', "<arguments object>")
    styles: dict = {}   # a custom tool's input in the family's slot: raw text or a JSON string
    for c in filter(None, map(custom_tool, tools)):
        styles.setdefault(input_style(syntax.input_slot, c), c)
    for c in styles.values():
        one = {"type": "custom", "name": c.name, "format": c.format()}
        example += f"\nTo call {c.name}, whose only parameter is its input, answer " + \
            write_calls(syntax, [(c.name, "<input>")], [one])
    return "You can call these functions:\n" + json.dumps(specs) + "\nTo call one, answer " + example


class ToolStream:
    """The generated text read as it grows (``fmt``'s reading, for ``tools``): content, each call's
    name and id, then its arguments as they come (a custom call's input as ``{"custom": {"input":
    ...}}`` deltas), and Harmony's analysis channel as reasoning. ``feed(text)`` takes the whole
    text so far and returns the new deltas (OpenAI's ``{"content": ...}``, ``{"reasoning_content":
    ...}`` and ``{"tool_calls": [...]}``), each argument delta a prefix of what is left of the final
    arguments; ``final=True`` the rest."""

    def __init__(self, fmt: str, tools: list):
        self.reader = CallReader(call_syntax(fmt), tools)
        self.space = ""       # trailing white space of the content so far, held until text follows
        self.started = False  # content given out: the message's content is stripped at both ends
        self.index = -1       # the call being read (its index in ``calls``)

    @property
    def calls(self) -> list[dict]:
        return self.reader.calls

    def feed(self, text: str, final: bool = False) -> list[dict]:
        out: list[dict] = []
        for e in self.reader.feed(text, final):
            kind = e[0]
            if kind == "content":
                piece = (self.space + e[1]) if self.started else e[1].lstrip()
                body = piece.rstrip()
                self.space = piece[len(body):]
                if body:
                    self.started = True
                    out.append({"content": body})
            elif kind == "reasoning":
                out.append({"reasoning_content": e[1]})
            elif kind == "call":
                # (by count of the calls met: one feed may read several calls, and calls[-1] is the last)
                self.index += 1
                index = self.index
                if self.reader.calls[index]["type"] == "custom":
                    out.append({"tool_calls": [{"index": index, "id": e[2], "type": "custom",
                                                "custom": {"name": e[1], "input": ""}}]})
                else:
                    out.append({"tool_calls": [{"index": index, "id": e[2], "type": "function",
                                                "function": {"name": e[1], "arguments": ""}}]})
            elif kind == "args":
                out.append({"tool_calls": [{"index": self.index, "function": {"arguments": e[1]}}]})
            elif kind == "input":   # a custom call's raw input
                out.append({"tool_calls": [{"index": self.index, "custom": {"input": e[1]}}]})
        return out


def split_tool_calls(text: str, fmt: str, tools: list) -> tuple[str, Optional[str], list[dict]]:
    """(content, reasoning (Harmony's analysis channel, else None), [OpenAI tool_call dicts]) of a
    whole output: the content is the text outside the calls, stripped at both ends (as
    :class:`ToolStream` gives it out); calls cut by max_tokens are left out."""
    content, reasoning, read = read_calls(call_syntax(fmt), tools, text)
    calls = [{"id": c["id"], "type": "custom", "custom": {"name": c["name"], "input": c["input"]}}
             if c["type"] == "custom" else
             {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
             for c in read]
    return content.strip(), (reasoning or None) if fmt == "harmony" else None, calls
