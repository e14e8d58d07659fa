"""One forward pass for many sequences of different lengths: a batched KV cache with per-row
padding, rows joining and leaving between steps (continuous batching).

Every row's cache is aligned on the right: the batch cache has one length ``L``, and a row whose
history is shorter has masked (attention mask 0) slots. A step feeds each row ``n_i >= 1`` new
tokens, padded on the left to the step's widest row, so the last position of every row is its
newest token and ``logits_to_keep=1`` gives each row's next-token logits. Positions (RoPE) count
each row's real tokens only, so padding changes nothing but floating-point rounding.

A new row is prefilled alone (its prompt but the last token, which joins the next batched step)
and its cache is left-padded to the batch's length (or the batch to its). Rows that finish are
dropped with ``keep``; columns that every remaining row masks are cut off.

Speculative decoding feeds a row its draft and keeps only the accepted prefix: ``rollback`` masks
each row's rejected slots (the last ones it was fed) and takes them off its positions, so the
next tokens get the positions the rejected ones had. The masked slots are holes in the cache;
once they make up a quarter of it, each row's real slots are moved right-aligned again
(``compact``), so the cache stays about as long as the longest row.
"""
from __future__ import annotations

import inspect
from typing import Any, Sequence

from stencil.server.ragged import RaggedModel


#: cache slots of holes and padding always tolerated before compacting (a quarter of the cache too)
COMPACT_SLACK = 32


class UnsupportedCache(Exception):
    """The model's cache is not a plain per-layer key/value cache (sliding windows, recurrent
    state): its rows cannot be padded and concatenated."""


class KVBatch:
    """The batched cache of a transformers causal LM. Not thread-safe: one engine thread."""

    def __init__(self, model: Any):
        import torch
        from transformers import DynamicCache
        self.torch = torch
        self.model = model
        self._new_cache = DynamicCache
        self.device = next(model.parameters()).device
        self.cache = DynamicCache()
        self.mask = torch.zeros((0, 0), dtype=torch.long, device=self.device)  # [rows, L]
        self.positions: list[int] = []  # each row's count of real tokens
        params = inspect.signature(model.forward).parameters
        self._keep_arg = next((a for a in ("logits_to_keep", "num_logits_to_keep") if a in params), None)
        # transformers 5 renamed past_key_values to cache; the cache object is updated in place
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    @property
    def rows(self) -> int:
        return len(self.positions)

    @property
    def length(self) -> int:
        return int(self.mask.shape[1])

    # -- cache tensors ------------------------------------------------------------------------
    def _layers(self, cache) -> list:
        layers = list(getattr(cache, "layers", []))
        for layer in layers:
            if getattr(layer, "is_sliding", False) or not hasattr(layer, "keys"):
                raise UnsupportedCache(f"{type(layer).__name__} layers cannot be batched")
        return layers

    def _padded(self, t, left: int):
        """``t`` ([rows, heads, L, dim]) with ``left`` zero slots before its first position."""
        if left <= 0:
            return t
        z = self.torch.zeros((t.shape[0], t.shape[1], left, t.shape[3]), dtype=t.dtype, device=t.device)
        return self.torch.cat([z, t], dim=2)

    # -- joining and leaving ------------------------------------------------------------------
    def add(self, prompt_ids: Sequence[int]) -> None:
        """Prefill a new row with ``prompt_ids`` (its last token goes in the next ``step``)."""
        torch = self.torch
        cache = self._new_cache()
        n = len(prompt_ids)
        if n:
            ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=self.device)
            kw = {self._keep_arg: 1} if self._keep_arg else {}
            self.model(input_ids=ids, use_cache=True, **{self._cache_arg: cache}, **kw)
        new_layers = self._layers(cache) if n else []
        old_layers = self._layers(self.cache) if self.length else []
        length = max(self.length, n)
        if old_layers and new_layers:
            for old, new in zip(old_layers, new_layers):
                old.keys = torch.cat([self._padded(old.keys, length - self.length),
                                      self._padded(new.keys, length - n)])
                old.values = torch.cat([self._padded(old.values, length - self.length),
                                        self._padded(new.values, length - n)])
        elif old_layers:  # a one-token prompt: nothing cached yet for this row
            for old in old_layers:
                old.keys = torch.cat([old.keys, torch.zeros_like(old.keys[:1])])
                old.values = torch.cat([old.values, torch.zeros_like(old.values[:1])])
        elif new_layers:  # the batch had no cached positions: its rows get zeros
            for new in new_layers:
                new.keys = torch.cat([torch.zeros_like(new.keys).expand(self.rows, -1, -1, -1), new.keys])
                new.values = torch.cat([torch.zeros_like(new.values).expand(self.rows, -1, -1, -1), new.values])
            self.cache = cache
        row = torch.zeros((1, length), dtype=torch.long, device=self.device)
        if n:
            row[0, length - n:] = 1
        old_mask = torch.zeros((self.rows, length), dtype=torch.long, device=self.device)
        old_mask[:, length - self.length:] = self.mask
        self.mask = torch.cat([old_mask, row])
        self.positions.append(n)

    def keep(self, indices: Sequence[int]) -> None:
        """Keep only the rows ``indices`` (in that order), and cut columns no row attends to."""
        torch = self.torch
        if len(indices) == self.rows:
            return
        if not indices:
            self.cache = self._new_cache()
            self.mask = self.mask[:0, :0]
            self.positions = []
            return
        idx = torch.tensor(list(indices), dtype=torch.long, device=self.device)
        self.mask = self.mask[idx]
        self.positions = [self.positions[i] for i in indices]
        used = torch.nonzero(self.mask.any(dim=0))
        first = int(used[0]) if len(used) else self.length
        for layer in self._layers(self.cache) if self.length else []:
            layer.keys = layer.keys[idx, :, first:]
            layer.values = layer.values[idx, :, first:]
        self.mask = self.mask[:, first:]

    def rollback(self, counts: Sequence[int]) -> None:
        """Forget the last ``counts[i]`` tokens row i was fed (a rejected draft): at most what the
        last ``step`` fed it."""
        if len(counts) != self.rows:
            raise ValueError(f"rollback needs one count per row ({self.rows}), got {len(counts)}")
        for i, c in enumerate(counts):
            if c < 0 or c > self.positions[i]:
                raise ValueError(f"rollback: row {i} cannot forget {c} of its {self.positions[i]} tokens")
            if c:
                self.mask[i, self.length - c:] = 0
                self.positions[i] -= c
        # the columns every row gave back go at once; the others are holes until _compact
        cut = min(counts, default=0)
        if cut:
            self.mask = self.mask[:, :self.length - cut]
            for layer in self._layers(self.cache):
                layer.keys = layer.keys[:, :, :-cut]
                layer.values = layer.values[:, :, :-cut]

    def compact(self) -> None:
        """Each row's real slots right-aligned in a cache as long as the longest row (keys hold
        their positions: moving a slot changes nothing). ``step`` does it when holes and padding
        make up more than a quarter of the cache."""
        torch = self.torch
        want = max(self.positions, default=0)
        if not self.length or want == self.length:
            return
        # a stable sort of the mask puts each row's masked slots first, its real ones in order after
        order = torch.sort(self.mask, dim=1, stable=True).indices[:, self.length - want:]
        for layer in self._layers(self.cache):
            idx = order[:, None, :, None].expand(-1, layer.keys.shape[1], -1, layer.keys.shape[3])
            layer.keys = layer.keys.gather(2, idx)
            layer.values = layer.values.gather(2, idx)
        self.mask = self.mask.gather(1, order)

    # -- the batched step -----------------------------------------------------------------------
    def _feed(self, feeds: Sequence[Sequence[int]]):
        """The inputs of a step (ids, positions: [rows, width], each feed on the right); the
        mask and positions take the new tokens in."""
        torch = self.torch
        if len(feeds) != self.rows or any(not f for f in feeds):
            raise ValueError("step needs one non-empty feed per row")
        if self.length - max(self.positions) > max(COMPACT_SLACK, self.length // 4):
            self.compact()
        width = max(len(f) for f in feeds)
        ids = torch.zeros((self.rows, width), dtype=torch.long)
        pos = torch.zeros((self.rows, width), dtype=torch.long)
        new_mask = torch.zeros((self.rows, width), dtype=torch.long)
        for i, f in enumerate(feeds):
            n = len(f)
            ids[i, width - n:] = torch.tensor(list(f), dtype=torch.long)
            pos[i, :] = self.positions[i]  # pad slots: any position, they are masked
            pos[i, width - n:] = torch.arange(self.positions[i], self.positions[i] + n)
            new_mask[i, width - n:] = 1
            self.positions[i] += n
        self.mask = torch.cat([self.mask, new_mask.to(self.device)], dim=1)
        return ids.to(self.device), pos.to(self.device)

    def _forward(self, ids, pos, keep: int):
        kw = {self._keep_arg: max(keep, 1)} if self._keep_arg else {}
        return self.model(input_ids=ids, attention_mask=self.mask, position_ids=pos, use_cache=True,
                          **{self._cache_arg: self.cache}, **kw)

    def step(self, feeds: Sequence[Sequence[int]], on_device: bool = False, keep: int = 0):
        """One forward pass: ``feeds[i]`` (non-empty) are row i's new tokens. Returns the
        next-token logits ``[rows, vocab]``: float32 on the CPU, or with ``on_device`` the model's
        own tensor (its dtype, on its device), for masking there before the copy. ``keep`` >= 1:
        the logits after each of the last ``keep`` positions instead, ``[rows, keep, vocab]``
        (row i's last ``len(feeds[i])`` positions are its own; those before are padding)."""
        ids, pos = self._feed(feeds)
        out = self._forward(ids, pos, keep)
        logits = out.logits[:, -keep:] if keep else out.logits[:, -1]
        return logits if on_device else logits.float().cpu()

    def step_rows(self, feeds: Sequence[Sequence[int]], keep: Sequence[int]) -> "StepLogits":
        """One forward pass where each row pays for its own tokens (``server.ragged``): ``feeds[i]``
        (non-empty) are row i's new tokens, ``keep[i]`` (1 to ``len(feeds[i])``) how many of its
        last positions' logits are wanted (a speculating row: its draft's and the one after).
        The logits stay the model's own tensor (dtype, device). A model that ``RaggedModel`` cannot
        wrap is padded, as ``step``."""
        if len(keep) != len(feeds) or any(not 1 <= k <= len(f) for k, f in zip(keep, feeds)):
            raise ValueError("step_rows needs, for each row, 1 <= keep <= its feed")
        ragged = RaggedModel.of(self.model)
        ids, pos = self._feed(feeds)
        width, most = ids.shape[1], max(keep)
        if not ragged.supported:
            grid = self._forward(ids, pos, most).logits[:, -most:]
            return StepLogits([grid[i, most - k:] for i, k in enumerate(keep)], keep)
        drafting = sum(len(f) > 1 for f in feeds)
        # on a CPU a padded query costs a real one: rows fed several tokens get attention calls of their own
        alone = self.device.type == "cpu" and 2 * drafting <= self.rows
        with ragged.run([len(f) for f in feeds], keep, width, alone) as p:
            self._forward(ids, pos, most)
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
