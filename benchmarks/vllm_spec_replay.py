"""``benchmarks.vllm_replay --speculate K``: the grammar calls of vLLM's n-gram speculation, replayed
without vLLM or a model, for stencil's backend and XGrammar's alike.

Each request is an extraction case (tests.support.extraction_cases, seed 100 onwards: documents
whose answer copies their values) and its output is the case's answer as JSON (the text a model that
copies well writes), then the end token. Each step, as vLLM's scheduler and structured-output
manager make the calls:

1. drafts: vLLM's prompt lookup (the longest suffix of 2-5 tokens of prompt + output seen before,
   its latest place; the K tokens after it), outside the timing;
2. ``validate_tokens`` of each draft (the scheduler keeps the prefix the grammar allows);
3. the masks of every draft position and of the bonus token (``grammar_bitmask``: advance through
   the draft, fill, roll back);
4. ``accept_tokens`` of what verification keeps (the draft's longest prefix that the output holds)
   and the bonus token.

stencil runs through ``StencilBackend`` (``fill_draft_bitmasks``: one native fill per draft position
over the batch); XGrammar as vLLM's ``XgrammarGrammar`` drives its ``GrammarMatcher`` (a fill, an
accept per position, a rollback per request). Times: ``ms/step`` (2-4 for the batch), ``us/token``
(per output token: a speculative step yields several).
"""
from __future__ import annotations

import json
import time
from typing import Callable

import numpy as np

import stencil

SPEC_ENGINES = ("stencil", "xgrammar")


def prompt_lookup(context: list[int], k: int, lo: int = 2, hi: int = 5) -> list[int]:
    """vLLM's n-gram proposer: the ``k`` tokens after the latest earlier place of the longest suffix
    of ``context`` of ``lo``..``hi`` tokens ([] where none recurs)."""
    for n in range(min(hi, len(context) - 1), lo - 1, -1):
        tail = context[-n:]
        for start in range(len(context) - n - 1, -1, -1):
            if context[start:start + n] == tail:
                return context[start + n:start + n + k]
    return []


def extraction_requests(encode: Callable[[str], list[int]], eos: int, count: int, seed: int = 100,
                        texts: dict[int, str] | None = None):
    """(schema, prompt tokens, output tokens) per extraction case. The prompt: the schema's system
    message and the case's (what ``benchmarks.vllm_backends`` sends, so the lookup finds the
    schema's keys there too). The output: ``texts[i]`` (a model's, from that benchmark's
    ``--output``) or the case's answer as JSON, then the end token."""
    from benchmarks.prompts import schema_system_message
    from tests.support.extraction_cases import extraction_cases
    out = []
    for i, case in enumerate(extraction_cases(count, seed=seed)):
        if texts is not None:
            if i not in texts:
                continue
            text = texts[i]
        else:
            # (the answer's keys in the schema's order: the order stencil's and XGrammar's grammars keep)
            text = json.dumps({k: case.expected[k] for k in case.schema["properties"]}, ensure_ascii=False)
        prompt = schema_system_message(case.schema) + "\n" + case.prompt
        out.append((case.schema, encode(prompt), encode(text) + [eos]))
    return out


def model_texts(path: str, run: str) -> dict[int, str]:
    """The outputs of one run (``backend/K``) of ``benchmarks.vllm_backends --output PATH`` that
    ended (not cut, not refused), by request index."""
    with open(path, encoding="utf-8") as f:
        runs = json.load(f)["first"]
    if run not in runs:
        raise ValueError(f"{path} has no run {run!r}; it has {', '.join(runs)}")
    return {int(i): r["text"] for i, r in runs[run]["results"].items()
            if r.get("status") == "done" and r.get("finish_reason") == "stop"}


class _XGrammarRow:
    """vLLM's ``XgrammarGrammar``: the same calls on one ``GrammarMatcher``."""

    def __init__(self, xgr, compiled, k: int):
        self.m = xgr.GrammarMatcher(compiled, max_rollback_tokens=k)

    def accept_tokens(self, tokens: list[int]) -> bool:
        for t in tokens:
            if not self.m.accept_token(t):
                return False
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        kept = []
        for t in tokens:
            if not self.m.accept_token(t):
                break
            kept.append(t)
        if kept:
            self.m.rollback(len(kept))
        return kept

    def is_terminated(self) -> bool:
        return self.m.is_terminated()


def _xgrammar_steps(xgr, bitmask, compiled: list, k: int) -> Callable:
    rows = [_XGrammarRow(xgr, c, k) for c in compiled]

    def validate(i, draft):
        return rows[i].validate_tokens(draft)

    def masks(plan):
        # vLLM's own grammar_bitmask loop: per request, per draft position and the bonus
        index = 0
        for i, draft in plan:
            g, advanced = rows[i], 0
            for t in [*draft, -1]:
                if not g.is_terminated():
                    g.m.fill_next_token_bitmask(bitmask, index)
                else:
                    bitmask[index].fill_(-1)
                if t == -1:
                    break
                if not g.is_terminated():
                    assert g.accept_tokens([t])
                    advanced += 1
                index += 1
            if advanced:
                g.m.rollback(advanced)
            index += 1

    def accept(i, tokens):
        assert rows[i].accept_tokens(tokens), "XGrammar refused an output token"
    return validate, masks, accept


def _stencil_steps(backend, bitmask, grammars: list) -> Callable:
    def validate(i, draft):
        return grammars[i].validate_tokens(draft)

    def masks(plan):
        reqs, row = [], 0
        for i, draft in plan:
            reqs.append((grammars[i], draft, row, True))
            row += len(draft) + 1
        backend.fill_draft_bitmasks(bitmask, reqs)

    def accept(i, tokens):
        assert grammars[i].accept_tokens(str(i), tokens), "stencil refused an output token"
    return validate, masks, accept


def _run(prompts, outputs, k: int, calls, now, evict=None) -> tuple[float, int, int, int]:
    """One replay of the batch: seconds in the grammar calls, steps, tokens, masks. ``evict``: an array
    read through before each step (a forward pass's weights, which leave the caches cold)."""
    validate, masks, accept = calls
    pos = [0] * len(outputs)
    seconds, steps, masks_filled = 0.0, 0, 0
    while True:
        live = [i for i, o in enumerate(outputs) if pos[i] < len(o)]
        if not live:
            break
        drafts = {i: prompt_lookup(prompts[i] + outputs[i][:pos[i]], k) if k else [] for i in live}
        if evict is not None:
            evict.sum()
        t = now()
        plan = [(i, validate(i, drafts[i]) if drafts[i] else []) for i in live]
        masks(plan)
        masks_filled += sum(len(d) + 1 for _, d in plan)
        took = {}
        for i, draft in plan:
            truth, a = outputs[i][pos[i]:], 0
            while a < len(draft) and a < len(truth) - 1 and draft[a] == truth[a]:
                a += 1
            took[i] = truth[:a + 1]
            accept(i, took[i])
        seconds += now() - t
        steps += 1
        for i in live:
            pos[i] += len(took[i])
    return seconds, steps, sum(map(len, outputs)), masks_filled


def _compiled(name: str, info: stencil.TokenizerInfo, schemas: list, k: int, max_tokens: int) -> Callable:
    """Compile the schemas with engine ``name``; returns what makes a replay's calls on fresh
    matchers (stencil: the grammars reset) and a bitmask of a row per draft position."""
    if name == "stencil":
        from stencil.integrations.vllm import StencilBackend
        backend = StencilBackend(tokenizer_info=info)
        backend.fill_threads = 1   # vLLM's CPU engine: the caller's thread alone
        grammars = [backend.compile_grammar("json", json.dumps(s), max_tokens=max_tokens) for s in schemas]
        bitmask = backend.allocate_token_bitmask(len(schemas) * (k + 1))   # (torch, as vLLM's)

        def make_stencil():
            for g in grammars:
                g.reset()
            return _stencil_steps(backend, bitmask, grammars)
        return make_stencil
    import xgrammar as xgr
    from benchmarks.maskbench.engines import make_engine
    engine = make_engine("xgrammar", "", info)
    compiled = [engine.compiler.compile_json_schema(json.dumps(s)) for s in schemas]
    xbitmask = xgr.allocate_token_bitmask(len(schemas) * (k + 1), info.vocab_size)
    return lambda: _xgrammar_steps(xgr, xbitmask, compiled, k)


def spec_replay(info: stencil.TokenizerInfo, encode, engines: list[str], count: int, ks: list[int],
                now, max_tokens: int = 400, evict_mb: int = 0, texts: dict[int, str] | None = None) -> None:
    """Print, per engine and draft length, compile seconds and the grammar's ms per step and us per
    output token, cold (first replay) and warm (a second one on fresh matchers of the same grammars).
    ``evict_mb``: megabytes read before each step, as a forward pass reads the model's weights."""
    evict = np.ones(evict_mb << 18, dtype=np.float32) if evict_mb else None
    reqs = extraction_requests(encode, info.eos_token_ids[0], count, texts=texts)
    schemas, prompts, outputs = [r[0] for r in reqs], [r[1] for r in reqs], [r[2] for r in reqs]
    print(f"{len(reqs)} extraction requests (seed 100), {sum(map(len, outputs))} output tokens "
          f"({'a model' if texts is not None else 'the answers'}'s); n-gram drafts "
          f"(prompt lookup 2-5); {'thread CPU' if now is time.thread_time else 'wall'} time"
          + (f"; {evict_mb} MB read before each step" if evict_mb else ""))
    print(f"{'engine':10} {'K':>2} {'compile':>8} | {'steps':>5} {'tok/step':>8} {'masks':>6} | {'cold ms/step':>12} {'us/token':>8} | "
          f"{'warm ms/step':>12} {'us/token':>8}")
    for name in engines:
        for k in ks:
            t = now()
            make = _compiled(name, info, schemas, k, max_tokens)
            compile_s = now() - t
            (cold, steps, tokens, masks), (warm, _, _, _) = (_run(prompts, outputs, k, make(), now, evict),
                                                             _run(prompts, outputs, k, make(), now, evict))
            print(f"{name:10} {k:>2} {compile_s:7.2f}s | {steps:>5} {tokens / steps:8.2f} {masks / steps:6.1f} | "
                  f"{1000 * cold / steps:12.3f} "
                  f"{1e6 * cold / tokens:8.1f} | {1000 * warm / steps:12.3f} {1e6 * warm / tokens:8.1f}")
    print("masks: rows filled per step (draft positions and the bonus); ms/step: validate_tokens, those masks, "
          "accept_tokens, for the live rows of one step; us/token: the same per output token")
