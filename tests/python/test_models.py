"""stencil.models: the default model written out as a transformers folder (save_model_folder,
for engines without a GGUF reader such as vLLM) is the same model: same tokens, same logits."""
from __future__ import annotations

import os

import pytest

from generation_model import default_model
from stencil.models import ModelError, load_model, save_model_folder


def test_saved_folder_is_the_same_model(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    lm = default_model()
    folder = save_model_folder(str(tmp_path / "smollm2"), lm)
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(os.listdir(folder))
    tok = AutoTokenizer.from_pretrained(folder)
    prompt = lm.encode_prompt("Describe a cat as JSON.")
    assert list(tok.apply_chat_template([{"role": "user", "content": "Describe a cat as JSON."}],
                                        add_generation_prompt=True, tokenize=True, return_dict=False)) == prompt
    plain = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    assert getattr(plain, "hf_quantizer", None) is None
    assert plain.generation_config.eos_token_id == lm.model.generation_config.eos_token_id
    ids = torch.tensor([prompt])
    with torch.no_grad():
        torch.testing.assert_close(plain(ids).logits, lm.model(ids).logits)
    # and stencil loads it back as a transformers folder, with the same vocabulary
    again = load_model(folder, quiet=True)
    assert again.tokenizer_info.vocab_size == lm.tokenizer_info.vocab_size
    assert again.tokenizer_info.eos_token_ids == lm.tokenizer_info.eos_token_ids


def test_save_into_a_file_is_a_model_error(tmp_path):
    lm = default_model()
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ModelError, match="could not write the model folder"):
        save_model_folder(str(blocker), lm)
