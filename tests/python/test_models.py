"""stencil.runtime.models: the default model written out as a transformers folder (save_model_folder,
for engines without a GGUF reader such as vLLM) is the same model: same tokens, same logits."""
from __future__ import annotations

import os

import pytest

from generation_model import default_model
from stencil.runtime.models import ModelError, load_model, save_model_folder


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


# ------------------------------------------------------------------ the converted-model cache

def _gguf_loads(monkeypatch) -> list:
    """Records each transformers load that converts a GGUF file (``gguf_file=``), calling through."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    calls = []
    for cls in (AutoModelForCausalLM, AutoTokenizer):
        real = cls.from_pretrained

        def spy(*args, _real=real, _cls=cls.__name__, **kw):
            if kw.get("gguf_file"):
                calls.append((_cls, kw["gguf_file"]))
            return _real(*args, **kw)
        monkeypatch.setattr(cls, "from_pretrained", spy)
    return calls


def test_second_load_reads_the_cache_without_converting(monkeypatch, model_cache_dir):
    import torch
    from stencil.runtime.models import converted_model_dir, default_model_path
    lm = default_model()  # the session's first load converted the file and kept it
    entry = converted_model_dir(default_model_path())
    assert entry.startswith(model_cache_dir) and os.path.isfile(os.path.join(entry, "model.safetensors"))
    written = os.stat(os.path.join(entry, "model.safetensors")).st_mtime_ns
    calls = _gguf_loads(monkeypatch)
    again = load_model(quiet=True)
    assert calls == [] and again.from_cache and again.name == lm.name
    assert os.stat(os.path.join(entry, "model.safetensors")).st_mtime_ns == written  # read, not rewritten
    assert not [f for f in os.listdir(os.path.dirname(entry)) if f.startswith(".partial-")]
    assert again.tokenizer_info.eos_token_ids == lm.tokenizer_info.eos_token_ids
    assert again.encode_prompt("Describe a cat.") == lm.encode_prompt("Describe a cat.")
    ids = torch.tensor([lm.encode_prompt("Describe a cat.")])
    with torch.no_grad():
        assert torch.equal(again.model(ids).logits, lm.model(ids).logits)  # the same weights, bit for bit


def test_cache_key_follows_the_file_and_the_folder_follows_the_variable(tmp_path, monkeypatch):
    from stencil.runtime.models import converted_model_dir, model_cache_dir
    f = tmp_path / "m.gguf"
    f.write_bytes(b"x" * 10)
    monkeypatch.setenv("STENCIL_CACHE_DIR", str(tmp_path / "c"))
    first = converted_model_dir(str(f))
    assert first.startswith(str(tmp_path / "c")) and converted_model_dir(str(f)) == first
    assert converted_model_dir(str(f), "bfloat16") != first
    os.utime(f, ns=(1, 1))  # a replaced or touched file converts again
    assert converted_model_dir(str(f)) != first
    monkeypatch.delenv("STENCIL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_cache_dir() == str(tmp_path / "xdg" / "stencil")


def test_concurrent_writers_and_unwritable_cache(tmp_path):
    """A second writer finds the entry in place: it keeps the first one and leaves no partial folder;
    a cache that cannot be written is a False, not an error."""
    from tiny_model import tiny_model_folder
    from stencil.runtime.models import _store_converted
    lm = load_model(tiny_model_folder(), quiet=True)
    entry = str(tmp_path / "models" / "tiny-float32-0")
    assert _store_converted(entry, lm.model, lm.tokenizer, "float32")
    first = os.stat(os.path.join(entry, "model.safetensors")).st_mtime_ns
    assert not _store_converted(entry, lm.model, lm.tokenizer, "float32")
    assert os.stat(os.path.join(entry, "model.safetensors")).st_mtime_ns == first
    assert sorted(os.listdir(tmp_path / "models")) == ["tiny-float32-0"]
    again = load_model(entry, quiet=True)
    assert again.tokenizer_info.vocab_size == lm.tokenizer_info.vocab_size
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert not _store_converted(str(blocker / "models" / "x"), lm.model, lm.tokenizer, "float32")
