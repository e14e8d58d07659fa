"""stencil.runtime.generate with the real default model: every output is in the grammar's language and
ends by EOS or by the grammar's end; forced tokens and drafts do not change greedy output."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

import stencil
import stencil.runtime
from stencil.grammar.json.value import json_value

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def compiler(lm):
    return stencil.GrammarCompiler(lm.tokenizer_info)


PERSON = r'\{"name": "[A-Z][a-z]{1,12}", "age": [1-9][0-9]?\}'


@pytest.mark.parametrize("temperature,seed", [(0.0, None), (0.8, 1), (1.2, 2)])
def test_regex(lm, compiler, temperature, seed):
    g = compiler.compile_regex(PERSON)
    out = stencil.runtime.generate(lm, g, "Describe a person as JSON with a name and an age.", max_tokens=40,
                                   temperature=temperature, seed=seed)
    assert re.fullmatch(PERSON, out.text), out.text
    assert out.finish_reason in ("eos", "grammar")
    assert out.token_ids and lm.tokenizer_info.decode_bytes(out.token_ids).decode() == out.text


@pytest.mark.parametrize("temperature,seed", [(0.0, None), (1.0, 3)])
def test_choices(lm, compiler, temperature, seed):
    choices = ["red", "green", "blue", "light blue"]
    g = compiler.compile_choice(choices)
    out = stencil.runtime.generate(lm, g, "What color is grass? Answer red, green, blue or light blue.", max_tokens=10,
                                   temperature=temperature, seed=seed)
    assert out.text in choices
    assert out.finish_reason in ("eos", "grammar")


NESTED_GBNF = r'''
root  ::= list
list  ::= "[" ( elem ( ", " elem )* )? "]"
elem  ::= num | list
num   ::= [1-9] [0-9]? [0-9]?
'''


def _nested_ok(v) -> bool:
    return isinstance(v, list) and all((isinstance(x, int) and 1 <= x <= 999) or _nested_ok(x) for x in v)


@pytest.mark.parametrize("temperature,seed", [(0.0, None), (0.9, 4)])
def test_gbnf_recursive(lm, compiler, temperature, seed):
    g = compiler.compile_gbnf(NESTED_GBNF)
    out = stencil.runtime.generate(lm, g, "Write a short nested list of small numbers, like [1, [2, 3]].", max_tokens=48,
                                   temperature=temperature, seed=seed)
    assert out.finish_reason in ("eos", "grammar"), out.text
    value = json.loads(out.text)
    assert _nested_ok(value), out.text
    assert ", ".join(out.text.split(", ")) == out.text and "  " not in out.text


@pytest.mark.parametrize("temperature,seed", [(0.0, None), (0.7, 5)])
def test_generic_json(lm, compiler, temperature, seed):
    b = stencil.GrammarBuilder()
    g = compiler.compile_grammar(b.build(json_value(b, max_whitespace_run=8)))
    out = stencil.runtime.generate(lm, g, "Give a JSON object for a cat with a name and an age.", max_tokens=80,
                                   temperature=temperature, seed=seed)
    assert out.finish_reason in ("eos", "grammar"), out.text
    json.loads(out.text)


def test_jump_forward_and_drafts_keep_greedy_output(lm, compiler):
    """Forced tokens and verified drafts are exact: greedy output is the same with and without."""
    g = compiler.compile_regex(PERSON)
    prompt = "Describe a famous scientist as JSON with a name and an age."
    plain = stencil.runtime.generate(lm, g, prompt, max_tokens=40, jump_forward=False, draft=False, speculate=False)
    fast = stencil.runtime.generate(lm, g, prompt, max_tokens=40, speculate=False)
    assert fast.text == plain.text and fast.token_ids == plain.token_ids
    assert fast.drafted_tokens > 0
    assert fast.forward_passes < plain.forward_passes
    assert plain.forward_passes == len(plain.token_ids) + (plain.finish_reason == "eos")


def test_forced_tokens_are_appended_without_sampling(lm, compiler):
    # After four digits only "!" can follow, and then only EOS: "!" is a forced token.
    g = compiler.compile_regex(r"[0-9]{4}!")
    m = stencil.Matcher(g)
    m.accept_string("1989")
    forced = m.forced_tokens()
    assert [lm.tokenizer_info.token_bytes(t) for t in forced] == [b"!"]
    plain = stencil.runtime.generate(lm, g, "In which year did the Berlin wall fall?", max_tokens=10, jump_forward=False,
                                     draft=False, speculate=False)
    fast = stencil.runtime.generate(lm, g, "In which year did the Berlin wall fall?", max_tokens=10, draft=False,
                                    speculate=False)
    assert fast.text == plain.text and re.fullmatch(r"[0-9]{4}!", fast.text)
    assert fast.forced_tokens >= 1 and plain.forced_tokens == 0
    assert fast.finish_reason == plain.finish_reason == "grammar"


def test_draft_verification_is_distribution_exact():
    """Keeping draft d where the row's draw is d, else the draw, is sampling from p: the token after
    a one-token draft (kept, or the draw that replaced it) is distributed as p."""
    from stencil.runtime.sampling import Sampler
    from stencil.runtime.speculative import verify
    logits = torch.tensor([1.0, 0.2, -0.5, 2.0, float("-inf")])
    p = torch.softmax(logits, -1).numpy()
    n = 20000
    for draft in (0, 3):
        s = Sampler(1.0, seed=123 + draft)
        got = []
        for _ in range(n):
            kept, t = verify(logits.repeat(2, 1), [draft], None, s, [])
            got.append(draft if kept else t)
        counts = np.bincount(got, minlength=5) / n
        assert counts[4] == 0
        assert np.max(np.abs(counts - p)) < 0.015, (counts, p)


def test_streaming_and_budget(lm, compiler):
    pieces = []
    g = compiler.compile_regex(r"[a-z ]+")
    out = stencil.runtime.generate(lm, g, "Say something long about the sea.", max_tokens=6, on_text=pieces.append)
    assert out.finish_reason == "max_tokens" and len(out.token_ids) == 6
    assert "".join(pieces) == out.text


def test_unconstrained_and_context(lm):
    out = stencil.runtime.generate(lm, None, "Say hello.", max_tokens=5)
    assert len(out.token_ids) <= 5 and out.finish_reason in ("eos", "max_tokens")
    with pytest.raises(ValueError, match="context"):
        stencil.runtime.generate(lm, None, input_ids=[1] * lm.context_length, max_tokens=5)


def test_no_deprecation_warning_in_the_streamed_text(lm, compiler, caplog):
    """transformers 5 deprecates ``past_key_values=`` with a FutureWarning (and a log line) on every
    forward pass; on a terminal it landed between the streamed pieces of the answer. The loop passes
    the cache under the name the model's forward takes, so nothing is printed."""
    import warnings
    g = compiler.compile_regex(r"[a-z]{3,8}")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = stencil.runtime.generate(lm, g, "Name an animal.", max_tokens=8, jump_forward=False, draft=False)
    assert out.token_ids
    assert [str(w.message) for w in seen if "past_key_values" in str(w.message)] == []
    assert "past_key_values" not in caplog.text


def test_messages_and_input_ids_are_the_same_prompt(lm, compiler):
    """generate(messages=...) applies the chat template to the messages, generate(input_ids=...)
    takes the ids as they are: the same conversation either way gives the same greedy output, and a
    different system message another prompt (issue 29, F6)."""
    g = compiler.compile_choice(["red", "green", "blue"])
    msgs = [{"role": "system", "content": "Answer with one colour."}, {"role": "user", "content": "Grass?"}]
    by_messages = stencil.runtime.generate(lm, g, messages=msgs, max_tokens=4)
    ids = lm.encode_prompt(messages=msgs)
    by_ids = stencil.runtime.generate(lm, g, input_ids=ids, max_tokens=4)
    assert by_messages.text == by_ids.text and by_messages.prompt_tokens == len(ids) == by_ids.prompt_tokens
    assert by_messages.text in ("red", "green", "blue")
    assert b"Answer with one colour." in lm.tokenizer_info.decode_bytes(ids)
    assert lm.encode_prompt("Grass?", system="Answer with one colour.") == ids
