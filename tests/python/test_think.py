"""Think, then constrain (issue 45, part 4): ``generate(..., think=...)`` writes a bounded free part,
then the answer under the grammar, within ``max_tokens``; the benchmark's task generator knows its
answers (checked here by reading each task's text again, not by its own formulas)."""
from __future__ import annotations

import json
import re

import pytest

import stencil
import stencil.runtime
from tests.support.think_tasks import ANSWER, PERSON, judge, task_set
from generation_model import default_model

QUESTION = "Tom has 12 apples. He buys 7 more apples. How many apples does Tom have now?"


@pytest.fixture(scope="module")
def lm():
    import torch
    torch.set_num_threads(1)   # the machine is shared: two threads of ours would wait on each other
    return default_model()


@pytest.fixture(scope="module")
def answer_grammar(lm):
    return stencil.GrammarCompiler(lm.tokenizer_info).compile_json_schema(ANSWER, whitespace="compact",
                                                                           key_spelling="plain")


def _solve(text: str) -> int:
    """The word problem's answer, read off its sentences: an independent reading of the text."""
    value = boxes = None
    steps = 0
    for sentence in re.split(r"(?<=[.?])\s+", text):
        if m := re.search(r"buys (\d+) boxes", sentence):
            boxes = int(m.group(1))
        elif m := re.search(r"Each box holds (\d+)", sentence):
            assert boxes is not None
            value = boxes * int(m.group(1))
        elif m := re.search(r"has (\d+) ", sentence):
            value = int(m.group(1))
        elif m := re.search(r"buys (\d+) more", sentence):
            assert value is not None
            value, steps = value + int(m.group(1)), steps + 1
        elif m := re.search(r"gives (\d+) ", sentence):
            assert value is not None
            value, steps = value - int(m.group(1)), steps + 1
    assert value is not None and steps + (boxes is not None) in (1, 2), text   # one or two steps
    return value


def test_the_task_generator_knows_its_answers():
    for seed in range(4):
        tasks = task_set(40, 20, seed)
        assert tasks == task_set(40, 20, seed)   # seeded
        for t in tasks:
            if t.kind == "arithmetic":
                assert _solve(t.question) == t.answer["answer"] > 0, t
            else:
                text = t.question.split("\n")[0]
                name = re.match(r"(\w+ \w+) was born", text).group(1)
                age = int(re.search(r"is (\d+) years old", text).group(1))
                city = re.search(r"now lives in (\w+)\.", text).group(1)
                assert t.answer == {"name": name, "age": age, "city": city}, t
                assert re.search(r"born in (\w+)", text).group(1) != city   # the distractor differs
    assert len({t.question for t in task_set(40, 20, 0)}) > 50
    # the judge: only a schema-valid answer with every field right counts
    t = task_set(0, 1, 0)[0]
    assert judge(t, json.dumps(t.answer)) == (True, True)
    assert judge(t, json.dumps({**t.answer, "age": t.answer["age"] + 1})) == (True, False)
    assert judge(t, json.dumps({k: v for k, v in t.answer.items() if k != "city"})) == (False, False)
    assert set(PERSON["required"]) == set(t.answer)


def test_think_writes_a_bounded_free_part_then_a_valid_answer(lm, answer_grammar):
    pieces: list[str] = []
    opts = stencil.runtime.ThinkOptions(max_tokens=8)
    out = stencil.runtime.generate(lm, answer_grammar, QUESTION + " Think step by step, then write 'Answer:' and the JSON.",
                           max_tokens=40, think=opts, on_text=pieces.append)
    assert out.thought and 0 < out.thought_tokens <= 8, out
    assert isinstance(json.loads(out.text)["answer"], int) and out.complete, out.text
    end_tokens = len(lm.tokenizer.encode(opts.end, add_special_tokens=False))
    assert out.thought_tokens + end_tokens + len(out.token_ids) <= 40
    # the stream: the free part, the marker (written by the model or appended), the answer
    assert "".join(pieces) == out.thought + opts.end + out.text
    assert out.prompt_tokens == len(lm.encode_prompt(QUESTION + " Think step by step, then write 'Answer:' and "
                                                     "the JSON."))


def test_the_free_part_stops_at_the_end_marker_the_model_writes(lm, answer_grammar):
    # "." comes at the end of the model's first sentence: the free part stops there, marker included
    out = stencil.runtime.generate(lm, answer_grammar, QUESTION, max_tokens=40,
                           think=stencil.runtime.ThinkOptions(max_tokens=25, end="."))
    # fewer than the 25 allowed: the model wrote "." (the grammar keeps any other "." out of the thought)
    assert out.thought and "." not in out.thought and out.thought_tokens < 25, out
    assert json.loads(out.text) and out.complete


def test_the_budget_holds_when_max_tokens_is_tight(lm, answer_grammar):
    need = stencil.Matcher(answer_grammar).min_completion_tokens()
    end = stencil.runtime.ThinkOptions().end
    end_tokens = len(lm.tokenizer.encode(end, add_special_tokens=False))
    limit = need + end_tokens + 3
    out = stencil.runtime.generate(lm, answer_grammar, QUESTION + " Explain at length.", max_tokens=limit,
                           think=stencil.runtime.ThinkOptions(max_tokens=50))
    # the free part gets only what the answer's shortest completion leaves, and the answer ends valid
    assert out.thought_tokens <= 3 and out.complete, out
    assert out.thought_tokens + end_tokens + len(out.token_ids) <= limit
    assert isinstance(json.loads(out.text)["answer"], int)
    with pytest.raises(ValueError, match="think needs max_tokens >="):
        stencil.runtime.generate(lm, answer_grammar, QUESTION, max_tokens=need + end_tokens - 1, think=True)


def test_an_empty_free_part_is_the_constrained_answer_after_the_marker(lm, answer_grammar):
    opts = stencil.runtime.ThinkOptions(max_tokens=0)
    out = stencil.runtime.generate(lm, answer_grammar, QUESTION, max_tokens=20, think=opts)
    ids = lm.encode_prompt(QUESTION) + list(lm.tokenizer.encode(opts.end, add_special_tokens=False))
    plain = stencil.runtime.generate(lm, answer_grammar, input_ids=ids, max_tokens=20 - (len(ids) - out.prompt_tokens))
    assert (out.thought, out.thought_tokens) == ("", 0)
    assert out.text == plain.text and out.token_ids == plain.token_ids


def test_draft_mode_answers_a_second_turn(lm, answer_grammar):
    out = stencil.runtime.generate(lm, answer_grammar, QUESTION + " Think step by step.", max_tokens=40,
                           think=stencil.runtime.ThinkOptions(max_tokens=8, mode="draft"))
    assert out.thought and 0 < out.thought_tokens <= 8
    assert isinstance(json.loads(out.text)["answer"], int) and out.complete
    assert out.thought_tokens + len(out.token_ids) <= 40
    with pytest.raises(ValueError, match="needs prompt or messages"):
        stencil.runtime.generate(lm, answer_grammar, input_ids=lm.encode_prompt(QUESTION), think=stencil.runtime.ThinkOptions(mode="draft"))


def test_think_refuses_what_it_cannot_do(lm, answer_grammar):
    with pytest.raises(ValueError, match="needs a grammar"):
        stencil.runtime.generate(lm, None, QUESTION, think=True)
    with pytest.raises(ValueError, match="heal"):
        stencil.runtime.generate(lm, answer_grammar, QUESTION, think=True, heal=True)
    with pytest.raises(ValueError, match="mode"):
        stencil.runtime.ThinkOptions(mode="later")
    with pytest.raises(ValueError, match="max_tokens"):
        stencil.runtime.ThinkOptions(max_tokens=-1)
    with pytest.raises(TypeError, match="think must be"):
        stencil.runtime.generate(lm, answer_grammar, QUESTION, think=5)
