"""TokenizerInfo: the exact bytes of every token of a tokenizer, its special tokens and EOS.

The grammar engine works on bytes, so it needs, for every token id, the byte string that the
token contributes to the output. Tokenizers store tokens in several encodings (GPT-2's byte-to-
unicode map, SentencePiece's ``▁`` and ``<0xNN>`` pieces, base64 in tiktoken files); the
constructors below undo them exactly. Special tokens (``<|im_end|>``, ``</s>``...) never match
text: they are kept out of the token trie, and a grammar can only name them explicitly.

Example::

    import tokenizers, stencil
    hf = tokenizers.Tokenizer.from_file("tokenizer.json")
    tok = stencil.TokenizerInfo.from_huggingface(hf)
    ids = hf.encode("Hello world", add_special_tokens=False).ids
    assert tok.decode_bytes(ids) == b"Hello world"
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Iterable, Mapping, Sequence

from stencil import _core
from stencil._core import GrammarError
from stencil import tokenizer_formats as fmt

__all__ = ["TokenizerInfo"]


def _as_ids(x: Any, what: str) -> list[int]:
    if x is None:
        return []
    if isinstance(x, (int,)) or hasattr(x, "__index__") and not isinstance(x, (str, bytes)):
        return [int(x)]
    try:
        return [int(i) for i in x]
    except (TypeError, ValueError):
        raise GrammarError(f"{what} must be a token id or a list of token ids, got {x!r}") from None


class TokenizerInfo:
    """The byte-level view of a tokenizer that the grammar engine needs.

    Build one with a ``from_*`` constructor (``from_huggingface``, ``from_tiktoken``,
    ``from_gguf``, ``from_sentencepiece``, ``from_tekken``, ``from_vocab``). Attributes:

    - ``vocab_size``: number of ids, which may exceed ``num_tokens`` when padded to a model's
      logits width; padding ids have empty bytes and are never allowed.
    - ``num_tokens``: number of ids the tokenizer itself defines.
    - ``special_token_ids`` / ``special_token_names`` (id -> text): special tokens, excluded from
      the token trie; ``token_bytes`` of a special token is its text, for display.
    - ``eos_token_ids``: the ids that end generation (always special).
    - ``bos_token_id`` (or None), ``kind`` (how token strings were decoded: ``byte_level``,
      ``sentencepiece``, ``tiktoken``, ``tekken``, ``wordpiece``, ``plain`` or ``raw``),
      ``add_prefix_space`` (the encoder prepends a space to its input, as SentencePiece's dummy
      prefix does), ``pattern`` (the pre-tokenizer regex, when known).

    Example::

        >>> tok = TokenizerInfo.from_vocab([b"a", b"b", b"ab", b"</s>"], eos_token_ids=[3])
        >>> tok.decode_bytes([2, 0])
        b'aba'
        >>> tok.special_token_ids, tok.eos_token_ids
        ([3], [3])
    """

    def __init__(
        self,
        tokens: Sequence[bytes],
        *,
        special_token_ids: Iterable[int] | Mapping[int, str] = (),
        eos_token_ids: int | Iterable[int] | None = None,
        vocab_size: int | None = None,
        bos_token_id: int | None = None,
        kind: str = "raw",
        add_prefix_space: bool = False,
        pattern: str | None = None,
        source: str = "<vocab>",
    ) -> None:
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Iterable):
            raise TypeError(f"{source}: tokens must be a list of bytes (one per token id), got {type(tokens).__name__}")
        tokens = list(tokens)
        n = len(tokens)
        if n == 0:
            raise GrammarError(f"{source}: the vocabulary has no tokens")
        for i, t in enumerate(tokens):
            if not isinstance(t, bytes):
                if isinstance(t, (bytearray, memoryview)):
                    tokens[i] = bytes(t)
                else:
                    raise GrammarError(f"{source}: token {i} must be bytes, got {type(t).__name__} {t!r:.40}")
        if isinstance(special_token_ids, Mapping):
            names = {int(i): str(s) for i, s in special_token_ids.items()}
        else:
            names = {}
            for i in _as_ids(special_token_ids, "special_token_ids"):
                if not 0 <= i < n:
                    raise GrammarError(f"{source}: special token id {i} is out of range [0, {n})")
                names[i] = tokens[i].decode("utf-8", "replace")
        for i in names:
            if not 0 <= i < n:
                raise GrammarError(f"{source}: special token id {i} is out of range [0, {n})")
        if vocab_size is None:
            vocab_size = n
        vocab_size = int(vocab_size)
        if vocab_size < n:
            raise GrammarError(f"{source}: vocab_size {vocab_size} is smaller than the {n} tokens of the tokenizer")
        if eos_token_ids is None:
            eos = fmt.infer_ids(names, fmt.EOS_NAMES)
            if not eos:
                warnings.warn(f"{source}: no EOS token found; pass eos_token_ids=", stacklevel=3)
        else:
            eos = []
            for i in _as_ids(eos_token_ids, "eos_token_ids"):
                if not 0 <= i < n:
                    raise GrammarError(f"{source}: eos token id {i} is out of range [0, {n})")
                if i not in eos:
                    eos.append(i)
        for i in eos:  # an EOS token ends the text, it never is text
            names.setdefault(i, tokens[i].decode("utf-8", "replace"))
        self._special_names: dict[int, str] = dict(sorted(names.items()))
        self._name_to_id: dict[str, int] = {}
        for i, s in self._special_names.items():
            self._name_to_id.setdefault(s, i)
        self._eos = eos
        self._vocab = _core.Vocabulary(tokens, list(self._special_names), eos, vocab_size)
        self._bytes_to_id: dict[bytes, int] | None = None
        self.bos_token_id = None if bos_token_id is None else int(bos_token_id)
        self.kind = kind
        self.add_prefix_space = bool(add_prefix_space)
        self.pattern = pattern
        self.source = source

    @classmethod
    def _from_raw(cls, raw: fmt.RawVocab, vocab_size: int | None, eos_token_ids: Any = None) -> "TokenizerInfo":
        if eos_token_ids is None:
            eos = list(raw.eos_ids)
            for i in fmt.infer_ids(raw.special, fmt.EOS_NAMES):
                if i not in eos:
                    eos.append(i)
            if not eos:
                warnings.warn(f"{raw.source}: no EOS token found; pass eos_token_ids=", stacklevel=3)
        else:
            eos = _as_ids(eos_token_ids, "eos_token_ids")
        return cls(raw.tokens, special_token_ids=raw.special, eos_token_ids=eos, vocab_size=vocab_size,
                   bos_token_id=raw.bos_id, kind=raw.kind, add_prefix_space=raw.add_prefix_space,
                   pattern=raw.pattern, source=raw.source)

    # ---------------------------------------------------------------------------- constructors

    @classmethod
    def from_vocab(
        cls,
        tokens: Sequence[bytes],
        eos_token_ids: Iterable[int] | int | None = None,
        special_token_ids: Iterable[int] = (),
        vocab_size: int | None = None,
        bos_token_id: int | None = None,
    ) -> "TokenizerInfo":
        """From the exact bytes of each token (index = id).

        EOS tokens are special too. With ``eos_token_ids=None`` the EOS is looked up among the
        special tokens by its usual names (``</s>``, ``<|endoftext|>``, ``<|im_end|>``...).

        Example::

            >>> tok = TokenizerInfo.from_vocab([b"<eos>", b"x", b" y"], eos_token_ids=0, vocab_size=8)
            >>> tok.vocab_size, tok.num_tokens, tok.token_bytes(7)
            (8, 3, b'')
        """
        return cls(tokens, special_token_ids=special_token_ids, eos_token_ids=eos_token_ids,
                   vocab_size=vocab_size, bos_token_id=bos_token_id)

    @classmethod
    def from_huggingface(cls, tokenizer: Any, vocab_size: int | None = None,
                         eos_token_ids: Iterable[int] | int | None = None) -> "TokenizerInfo":
        """From a Hugging Face tokenizer: a ``tokenizers.Tokenizer``, a transformers fast tokenizer
        (its ``backend_tokenizer`` is read), a slow SentencePiece-based transformers tokenizer
        (its ``sp_model``), or a path to a ``tokenizer.json`` (or a folder holding one).

        Byte-level BPE (GPT-2's byte map: Llama 3, Qwen, DeepSeek, SmolLM2) and SentencePiece-style
        vocabularies (``▁`` for space, ``<0xNN>`` byte fallback: Llama 2, Mistral) are exact;
        WordPiece is best effort (its normalizer and decoder are lossy). Added tokens marked
        ``special`` are special; other added tokens are text (their content). EOS: the
        tokenizer's ``eos_token_id`` when it has one, plus special tokens with a usual EOS name,
        unless ``eos_token_ids`` is given.

        Example::

            from tokenizers import Tokenizer
            tok = TokenizerInfo.from_huggingface(Tokenizer.from_file("tokenizer.json"), vocab_size=151936)
        """
        explicit_eos: list[int] = []
        obj = tokenizer
        if fmt.is_pathlike(obj):
            p = os.fspath(obj)
            if os.path.isdir(p):
                p = os.path.join(p, "tokenizer.json")
            data, where = fmt.read_file_bytes(p, "from_huggingface")
            raw = fmt.parse_hf_json(fmt.load_json(data, where), where)
        else:
            eid = getattr(obj, "eos_token_id", None)
            if isinstance(eid, int):
                explicit_eos = [eid]
            backend = getattr(obj, "backend_tokenizer", None)
            if backend is not None:
                obj = backend
            if hasattr(obj, "to_str") and callable(obj.to_str):
                where = f"<{type(obj).__module__}.{type(obj).__name__}>"
                try:
                    text = obj.to_str()
                except Exception as e:
                    raise GrammarError(f"from_huggingface: cannot serialize {where}: {e}") from None
                raw = fmt.parse_hf_json(fmt.load_json(text.encode("utf-8") if isinstance(text, str) else text, where), where)
            elif getattr(obj, "sp_model", None) is not None:
                raw = fmt.parse_sentencepiece(obj.sp_model)
                # transformers keeps added tokens (and the model's own <s>, </s>...) beside the model
                added = getattr(obj, "added_tokens_decoder", None) or {}
                for i, a in added.items():
                    content = str(getattr(a, "content", a))
                    fmt.place(raw.tokens, int(i), content.encode("utf-8"))
                    if getattr(a, "special", False):
                        raw.special[int(i)] = content
                    else:
                        raw.special.pop(int(i), None)
            else:
                raise GrammarError(
                    f"from_huggingface: unsupported tokenizer of type {type(tokenizer).__module__}."
                    f"{type(tokenizer).__name__}; expected a tokenizers.Tokenizer, a transformers fast "
                    "tokenizer, a SentencePiece-based transformers tokenizer or a path to tokenizer.json"
                )
        for i in raw.eos_ids:
            if i not in explicit_eos:
                explicit_eos.append(i)
        raw.eos_ids = [i for i in explicit_eos if 0 <= i < len(raw.tokens)]
        return cls._from_raw(raw, vocab_size, eos_token_ids)

    @classmethod
    def from_tiktoken(
        cls,
        path_or_bytes: Any,
        special_tokens: Mapping[str, int] | None = None,
        eos_token: str | int | Iterable[str | int] | None = None,
        vocab_size: int | None = None,
        pattern: str | None = None,
    ) -> "TokenizerInfo":
        """From a tiktoken BPE rank file (``<base64 token> <rank>`` per line; the rank is the id).

        ``path_or_bytes``: a path, the file's contents as bytes, a ``{token bytes: rank}`` dict or
        a ``tiktoken.Encoding`` (its ranks, special tokens and pattern are used).
        ``special_tokens``: ``{name: id}``. ``eos_token``: a name or id (or a list of them);
        by default special tokens with a usual EOS name (``<|endoftext|>``, ``<|im_end|>``...).
        ``pattern``: the pre-tokenizer regex, kept as ``.pattern`` for callers.

        Example::

            tok = TokenizerInfo.from_tiktoken("qwen.tiktoken",
                special_tokens={"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645},
                vocab_size=151936)
        """
        src = path_or_bytes
        if fmt.is_pathlike(src):
            data, where = fmt.read_file_bytes(src, "from_tiktoken")
            ranks = fmt.parse_tiktoken_ranks(data, where)
        elif isinstance(src, (bytes, bytearray, memoryview)):
            where = "<tiktoken bytes>"
            ranks = fmt.parse_tiktoken_ranks(bytes(src), where)
        elif isinstance(src, Mapping):
            where, ranks = "<tiktoken ranks>", dict(src)
            if not all(isinstance(k, (bytes, bytearray)) and isinstance(v, int) for k, v in ranks.items()):
                raise GrammarError("from_tiktoken: a ranks dict must map token bytes to int ranks")
        elif hasattr(src, "_mergeable_ranks") and hasattr(src, "_special_tokens"):
            where = f"<tiktoken.Encoding {getattr(src, 'name', '?')}>"
            ranks = dict(src._mergeable_ranks)
            if special_tokens is None:
                special_tokens = dict(src._special_tokens)
            if pattern is None:
                pattern = getattr(src, "_pat_str", None)
        else:
            raise GrammarError(
                f"from_tiktoken: expected a path, file bytes, a ranks dict or a tiktoken.Encoding, got {type(src).__name__}"
            )
        raw = fmt.ranks_to_raw(ranks, special_tokens, where, "tiktoken", pattern)
        eos = None
        if eos_token is not None:
            items = [eos_token] if isinstance(eos_token, (str, int)) else list(eos_token)
            eos = []
            for e in items:
                if isinstance(e, str):
                    if special_tokens is None or e not in special_tokens:
                        raise GrammarError(f"{where}: eos_token {e!r} is not one of the special tokens")
                    eos.append(special_tokens[e])
                else:
                    eos.append(int(e))
        return cls._from_raw(raw, vocab_size, eos)

    @classmethod
    def from_tekken(cls, path_or_json: Any, vocab_size: int | None = None,
                    eos_token_ids: Iterable[int] | int | None = None) -> "TokenizerInfo":
        """From a Mistral ``tekken.json`` (tiktoken-style byte-level BPE whose special tokens
        come first: the token of rank r has id ``r + num_special_tokens``).

        ``path_or_json``: a path, the file's bytes or the parsed dict.

        Example::

            tok = TokenizerInfo.from_tekken("tekken.json")   # vocab_size 131072, EOS "</s>" = 2
        """
        if fmt.is_pathlike(path_or_json):
            data, where = fmt.read_file_bytes(path_or_json, "from_tekken")
            obj = fmt.load_json(data, where)
        elif isinstance(path_or_json, (bytes, bytearray, memoryview)):
            where = "<tekken bytes>"
            obj = fmt.load_json(bytes(path_or_json), where)
        else:
            where, obj = "<tekken dict>", path_or_json
        return cls._from_raw(fmt.parse_tekken(obj, where), vocab_size, eos_token_ids)

    @classmethod
    def from_gguf(cls, path: Any, vocab_size: int | None = None,
                  eos_token_ids: Iterable[int] | int | None = None) -> "TokenizerInfo":
        """From the tokenizer stored in a GGUF model file (``tokenizer.ggml.*`` metadata).

        ``gpt2`` models are byte-level BPE, ``llama`` models SentencePiece-style; control, unknown
        and unused tokens are special; EOS is the file's eos/eot/eom ids plus special tokens with a
        usual EOS name. Only the metadata at the head of the file is read (no other package needed;
        a 262k vocabulary in a quarter of a second).

        Example::

            tok = TokenizerInfo.from_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
        """
        return cls._from_raw(fmt.parse_gguf(path), vocab_size, eos_token_ids)

    @classmethod
    def from_sentencepiece(cls, path: Any, vocab_size: int | None = None,
                           eos_token_ids: Iterable[int] | int | None = None) -> "TokenizerInfo":
        """From a SentencePiece model: a ``.model`` file path, its bytes, or a
        ``sentencepiece.SentencePieceProcessor``.

        ``▁`` in a piece is a space and ``<0xNN>`` byte pieces are one raw byte; control, unknown
        and unused pieces are special. SentencePiece's encoder usually prepends a space to its
        input (``add_prefix_space`` tells), so ``decode_bytes(sp.encode(text))`` is
        ``b" " + text.encode()``. Needs the ``sentencepiece`` package.

        Example::

            tok = TokenizerInfo.from_sentencepiece("tokenizer.model")
        """
        return cls._from_raw(fmt.parse_sentencepiece(path), vocab_size, eos_token_ids)

    # ---------------------------------------------------------------------------- queries

    @property
    def vocabulary(self) -> _core.Vocabulary:
        """The core's vocabulary (token bytes, trie and shared mask cache), as ``Matcher.vocabulary``
        and ``CompiledGrammar.vocabulary`` give it."""
        return self._vocab

    @property
    def vocab_size(self) -> int:
        """Number of token ids (the width of the bitmask), padding included."""
        return self._vocab.vocab_size

    @property
    def num_tokens(self) -> int:
        """Number of ids the tokenizer defines (ids past it, up to vocab_size, are padding)."""
        return self._vocab.num_tokens

    @property
    def special_token_ids(self) -> list[int]:
        """Ids of the special tokens (never matched by text), sorted."""
        return list(self._special_names)

    @property
    def special_token_names(self) -> dict[int, str]:
        """``{id: text}`` of the special tokens."""
        return dict(self._special_names)

    @property
    def eos_token_ids(self) -> list[int]:
        """Ids that end generation."""
        return list(self._eos)

    def token_bytes(self, token_id: int) -> bytes:
        """The exact bytes token ``token_id`` adds to the output (b"" for padding ids); raises
        ``UsageError`` (a ValueError) for an id outside ``[0, vocab_size)``."""
        return self._vocab.token_bytes(token_id)

    def decode_bytes(self, token_ids: Iterable[int]) -> bytes:
        """The bytes of a sequence of ids, concatenated (special tokens give their text)."""
        if not isinstance(token_ids, (list, tuple)):
            token_ids = list(token_ids)
        return self._vocab.decode_bytes(token_ids)

    def is_special(self, token_id: int) -> bool:
        self._vocab.token_bytes(token_id)  # range check
        return self._vocab.is_special(token_id)

    def token_id(self, name: str | bytes) -> int:
        """The id of a special token given its text (``tok.token_id("<|im_end|>")``), or else of
        the first token whose bytes are exactly ``name``; KeyError when there is none."""
        if isinstance(name, str) and name in self._name_to_id:
            return self._name_to_id[name]
        b = name.encode("utf-8") if isinstance(name, str) else bytes(name)
        if self._bytes_to_id is None:
            table: dict[bytes, int] = {}
            for i in range(self.num_tokens):
                if i not in self._special_names:
                    table.setdefault(self._vocab.token_bytes(i), i)
            table.pop(b"", None)
            self._bytes_to_id = table
        try:
            return self._bytes_to_id[b]
        except KeyError:
            raise KeyError(f"no token {name!r} in this tokenizer ({self.source})") from None

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return (f"TokenizerInfo(kind={self.kind!r}, vocab_size={self.vocab_size}, num_tokens={self.num_tokens}, "
                f"special={len(self._special_names)}, eos={self._eos}, source={self.source!r})")
