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
  one, the last position of every row goes in one call and the other tokens of the rows fed more
  than one in another, over those rows' cache rows only; a one-token pass on a CPU in bfloat16
  or float16 is grouped too (torch's kernel takes several times as long with one query per head).

The wrappers are installed once per model and act only inside ``RaggedModel.run`` on the thread
that runs it (a thread-local context); outside it, and on other threads (``stencil.runtime.generate`` on
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
                 ragged_attention: bool, device, kernels: "Matmuls"):
        self.torch, self.kernels = torch, kernels
        self.rows, self.width, self.keep_width = len(widths), width, keep_width
        self.widths = list(widths)
        tokens = [i * width + j for i, n in enumerate(widths) for j in range(width - n, width)]
        self.tokens = torch.tensor(tokens, dtype=torch.long, device=device)
        self.all_tokens = len(tokens) == self.rows * width
        heads = [i * keep_width + j for i, k in enumerate(keep) for j in range(keep_width - k, keep_width)]
        self.heads = torch.tensor(heads, dtype=torch.long, device=device)
        self.ragged_attention = ragged_attention
        self.wide = [i for i, n in enumerate(widths) if n > 1]   # rows fed several tokens
        self.wide_idx = torch.tensor(self.wide, dtype=torch.long, device=device)
        self.wide_queries = max(widths) - 1   # their tokens before the last, the grid's columns
        self.logits: Any = None
        self._packed_in: tuple[Any, Any] | None = None   # (input, its real tokens): q/k/v share one input
        self._masks: dict = {}   # masks tiled per query head, computed once per pass

    def linear(self, mod: Any, forward: Callable, x):
        """``mod`` (an ``nn.Linear``, or a dense MLP: ``forward`` is its own) on the real tokens of
        ``x`` ([rows, width, in])."""
        rows, width, size = x.shape
        if self.all_tokens:
            return self.matmul(mod, forward, x.reshape(rows * width, size)).view(rows, width, -1)
        if self._packed_in is not None and self._packed_in[0] is x:
            packed = self._packed_in[1]
        else:
            packed = x.reshape(rows * width, size).index_select(0, self.tokens)
            self._packed_in = (x, packed)
        y = self.matmul(mod, forward, packed)
        out = y.new_empty((rows * width, y.shape[-1]))   # padding: never read (its keys and values not kept)
        out.index_copy_(0, self.tokens, y)
        return out.view(rows, width, -1)

    def matmul(self, mod: Any, forward: Callable, x):
        """``forward(x)`` for ``x`` of [tokens, in]; an ``nn.Linear`` through ``Matmuls``."""
        return self.kernels.linear(mod, forward, x) if isinstance(mod, self.torch.nn.Linear) else forward(x)

    def head(self, mod: Any, forward: Callable, x):
        """The output layer on the kept positions of ``x`` ([rows, keep_width, hidden]): ``[1, n, vocab]``."""
        rows, width, size = x.shape
        y = self.kernels.linear(mod, forward, x.reshape(rows * width, size).index_select(0, self.heads), head=True)
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
        out = query.new_empty((rows, width, heads, dim))   # (padding: never read)
        last = _grouped(torch, query[:, :, -1:], key, value, mask[:, :, -1:], scaling)   # every row's last token
        out[:, -1] = last[:, :, 0]
        if self.wide:   # the other tokens of the rows fed several, in one call over their cache rows
            m, idx = self.wide_queries, self.wide_idx
            span = slice(width - 1 - m, width - 1)
            if len(self.wide) == 1:
                i = self.wide[0]
                q, k, v = query[i:i + 1, :, span], key[i:i + 1], value[i:i + 1]
            else:
                q, k, v = query[idx][:, :, span], key.index_select(0, idx), value.index_select(0, idx)
            o = _grouped(torch, q, k, v, self._wide_mask(mask, groups, span), scaling)
            out[idx, span] = o.transpose(1, 2)
        return out

    def _wide_mask(self, mask, groups: int, span: slice):
        """The mask rows of the wide rows' other tokens, tiled per query head (once per pass)."""
        got = self._masks.get("wide")
        if got is None or got[0] is not mask:
            m = mask.index_select(0, self.wide_idx)[:, :, span]
            got = (mask, m.repeat(1, 1, groups, 1) if groups > 1 else m)
            self._masks["wide"] = got
        return got[1]

    def _tiled(self, mask, groups: int):
        """``mask`` with its query rows repeated once per query head of a key/value head (computed
        once per pass: every layer gets the same mask)."""
        got = self._masks.get(id(mask))
        if got is None or got[0] is not mask:
            got = (mask, mask.repeat(1, 1, groups, 1) if groups > 1 and mask.shape[2] > 1 else mask)
            self._masks[id(mask)] = got
        return got[1]


def _grouped_one_query(torch, query, key) -> bool:
    """Whether a one-query pass's attention goes through :func:`_grouped`: on a CPU in a half
    dtype, where torch's kernel is several times slower with one query per head (transformers'
    layout) than with the query heads of a key/value head side by side (torch 2.13, SmolLM2's
    shape, 300 positions: bfloat16 295 against 52 us a layer, float16 538 against 221; float32
    46 against 39 with one thread, 29 against 35 with two: left as it is)."""
    return (query.device.type == "cpu" and query.dtype in (torch.bfloat16, torch.float16)
            and query.shape[1] % key.shape[1] == 0)


def _grouped(torch, query, key, value, mask, scaling):
    """Attention with the query heads of each key/value head side by side along the queries
    (``[rows, kv_heads, groups * width, dim]``), the layout of transformers' one-token pass;
    ``mask`` already tiled that way (or broadcastable: one query). Returns [rows, heads, width, dim]."""
    rows, heads, width, dim = query.shape
    kv = key.shape[1]
    q = query.reshape(rows, kv, (heads // kv) * width, dim)
    out = torch.nn.functional.scaled_dot_product_attention(q, key, value, attn_mask=mask, scale=scaling)
    return out.reshape(rows, heads, width, dim)


class Matmuls:
    """How a linear layer multiplies the few rows of a decode step on this machine. A CPU BLAS
    picks its kernel by shape: for 2 to ~8 rows against a weight matrix that does not fit in the
    cache, ``weight @ x.T`` (the weights as the left operand) can take half the time of
    ``F.linear(x, weight)``, and one row padded to two a quarter less than the one-row product
    (MKL on a 2-core AVX-512 machine, SmolLM2: 1 to 5 rows 25-40% faster, 8 and more slower). So
    ``calibrate`` times both on the model's own weights, once per model on a CPU, for 1 to
    ``MOST`` rows, and ``linear`` takes the faster where it is clearly faster (``MARGIN``). The
    products are the same up to float rounding."""

    MOST = 8
    MARGIN = 0.9

    def __init__(self, torch):
        self.torch = torch
        self.transposed: set[int] = set()   # row counts computed as weight @ x.T (decoder layers)
        self.head_transposed: set[int] = set()   # the same for the output layer (its own shape)
        self.calibrated = False

    def linear(self, mod: Any, forward: Callable, x, head: bool = False):
        """``mod``'s output for ``x`` ([rows, in]) by the faster product for its row count
        (``head``: ``mod`` is the output layer)."""
        n = x.shape[0]
        if n not in (self.head_transposed if head else self.transposed):
            return forward(x)
        rows = x if n > 1 else self.torch.cat([x, x])
        y = self.torch.mm(mod.weight, rows.t()).t()[:n].contiguous()
        return y if mod.bias is None else y + mod.bias

    def calibrate(self, weights: list, reps: int = 2, head: Any = None) -> None:
        """Time both products for 1 to ``MOST`` rows over ``weights`` (every second layer's: far
        more than a cache holds, as in a pass, where each layer's weights come from memory; over
        every third layer's, 40 MB, one row was judged slower transposed, and it is a fifth faster
        in a pass), interleaved; keep the transposed one where it is faster. ``head``: the
        output layer's weight, timed on its own (a vocabulary's rows: the BLAS picks other kernels
        there, e.g. 5 to 8 rows 19-24 ms by ``F.linear`` against 12-15 transposed for SmolLM2)."""
        self.calibrated = True
        self.transposed = self.faster(weights, reps)
        if head is not None:
            self.head_transposed = self.faster([head], 1)   # (10-25 ms a product, twice as fast: one round)

    def faster(self, weights: list, reps: int) -> set[int]:
        """The row counts at which the transposed product over ``weights`` is clearly faster."""
        import time
        torch = self.torch
        rng = torch.Generator().manual_seed(0)   # (not torch's global one: a caller's seeded draws stay its own)
        inputs = {w.shape[1]: torch.randn(self.MOST, w.shape[1], generator=rng).to(w.dtype) for w in weights}
        seconds: dict[tuple[int, bool], float] = {}
        for _ in range(reps):
            for n in range(1, self.MOST + 1):
                for transposed in (False, True):
                    t0 = time.perf_counter()
                    for w in weights:
                        x = inputs[w.shape[1]][:n]
                        if not transposed:
                            torch.nn.functional.linear(x, w)
                        else:
                            torch.mm(w, (x if n > 1 else torch.cat([x, x])).t())
                    took = time.perf_counter() - t0
                    seconds[n, transposed] = min(seconds.get((n, transposed), took), took)
        return {n for n in range(1, self.MOST + 1) if seconds[n, True] < self.MARGIN * seconds[n, False]}


class RaggedModel:
    """A causal LM with ragged passes available (see the module doc). ``of(model)`` installs the
    wrappers once per model (thread-safe) and returns the same object for the same model."""

    def __init__(self, model: Any):
        import torch
        self.torch = torch
        self.model = model
        self.kernels = Matmuls(torch)
        self.supported = _install(model, torch)

    @classmethod
    def of(cls, model: Any) -> "RaggedModel":
        with _INSTALL_LOCK:
            got = _MODELS.get(model)
            if got is None:
                got = _MODELS[model] = cls(model)
            return got

    def prepare(self) -> None:
        """Calibrate the products of few rows on a CPU (``Matmuls``; once per model, under a second)."""
        with _INSTALL_LOCK:
            if self.kernels.calibrated or not self.supported:
                return
            self.kernels.calibrated = True
            if next(self.model.parameters()).device.type == "cpu":
                layers = self.model.get_decoder().layers
                with self.torch.inference_mode():
                    self.kernels.calibrate([m.weight for layer in layers[::2] for m in layer.modules()
                                            if isinstance(m, self.torch.nn.Linear)],
                                           head=self.model.get_output_embeddings().weight)

    @contextlib.contextmanager
    def run(self, widths: Sequence[int], keep: Sequence[int], width: int, ragged_attention: bool):
        """Inside: this thread's forward passes of the model are laid out as ``widths`` and
        ``keep`` say (see ``RaggedPass``); yields the pass, whose ``logits`` the output layer fills."""
        device = next(self.model.parameters()).device
        self.prepare()
        p = RaggedPass(self.torch, widths, keep, width, max(keep), ragged_attention, device, self.kernels)
        _LOCAL.current = p
        try:
            yield p
        finally:
            _LOCAL.current = None


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
        inner = list(mlp.modules()) if mlp is not None and all(
            hasattr(mlp, a) for a in ("gate_proj", "up_proj", "down_proj")) else []
        if inner:   # a dense gated MLP (Llama, Qwen, Mistral...): packed once, its activation too
            _wrap(mlp, lambda p, mod, fwd, x: p.linear(mod, fwd, x))
        for mod in layer.modules():
            if isinstance(mod, torch.nn.Linear):
                _wrap(mod, lambda p, mod, fwd, x: p.linear(mod, fwd, x))
    _wrap(head, lambda p, mod, fwd, x: p.head(mod, fwd, x), head=True)
    _wrap_attention()
    return True


def _wrap(mod: Any, packed: Callable, head: bool = False) -> None:
    """``mod.forward`` wrapped: inside a ragged pass, an input laid out as the pass ([rows, width,
    ...]; the output layer: [rows, keep_width, ...]) goes to ``packed``, and a 2-D one (inside a
    packed MLP) to the pass's ``Matmuls``."""
    import torch
    forward = mod.forward
    linear = isinstance(mod, torch.nn.Linear)

    def ragged_forward(x):
        p = getattr(_LOCAL, "current", None)
        if p is None:
            return forward(x)
        if x.dim() == 3 and x.shape[0] == p.rows and x.shape[1] == (p.keep_width if head else p.width):
            return packed(p, mod, forward, x)
        if linear and x.dim() == 2:
            return p.kernels.linear(mod, forward, x, head)
        return forward(x)
    mod.forward = ragged_forward


def _wrap_attention() -> None:
    """transformers' "sdpa" attention function, wrapped: inside a ragged pass, a pass over several
    tokens per row takes ``RaggedPass.attention``, a one-token pass on a CPU in a half dtype the
    grouped layout (``_grouped_one_query``); anything else goes to the original."""
    import torch
    from transformers import AttentionInterface
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    current = ALL_ATTENTION_FUNCTIONS["sdpa"]
    if getattr(current, _SDPA_WRAPPED, False):
        return

    def attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
        p = getattr(_LOCAL, "current", None)
        usual = (p is not None and query.shape[0] == p.rows and not dropout
                 and not any(kwargs.get(k) is not None for k in ("softcap", "position_bias", "sliding_window", "s_aux"))
                 and (attention_mask is None or (attention_mask.dim() == 4 and attention_mask.shape[1] == 1)))
        if usual and query.shape[2] == 1 and _grouped_one_query(torch, query, key):
            mask = attention_mask[:, :, :, :key.shape[-2]] if attention_mask is not None else None
            return _grouped(torch, query, key, value, mask, scaling).transpose(1, 2).contiguous(), None
        if not usual or query.shape[2] == 1 or attention_mask is None or not getattr(module, "is_causal", True):
            return current(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
        assert p is not None
        return p.attention(query, key, value, attention_mask, scaling), None
    setattr(attention, _SDPA_WRAPPED, True)
    AttentionInterface.register("sdpa", attention)
