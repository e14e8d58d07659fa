"""Readers for the tokenizer file formats that :class:`stencil.TokenizerInfo` ingests.

Each reader turns one format into a :class:`RawVocab`: the exact bytes of every token id, which
ids are special (with their names), and the EOS/BOS ids the format declares. Nothing here builds
the C++ vocabulary; ``stencil.tokenizer`` does that. Errors are :class:`stencil.GrammarError`
(a ``ValueError``) naming the source and what is wrong, or ``FileNotFoundError`` for a missing
file.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from stencil._core import GrammarError
from stencil.gguf_metadata import GGUFFormatError, read_gguf_metadata

METASPACE = "\u2581"  # "▁", SentencePiece's stand-in for a space
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")

# Names that end generation in the tokenizers we know of; matched against special tokens only.
EOS_NAMES = (
    "</s>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<\uff5cend\u2581of\u2581sentence\uff5c>",  # DeepSeek: <｜end▁of▁sentence｜>
    "<end_of_turn>",
    "<eos>",
    "<|eos|>",
    "<|return|>",
)
BOS_NAMES = ("<s>", "<|begin_of_text|>", "<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<bos>", "<|startoftext|>")


@dataclass
class RawVocab:
    """The tokenizer as read from a file, before the core builds its trie."""

    tokens: list  # list[bytes], index = token id; b"" for ids the tokenizer leaves unused
    special: dict = field(default_factory=dict)  # id -> name of special tokens
    eos_ids: list = field(default_factory=list)  # EOS ids the format declares explicitly
    bos_id: int | None = None
    kind: str = "raw"  # byte_level | sentencepiece | tiktoken | tekken | wordpiece | plain | raw
    add_prefix_space: bool = False
    pattern: str | None = None
    source: str = "<vocab>"


# --------------------------------------------------------------------------------------------
# helpers


def read_file_bytes(path: Any, what: str) -> tuple[bytes, str]:
    """Read a file given as str/PathLike; FileNotFoundError/GrammarError with the path."""
    p = os.fspath(path)
    if not os.path.exists(p):
        raise FileNotFoundError(f"{what}: no such file: {p!r}")
    if os.path.isdir(p):
        raise GrammarError(f"{what}: {p!r} is a directory, expected a file")
    with open(p, "rb") as f:
        return f.read(), p


def is_pathlike(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike))


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from the 256 byte values to printable characters (byte-level BPE)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


_B2U = bytes_to_unicode()
_U2B_TABLE = {ord(c): chr(b) for b, c in _B2U.items()}  # str.translate table to latin-1 chars
_NOT_BYTE_LEVEL = re.compile("[^" + re.escape("".join(_B2U.values())) + "]")


def byte_level_decode(s: str) -> bytes:
    """Bytes of a byte-level BPE token string (as the HF ByteLevel decoder does: a token with a
    character outside the byte map is taken as plain UTF-8 text)."""
    if _NOT_BYTE_LEVEL.search(s):
        return s.encode("utf-8")
    return s.translate(_U2B_TABLE).encode("latin-1")


def metaspace_decode(s: str, byte_fallback: bool = True, replacement: str = METASPACE) -> bytes:
    """Bytes of a SentencePiece-style piece: ``<0xNN>`` is one raw byte, ``▁`` is a space."""
    if byte_fallback:
        m = _BYTE_PIECE.fullmatch(s)
        if m:
            return bytes([int(m.group(1), 16)])
    return s.replace(replacement, " ").encode("utf-8")


def infer_ids(special: Mapping[int, str], names: Iterable[str]) -> list[int]:
    by_name: dict[str, int] = {}
    for i, name in special.items():
        by_name.setdefault(name, i)
    return [by_name[n] for n in names if n in by_name]


def place(tokens: list, i: int, b: bytes) -> None:
    if i >= len(tokens):
        tokens.extend([b""] * (i + 1 - len(tokens)))
    tokens[i] = b


# --------------------------------------------------------------------------------------------
# Hugging Face tokenizer.json


def _walk(node: Any):
    """Yield every dict in a (possibly nested Sequence) normalizer/pre-tokenizer/decoder spec."""
    if isinstance(node, dict):
        yield node
        for key in ("pretokenizers", "decoders", "normalizers", "processors"):
            for child in node.get(key) or ():
                yield from _walk(child)
    elif isinstance(node, list):
        for child in node:
            yield from _walk(child)


def _pattern_str(p: Any) -> str | None:
    if isinstance(p, dict):
        return p.get("String", p.get("Regex"))
    return p if isinstance(p, str) else None


def parse_hf_json(data: Any, source: str) -> RawVocab:
    """Read a parsed ``tokenizer.json`` (the ``tokenizers`` library's serialization)."""
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise GrammarError(f"{source}: not a Hugging Face tokenizer.json (no 'model' object)")
    model = data["model"]
    mtype, pieces = _hf_pieces(model, source)
    pre = list(_walk(data.get("pre_tokenizer")))
    kind, decode, add_prefix_space = _hf_decoding(model, mtype, pre, list(_walk(data.get("decoder"))),
                                                  list(_walk(data.get("normalizer"))))
    tokens, special = _hf_tokens(data, model, mtype, pieces, decode, source)
    bos = infer_ids(special, BOS_NAMES)
    pattern = None
    for n in pre:
        if n.get("type") == "Split":
            pattern = _pattern_str(n.get("pattern"))
    return RawVocab(tokens, special, [], bos[0] if bos else None, kind, add_prefix_space, pattern, source)


def _hf_pieces(model: dict, source: str) -> tuple[str, list[tuple[str, int]]]:
    """(the model type, its (piece, id) pairs) of a tokenizer.json ``model`` object."""
    mtype = model.get("type")
    vocab = model.get("vocab")
    if mtype is None:  # very old files omit the type
        mtype = "Unigram" if isinstance(vocab, list) else ("BPE" if "merges" in model else "WordPiece")
    if mtype in ("BPE", "WordPiece", "WordLevel"):
        if not isinstance(vocab, dict):
            raise GrammarError(f"{source}: model.vocab of a {mtype} model must be an object")
        return mtype, list(vocab.items())
    if mtype == "Unigram":
        if not isinstance(vocab, list):
            raise GrammarError(f"{source}: model.vocab of a Unigram model must be a list")
        return mtype, [(entry[0], i) for i, entry in enumerate(vocab)]
    raise GrammarError(f"{source}: unsupported tokenizer model type {mtype!r}")


def _hf_metaspace(pre: list, dec: list, norm: list) -> tuple[bool, str, bool]:
    """(whether pieces spell spaces as a metaspace, its replacement character, whether a space is
    prepended to the text), from the pre-tokenizers, decoders and normalizers."""
    replacement = METASPACE
    metaspace = False
    add_prefix_space = False
    for n in pre + dec:
        if n.get("type") == "Metaspace":
            metaspace = True
            replacement = n.get("replacement", METASPACE) or METASPACE
            if n in pre:
                scheme = n.get("prepend_scheme")
                add_prefix_space = add_prefix_space or scheme in ("first", "always") or bool(n.get("add_prefix_space"))
    for n in dec:
        if n.get("type") == "Replace" and _pattern_str(n.get("pattern")) == METASPACE and n.get("content") == " ":
            metaspace = True
    for n in norm:
        if n.get("type") == "Replace" and _pattern_str(n.get("pattern")) == " " and n.get("content") == METASPACE:
            metaspace = True
        if n.get("type") == "Prepend" and n.get("prepend") == METASPACE:
            add_prefix_space = True
    return metaspace, replacement, add_prefix_space


def _hf_decoding(model: dict, mtype: str, pre: list, dec: list, norm: list) -> tuple[str, Callable, bool]:
    """(the vocabulary kind, piece -> token bytes, add_prefix_space) of a tokenizer.json."""
    types = {n.get("type") for n in pre + dec}
    byte_fallback = bool(model.get("byte_fallback")) or "ByteFallback" in types
    metaspace, replacement, add_prefix_space = _hf_metaspace(pre, dec, norm)
    if "ByteLevel" in types:
        add_prefix_space = any(n.get("type") == "ByteLevel" and n.get("add_prefix_space") for n in pre)
        return "byte_level", byte_level_decode, add_prefix_space
    if metaspace or mtype == "Unigram" or byte_fallback:
        return "sentencepiece", lambda s: metaspace_decode(s, byte_fallback, replacement), add_prefix_space
    if mtype == "WordPiece" or "WordPiece" in types:
        # Best effort: WordPiece normalizes text (case, accents) and its decoder joins words with
        # spaces, so no byte string is exact; continuation pieces lose their prefix.
        prefix = model.get("continuing_subword_prefix") or "##"
        return ("wordpiece", lambda s: (s[len(prefix):] if s.startswith(prefix) and s != prefix else s).encode("utf-8"),
                add_prefix_space)
    return "plain", lambda s: s.encode("utf-8"), add_prefix_space


def _hf_tokens(data: dict, model: dict, mtype: str, pieces: list, decode: Callable,
               source: str) -> tuple[list[bytes], dict[int, str]]:
    """(token bytes by id, special token names by id): the model's pieces decoded, added tokens
    and the unknown token spelled by their content."""
    max_id = max((i for _, i in pieces), default=-1)
    for a in data.get("added_tokens") or ():
        max_id = max(max_id, int(a["id"]))
    tokens = [b""] * (max_id + 1)
    for s, i in pieces:
        if not isinstance(i, int) or i < 0:
            raise GrammarError(f"{source}: token {s!r} has an invalid id {i!r}")
        tokens[i] = decode(s)

    special: dict[int, str] = {}
    unk = model.get("unk_token")
    vocab = model.get("vocab")
    if mtype == "Unigram" and model.get("unk_id") is not None:
        special[int(model["unk_id"])] = pieces[int(model["unk_id"])][0]
    elif isinstance(unk, str) and isinstance(vocab, dict) and unk in vocab:
        special[vocab[unk]] = unk
    for a in data.get("added_tokens") or ():
        i, content = int(a["id"]), a["content"]
        if a.get("special"):
            special[i] = content
            tokens[i] = content.encode("utf-8")
        else:
            # A non-special added token is matched in the raw text by its content.
            special.pop(i, None)
            tokens[i] = content.encode("utf-8")
    for i, name in special.items():
        tokens[i] = name.encode("utf-8")
    return tokens, special


# --------------------------------------------------------------------------------------------
# tiktoken rank files and Mistral's tekken json


def parse_tiktoken_ranks(data: bytes, source: str) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file: one ``<base64 token> <rank>`` per line."""
    head = data.lstrip()[:1]
    if head in (b"{", b"["):
        raise GrammarError(
            f"{source}: this is a JSON file, not a .tiktoken rank file "
            "(use TokenizerInfo.from_huggingface for tokenizer.json, from_tekken for a tekken json)"
        )
    ranks: dict[bytes, int] = {}
    seen: set[int] = set()
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError
            tok = base64.b64decode(parts[0], validate=True)
            rank = int(parts[1])
            if rank < 0:
                raise ValueError
        except (ValueError, binascii.Error):
            raise GrammarError(
                f"{source}: line {lineno}: expected '<base64 token> <rank>', got {line[:60]!r}"
            ) from None
        if rank in seen:
            raise GrammarError(f"{source}: line {lineno}: rank {rank} appears twice")
        seen.add(rank)
        ranks[tok] = rank
    if not ranks:
        raise GrammarError(f"{source}: empty .tiktoken file, no tokens")
    return ranks


def ranks_to_raw(ranks: Mapping[bytes, int], special_tokens: Mapping[str, int] | None, source: str,
                 kind: str = "tiktoken", pattern: str | None = None) -> RawVocab:
    n = max(ranks.values(), default=-1) + 1
    special_tokens = dict(special_tokens or {})
    for name, i in special_tokens.items():
        if not isinstance(i, int) or i < 0:
            raise GrammarError(f"{source}: special token {name!r} has an invalid id {i!r}")
        n = max(n, i + 1)
    tokens: list[bytes] = [b""] * n
    for tok, r in ranks.items():
        tokens[r] = bytes(tok)
    special: dict[int, str] = {}
    for name, i in special_tokens.items():
        if tokens[i] and i not in special:
            raise GrammarError(f"{source}: special token {name!r} has id {i}, which is already the token {tokens[i]!r}")
        special[i] = name
        tokens[i] = name.encode("utf-8")
    bos = infer_ids(special, BOS_NAMES)
    return RawVocab(tokens, special, [], bos[0] if bos else None, kind, False, pattern, source)


# Special tokens of tekken files that do not list their own (mistral-common, versions <= v7).
TEKKEN_DEFAULT_SPECIALS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]",
    "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]",
)


def parse_tekken(data: Any, source: str) -> RawVocab:
    """Mistral's tekken json: special tokens take ids [0, num_special); the byte-level tiktoken
    vocabulary follows, token of rank r at id r + num_special, cut at ``default_vocab_size``."""
    if not isinstance(data, dict) or not isinstance(data.get("vocab"), list) or not isinstance(data.get("config"), dict):
        raise GrammarError(f"{source}: not a tekken tokenizer json (needs 'config' and a 'vocab' list)")
    cfg = data["config"]
    try:
        num_special = int(cfg.get("default_num_special_tokens", 1000))
        vocab_size = int(cfg.get("default_vocab_size", num_special + len(data["vocab"])))
    except (TypeError, ValueError):
        raise GrammarError(f"{source}: bad tekken config {cfg!r}") from None
    specials = data.get("special_tokens")
    names = [t["token_str"] for t in sorted(specials, key=lambda t: t["rank"])] if specials else list(TEKKEN_DEFAULT_SPECIALS)
    if len(names) > num_special:
        raise GrammarError(f"{source}: {len(names)} special tokens but only {num_special} special ids")
    names += [f"<SPECIAL_{i}>" for i in range(len(names), num_special)]
    inner = vocab_size - num_special
    if inner > len(data["vocab"]) or inner < 0:
        raise GrammarError(f"{source}: vocab size {vocab_size} does not fit {len(data['vocab'])} tokens + {num_special} specials")
    tokens: list[bytes] = [n.encode("utf-8") for n in names] + [b""] * inner
    for entry in data["vocab"][:inner]:
        try:
            r = int(entry["rank"])
            tokens[num_special + r] = base64.b64decode(entry["token_bytes"], validate=True)
        except (KeyError, TypeError, ValueError, IndexError, binascii.Error):
            raise GrammarError(f"{source}: bad tekken vocab entry {str(entry)[:80]}") from None
    special = dict(enumerate(names))
    raw = RawVocab(tokens, special, infer_ids(special, ("</s>",)), None, "tekken", False, cfg.get("pattern"), source)
    bos = infer_ids(special, ("<s>",))
    raw.bos_id = bos[0] if bos else None
    return raw


# --------------------------------------------------------------------------------------------
# GGUF

_GGUF_NORMAL, _GGUF_UNKNOWN, _GGUF_CONTROL, _GGUF_USER, _GGUF_UNUSED, _GGUF_BYTE = 1, 2, 3, 4, 5, 6


def parse_gguf(path: Any) -> RawVocab:
    """The tokenizer stored in a GGUF model file's metadata (``tokenizer.ggml.*``)."""
    p = os.fspath(path)
    if not os.path.exists(p):
        raise FileNotFoundError(f"from_gguf: no such file: {p!r}")
    if os.path.isdir(p):
        raise GrammarError(f"from_gguf: {p!r} is a directory, expected a .gguf file")
    try:
        meta = read_gguf_metadata(p, prefix="tokenizer.ggml.")
    except GGUFFormatError as e:   # (its message says what: not GGUF, a version, truncated or corrupt)
        raise GrammarError(f"{p}: {e}") from None

    def scalar(name: str, kind: type | tuple):
        v = meta.get(name)
        if v is not None and not isinstance(v, kind):
            raise GrammarError(f"{p}: GGUF {name} is {type(v).__name__} {str(v)[:80]}, expected {kind}")
        return v

    model = scalar("tokenizer.ggml.model", str)
    raw_tokens = scalar("tokenizer.ggml.tokens", list)
    if model is None or raw_tokens is None:
        raise GrammarError(f"{p}: GGUF file has no tokenizer (tokenizer.ggml.model / tokenizer.ggml.tokens missing)")
    if not all(type(b) is bytes for b in raw_tokens):
        raise GrammarError(f"{p}: GGUF tokenizer.ggml.tokens is not an array of strings")
    types = scalar("tokenizer.ggml.token_type", list)
    if types is None:
        types = [_GGUF_NORMAL] * len(raw_tokens)
    if len(types) != len(raw_tokens) or not all(type(t) is int for t in types):
        raise GrammarError(f"{p}: {len(raw_tokens)} tokens but {len(types)} integer token types")

    if model == "gpt2":
        kind, decode = "byte_level", lambda s: byte_level_decode(s)
    elif model in ("llama", "t5"):
        kind, decode = "sentencepiece", lambda s: metaspace_decode(s, False)
    elif model == "bert":
        kind, decode = "wordpiece", lambda s: (s[2:] if s.startswith("##") and s != "##" else s).encode("utf-8")
    else:
        raise GrammarError(f"{p}: unsupported GGUF tokenizer model {model!r} (supported: gpt2, llama, t5, bert)")

    tokens: list[bytes] = []
    special: dict[int, str] = {}
    for i, (b, t) in enumerate(zip(raw_tokens, types)):
        s = b.decode("utf-8", "surrogateescape")
        if t in (_GGUF_CONTROL, _GGUF_UNKNOWN, _GGUF_UNUSED):
            special[i] = s
            tokens.append(b)
        elif t == _GGUF_BYTE:
            m = _BYTE_PIECE.fullmatch(s)
            if not m:
                raise GrammarError(f"{p}: byte token {i} is {s!r}, expected <0xNN>")
            tokens.append(bytes([int(m.group(1), 16)]))
        elif t == _GGUF_USER:
            tokens.append(b)  # user-defined tokens are matched as raw text (as llama.cpp does)
        else:
            tokens.append(decode(s))
    eos = []
    for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"):
        v = scalar(key, int)
        if v is not None and 0 <= v < len(tokens) and v not in eos:
            eos.append(int(v))
    bos = scalar("tokenizer.ggml.bos_token_id", int)
    add_prefix = scalar("tokenizer.ggml.add_space_prefix", (bool, int))
    if add_prefix is None:
        add_prefix = kind == "sentencepiece"
    return RawVocab(tokens, special, eos, bos, kind, bool(add_prefix), None, p)


# --------------------------------------------------------------------------------------------
# SentencePiece


def _proto_fields(buf: bytes):
    """Yield (field number, wire type, value) of a serialized protobuf message (no nesting)."""
    i, n = 0, len(buf)

    def varint():
        nonlocal i
        shift = result = 0
        while True:
            if i >= n:
                raise ValueError("truncated varint")
            b = buf[i]
            i += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    while i < n:
        key = varint()
        num, wt = key >> 3, key & 7
        if wt == 0:
            yield num, wt, varint()
        elif wt == 1:
            yield num, wt, buf[i:i + 8]
            i += 8
        elif wt == 2:
            ln = varint()
            yield num, wt, buf[i:i + ln]
            i += ln
        elif wt == 5:
            yield num, wt, buf[i:i + 4]
            i += 4
        else:
            raise ValueError(f"unsupported wire type {wt}")


def sentencepiece_normalizer(model_proto: bytes) -> dict:
    """The NormalizerSpec of a serialized SentencePiece ModelProto (field 3): name,
    add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces (protobuf defaults apply)."""
    spec = {"name": "", "add_dummy_prefix": True, "remove_extra_whitespaces": True, "escape_whitespaces": True}
    try:
        for num, wt, val in _proto_fields(model_proto):
            if num == 3 and wt == 2:
                for f, w, v in _proto_fields(val):
                    if f == 1 and w == 2:
                        spec["name"] = bytes(v).decode("utf-8", "replace")
                    elif f == 3 and w == 0:
                        spec["add_dummy_prefix"] = bool(v)
                    elif f == 4 and w == 0:
                        spec["remove_extra_whitespaces"] = bool(v)
                    elif f == 5 and w == 0:
                        spec["escape_whitespaces"] = bool(v)
    except ValueError:
        pass
    return spec


def parse_sentencepiece(source: Any) -> RawVocab:
    """A SentencePiece model: a path to a ``.model`` file, its bytes, or a SentencePieceProcessor."""
    try:
        import sentencepiece as spm
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("TokenizerInfo.from_sentencepiece needs the 'sentencepiece' package") from e
    if isinstance(source, spm.SentencePieceProcessor):
        sp, where = source, "<SentencePieceProcessor>"
        try:
            proto = sp.serialized_model_proto()
        except Exception:  # pragma: no cover
            proto = b""
    else:
        if is_pathlike(source):
            proto, where = read_file_bytes(source, "from_sentencepiece")
        elif isinstance(source, (bytes, bytearray, memoryview)):
            proto, where = bytes(source), "<sentencepiece model bytes>"
        else:
            raise GrammarError(
                f"from_sentencepiece: expected a path, model bytes or a SentencePieceProcessor, got {type(source).__name__}"
            )
        sp = spm.SentencePieceProcessor()
        try:
            sp.LoadFromSerializedProto(proto)
        except Exception as e:
            raise GrammarError(f"{where}: not a SentencePiece model file ({str(e).strip() or type(e).__name__})") from None
    n = sp.get_piece_size()
    if n <= 0:
        raise GrammarError(f"{where}: SentencePiece model has no pieces")
    tokens: list[bytes] = []
    special: dict[int, str] = {}
    for i in range(n):
        piece = sp.id_to_piece(i)
        if sp.is_byte(i):
            m = _BYTE_PIECE.fullmatch(piece)
            if not m:
                raise GrammarError(f"{where}: byte piece {i} is {piece!r}, expected <0xNN>")
            tokens.append(bytes([int(m.group(1), 16)]))
        elif sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
            special[i] = piece
            tokens.append(piece.encode("utf-8"))
        else:
            tokens.append(piece.replace(METASPACE, " ").encode("utf-8"))
    norm = sentencepiece_normalizer(proto) if proto else {"add_dummy_prefix": True}
    eos = [sp.eos_id()] if sp.eos_id() >= 0 else []
    bos = sp.bos_id() if sp.bos_id() >= 0 else None
    return RawVocab(tokens, special, eos, bos, "sentencepiece", bool(norm["add_dummy_prefix"]), None, where)


def load_json(data: bytes, source: str) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise GrammarError(f"{source}: not valid JSON ({e})") from None
