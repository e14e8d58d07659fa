"""Tools in the server: the prompt (the chat template's own tool rendering where it has one, the
whole tool history kept), the tool-call format (the model family's preset, or the generic
``<tool_call>`` JSON), and the output read back into OpenAI's ``tool_calls``, also as it streams.

Example::

    fmt = tool_format_for(lm.tokenizer)          # "qwen" for a Qwen2.5 template, "generic" for SmolLM2
    calls = ToolStream(fmt); calls.feed(text)    # -> content and tool-call deltas, as they complete
"""
from __future__ import annotations

import json
import re
import uuid
from typing import Any, Optional

TRIGGER, END = "<tool_call>", "</tool_call>"

#: the families whose calls the server reads back: a call is `<tool_call>` + JSON with "name" and
#: "arguments" + `</tool_call>` (generic: announced in a system message; qwen: the template's own)
FORMATS = ("generic", "qwen")

#: what in a chat template's source tells its family's tool-call format (the first that matches)
_TEMPLATE_MARKS = (("<tool_call>", "qwen"),)

_HEAD = re.compile(r'\s*\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:\s*')


def tool_format_for(hf_tokenizer: Any, requested: Optional[str] = None) -> str:
    """The tool-call format: ``requested`` ("auto" or None: the family's, from the chat template;
    "generic" where the template writes no tool calls of a known family)."""
    if requested not in (None, "auto"):
        return requested
    template = getattr(hf_tokenizer, "chat_template", None) or ""
    if isinstance(template, dict):
        template = " ".join(template.values())
    if "tools" in template:
        for mark, fmt in _TEMPLATE_MARKS:
            if mark in template:
                return fmt
    return "generic"


def chat_prompt(messages: list[dict], tools: Optional[list], fmt: str) -> tuple[list[dict], Optional[list]]:
    """(messages, tools) for the chat template: assistant ``tool_calls`` written as the format
    writes them (generic) or passed on with their arguments as objects (the template writes
    them), tool results as ``tool`` messages with their ``tool_call_id``; the generic format
    announces the tools in a first system message (small templates have no tools section)."""
    out = []
    for m in messages:
        calls = m.get("tool_calls") or []
        if fmt == "generic" and calls:
            text = (m.get("content") or "") + "".join(
                TRIGGER + json.dumps({"name": c["function"]["name"], "arguments": _args(c)}) + END for c in calls)
            m = {"role": "assistant", "content": text}
        elif calls:
            m = dict(m, tool_calls=[{"type": "function", "id": c.get("id"), "function": {
                "name": c["function"]["name"], "arguments": _args(c)}} for c in calls])
        out.append(m)
    if fmt != "generic" or not tools:
        return out, tools or None
    return [{"role": "system", "content": tools_prompt(tools)}] + out, None


def _args(call: dict) -> Any:
    args = call["function"].get("arguments")
    if isinstance(args, str):
        try:
            return json.loads(args)
        except json.JSONDecodeError:
            return args
    return args


def tools_prompt(tools: list) -> str:
    """A system message telling the model its tools and the call format the grammar enforces."""
    specs = [t.get("function", t) for t in tools if isinstance(t, dict)]
    return ("You can call these functions:\n" + json.dumps(specs) + "\nTo call one, answer "
            + TRIGGER + '{"name": <function name>, "arguments": <arguments object>}' + END)


class ToolStream:
    """The generated text read as it grows: content before the calls, then each call's name and its
    arguments as they come. ``feed(text)`` takes the whole text so far and returns the new deltas
    (OpenAI's ``{"content": ...}`` and ``{"tool_calls": [...]}``); ``finish()`` the rest."""

    def __init__(self):
        self.pos = 0            # characters of the text read
        self.state = "content"  # content, head (a call's name), args
        self.calls: list[dict] = []

    def feed(self, text: str, final: bool = False) -> list[dict]:
        out: list[dict] = []
        while True:
            step = getattr(self, "_" + self.state)(text, final)
            if step is None:
                return out
            if step:
                out.append(step)

    def _content(self, text: str, final: bool):
        i = text.find(TRIGGER, self.pos)
        if i < 0:  # hold back what may start the trigger
            end = len(text) if final else max(self.pos, len(text) - len(TRIGGER) + 1)
            piece, self.pos = text[self.pos:end], end
            if not piece:
                return None
            return {} if self.calls else {"content": piece}  # only white space may follow the calls
        piece, self.pos, self.state = text[self.pos:i], i + len(TRIGGER), "head"
        return {"content": piece} if piece and not self.calls else {}

    def _head(self, text: str, final: bool):
        m = _HEAD.match(text, self.pos)
        if m is None or (m.end() == len(text) and not final):  # white space may still come
            return None
        self.pos, self.state = m.end(), "args"
        call: dict[str, Any] = {"id": "call_" + uuid.uuid4().hex[:24], "type": "function",
                "function": {"name": json.loads(m.group(1)), "arguments": ""}}
        self.calls.append(call)
        return {"tool_calls": [dict(call, index=len(self.calls) - 1, function=dict(call["function"]))]}

    def _args(self, text: str, final: bool):
        i = text.find(END, self.pos)
        if i >= 0:  # the arguments end at the object's closing brace before END
            piece = text[self.pos:i].rstrip()
            piece = piece[:-1] if piece.endswith("}") else piece
            self.pos, self.state = i + len(END), "content"
        else:
            tail = text[self.pos:]
            k = tail.rfind("}")  # from the last brace on, the text may be the call's end
            hold = k if k >= 0 and END.startswith(tail[k + 1:].strip()) else len(tail)
            piece = tail[:hold]
            self.pos += hold
            if not piece:
                return None
        self.calls[-1]["function"]["arguments"] += piece
        return {"tool_calls": [{"index": len(self.calls) - 1, "function": {"arguments": piece}}]} if piece else {}


def split_tool_calls(text: str) -> tuple[str, list[dict]]:
    """(content before the first call, [OpenAI tool_call dicts]) of a whole output; calls cut
    by max_tokens are left out."""
    s = ToolStream()
    content = "".join(d.get("content", "") for d in s.feed(text, final=True))
    calls = [c for c in s.calls if s.state == "content" or c is not s.calls[-1]]
    for c in calls:
        try:
            json.loads(c["function"]["arguments"])
        except json.JSONDecodeError:
            calls = [x for x in calls if x is not c]
    return content.strip() if calls else text, calls
