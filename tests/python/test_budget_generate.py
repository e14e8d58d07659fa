"""Budget-aware generation with the real default model (issue 18, part 1): stencil.runtime.generate, the
transformers LogitsProcessor and the CLI end valid within max_tokens, refuse at the start a
budget that cannot hold the shortest output, and leave the output unchanged where the budget does
not bind. (The 20-schema demonstration is ``python -m benchmarks.budget generate``.)"""
from __future__ import annotations

import json

import pytest

import stencil
from generation_model import default_model
from stencil import cli

jsonschema = pytest.importorskip("jsonschema")

# A free-text property the model fills at length when asked to: without the budget a small
# max_tokens cuts the output inside the string.
STORY = {"type": "object", "properties": {"title": {"type": "string"}, "story": {"type": "string"},
                                          "year": {"type": "integer"}},
         "required": ["title", "story", "year"]}
PROMPT = "Write a very long and detailed story about a dragon and a knight, with many paragraphs."


@pytest.fixture(scope="module")
def lm():
    return default_model()


def _valid(text: str, schema) -> bool:
    try:
        jsonschema.validators.validator_for(schema)(schema).validate(json.loads(text))
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


@pytest.mark.parametrize("temperature,seed", [(0.0, None), (0.8, 3)])
def test_generate_ends_valid_at_the_budget(lm, temperature, seed):
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_json_schema(STORY, whitespace="compact",
                                                                        string_spelling="plain")
    need = stencil.Matcher(g).min_completion_tokens()
    limit = need + 12
    on = stencil.runtime.generate(lm, g, PROMPT, max_tokens=limit, temperature=temperature, seed=seed)
    assert len(on.token_ids) <= limit and on.complete and _valid(on.text, STORY), on.text
    off = stencil.runtime.generate(lm, g, PROMPT, max_tokens=limit, temperature=temperature, seed=seed, budget=False)
    # The same run without the budget is cut inside the story (what the issue reports).
    assert off.finish_reason == "max_tokens" and not off.complete and not _valid(off.text, STORY), off.text


def test_generate_refuses_a_budget_below_the_shortest_output(lm):
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_regex("[a-z]{20}")
    need = stencil.Matcher(g).min_completion_tokens()
    assert 1 < need <= 20  # real tokens: several letters each
    with pytest.raises(ValueError, match=rf"needs up to {need} tokens, more than max_tokens \({need - 1}\)"):
        stencil.runtime.generate(lm, g, "Spell a long word.", max_tokens=need - 1)
    out = stencil.runtime.generate(lm, g, "Spell a long word.", max_tokens=need - 1, budget=False)
    assert out.finish_reason == "max_tokens" and out.complete is False


def test_output_unchanged_where_the_budget_does_not_bind(lm):
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_json_schema(
        {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
         "required": ["name", "age"]}, whitespace=2, string_spelling="plain")
    prompt = "Describe a person as JSON with a name and an age."
    on = stencil.runtime.generate(lm, g, prompt, max_tokens=200, repetition_penalty=1.1)
    off = stencil.runtime.generate(lm, g, prompt, max_tokens=200, repetition_penalty=1.1, budget=False)
    assert on.text == off.text and on.token_ids == off.token_ids and on.finish_reason != "max_tokens"


def test_transformers_processor_keeps_rows_valid_within_max_new_tokens(lm):
    torch = pytest.importorskip("torch")
    from stencil.integrations.transformers import GrammarLogitsProcessor
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_json_schema(STORY, whitespace="compact",
                                                                        string_spelling="plain")
    limit = stencil.Matcher(g).min_completion_tokens() + 10
    text = lm.tokenizer.apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True,
                                            tokenize=False)
    enc = lm.tokenizer(text, return_tensors="pt", add_special_tokens=False)
    proc = GrammarLogitsProcessor(g, max_new_tokens=limit)
    eos = lm.tokenizer_info.eos_token_ids
    out = lm.model.generate(**enc, logits_processor=[proc], max_new_tokens=limit, do_sample=False,
                            eos_token_id=eos, pad_token_id=eos[0])
    new = [t for t in out[0, enc["input_ids"].shape[1]:].tolist() if t not in eos]
    assert len(new) <= limit
    assert _valid(lm.tokenizer_info.decode_bytes(new).decode(), STORY)
    with pytest.raises(ValueError, match="needs up to"):
        lm.model.generate(**enc, logits_processor=[GrammarLogitsProcessor(g, max_new_tokens=3)], max_new_tokens=3,
                          eos_token_id=eos, pad_token_id=eos[0])
    with pytest.raises(ValueError, match="max_new_tokens must be an int >= 1"):
        GrammarLogitsProcessor(g, max_new_tokens=0)
    assert torch is not None


def test_cli_budget(capsys, monkeypatch, lm):
    import stencil.runtime.models
    monkeypatch.setattr(stencil.runtime.models, "load_model", lambda *a, **k: lm)
    need = stencil.Matcher(stencil.GrammarCompiler(lm.tokenizer_info).compile_regex("[a-z]{20}")).min_completion_tokens()
    code = cli.main(["generate", "--regex", "[a-z]{20}", "--prompt", "Spell a long word.", "--max-tokens",
                     str(need - 1)])
    out, err = capsys.readouterr()
    assert code == 2 and f"needs up to {need} tokens" in err and "--no-budget" in err and out == ""
    code = cli.main(["generate", "--regex", "[a-z]{20}", "--prompt", "Spell a long word.", "--max-tokens", "20"])
    out, err = capsys.readouterr()
    assert code == 0 and len(out.strip()) == 20
