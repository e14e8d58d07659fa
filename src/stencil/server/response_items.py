"""The output items of a Responses API answer, written as the generated text grows: reasoning,
message text, ``function_call`` and ``custom_tool_call`` items in the order the model writes them,
each with the events OpenAI streams for it (``response.output_item.added``, its deltas, their
``.done`` and ``response.output_item.done``). A whole output fed at once gives the same items, so
a streamed response ends with the object the same request answers unstreamed.

Example::

    items = OutputItems(c)                   # c: the chat request's constraint (tools, reasoning)
    events = items.feed("<tool_call>{\\"na")   # -> [(event type, fields), ...]; no sequence numbers
    items.feed("", final=True); items.items  # the response's ``output``
"""
from __future__ import annotations

import uuid
from typing import Any, Optional

from stencil.server.responses import _ChoiceStream

Event = tuple[str, dict]
#: per call item type: (the field its deltas grow, the name of its delta and done events)
_CALLS = {"function_call": ("arguments", "response.function_call_arguments"),
          "custom_tool_call": ("input", "response.custom_tool_call_input")}


def new_id(prefix: str) -> str:
    """A fresh item or response id (``msg_...``, ``fc_...``)."""
    return f"{prefix}_{uuid.uuid4().hex}"


def text_item(item_id: str, text: str, status: str) -> dict:
    """An assistant message item (no content part while ``in_progress``)."""
    content = [] if status == "in_progress" else [text_part(text)]
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}


def text_part(text: str) -> dict:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


class OutputItems:
    """One response's output as the text grows (through the chat route's reading, ``_ChoiceStream``:
    ``<think>`` or Harmony reasoning, content, the tool-call format's calls). ``feed(piece)`` returns
    the events since the last call as (type, fields) pairs; ``final=True`` ends the open item.
    ``items`` holds the finished items, as the response object lists them: a call cut before its
    end is ``"status": "incomplete"``, and an output with neither text nor calls is one empty
    message (as OpenAI answers an empty completion)."""

    def __init__(self, c):
        self.split = _ChoiceStream(c)
        self.items: list[dict] = []
        self.open: Optional[dict] = None   # the item being written (not in ``items`` yet)
        self.text = ""                     # the open message's text or reasoning so far

    def feed(self, piece: str, final: bool = False) -> list[Event]:
        out: list[Event] = []
        for d in self.split.feed(piece, final):
            if "reasoning_content" in d:
                self._grow("reasoning", d["reasoning_content"], out)
            elif "content" in d:
                self._grow("message", d["content"], out)
            else:
                for tc in d["tool_calls"]:
                    if "id" in tc:
                        self._call(tc, out)
                    else:
                        self._call_piece(tc.get("function", {}).get("arguments") or
                                         tc.get("custom", {}).get("input") or "", out)
        calls = self.split.calls
        if self.open is not None and self.open["type"] in _CALLS and calls is not None and calls.calls[-1]["ended"]:
            self._close(out)   # (its end was read: done now, not when the next item starts)
        if final:
            self._close(out)
            if not any(it["type"] != "reasoning" for it in self.items):
                self._grow("message", "", out, force=True)
                self._close(out)
        return out

    # --- opening and growing ----------------------------------------------------------------------
    def _where(self) -> dict:
        assert self.open is not None
        return {"item_id": self.open["id"], "output_index": len(self.items)}

    def _add(self, item: dict, out: list[Event]) -> None:
        self._close(out)
        self.open, self.text = item, ""
        out.append(("response.output_item.added", {"output_index": len(self.items), "item": dict(item)}))

    def _grow(self, kind: str, piece: str, out: list[Event], force: bool = False) -> None:
        """Text of a message or reasoning item: a new item unless one of ``kind`` is open (a message
        after a call starts at its first non-space character)."""
        if self.open is None or self.open["type"] != kind:
            if kind == "message" and self.items:
                piece = piece.lstrip()
            if not piece and not force:
                return
            if kind == "message":
                self._add(text_item(new_id("msg"), "", "in_progress"), out)
                out.append(("response.content_part.added", {**self._where(), "content_index": 0,
                                                            "part": text_part("")}))
            else:
                self._add({"type": "reasoning", "id": new_id("rs"), "summary": []}, out)
                out.append(("response.reasoning_summary_part.added", {**self._where(), "summary_index": 0,
                                                                       "part": {"type": "summary_text", "text": ""}}))
        if not piece:
            return
        self.text += piece
        if kind == "message":
            out.append(("response.output_text.delta", {**self._where(), "content_index": 0, "delta": piece,
                                                       "logprobs": []}))
        else:
            out.append(("response.reasoning_summary_text.delta", {**self._where(), "summary_index": 0,
                                                                  "delta": piece}))

    def _call(self, tc: dict, out: list[Event]) -> None:
        if tc["type"] == "custom":
            item: dict[str, Any] = {"type": "custom_tool_call", "id": new_id("ctc"), "call_id": tc["id"],
                                    "name": tc["custom"]["name"], "input": "", "status": "in_progress"}
        else:
            item = {"type": "function_call", "id": new_id("fc"), "call_id": tc["id"],
                    "name": tc["function"]["name"], "arguments": "", "status": "in_progress"}
        self._add(item, out)

    def _call_piece(self, piece: str, out: list[Event]) -> None:
        if self.open is None or self.open["type"] not in _CALLS or not piece:
            return
        field, event = _CALLS[self.open["type"]]
        self.open[field] += piece
        out.append((event + ".delta", {**self._where(), "delta": piece}))

    # --- closing ----------------------------------------------------------------------------------
    def _close(self, out: list[Event]) -> None:
        item, self.open = self.open, None
        if item is None:
            return
        where = {"item_id": item["id"], "output_index": len(self.items)}
        if item["type"] == "message":
            item = text_item(item["id"], self.text, "completed")
            out.append(("response.output_text.done", {**where, "content_index": 0, "text": self.text, "logprobs": []}))
            out.append(("response.content_part.done", {**where, "content_index": 0, "part": text_part(self.text)}))
        elif item["type"] == "reasoning":
            part = {"type": "summary_text", "text": self.text}
            item = dict(item, summary=[part])
            out.append(("response.reasoning_summary_text.done", {**where, "summary_index": 0, "text": self.text}))
            out.append(("response.reasoning_summary_part.done", {**where, "summary_index": 0, "part": part}))
        else:
            field, event = _CALLS[item["type"]]
            ended = self.split.calls is not None and any(
                c["id"] == item["call_id"] and c["ended"] for c in self.split.calls.calls)
            item["status"] = "completed" if ended else "incomplete"
            done = {**where, field: item[field]}
            if item["type"] == "function_call":
                done["name"] = item["name"]
            out.append((event + ".done", done))
        self.items.append(item)
        out.append(("response.output_item.done", {"output_index": len(self.items) - 1, "item": item}))
