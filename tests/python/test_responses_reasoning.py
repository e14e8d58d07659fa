"""Responses API reasoning as a summary (issue 44), through the official openai client: a request's
``reasoning`` lets a model that thinks write its reasoning first (a ``<think>`` block under Qwen3's
template; gpt-oss's analysis channel), answered as a ``reasoning`` item whose ``summary_text`` is
that reasoning, and streamed as the openai package's events (``response.reasoning_summary_part.added``,
``response.reasoning_summary_text.delta`` / ``.done``, ``response.reasoning_summary_part.done``),
with tool calls and with free text; a past answer's reasoning items sent back as input are taken
(an agent loop passes ``response.output`` on). Random-weight models over the families' real
tokenizers and templates (tests.support.tool_models): the structure is the grammar's doing.
"""
from __future__ import annotations

import json

import pytest

for _m in ("openai", "fastapi", "uvicorn", "transformers", "torch"):
    pytest.importorskip(_m)

from tests.support.schema_generator import tool_set  # noqa: E402
from tests.support.tool_models import build_model, serve  # noqa: E402

TOOLS = [{"type": "function", "name": t["function"]["name"], "parameters": t["function"]["parameters"]}
         for t in tool_set(2, seed=3)]
SUMMARY_EVENTS = ["response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
                  "response.reasoning_summary_text.done", "response.reasoning_summary_part.done"]


@pytest.fixture(scope="module", params=["qwen", "harmony"])
def served(request):
    import openai
    lm = build_model(request.param)
    url, stop = serve(lm)
    client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=300)
    yield request.param, client, client.models.list().data[0].id
    stop()


def summary_of(item) -> str:
    assert item.type == "reasoning" and [p.type for p in item.summary] == ["summary_text"], item
    return item.summary[0].text


@pytest.mark.parametrize("tools", [False, True], ids=["text", "tools"])
def test_reasoning_item_with_summary(served, tools):
    family, client, model = served
    kw = dict(model=model, input="Think, then answer.", reasoning={"effort": "low", "summary": "auto"},
              max_output_tokens=96, temperature=1.0, extra_body={"seed": 5})
    if tools:
        kw.update(tools=TOOLS, tool_choice="required")
    r = client.responses.create(**kw)
    _assert_reasoning_first(r.output, tools)
    assert r.reasoning.effort == "low" and r.reasoning.summary == "auto"
    # the reasoning's tokens, counted: some, and fewer than the output's where a call follows (a
    # random model's text answer may be cut inside its reasoning: all of them)
    thought, out = r.usage.output_tokens_details.reasoning_tokens, r.usage.output_tokens
    assert 0 < thought < out if tools else 0 < thought <= out, r.usage

    # streamed: the same request's events, typed by the openai package, in the order OpenAI sends them
    events = list(client.responses.create(stream=True, **kw))
    names = [e.type for e in events]
    first = [n for n in names if n.startswith("response.reasoning_summary")]
    assert first[0] == SUMMARY_EVENTS[0] and first[-2:] == SUMMARY_EVENTS[2:], first
    deltas = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    done = next(e for e in events if e.type == "response.reasoning_summary_text.done")
    part = next(e for e in events if e.type == "response.reasoning_summary_part.done")
    final = next(e for e in events if e.type in ("response.completed", "response.incomplete")).response
    assert deltas == done.text == part.part.text == summary_of(final.output[0])
    assert done.item_id == final.output[0].id and done.summary_index == 0 and done.output_index == 0
    # The same items in the same order, not the same text: with a seed, a sampled token may still
    # differ between two runs of a request, as the passes' shapes (drafts, other rows) change the
    # logits' rounding, and a random model's near-uniform distribution has near ties everywhere.
    _assert_reasoning_first(final.output, tools)


def _assert_reasoning_first(output, tools: bool) -> None:
    """A reasoning item with a summary, then a call first where one is required (text may follow
    the calls where the format lets it), else the message."""
    kinds = [it.type for it in output]
    assert kinds[0] == "reasoning", kinds
    assert summary_of(output[0]).strip(), output[0]
    assert kinds[1] == "function_call" and set(kinds[2:]) <= {"function_call", "message"} if tools \
        else kinds[1:] == ["message"], kinds


def test_reasoning_items_come_back_as_input(served):
    """An agent loop's second turn: the first answer's items (reasoning, calls) and the calls'
    outputs as input; the reasoning item is taken (it was a 400), and a malformed one named."""
    import openai
    family, client, model = served
    kw = dict(model=model, reasoning={"summary": "auto"}, tools=TOOLS, max_output_tokens=96, temperature=0)
    first = client.responses.create(input="Go.", tool_choice="required", **kw)
    history = [{"role": "user", "content": "Go."}, *[it.model_dump(exclude_none=True) for it in first.output]]
    history += [{"type": "function_call_output", "call_id": it.call_id, "output": json.dumps({"ok": True})}
                for it in first.output if it.type == "function_call"]
    second = client.responses.create(input=history, **kw)
    assert second.status in ("completed", "incomplete") and second.usage.input_tokens > first.usage.input_tokens
    bad = dict(history[1], summary=[{"type": "summary_text"}])
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(input=[history[0], bad], **kw)
    assert e.value.body["param"] == "input[1].summary[0].text"   # (the part without its text)
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(input="Go.", **{**kw, "reasoning": {"effort": "huge"}})
    assert e.value.body["param"] == "reasoning.effort"
