"""A transformers ``LogitsProcessor`` that keeps ``model.generate`` inside a grammar.

Example::

    import stencil
    from stencil.integrations.transformers import GrammarLogitsProcessor, tokenizer_info_for
    info = tokenizer_info_for(tokenizer, model)          # tokenizer bytes, model's width and EOS
    grammar = stencil.GrammarCompiler(info).compile_regex(r"(yes|no)")
    out = model.generate(**inputs, logits_processor=[GrammarLogitsProcessor(grammar)],
                         max_new_tokens=8)

One processor serves one ``generate`` call (it notices a new call by the input shape and starts
over). It works with greedy and sampled decoding and with batches, also left-padded ones: each
row has its own matcher (one grammar for all rows, or one per row), which accepts the tokens
``generate`` produced for that row. Beam search is not supported (beams are reordered between
steps).

``max_new_tokens``: pass ``generate``'s value to keep each row valid within it (a token is allowed
only when the row's output can still be completed in the tokens left after it); a value too
small for a grammar's shortest output is a ValueError at the first step.

``opportunistic=True`` (greedy decoding only: ``do_sample=False``, one beam): the processor checks
each row's argmax with the row's matcher (``Matcher.accept_token(t, remaining_tokens)``, about a
microsecond) and leaves the row's scores unmasked when the grammar allows it; the mask is computed
only for rows whose argmax it refuses. Greedy output is the same as with masks (the argmax of the
scores is allowed, so it is the argmax of the masked scores), and ``masks_computed`` counts the
masks. Under sampling the unmasked scores would let ``generate`` draw tokens the grammar refuses
(a ValueError at the next step): leave it off there. Processors placed after this one must not
change the argmax.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from stencil import (CompiledGrammar, Matcher, allocate_token_bitmask, apply_token_bitmask_inplace,
                     fill_next_token_bitmasks)
from stencil.runtime.models import tokenizer_info_for

try:
    from transformers import LogitsProcessor
except ImportError as e:  # pragma: no cover - depends on the installation
    from stencil._version import pip_install
    raise ImportError(f"stencil.integrations.transformers needs transformers: {pip_install('hf')}") from e

__all__ = ["GrammarLogitsProcessor", "tokenizer_info_for"]


class GrammarLogitsProcessor(LogitsProcessor):
    """Masks the scores of every row so that only tokens the row's grammar allows can be chosen.

    ``grammars``: one ``CompiledGrammar`` for every row, or a sequence with one per row (its
    length must be the batch size). When a row's grammar is complete and allows only EOS, EOS is
    the only choice; after a row has produced EOS its scores are left to ``generate``, which pads
    finished rows. ``num_threads`` bounds the threads that fill a batch's masks.
    ``max_new_tokens``: the budget of ``generate`` (same value): with it every row ends valid
    within the budget (see ``Matcher.fill_next_token_bitmask``'s ``remaining_tokens``).

    Example::

        proc = GrammarLogitsProcessor([g_yes_no, g_number])      # a batch of two prompts
        model.generate(**tok(prompts, return_tensors="pt", padding=True), logits_processor=[proc])
        proc.matchers[0].is_terminated()
    """

    def __init__(self, grammars: CompiledGrammar | Sequence[CompiledGrammar], *,
                 num_threads: int | None = None, max_new_tokens: int | None = None, opportunistic: bool = False):
        if isinstance(grammars, CompiledGrammar):
            self._grammars: list[CompiledGrammar] | None = None
            self._grammar = grammars
        else:
            self._grammars = list(grammars)
            if not self._grammars or not all(isinstance(g, CompiledGrammar) for g in self._grammars):
                raise TypeError("GrammarLogitsProcessor needs a CompiledGrammar or a non-empty list of them")
            self._grammar = self._grammars[0]
            vs = {g.vocabulary.vocab_size for g in self._grammars}
            if len(vs) != 1:
                raise ValueError(f"the grammars were compiled for tokenizers of different sizes: {sorted(vs)}")
        self.vocab_size = self._grammar.vocabulary.vocab_size
        self.num_threads = num_threads
        if max_new_tokens is not None and (isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int)
                                           or max_new_tokens < 1):
            raise ValueError(f"max_new_tokens must be an int >= 1 or None, got {max_new_tokens!r}")
        self.max_new_tokens = max_new_tokens
        self.opportunistic = bool(opportunistic)
        #: masks computed since the processor was made (one per row and step without ``opportunistic``)
        self.masks_computed = 0
        self.matchers: list[Matcher] = []
        self._start = 0      # sequence length when this generate call began (the prompt)
        self._seen = 0       # sequence length the matchers have accepted up to
        self._bitmask: np.ndarray | None = None

    def reset(self) -> None:
        """Forget the current generation; the next call starts a new one."""
        self.matchers = []

    def _begin(self, batch: int, length: int) -> None:
        grammars = self._grammars if self._grammars is not None else [self._grammar] * batch
        if len(grammars) != batch:
            raise ValueError(f"GrammarLogitsProcessor has {len(grammars)} grammars for a batch of {batch} rows "
                             "(num_return_sequences and beams multiply the rows)")
        # opportunistic: a checked argmax is taken back (rollback), then taken again from input_ids
        self.matchers = [Matcher(g, max_rollback=1 if self.opportunistic else 0) for g in grammars]
        if self.max_new_tokens is not None:
            for row, m in enumerate(self.matchers):
                need = m.min_completion_tokens()
                if need is not None and need > self.max_new_tokens:
                    self.matchers = []
                    raise ValueError(f"row {row}: the shortest output of its grammar needs up to {need} tokens, "
                                     f"more than max_new_tokens={self.max_new_tokens}")
        self._start = self._seen = length
        self._bitmask = allocate_token_bitmask(batch, self.vocab_size)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        batch, length = input_ids.shape
        if not self.matchers or batch != len(self.matchers) or length <= self._seen:
            self._begin(batch, length)  # a new generate call (or the first)
        if length > self._seen:
            new = input_ids[:, self._seen:length].tolist()
            for row, (m, toks) in enumerate(zip(self.matchers, new)):
                for t in toks:
                    if m.is_terminated():
                        break  # generate pads a finished row; those tokens are not the row's output
                    if not m.accept_token(int(t)):
                        raise ValueError(f"row {row}: token {t} produced by generate is not allowed by the grammar "
                                         f"(another logits processor or a sampler changed the masked scores?)")
            self._seen = length
        active = [i for i, m in enumerate(self.matchers) if not m.is_terminated()]
        left = None if self.max_new_tokens is None else max(self.max_new_tokens - (length - self._start), 0)
        if active and self.opportunistic:   # rows whose argmax the grammar allows keep their scores
            best = scores.argmax(dim=-1).tolist()
            active = [i for i in active if not self._allows(i, int(best[i]), left)]
        self.masks_computed += len(active)
        if active and self._bitmask is not None:   # _begin allocated it
            fill_next_token_bitmasks([self.matchers[i] for i in active], self._bitmask, indices=active,
                                     num_threads=self.num_threads, remaining_tokens=left)
            if len(active) == len(self.matchers):
                apply_token_bitmask_inplace(scores, self._bitmask)
            else:
                apply_token_bitmask_inplace(scores, self._bitmask[active], indices=active)
        return scores

    def _allows(self, row: int, token: int, left: int | None) -> bool:
        """Whether row ``row``'s (budgeted) mask allows ``token`` (EOS: where the output is complete);
        the matcher's state is unchanged."""
        m = self.matchers[row]
        if token >= self.vocab_size or not m.accept_token(token, left):
            return False
        m.rollback(1)   # (also after EOS, which terminated the matcher)
        return True
