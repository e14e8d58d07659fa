"""The Responses API's output items as the text grows (stencil.server.response_items): outputs of
several formats fed in pieces of every size give the items in the order the model wrote them
(reasoning, text and calls interleaved), each event valid for the official ``openai`` package's
event types, each item added, grown and done in turn, and the same items as the whole output fed
at once (the unstreamed response). The real server streams them in test_server_responses."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
openai_types = pytest.importorskip("openai.types.responses")
pydantic = pytest.importorskip("pydantic")
from stencil.server.constraints import Constraint  # noqa: E402
from stencil.server.response_items import OutputItems  # noqa: E402

EVENT = pydantic.TypeAdapter(openai_types.ResponseStreamEvent)
ITEM = pydantic.TypeAdapter(openai_types.ResponseOutputItem)
TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}},
         {"type": "custom", "custom": {"name": "note", "format": {"type": "text"}}}]
ADD = '{"a": 1, "b": 22}'
HARMONY_CALL = "<|channel|>commentary to=functions.add <|constrain|>json<|message|>" + ADD + "<|call|>"
#: (format, <think> reasoning, output, [(item type, its text, arguments or input)])
CASES = [
    ("generic", False, ' Hi there. <tool_call>{"name": "add", "arguments": ' + ADD + '}</tool_call>\n\nThen '
     '<tool_call>{"name": "note", "arguments": {"input": "a \\"b\\""}}</tool_call>',
     [("message", "Hi there.", None), ("function_call", None, ADD), ("message", "Then", None),
      ("custom_tool_call", None, 'a "b"')]),
    ("harmony", False, "<|channel|>analysis<|message|>Add them.<|end|><|start|>assistant" + HARMONY_CALL,
     [("reasoning", "Add them.", None), ("function_call", None, ADD)]),
    ("harmony", False, "<|channel|>analysis<|message|>One.<|end|><|start|>assistant" + HARMONY_CALL +
     "<|start|>assistant<|channel|>analysis<|message|>Two.<|end|><|start|>assistant<|channel|>final<|message|>"
     "Done: 23.<|return|>",
     [("reasoning", "One.", None), ("function_call", None, ADD), ("reasoning", "Two.", None),
      ("message", "Done: 23.", None)]),
    ("qwen", True, '<think>\nSum.\n</think>\n\n<tool_call>\n{"name": "add", "arguments": ' + ADD + '}\n</tool_call>',
     [("reasoning", "Sum.", None), ("function_call", None, ADD)]),
    (None, True, "<think>Hmm</think> An answer.", [("reasoning", "Hmm", None), ("message", "An answer.", None)]),
    (None, False, "", [("message", "", None)]),
]


def constraint(fmt, reasoning: bool) -> Constraint:
    return Constraint(tools=TOOLS if fmt else None, tool_format=fmt or "generic", reasoning=reasoning)


def streamed(c: Constraint, text: str, size: int) -> tuple[list, list[dict]]:
    items = OutputItems(c)
    events = [e for at in range(0, len(text), size) for e in items.feed(text[at:at + size])]
    return events + items.feed("", final=True), items.items


def shape(items: list[dict]) -> list[tuple]:
    out = []
    for it in items:
        text = it["content"][0]["text"] if it["type"] == "message" else \
            it["summary"][0]["text"] if it["type"] == "reasoning" else None
        out.append((it["type"], text, it.get("arguments", it.get("input"))))
    return out


def bare(items: list[dict]) -> list[dict]:
    return [{k: v for k, v in it.items() if k not in ("id", "call_id")} for it in items]


@pytest.mark.parametrize("fmt,reasoning,text,expected", CASES)
def test_items_in_the_order_written_and_the_same_in_any_pieces(fmt, reasoning, text, expected):
    c = constraint(fmt, reasoning)
    whole = OutputItems(c)
    whole.feed(text, final=True)
    assert shape(whole.items) == expected
    for it in whole.items:
        ITEM.validate_python(it)
    for size in (1, 2, 3, 7, 50):
        events, items = streamed(c, text, size)
        assert bare(items) == bare(whole.items), size
        runs = lifecycle(events)
        assert [r["item"] for r in runs] == items
        for r in runs:
            if r["item"]["type"] in ("function_call", "custom_tool_call"):
                field = "arguments" if r["item"]["type"] == "function_call" else "input"
                assert "".join(r["deltas"]) == r["done"][field] == r["item"][field]
                assert len(r["deltas"]) > 1 or size >= len(r["item"][field]), (size, r["deltas"])


def lifecycle(events) -> list[dict]:
    """Each event valid for openai's types; the items' runs: added at the next index, the
    events between naming it, done before the next one is added."""
    runs: list[dict] = []
    for kind, fields in events:
        EVENT.validate_python({"type": kind, "sequence_number": 0, **fields})
        if kind == "response.output_item.added":
            assert not runs or "item" in runs[-1]
            assert fields["output_index"] == len(runs) and fields["item"].get("status", "in_progress") == "in_progress"
            runs.append({"id": fields["item"]["id"], "deltas": [], "done": None})
        elif kind == "response.output_item.done":
            assert fields["output_index"] == len(runs) - 1 and fields["item"]["id"] == runs[-1]["id"]
            runs[-1]["item"] = fields["item"]
        else:
            assert (fields["output_index"], fields["item_id"]) == (len(runs) - 1, runs[-1]["id"])
            assert "item" not in runs[-1]
            if kind.endswith(".delta"):
                runs[-1]["deltas"].append(fields["delta"])
            elif kind.endswith("arguments.done") or kind.endswith("input.done"):
                runs[-1]["done"] = fields
    assert all("item" in r for r in runs)
    return runs


def test_a_call_cut_short_is_incomplete_and_a_call_is_done_at_its_end():
    text = CASES[0][2]
    cut = text[:text.index(ADD) + 5]
    _, items = streamed(constraint("generic", False), cut, 4)
    assert shape(items)[-1] == ("function_call", None, ADD[:5]) and items[-1]["status"] == "incomplete"
    # the call's done events come as its end is read, not when the output ends
    c = constraint("generic", False)
    items_ = OutputItems(c)
    upto = text.index("</tool_call>") + len("</tool_call>")
    kinds = [k for k, _ in items_.feed(text[:upto])]
    assert kinds[-2:] == ["response.function_call_arguments.done", "response.output_item.done"]
    assert json.loads(items_.items[-1]["arguments"]) == {"a": 1, "b": 22}
