"""A llama-cpp-python ``LogitsProcessor`` that keeps ``Llama`` completions inside a grammar.

Example::

    from llama_cpp import Llama, LogitsProcessorList
    import stencil
    from stencil.integrations.llama_cpp import GrammarLogitsProcessor, tokenizer_info_for_llama
    llm = Llama(stencil.runtime.default_model_path(), n_ctx=2048)
    info = tokenizer_info_for_llama(llm)                    # from the GGUF file, llama.cpp's width
    g = stencil.GrammarCompiler(info).compile_json_schema(schema)
    out = llm.create_completion(prompt, max_tokens=200, temperature=0,
                                logits_processor=LogitsProcessorList([GrammarLogitsProcessor(g)]))

The grammar's end tokens are the GGUF file's EOS ids, on which llama.cpp stops. One processor
serves one completion (a new one, or ``reset()``, per call): it takes the input it first sees as
the prompt and accepts each token llama.cpp appends after it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

import stencil

__all__ = ["GrammarLogitsProcessor", "tokenizer_info_for_llama"]


def tokenizer_info_for_llama(llm: Any) -> stencil.TokenizerInfo:
    """The ``TokenizerInfo`` of a ``llama_cpp.Llama``: read from its GGUF file
    (``TokenizerInfo.from_gguf``), sized to the model's logits, ending on the model's EOS."""
    path = getattr(llm, "model_path", None)
    if not path:
        raise ValueError("this Llama has no model_path; build the TokenizerInfo with TokenizerInfo.from_gguf(path)")
    info = stencil.TokenizerInfo.from_gguf(path, vocab_size=llm.n_vocab())
    eos = int(llm.token_eos())
    if eos >= 0 and eos not in info.eos_token_ids:
        raise ValueError(f"{path}: llama.cpp stops on token {eos}, which the GGUF tokenizer does not list as an end "
                         f"token ({info.eos_token_ids}); pass eos_token_ids to TokenizerInfo.from_gguf")
    return info


class GrammarLogitsProcessor:
    """Masks the logits of each step to the tokens ``grammar`` allows (llama-cpp-python's
    ``LogitsProcessor``: called with all ids so far and the next token's logits, numpy arrays).

    ``matcher`` is the grammar state. llama.cpp stops on the EOS token it samples, and at
    ``max_tokens``, without calling the processor again, so the matcher has not seen the last
    token: whether an output is complete is ``m.accept_string(text) and m.is_accepting()`` for a
    fresh ``m = stencil.Matcher(grammar)``.

    ``max_tokens``: the completion's ``max_tokens``, to make the masks budget-aware (a token is
    allowed only if the output can still end within the tokens left), so that an output is
    complete, not cut, when llama.cpp stops at ``max_tokens``::

        proc = GrammarLogitsProcessor(grammar, max_tokens=200)
        llm.create_completion(prompt, max_tokens=200, logits_processor=LogitsProcessorList([proc]))

    ``opportunistic=True`` (greedy only: ``temperature=0`` and no penalties, ``repeat_penalty=1.0``,
    ``frequency_penalty`` and ``presence_penalty`` 0, no ``logit_bias``): the processor checks the
    argmax of the logits with the matcher (``Matcher.accept_token(t, remaining_tokens)``, about a
    microsecond) and leaves the logits unmasked when the grammar allows it, computing the mask only
    when it refuses it (or when several tokens share the best logit). llama.cpp applies its
    penalties and samplers *after* the processor, so they could pick another token from unmasked
    logits: the output is then no longer the grammar's (a ValueError at the next step).
    ``masks_computed`` counts the masks::

        proc = GrammarLogitsProcessor(grammar, max_tokens=200, opportunistic=True)
        llm.create_completion(prompt, max_tokens=200, temperature=0.0, repeat_penalty=1.0,
                              logits_processor=LogitsProcessorList([proc]))
    """

    def __init__(self, grammar: stencil.CompiledGrammar, max_tokens: int | None = None, *,
                 opportunistic: bool = False):
        if not isinstance(grammar, stencil.CompiledGrammar):
            raise TypeError(f"GrammarLogitsProcessor needs a CompiledGrammar, got {type(grammar).__name__}")
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                       or max_tokens < 1):
            raise ValueError(f"max_tokens must be None or an int >= 1, got {max_tokens!r}")
        self.grammar = grammar
        self.max_tokens = max_tokens
        self.opportunistic = bool(opportunistic)
        # opportunistic: a checked argmax is taken back (rollback), then taken again from input_ids
        self.matcher = stencil.Matcher(grammar, max_rollback=1 if self.opportunistic else 0)
        #: masks computed since the processor was made (one per call without ``opportunistic``)
        self.masks_computed = 0
        self._seen: int | None = None   # length of input_ids the matcher has accepted up to
        self._prompt = 0                # length of the prompt (the first call's input)
        self._bitmask = stencil.allocate_token_bitmask(1, grammar.vocabulary.vocab_size)

    def reset(self) -> None:
        """Start over: the next call's input is a new prompt."""
        self.matcher.reset()
        self._seen = None

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        n = len(input_ids)
        if self._seen is None or n <= self._seen:
            if self._seen is not None:
                self.matcher.reset()   # a shorter input: a new completion with this processor
            self._seen = self._prompt = n
        elif n > self._seen:
            new = input_ids[self._seen:n].tolist()
            ok = self.matcher.accept_tokens(new)
            if ok != len(new):
                raise ValueError(f"token {new[ok]} produced by llama.cpp is not allowed by the grammar "
                                 "(another logits processor or a grammar changed the logits?)")
            self._seen = n
        left = None if self.max_tokens is None else max(1, self.max_tokens - (n - self._prompt))
        if self.opportunistic and self._allows(scores, left):
            return scores
        self.masks_computed += 1
        self.matcher.fill_next_token_bitmask(self._bitmask, 0, remaining_tokens=left)
        stencil.apply_token_bitmask_inplace(scores, self._bitmask[0])
        return scores

    def _allows(self, scores: np.ndarray, left: int | None) -> bool:
        """Whether the (budgeted) mask allows the argmax of ``scores``, a unique maximum (llama.cpp's
        greedy sampler might break a tie otherwise); the matcher's state is unchanged."""
        t = int(np.argmax(scores))
        if np.count_nonzero(scores == scores[t]) != 1:
            return False
        m = self.matcher
        if t >= self.grammar.vocabulary.vocab_size or not m.accept_token(t, left):
            return False
        m.rollback(1)   # (also after EOS, which terminated the matcher)
        return True
