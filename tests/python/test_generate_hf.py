"""GrammarLogitsProcessor inside transformers' own model.generate, with the real default model:
a left-padded batch with one grammar per row, greedy and sampled; one grammar for all rows."""
from __future__ import annotations

import re

import numpy as np
import pytest

import stencil

torch = pytest.importorskip("torch")


def _batch(lm, prompts):
    tok = lm.tokenizer
    texts = [tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False)
             for p in prompts]
    side = tok.padding_side
    tok.padding_side = "left"
    try:
        return tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    finally:
        tok.padding_side = side


def _run(lm, enc, proc, **kw):
    from stencil.integrations.transformers import GrammarLogitsProcessor  # noqa: F401  (import check)
    out = lm.model.generate(**enc, logits_processor=[proc], max_new_tokens=kw.pop("max_new_tokens", 16),
                            eos_token_id=lm.tokenizer_info.eos_token_ids, pad_token_id=lm.tokenizer_info.eos_token_ids[0],
                            **kw)
    eos = set(lm.tokenizer_info.eos_token_ids)
    rows = []
    for r in out[:, enc["input_ids"].shape[1]:].tolist():
        ended = any(t in eos for t in r)
        rows.append((lm.tokenizer_info.decode_bytes([t for t in r[:r.index(next(t for t in r if t in eos))]]
                                                    if ended else r).decode(), ended))
    return rows


@pytest.mark.parametrize("sample", [False, True])
def test_batch_one_grammar_per_row(lm, sample):
    from stencil.integrations.transformers import GrammarLogitsProcessor
    c = stencil.GrammarCompiler(lm.tokenizer_info)
    patterns = [r"(yes|no)", r"[0-9]{4}", r"[A-Z][a-z]{1,9}"]
    prompts = ["Is the sky blue? Answer yes or no.", "In which year did the Berlin wall fall?",
               "Give the last name of a famous physicist."]
    enc = _batch(lm, prompts)
    assert enc["attention_mask"].sum(1).unique().numel() > 1  # the batch really is padded
    proc = GrammarLogitsProcessor([c.compile_regex(p) for p in patterns])
    kw = {"do_sample": True, "temperature": 0.9, "top_k": 0} if sample else {"do_sample": False}
    torch.manual_seed(7)
    rows = _run(lm, enc, proc, **kw)
    for (text, ended), pat in zip(rows, patterns):
        assert ended, f"row for {pat} did not end with EOS: {text!r}"
        assert re.fullmatch(pat, text), (pat, text)


def test_one_grammar_for_the_batch_and_reuse(lm):
    from stencil.integrations.transformers import GrammarLogitsProcessor
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_regex(r"(yes|no|maybe)")
    proc = GrammarLogitsProcessor(g)
    enc = _batch(lm, ["Is water wet?", "Do fish fly? Answer with one word please."])
    first = _run(lm, enc, proc, do_sample=False)
    assert all(ended and text in ("yes", "no", "maybe") for text, ended in first)
    assert len(proc.matchers) == 2
    # The same processor serves a second generate call: it starts over from the new prompt.
    second = _run(lm, enc, proc, do_sample=False)
    assert second == first


def test_processor_rejects_foreign_tokens(lm):
    from stencil.integrations.transformers import GrammarLogitsProcessor
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_regex(r"[0-9]+")
    proc = GrammarLogitsProcessor(g)
    vocab = lm.model.get_output_embeddings().weight.shape[0]
    ids = torch.tensor([[1, 2, 3]])
    scores = torch.zeros(1, vocab)
    proc(ids, scores)
    # the row keeps exactly the tokens stencil's own matcher allows at the start (digits), no others
    bm = stencil.allocate_token_bitmask(1, vocab)
    stencil.Matcher(g).fill_next_token_bitmask(bm, 0)
    allowed = np.unpackbits(bm[0].view(np.uint8), bitorder="little")[:vocab].astype(bool)
    assert 0 < allowed.sum() < vocab
    np.testing.assert_array_equal(torch.isfinite(scores[0]).numpy(), allowed)
    letter = lm.tokenizer.encode("a", add_special_tokens=False)[0]
    with pytest.raises(ValueError, match="not allowed"):
        proc(torch.tensor([[1, 2, 3, letter]]), torch.zeros(1, vocab))
    with pytest.raises(ValueError, match="grammars for a batch"):
        GrammarLogitsProcessor([g, g])(torch.tensor([[1], [2], [3]]), torch.zeros(3, vocab))


def test_opportunistic_greedy_is_the_masked_output(lm):
    """opportunistic=True: rows whose argmax the grammar allows keep their scores; greedy output is
    the same as with a mask at every step, with fewer masks (a left-padded batch, budgets)."""
    from stencil.integrations.transformers import GrammarLogitsProcessor
    c = stencil.GrammarCompiler(lm.tokenizer_info)
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "year": {"type": "integer"}},
              "required": ["name", "year"]}
    grammars = [c.compile_json_schema(schema), c.compile_regex(r"[0-9]{4}"), c.compile_regex(r"[A-Z][a-z]{1,9}")]
    enc = _batch(lm, ["Give a famous physicist and the year of a discovery as JSON.",
                      "In which year did the Berlin wall fall?", "Give the last name of a famous physicist."])
    full = GrammarLogitsProcessor(grammars, max_new_tokens=24)
    opp = GrammarLogitsProcessor(grammars, max_new_tokens=24, opportunistic=True)
    rows_full = _run(lm, enc, full, do_sample=False, max_new_tokens=24)
    rows_opp = _run(lm, enc, opp, do_sample=False, max_new_tokens=24)
    assert rows_opp == rows_full
    for (text, _), g in zip(rows_full, grammars):   # complete within the budget
        m = stencil.Matcher(g)
        assert m.accept_string(text) and m.is_accepting(), text
    assert 0 < opp.masks_computed < full.masks_computed / 2, (opp.masks_computed, full.masks_computed)
