"""Model output under a tool-call grammar -> OpenAI's ``tool_calls`` list."""
from __future__ import annotations

import json
import uuid

TRIGGER, END = "<tool_call>", "</tool_call>"


def split_tool_calls(text: str) -> tuple[str, list[dict]]:
    """(content before the first call, [OpenAI tool_call dicts]). The grammar guarantees each
    call is ``{"name": ..., "arguments": {...}}`` between the markers."""
    head, sep, rest = text.partition(TRIGGER)
    if not sep:
        return text, []
    calls = []
    for chunk in rest.split(TRIGGER):
        body = chunk.split(END, 1)[0].strip()
        try:
            obj = json.loads(body)
        except json.JSONDecodeError:
            continue  # cut by max_tokens: not a complete call
        calls.append({"id": "call_" + uuid.uuid4().hex[:24], "type": "function",
                      "function": {"name": obj["name"], "arguments": json.dumps(obj["arguments"])}})
    return head.strip(), calls


def tools_prompt(tools: list) -> str:
    """A system message telling the model its tools and the call format the grammar enforces."""
    specs = [t.get("function", t) for t in tools if isinstance(t, dict)]
    return ("You can call these functions:\n" + json.dumps(specs) + "\nTo call one, answer "
            + TRIGGER + '{"name": <function name>, "arguments": <arguments object>}' + END)
