"""`python -m benchmarks.gpu --serve` without a GPU: its server half (structured against
unconstrained decode steps at equal lengths) runs end to end on the CPU with a small Llama-shaped
model of random weights, so that the GPU run a task is lent is not the first run of this code."""
from __future__ import annotations

import argparse
import math

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("fastapi")
pytest.importorskip("openai")


def test_serve_steps_runs_on_cpu_with_random_weights(tmp_path, capsys):
    from transformers import PreTrainedTokenizerFast

    from benchmarks.gpu import serve_steps
    from tests.support.tokenizers import smollm2_hf

    tok = PreTrainedTokenizerFast(tokenizer_object=smollm2_hf(), bos_token="<|im_start|>", eos_token="<|im_end|>")
    tok.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                         "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    tok.save_pretrained(tmp_path)
    args = argparse.Namespace(random_weights=str(tmp_path), model=None, dtype="float32", clients="2,3",
                              max_tokens=6, regex="[a-z ]+", mask_threads="auto,1", repeats=2)
    ratios = serve_steps(args, device="cpu", layers=2, hidden=64)
    out = capsys.readouterr().out
    assert len(ratios) == 4 and all(math.isfinite(r) and r > 0 for r in ratios), ratios
    # every row ran to max_tokens in both modes, and the structured rows match the regex
    # (ABBA: two runs of each kind per count and setting)
    assert out.count("all equal") == 16 and "UNEQUAL" not in out
    assert "2/2 match" in out and "3/3 match" in out
    assert out.count("per-step time structured / unconstrained") == 4
