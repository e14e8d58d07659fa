"""The llama-cpp-python LogitsProcessor (stencil.integrations.llama_cpp).

Without llama-cpp-python: the processor is driven as llama.cpp drives it (all ids so far, the
next token's float32 logits) with the GGUF tokenizer of the default model, and its masking is
compared with stencil's Matcher step by step. With it (make test-integrations): the default GGUF
model under the 10 JSON Schemas of integration_schemas (in the repository), every output valid.
The generation runs in a child process (llama_cpp_child.py), so a crash of llama.cpp itself fails
the test with the signal and the step it was at.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import stencil
import stencil.runtime
import tokenizers_zoo
from stencil.integrations.llama_cpp import GrammarLogitsProcessor, tokenizer_info_for_llama

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
needs_llama = pytest.mark.skipif(not HAVE_LLAMA, reason="needs llama-cpp-python: make test-integrations")


@pytest.fixture(scope="module")
def zoo():
    return tokenizers_zoo.get("smollm2-gguf")


def test_processor_masks_like_the_matcher(zoo):
    info = zoo.info
    g = stencil.GrammarCompiler(info).compile_json_schema({"type": "array", "items": {"type": "integer"},
                                                           "maxItems": 3})
    proc = GrammarLogitsProcessor(g)
    ref = stencil.Matcher(g)
    prompt = np.array(zoo.encode_batch(["List three numbers: "])[0], dtype=np.intc)
    out = zoo.encode_batch(["[1, 22, 333]"])[0] + [info.eos_token_ids[0]]
    rng = np.random.default_rng(3)
    ids = prompt
    for step, t in enumerate(out):
        scores = rng.standard_normal(info.vocab_size).astype(np.single)
        before = scores.copy()
        res = proc(ids, scores)
        assert res is scores
        bm = stencil.allocate_token_bitmask(1, info.vocab_size)
        ref.fill_next_token_bitmask(bm, 0)
        allowed = np.unpackbits(bm[0].view(np.uint8), bitorder="little")[:info.vocab_size].astype(bool)
        assert np.array_equal(np.isfinite(scores), allowed), f"step {step}"
        assert np.array_equal(scores[allowed], before[allowed])       # allowed logits untouched
        assert allowed[t]
        assert ref.accept_token(t)
        ids = np.append(ids, np.intc(t))
    proc(ids, np.zeros(info.vocab_size, np.single))
    assert proc.matcher.is_terminated()
    # a new completion with the same processor: a shorter input starts over
    scores = np.zeros(info.vocab_size, np.single)
    proc(prompt, scores)
    assert not proc.matcher.is_terminated() and np.isfinite(scores[out[0]])


def test_max_tokens_gives_budget_masks(zoo):
    """With max_tokens the processor's masks are the matcher's budget-aware ones, counting the
    tokens generated since the prompt; they close an open array in time."""
    info = zoo.info
    g = stencil.GrammarCompiler(info).compile_json_schema({"type": "array", "items": {"type": "integer"}})
    proc = GrammarLogitsProcessor(g, max_tokens=6)
    ref = stencil.Matcher(g)
    ids = np.array(zoo.encode_batch(["Numbers: "])[0], dtype=np.intc)
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    for step in range(6):
        scores = np.zeros(info.vocab_size, np.single)
        proc(ids, scores)
        ref.fill_next_token_bitmask(bm, 0, remaining_tokens=6 - step)
        allowed = np.unpackbits(bm[0].view(np.uint8), bitorder="little")[:info.vocab_size].astype(bool)
        assert np.array_equal(np.isfinite(scores), allowed), f"step {step}"
        t = int(np.flatnonzero(np.isfinite(scores))[-1])  # the highest allowed id: some digit run
        if t in info.eos_token_ids:
            break
        assert ref.accept_token(t)
        ids = np.append(ids, np.intc(t))
    assert ref.is_accepting() or ref.is_terminated()  # closed within the 6 tokens
    with pytest.raises(ValueError, match="max_tokens"):
        GrammarLogitsProcessor(g, max_tokens=0)


def test_token_outside_the_grammar_is_an_error(zoo):
    g = stencil.GrammarCompiler(zoo.info).compile_regex("[0-9]+")
    proc = GrammarLogitsProcessor(g)
    proc(np.array([1, 2], np.intc), np.zeros(zoo.info.vocab_size, np.single))
    bad = zoo.info.token_id("a")
    with pytest.raises(ValueError, match=f"token {bad} produced by llama.cpp is not allowed"):
        proc(np.array([1, 2, bad], np.intc), np.zeros(zoo.info.vocab_size, np.single))
    with pytest.raises(TypeError, match="needs a CompiledGrammar"):
        GrammarLogitsProcessor("[0-9]+")


@pytest.fixture(scope="module")
def llm():
    if not HAVE_LLAMA:
        pytest.skip("needs llama-cpp-python: make test-integrations")
    from llama_cpp import Llama
    return Llama(stencil.runtime.default_model_path(), n_ctx=2048, n_threads=2, seed=0, verbose=False)


@needs_llama
def test_tokenizer_bridge_matches_llama_cpp(llm, zoo):
    info = tokenizer_info_for_llama(llm)
    assert info.vocab_size == llm.n_vocab() and llm.token_eos() in info.eos_token_ids
    text = '{"name": "Ada Lovelace", "born": 1815}'
    ids = llm.tokenize(text.encode(), add_bos=False, special=False)
    assert info.decode_bytes(ids) == text.encode()


@needs_llama
def test_ten_schema_outputs_are_valid(tmp_path):
    """The default GGUF model under ten schemas, greedy: each output complete and valid; on three,
    opportunistic=True writes the text of full masks with fewer masks. A native crash (llama.cpp's,
    with or without stencil) is a failure naming the signal."""
    from integration_schemas import SCHEMAS, check_instance
    jsonschema = pytest.importorskip("jsonschema")
    child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama_cpp_child.py")
    out = tmp_path / "outputs.json"
    run = subprocess.run([sys.executable, child, str(out)], capture_output=True, text=True, timeout=1200)
    where = (run.stdout.strip().splitlines() or ["loading the model"])[-1]
    assert run.returncode == 0, (f"llama-cpp-python exited with {run.returncode} (a negative code is a signal) "
                                 f"at: {where}\n{run.stderr[-2000:]}")
    result = json.loads(out.read_text())
    assert result["plain"], "the plain completion is empty"
    assert [o[0] for o in result["outputs"]] == [name for name, _ in SCHEMAS]
    failures = []
    for (name, schema), (_, text, finish, complete) in zip(SCHEMAS, result["outputs"]):
        try:
            assert complete, "not complete"
            check_instance(schema, text)
        except (ValueError, AssertionError, jsonschema.ValidationError) as e:
            failures.append(f"{name}: {finish}: {text!r}: {e}")
    assert not failures, "\n".join(failures)
    # GrammarLogitsProcessor(opportunistic=True), greedy without penalties: the text of full masks
    assert len(result["opportunistic"]) == 3
    for name, full_text, opp_text, full_masks, opp_masks in result["opportunistic"]:
        assert opp_text == full_text, (name, full_text, opp_text)
        assert opp_masks < full_masks, (name, opp_masks, full_masks)


def test_opportunistic_greedy_is_the_masked_output(lm):
    """opportunistic=True, driven as llama.cpp drives the processor at temperature 0 without
    penalties (the argmax of the logits it returns is the token), with the default model's own
    logits: the same tokens as with a mask at every step, and fewer masks."""
    import torch
    torch.set_num_threads(1)
    info = lm.tokenizer_info
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "born": {"type": "integer"}},
              "required": ["name", "born"]}
    g = stencil.GrammarCompiler(info).compile_json_schema(schema)
    prompt = lm.encode_prompt("Give a famous mathematician and the year of birth as JSON.")
    eos = set(info.eos_token_ids)

    def complete(proc) -> list[int]:
        ids = list(prompt)
        with torch.inference_mode():
            for _ in range(40):
                logits = lm.model(input_ids=torch.tensor([ids])).logits[0, -1].float().numpy().astype(np.single)
                t = int(np.argmax(proc(np.array(ids, np.intc), logits)))
                if t in eos:
                    break
                ids.append(t)
        return ids[len(prompt):]

    full = GrammarLogitsProcessor(g, max_tokens=40)
    opp = GrammarLogitsProcessor(g, max_tokens=40, opportunistic=True)
    out = complete(full)
    assert complete(opp) == out
    m = stencil.Matcher(g)
    assert m.accept_tokens(out) == len(out) and m.is_accepting()
    assert 0 < opp.masks_computed < full.masks_computed / 2, (opp.masks_computed, full.masks_computed)
