"""Think, then constrain: a bounded free part before the constrained answer.

Constraining from the first token makes a model commit to its answer (the first digit of a number,
the first word of a name) before it has written anything it could work from. Letting it write
first and constraining only the answer is meant to recover that (the DCCD paper reports +24 points
on GSM8K with a 1B model; SmolLM2-135M gains little, see BENCHMARKS.md). ``generate(..., think=...)``
does it in two ways (``ThinkOptions.mode``):

- ``"continue"`` (``think=True``): in the same assistant turn, the model writes free text (its
  reasoning) until it writes ``end`` (a marker such as ``"\\nAnswer:"``), ends its turn (EOS) or
  has written ``max_tokens`` tokens; ``end`` is appended when the model did not write it, and the
  answer continues the same token sequence under the grammar. The free part is generated under a
  small grammar, "text that stops at the first ``end``", so it stops exactly there.
- ``"draft"`` (DCCD, draft-conditioned constrained decoding; Reddy et al. 2026, arXiv:2603.03305):
  an unconstrained draft reply of at most ``max_tokens`` tokens, then a second turn, the draft as
  the assistant's message and ``ask`` as the user's, whose reply is constrained. The constrained
  pass is conditioned on the draft, so it mostly copies the draft's answer into the format.

Why two passes of ``generate`` rather than one grammar with a free prefix: the grammar is any
``CompiledGrammar``, which cannot be wrapped after it is compiled, and the model's own end of turn
must end the free part (a grammar would have to forbid EOS there; here the marker is appended
instead). The cost is a second prefill of the prompt and the free part (the first pass's KV cache
is not carried over). For reasoning models that write a
``<think>`` block of their own, the grammar-level form is ``GrammarCompiler.compile_reasoning_json``
(the server's ``reasoning: true``): one grammar, the block unbounded but for ``max_tokens``.

The budget: ``max_tokens`` counts every generated token, free part and answer (plus ``end``'s
tokens in "continue" mode). The free part stops early enough to leave room for the answer's
shortest completion (``Matcher.min_completion_tokens``), and the answer runs under the budget-aware
masks with what is left, so the output still ends valid within ``max_tokens``.

Example::

    out = stencil.runtime.generate(lm, g, "Tom has 12 apples and buys 7 more. How many has he now? "
                                   "Think step by step, then write 'Answer:' and the JSON.",
                                   think=stencil.runtime.ThinkOptions(max_tokens=64))
    out.thought     # the free part, without the marker
    out.text        # the answer only: an output of g
"""
from __future__ import annotations

import json
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from stencil._core import CompiledGrammar, Matcher
from stencil.compiler import GrammarCompiler

if TYPE_CHECKING:
    from stencil.runtime.generate import GenerationResult

__all__ = ["ThinkOptions", "think_options", "generate_thinking", "THINK_MODES"]

THINK_MODES = ("continue", "draft")


@dataclass(frozen=True)
class ThinkOptions:
    """How ``generate(..., think=...)`` lets the model write before the constrained answer;
    ``think=True`` is ``ThinkOptions()``.

    - ``max_tokens``: most tokens of the free part (fewer when ``generate``'s ``max_tokens``
      leaves less room once the answer's shortest completion is kept);
    - ``mode``: "continue" (the answer follows the free part in the same turn, after ``end``) or
      "draft" (DCCD: a free draft, then a second turn asking for the constrained answer);
    - ``end``: "continue"'s marker between the free part and the answer. The prompt should tell
      the model to write it before its answer; where it does not, it is appended;
    - ``ask``: "draft"'s second user message.

    Example::

        generate(lm, g, prompt, think=ThinkOptions(max_tokens=96, end="\\nFinal answer:"))
        generate(lm, g, prompt, think=ThinkOptions(mode="draft"))
    """

    max_tokens: int = 128
    mode: str = "continue"
    end: str = "\nAnswer:"
    ask: str = "Now give only the final answer, in the required format."

    def __post_init__(self):
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 0:
            raise ValueError(f"ThinkOptions: max_tokens must be an integer >= 0, got {self.max_tokens!r}")
        if self.mode not in THINK_MODES:
            raise ValueError(f"ThinkOptions: mode must be one of {THINK_MODES}, got {self.mode!r}")
        for name in ("end", "ask"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"ThinkOptions: {name} must be a non-blank string, got {value!r}")


def think_options(think: bool | ThinkOptions | None) -> ThinkOptions | None:
    """``generate``'s ``think`` argument as options (None: off)."""
    if think is None or think is False:
        return None
    if think is True:
        return ThinkOptions()
    if not isinstance(think, ThinkOptions):
        raise TypeError(f"generate: think must be a bool or a stencil.runtime.ThinkOptions, got {type(think).__name__}")
    return think


# The free part's grammar, one per (tokenizer, end): compiled once, so its lexer and mask cache
# warm up over the calls instead of starting cold at each.
_FREE_GRAMMARS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def free_grammar(info: Any, end: str) -> CompiledGrammar:
    """Free text that stops at the first ``end`` (then only EOS is allowed) or wherever the model
    ends it with EOS before: "text up to ``end``" (a lazy lexeme) or "text without ``end``"."""
    per_info = _FREE_GRAMMARS.setdefault(info, {})
    if end not in per_info:
        without = json.dumps({"pattern": "(.|\\n)*", "not_containing": [end]})
        per_info[end] = GrammarCompiler(info).compile_lark(
            f"start: until_end | THOUGHT\nuntil_end[stop={json.dumps(end)}]: /(.|\\n)*/\n"
            f"THOUGHT: %regex {without}\n")
    return per_info[end]


def generate_thinking(generate: Callable[..., GenerationResult], args: dict[str, Any],
                      think: bool | ThinkOptions) -> GenerationResult:
    """``generate(..., think=think)``: the free part, then the answer under the grammar, each a call
    of ``generate`` (passed in, so that this module does not import it back) with ``args``, the
    caller's other arguments (``on_partial`` and aligned sampling apply to the answer only). The
    result is the answer's, with ``thought`` and ``thought_tokens`` set and the counts and times of
    both passes."""
    options = think_options(think)
    assert options is not None   # generate calls this only when think is on
    lm, grammar, max_tokens = args.pop("lm"), args.pop("grammar"), args.pop("max_tokens")
    prompt, messages, system, input_ids = (args.pop(k) for k in ("prompt", "messages", "system", "input_ids"))
    if grammar is None:
        raise ValueError("generate: think needs a grammar (without one the whole output is free already)")
    if args.get("heal"):
        raise ValueError("generate: think does not combine with heal (the answer's prompt ends with the free part)")
    t_start = time.perf_counter()
    chat = _chat(prompt, messages, system, input_ids) if options.mode == "draft" else []
    if input_ids is None:
        input_ids = lm.encode_prompt(prompt, messages=messages, system=system)
    prompt_ids = [int(t) for t in input_ids]
    need = Matcher(grammar).min_completion_tokens() or 0
    free_args = {k: v for k, v in args.items() if k not in ("on_partial", "partial_schema", "sampling", "particles")}
    if options.mode == "continue":
        end_ids = list(lm.tokenizer.encode(options.end, add_special_tokens=False))
        room = _free_room(options, max_tokens, need + len(end_ids))
        first = generate(lm, free_grammar(lm.tokenizer_info, options.end), input_ids=prompt_ids,
                         max_tokens=room, **free_args)
        thought_ids = list(first.token_ids)
        wrote_end = first.finish_reason == "grammar"   # the grammar's only way to finish: end written
        thought = first.text[:-len(options.end)] if wrote_end else first.text
        if not wrote_end:
            thought_ids += end_ids
            if args.get("on_text") is not None:
                args["on_text"](options.end)
        second = generate(lm, grammar, input_ids=prompt_ids + thought_ids, max_tokens=max_tokens - len(thought_ids),
                          **args)
    else:
        room = _free_room(options, max_tokens, need)
        first = generate(lm, None, input_ids=prompt_ids, max_tokens=room, **free_args)
        thought = first.text
        turn = chat + [{"role": "assistant", "content": first.text}, {"role": "user", "content": options.ask}]
        second = generate(lm, grammar, messages=turn, max_tokens=max_tokens - len(first.token_ids), **args)
    second.thought, second.thought_tokens = thought, len(first.token_ids)
    second.prompt_tokens = len(prompt_ids)
    second.forward_passes += first.forward_passes
    second.forced_tokens += first.forced_tokens
    second.masks_computed += first.masks_computed
    second.prefill_seconds += first.prefill_seconds
    second.seconds = time.perf_counter() - t_start
    return second


def _free_room(options: ThinkOptions, max_tokens: int, answer_need: int) -> int:
    """Tokens the free part may take: ``options.max_tokens``, less where ``max_tokens`` must keep
    ``answer_need`` tokens for the answer (its shortest completion, and ``end`` in "continue")."""
    if max_tokens < answer_need:
        raise ValueError(f"generate: think needs max_tokens >= {answer_need} (the answer's shortest completion"
                         f"{' and the end marker' if options.mode == 'continue' else ''}), got {max_tokens}")
    return min(options.max_tokens, max_tokens - answer_need)


def _chat(prompt: str | None, messages: Sequence[dict] | None, system: str | None,
          input_ids: Sequence[int] | None) -> list[dict]:
    """The conversation a "draft" answer's second turn extends."""
    if messages is not None:
        return list(messages)
    if prompt is None or input_ids is not None:
        raise ValueError("generate: think mode 'draft' needs prompt or messages (its second turn is a chat turn)")
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
