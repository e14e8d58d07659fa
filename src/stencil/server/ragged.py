"""One forward pass over rows fed different numbers of tokens, each row paying for its own tokens.

``KVBatch`` lays a step out as ``[rows, width]``, every row's feed left-padded to the widest one
(a speculating row's pending token and draft; one token for the others). Computed as it is, every
padding slot costs as much as a real token, and on a CPU the attention of a pass over several
tokens per row costs more still: transformers repeats each key/value head for every query head it
serves (``repeat_kv``), a copy of the whole cache in every layer, where a one-token pass groups
the query heads instead. A server whose rows draft was slower than one whose rows did not.

``RaggedModel`` makes such a pass cost about what its real tokens cost, without changing what it
computes (up to float rounding, as any batched pass):

- position-wise layers (every ``nn.Linear`` of the decoder layers: attention projections; a dense
  gated MLP as a whole, its activation included) run on the real tokens only, gathered from the ``[rows, width]`` grid; padding slots get zeros
  (their keys and values are masked anyway);
- the output layer runs on the positions whose logits are wanted only (each row's last
  ``keep[i]``), and returns them packed: ``[1, positions, vocab]``;
- attention groups the query heads of each key/value head (the one-token pass's layout, for any
  number of queries: no ``repeat_kv``); on a CPU, where a padded query costs as much as a real
  one, the last position of every row goes in one call and each row fed more than one token gets
  a call of its own over its own positions (a view of its cache rows, no copy).

The wrappers are installed once per model and act only inside ``RaggedModel.run`` on the thread
that runs it (a thread-local context); outside it, and on other threads (``stencil.generate`` on
the same model), the model computes as before. A model whose layers do not look like a decoder
(``get_decoder().layers``, an ``nn.Linear`` output layer) is not wrapped: ``supported`` is False
and ``KVBatch`` pads as before.

Example::

    ragged = RaggedModel.of(model)
    with ragged.run(widths=[1, 5, 1], keep=[1, 5, 1], width=5, ragged_attention=True) as packed:
        model(input_ids=ids, attention_mask=mask, position_ids=pos, cache=cache, logits_to_keep=5)
    logits = packed.logits          # [1 + 5 + 1, vocab]: row 0's last position, row 1's five, ...
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Callable, Sequence

__all__ = ["RaggedModel", "RaggedPass"]

_LOCAL = threading.local()
_INSTALL_LOCK = threading.Lock()
_MODELS: "weakref.WeakKeyDictionary[Any, RaggedModel]" = weakref.WeakKeyDictionary()
_SDPA_WRAPPED = "stencil_ragged"   # the attribute that marks the wrapped attention function


class RaggedPass:
    """The layout of one pass: ``widths[i]`` real tokens in row i (the last ones of its ``width``
    slots) and ``keep[i]`` of them whose logits are wanted; filled by the output layer with
    ``logits`` (``[sum(keep), vocab]``, rows in order, each row's positions in order)."""

    def __init__(self, torch, widths: Sequence[int], keep: Sequence[int], width: int, keep_width: int,
                 ragged_attention: bool, device):
        self.torch = torch
        self.rows, self.width, self.keep_width = len(widths), width, keep_width
        self.widths = list(widths)
        tokens = [i * width + j for i, n in enumerate(widths) for j in range(width - n, width)]
        self.tokens = torch.tensor(tokens, dtype=torch.long, device=device)
        self.all_tokens = len(tokens) == self.rows * width
        heads = [i * keep_width + j for i, k in enumerate(keep) for j in range(keep_width - k, keep_width)]
        self.heads = torch.tensor(heads, dtype=torch.long, device=device)
        self.ragged_attention = ragged_attention
        self.logits: Any = None
        self._packed_in: tuple[Any, Any] | None = None   # (input, its real tokens): q/k/v share one input
        self._masks: dict = {}

    def linear(self, forward: Callable, x):
        """``forward`` (an ``nn.Linear``'s) on the real tokens of ``x`` ([rows, width, in])."""
        if self.all_tokens:
            return forward(x)
        rows, width, size = x.shape
        if self._packed_in is not None and self._packed_in[0] is x:
            packed = self._packed_in[1]
        else:
            packed = x.reshape(rows * width, size).index_select(0, self.tokens)
            self._packed_in = (x, packed)
        y = forward(packed)
        out = y.new_zeros((rows * width, y.shape[-1]))
        out.index_copy_(0, self.tokens, y)
        return out.view(rows, width, -1)

    def head(self, forward: Callable, x):
        """The output layer on the kept positions of ``x`` ([rows, keep_width, hidden]): ``[1, n, vocab]``."""
        rows, width, size = x.shape
        y = forward(x.reshape(rows * width, size).index_select(0, self.heads))
        self.logits = y
        return y[None]

    def attention(self, query, key, value, mask, scaling):
        """Scaled dot-product attention of ``query`` ([rows, heads, width, dim]) over ``key`` and
        ``value`` ([rows, kv_heads, length, dim]) under the boolean or additive ``mask`` ([rows, 1,
        width, length]); the output as transformers' sdpa returns it: [rows, width, heads, dim]."""
        torch = self.torch
        rows, heads, width, dim = query.shape
        groups = heads // key.shape[1]
        if not self.ragged_attention:
            out = _grouped(torch, query, key, value, self._tiled(mask, groups), scaling)
            return out.transpose(1, 2).contiguous()
        out = query.new_zeros((rows, width, heads, dim))
        last = _grouped(torch, query[:, :, -1:], key, value, mask[:, :, -1:], scaling)   # every row's last token
        out[:, -1] = last[:, :, 0]
        for i, n in enumerate(self.widths):
            if n > 1:   # the row's other tokens, over its own cache rows
                q = query[i:i + 1, :, width - n:width - 1]
                m = mask[i:i + 1, :, width - n:width - 1]
                o = _grouped(torch, q, key[i:i + 1], value[i:i + 1], m.repeat(1, 1, groups, 1), scaling)
                out[i, width - n:width - 1] = o[0].transpose(0, 1)
        return out

    def _tiled(self, mask, groups: int):
        """``mask`` with its query rows repeated once per query head of a key/value head (computed
        once per pass: every layer gets the same mask)."""
        got = self._masks.get(id(mask))
        if got is None or got[0] is not mask:
            got = (mask, mask.repeat(1, 1, groups, 1) if groups > 1 and mask.shape[2] > 1 else mask)
            self._masks[id(mask)] = got
        return got[1]


def _grouped(torch, query, key, value, mask, scaling):
    """Attention with the query heads of each key/value head side by side along the queries
    (``[rows, kv_heads, groups * width, dim]``), the layout of transformers' one-token pass;
    ``mask`` already tiled that way (or broadcastable: one query). Returns [rows, heads, width, dim]."""
    rows, heads, width, dim = query.shape
    kv = key.shape[1]
    q = query.reshape(rows, kv, (heads // kv) * width, dim)
    out = torch.nn.functional.scaled_dot_product_attention(q, key, value, attn_mask=mask, scale=scaling)
    return out.reshape(rows, heads, width, dim)


class RaggedModel:
    """A causal LM with ragged passes available (see the module doc). ``of(model)`` installs the
    wrappers once per model (thread-safe) and returns the same object for the same model."""

    def __init__(self, model: Any):
        import torch
        self.torch = torch
        self.model = model
        self.supported = _install(model, torch)

    @classmethod
    def of(cls, model: Any) -> "RaggedModel":
        with _INSTALL_LOCK:
            got = _MODELS.get(model)
            if got is None:
                got = _MODELS[model] = cls(model)
            return got

    @contextlib.contextmanager
    def run(self, widths: Sequence[int], keep: Sequence[int], width: int, ragged_attention: bool):
        """Inside: this thread's forward passes of the model are laid out as ``widths`` and
        ``keep`` say (see ``RaggedPass``); yields the pass, whose ``logits`` the output layer fills."""
        device = next(self.model.parameters()).device
        p = RaggedPass(self.torch, widths, keep, width, max(keep), ragged_attention, device)
        _LOCAL.current = p
        try:
            yield p
        finally:
            _LOCAL.current = None


def _current(x, rows_width: bool = True) -> RaggedPass | None:
    p = getattr(_LOCAL, "current", None)
    if p is None or x.dim() != 3 or x.shape[0] != p.rows:
        return None
    if x.shape[1] != (p.width if rows_width else p.keep_width):
        return None
    return p


def _install(model: Any, torch) -> bool:
    """Wrap the decoder layers' linear layers, the output layer and (once per process) the sdpa
    attention function; False where the model is not laid out as a decoder with an output layer."""
    try:
        layers = model.get_decoder().layers
        head = model.get_output_embeddings()
    except (AttributeError, NotImplementedError):
        return False
    if not isinstance(head, torch.nn.Linear) or not len(layers):
        return False
    for layer in layers:
        mlp: Any = getattr(layer, "mlp", None)
        inner = list(mlp.modules()) if mlp is not None and all(hasattr(mlp, a) for a in ("gate_proj", "up_proj", "down_proj")) else []
        if inner:   # a dense gated MLP (Llama, Qwen, Mistral...): packed once, its activation too
            _wrap(mlp, lambda p, fwd, x: p.linear(fwd, x), rows_width=True)
        for mod in layer.modules():
            inside = any(mod is m for m in inner)
            if isinstance(mod, torch.nn.Linear) and not inside:
                _wrap(mod, lambda p, fwd, x: p.linear(fwd, x), rows_width=True)
    _wrap(head, lambda p, fwd, x: p.head(fwd, x), rows_width=False)
    _wrap_attention()
    return True


def _wrap(mod: Any, packed: Callable, rows_width: bool) -> None:
    forward = mod.forward

    def ragged_forward(x):
        p = _current(x, rows_width)
        return forward(x) if p is None else packed(p, forward, x)
    mod.forward = ragged_forward


def _wrap_attention() -> None:
    """transformers' "sdpa" attention function, wrapped: inside a ragged pass, a pass over several
    tokens per row takes ``RaggedPass.attention``; anything else goes to the original."""
    from transformers import AttentionInterface
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    current = ALL_ATTENTION_FUNCTIONS["sdpa"]
    if getattr(current, _SDPA_WRAPPED, False):
        return

    def attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
        p = getattr(_LOCAL, "current", None)
        plain = (p is None or query.shape[2] == 1 or attention_mask is None or attention_mask.dim() != 4
                 or attention_mask.shape[1] != 1 or query.shape[0] != p.rows or dropout
                 or any(kwargs.get(k) is not None for k in ("softcap", "position_bias", "sliding_window", "s_aux"))
                 or not getattr(module, "is_causal", True))
        if plain:
            return current(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
        assert p is not None
        return p.attention(query, key, value, attention_mask, scaling), None
    setattr(attention, _SDPA_WRAPPED, True)
    AttentionInterface.register("sdpa", attention)
