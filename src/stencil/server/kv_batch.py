"""One forward pass for many sequences of different lengths: a batched KV cache whose rows each
hold their own tokens, rows joining and leaving between steps (continuous batching).

Each layer's keys and values live in one buffer ``[rows, kv_heads, capacity, dim]``; row i's
tokens fill its first ``positions[i]`` slots, left-aligned, with no padding or holes between them.
A step feeds each row ``n_i >= 1`` new tokens, laid out right-aligned in a ``[rows, width]`` grid
(its last position is the row's newest token); the cache (``_RowCache``, what transformers' layers
call ``update`` on) writes each row's new keys and values in place after its own tokens, and the
attention mask ``[rows, 1, width, length]`` lets each token see its row's slots up to its own.
Positions (RoPE) count each row's real tokens only, so the batch changes nothing but
floating-point rounding. Nothing is copied per step (transformers' ``DynamicCache`` concatenates
every layer's whole cache with the new tokens at each step: a fifth of a 16-row step of SmolLM2 on
a CPU); the buffers grow by ``GROWTH`` slots past the longest row when it outgrows them.

A new row is prefilled alone (its prompt but the last token, which joins the next batched step)
and its cache copied into a new row of the buffers. Rows that finish are dropped with ``keep``.

Speculative decoding feeds a row its draft and keeps only the accepted prefix: ``rollback`` takes
each row's rejected tokens (the last ones it was fed) off its positions; the next tokens it is fed
overwrite their slots.
"""
from __future__ import annotations

import inspect
from typing import Any, Sequence

from stencil.runtime.attention import shape_stable_attention
from stencil.runtime.ragged import RaggedModel

#: slots a buffer is allocated with at least
MIN_CAPACITY = 256
#: slots a buffer grows by past the longest row when that outgrows it (a copy of the buffers each time)
GROWTH = 256
#: on an accelerator, the slots a step attends to are rounded up to a multiple of this (the mask
#: hides the extra ones): an attention kernel that pays a setup for each new shape (cuDNN's, which
#: ``shape_stable_attention`` now excludes) meets one at every step with exact lengths. On a CPU
#: the extra slots would cost their compute.
ACCELERATOR_LENGTH_STEP = 64


class UnsupportedCache(Exception):
    """The model's cache is not a plain per-layer key/value cache (sliding windows, recurrent
    state): its rows cannot be laid out in one buffer."""


def _row_cache_class():
    from transformers import DynamicCache

    class _RowCache(DynamicCache):
        """What the model's layers write the step's keys and values through: each row's new
        tokens after its own (``KVBatch._feed``'s plan), the buffers returned up to the step's
        longest row."""

        def __init__(self, batch: "KVBatch"):
            super().__init__()
            self.batch = batch

        def update(self, key_states, value_states, layer_idx: int, *args, **kwargs):
            b = self.batch
            rows, cols, slots, length = b.plan
            keys, values = b.buffers(layer_idx, key_states, value_states)
            keys[rows, :, slots] = key_states[rows, :, cols]
            values[rows, :, slots] = value_states[rows, :, cols]
            return keys[:, :, :length], values[:, :, :length]
    return _RowCache


class KVBatch:
    """The batched cache of a transformers causal LM. Not thread-safe: one engine thread."""

    def __init__(self, model: Any):
        import torch
        from transformers import DynamicCache
        self.torch = torch
        self.model = model
        self._new_cache = DynamicCache
        self.device = next(model.parameters()).device
        #: what a step's attended slots are rounded up to (ACCELERATOR_LENGTH_STEP off a CPU)
        self.length_step = 1 if self.device.type == "cpu" else ACCELERATOR_LENGTH_STEP
        self.keys: list = []     # per layer: [rows, kv_heads, capacity, dim]
        self.values: list = []
        self.positions: list[int] = []  # each row's count of real tokens
        self.plan: tuple = ()    # the step under way: (rows, grid columns, slots, length) of its tokens
        self._cache = _row_cache_class()(self)
        RaggedModel.of(model).prepare()   # (its calibration is not timed as a step)
        params = inspect.signature(model.forward).parameters
        self._keep_arg = next((a for a in ("logits_to_keep", "num_logits_to_keep") if a in params), None)
        # transformers 5 renamed past_key_values to cache; the cache object is updated in place
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    @property
    def rows(self) -> int:
        return len(self.positions)

    @property
    def length(self) -> int:
        """The slots the longest row uses (what a step attends to, before its new tokens)."""
        return max(self.positions, default=0)

    @property
    def capacity(self) -> int:
        return int(self.keys[0].shape[2]) if self.keys else 0

    @property
    def mask(self):
        """``[rows, length]``: 1 at each row's slots (its first ``positions[i]``)."""
        torch = self.torch
        slots = torch.arange(self.length, device=self.device)
        return (slots[None, :] < torch.tensor(self.positions, device=self.device)[:, None]).long()

    # -- joining and leaving ------------------------------------------------------------------
    def _layers(self, cache) -> list:
        layers = list(getattr(cache, "layers", []))
        for layer in layers:
            if getattr(layer, "is_sliding", False) or not hasattr(layer, "keys"):
                raise UnsupportedCache(f"{type(layer).__name__} layers cannot be batched")
        return layers

    def _grow(self, rows: int, capacity: int, like: list) -> None:
        """Buffers of ``rows`` more rows than ``positions`` has (zeros) and at least ``capacity``
        slots; ``like``: each layer's keys and values to take shapes from where there are no
        buffers yet."""
        if self.keys:
            like = list(zip(self.keys, self.values))
        cap = max(self.capacity, MIN_CAPACITY)
        if cap < capacity:
            cap = -(-(capacity + GROWTH) // GROWTH) * GROWTH
        old = self.rows if self.keys else 0
        keys, values = [], []
        for layer, (k, v) in enumerate(like):
            nk = k.new_zeros((self.rows + rows, k.shape[1], cap, k.shape[3]))
            nv = v.new_zeros((self.rows + rows, v.shape[1], cap, v.shape[3]))
            if old:
                nk[:old, :, :self.capacity] = self.keys[layer]
                nv[:old, :, :self.capacity] = self.values[layer]
            keys.append(nk)
            values.append(nv)
        self.keys, self.values = keys, values

    def add(self, prompt_ids: Sequence[int]) -> None:
        """Prefill a new row with ``prompt_ids`` (its last token goes in the next ``step``)."""
        torch = self.torch
        cache = self._new_cache()
        n = len(prompt_ids)
        if n:
            ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=self.device)
            kw = {self._keep_arg: 1} if self._keep_arg else {}
            with shape_stable_attention(self.device):
                self.model(input_ids=ids, use_cache=True, **{self._cache_arg: cache}, **kw)
        layers = [(layer.keys, layer.values) for layer in self._layers(cache)] if n else []
        if self.keys or layers:   # (else no buffers yet: the first step makes them, zeros)
            self._grow(1, n, layers)
            for layer, (k, v) in enumerate(layers):
                self.keys[layer][-1, :, :n] = k[0]
                self.values[layer][-1, :, :n] = v[0]
        self.positions.append(n)

    def buffers(self, layer: int, key_states, value_states) -> tuple[Any, Any]:
        """Layer ``layer``'s buffers, made (zeros, like the step's keys and values) where no row
        has a token yet."""
        if layer == len(self.keys):
            cap = max(MIN_CAPACITY, self.plan[3])
            shape = (self.rows, key_states.shape[1], cap, key_states.shape[3])
            self.keys.append(key_states.new_zeros(shape))
            self.values.append(value_states.new_zeros(shape[:3] + (value_states.shape[3],)))
        return self.keys[layer], self.values[layer]

    def keep(self, indices: Sequence[int]) -> None:
        """Keep only the rows ``indices`` (in that order)."""
        torch = self.torch
        if len(indices) == self.rows and list(indices) == list(range(self.rows)):
            return
        self.positions = [self.positions[i] for i in indices]
        if not indices:
            self.keys, self.values = [], []
        if not indices or not self.keys:
            return
        idx = torch.tensor(list(indices), dtype=torch.long, device=self.device)
        cap = self.capacity
        if self.length + 2 * GROWTH < cap:   # the long rows left: a smaller buffer
            cap = max(MIN_CAPACITY, self.length + GROWTH)
        self.keys = [k[idx, :, :cap] for k in self.keys]
        self.values = [v[idx, :, :cap] for v in self.values]

    def rollback(self, counts: Sequence[int]) -> None:
        """Forget the last ``counts[i]`` tokens row i was fed (a rejected draft): at most what the
        last ``step`` fed it. Their slots are written over by the next tokens."""
        if len(counts) != self.rows:
            raise ValueError(f"rollback needs one count per row ({self.rows}), got {len(counts)}")
        for i, c in enumerate(counts):
            if c < 0 or c > self.positions[i]:
                raise ValueError(f"rollback: row {i} cannot forget {c} of its {self.positions[i]} tokens")
            self.positions[i] -= c

    def compact(self) -> None:
        """Nothing to do: rows hold no holes (kept for callers of the padded layout's API)."""

    # -- the batched step -----------------------------------------------------------------------
    def _feed(self, feeds: Sequence[Sequence[int]]):
        """The inputs of a step: ids and positions ([rows, width], each feed on the right) and
        the attention mask; ``plan`` tells the cache where each new token goes, and the positions
        take the new tokens in."""
        torch = self.torch
        if len(feeds) != self.rows or any(not f for f in feeds):
            raise ValueError("step needs one non-empty feed per row")
        width = max(len(f) for f in feeds)
        length = max(p + len(f) for p, f in zip(self.positions, feeds))
        length = -(-length // self.length_step) * self.length_step
        if self.keys and length > self.capacity:
            self._grow(0, length, [])
        ids = torch.zeros((self.rows, width), dtype=torch.long)
        pos = torch.zeros((self.rows, width), dtype=torch.long)
        see = torch.zeros((self.rows, width), dtype=torch.long)  # each query sees the slots before this
        rows: list[int] = []
        cols: list[int] = []
        slots: list[int] = []
        for i, f in enumerate(feeds):
            n, p = len(f), self.positions[i]
            ids[i, width - n:] = torch.tensor(list(f), dtype=torch.long)
            pos[i, :] = p  # padding: any position, nothing attends to it
            pos[i, width - n:] = torch.arange(p, p + n)
            see[i, :] = p + 1
            see[i, width - n:] = torch.arange(p + 1, p + n + 1)
            rows += [i] * n
            cols += range(width - n, width)
            slots += range(p, p + n)
            self.positions[i] += n
        dev = self.device
        self.plan = (torch.tensor(rows, device=dev), torch.tensor(cols, device=dev), torch.tensor(slots, device=dev),
                     length)
        mask = torch.arange(length, device=dev)[None, None, :] < see.to(dev)[:, :, None]
        return ids.to(dev), pos.to(dev), mask[:, None]

    def _forward(self, ids, pos, mask, keep: int):
        kw = {self._keep_arg: max(keep, 1)} if self._keep_arg else {}
        with shape_stable_attention(self.device):
            return self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                              **{self._cache_arg: self._cache}, **kw)

    def step(self, feeds: Sequence[Sequence[int]], on_device: bool = False, keep: int = 0):
        """One forward pass: ``feeds[i]`` (non-empty) are row i's new tokens. Returns the
        next-token logits ``[rows, vocab]``: float32 on the CPU, or with ``on_device`` the model's
        own tensor (its dtype, on its device), for masking there before the copy. ``keep`` >= 1:
        the logits after each of the last ``keep`` positions instead, ``[rows, keep, vocab]``
        (row i's last ``len(feeds[i])`` positions are its own; those before are padding)."""
        ids, pos, mask = self._feed(feeds)
        out = self._forward(ids, pos, mask, keep)
        logits = out.logits[:, -keep:] if keep else out.logits[:, -1]
        return logits if on_device else logits.float().cpu()

    def step_rows(self, feeds: Sequence[Sequence[int]], keep: Sequence[int]) -> "StepLogits":
        """One forward pass where each row pays for its own tokens (``runtime.ragged``): ``feeds[i]``
        (non-empty) are row i's new tokens, ``keep[i]`` (1 to ``len(feeds[i])``) how many of its
        last positions' logits are wanted (a speculating row: its draft's and the one after).
        The logits stay the model's own tensor (dtype, device). A model that ``RaggedModel`` cannot
        wrap is padded, as ``step``."""
        if len(keep) != len(feeds) or any(not 1 <= k <= len(f) for k, f in zip(keep, feeds)):
            raise ValueError("step_rows needs, for each row, 1 <= keep <= its feed")
        ragged = RaggedModel.of(self.model)
        ids, pos, mask = self._feed(feeds)
        width, most = ids.shape[1], max(keep)
        if not ragged.supported:
            grid = self._forward(ids, pos, mask, most).logits[:, -most:]
            return StepLogits([grid[i, most - k:] for i, k in enumerate(keep)], keep)
        drafting = sum(len(f) > 1 for f in feeds)
        # on a CPU a padded query costs a real one: rows fed several tokens get attention calls of their own
        alone = self.device.type == "cpu" and 2 * drafting <= self.rows
        with ragged.run([len(f) for f in feeds], keep, width, alone) as p:
            self._forward(ids, pos, mask, most)
        return StepLogits(p.logits, keep)


class StepLogits:
    """The logits of ``KVBatch.step_rows``: ``packed`` ([sum(keep), vocab], row by row, each row's
    positions in order), ``last`` ([rows, vocab]: each row's next-token logits, a copy where rows
    keep several) and ``of(i)``: row i's kept positions ([keep[i], vocab], views of ``packed``)."""

    def __init__(self, packed, keep: Sequence[int]):
        import torch
        self.keep = list(keep)
        self.starts = [0] * len(self.keep)
        for i in range(1, len(self.keep)):
            self.starts[i] = self.starts[i - 1] + self.keep[i - 1]
        if isinstance(packed, list):   # (padded fallback) one tensor per row
            packed = torch.cat(packed) if packed else None
        self.packed = packed
        if all(k == 1 for k in self.keep):
            self.last = packed
        else:
            ends = [s + k - 1 for s, k in zip(self.starts, self.keep)]
            self.last = packed[torch.tensor(ends, dtype=torch.long, device=packed.device)]

    def of(self, i: int):
        s = self.starts[i]
        return self.packed[s:s + self.keep[i]]
