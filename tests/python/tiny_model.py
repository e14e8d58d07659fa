"""A tiny random-weight Llama model folder (byte-level tokenizer, 2 layers, hidden size 64), built
in a second from nothing: for tests of how a model is loaded (device, dtype), not of what it says."""
from __future__ import annotations

import functools
import os
import tempfile

import pytest


@functools.lru_cache(maxsize=1)
def _build() -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    vocab = {c: i for i, c in enumerate(sorted(byte_chars))}
    vocab["<eos>"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
                         eos_token_id=vocab["<eos>"], bos_token_id=vocab["<eos>"])
    import torch
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    folder = os.path.join(tempfile.mkdtemp(prefix="stencil-tiny-model-"), "tiny-llama")
    model.save_pretrained(folder)
    hf.save_pretrained(folder)
    return folder


def tiny_model_folder() -> str:
    """Path of the folder (built once per test process), or a skip without torch and transformers."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    return _build()
