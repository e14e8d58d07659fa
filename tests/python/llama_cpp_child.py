"""Generation with llama-cpp-python, run by test_integrations_llama_cpp.py in a child process so that a
native crash of llama.cpp (a segmentation fault in llama_decode) is a failed test, not a dead run.

Usage: python llama_cpp_child.py OUT.json. First one plain completion (no stencil: a crash there is
llama.cpp's own), then the default GGUF model under each schema of integration_schemas.SCHEMAS,
greedy; then the first three schemas with GrammarLogitsProcessor(opportunistic=False / True), greedy
without penalties; writes {"plain": text, "outputs": [[name, text, finish_reason, complete], ...],
"opportunistic": [[name, text with full masks, text opportunistic, masks full, masks opportunistic],
...]} to OUT.json.
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import stencil  # noqa: E402
import stencil.runtime  # noqa: E402
from integration_schemas import SCHEMAS, schema_prompt  # noqa: E402
from stencil.integrations.llama_cpp import GrammarLogitsProcessor, tokenizer_info_for_llama  # noqa: E402


def main(out_path: str) -> None:
    from llama_cpp import Llama, LogitsProcessorList
    llm = Llama(stencil.runtime.default_model_path(), n_ctx=2048, n_threads=2, seed=0, verbose=False)
    result: dict = {"plain": None, "outputs": [], "opportunistic": []}
    print("plain completion", flush=True)   # the last line on stderr/stdout tells where a crash was
    result["plain"] = llm.create_completion("The capital of France is", max_tokens=8, temperature=0.0)[
        "choices"][0]["text"]
    compiler = stencil.GrammarCompiler(tokenizer_info_for_llama(llm))
    for name, schema in SCHEMAS:
        print(f"schema {name}", flush=True)
        # max_tokens: budget-aware masks, so an output that would run on (an open object) closes in time
        grammar = compiler.compile_json_schema(schema, whitespace=2, string_spelling="plain")
        proc = GrammarLogitsProcessor(grammar, max_tokens=200)
        out = llm.create_chat_completion(messages=schema_prompt(schema), max_tokens=200, temperature=0.0,
                                         repeat_penalty=1.1, logits_processor=LogitsProcessorList([proc]))
        choice = out["choices"][0]
        # llama.cpp stops on the EOS it samples, or at max_tokens, without showing the last token to
        # the processor: the output is complete when a matcher that reads it all accepts
        text = choice["message"]["content"]
        whole = stencil.Matcher(grammar)
        result["outputs"].append([name, text, choice["finish_reason"],
                                  whole.accept_string(text) and whole.is_accepting()])
    for name, schema in SCHEMAS[:3]:
        print(f"opportunistic {name}", flush=True)
        grammar = compiler.compile_json_schema(schema, whitespace=2, string_spelling="plain")
        texts, masks = [], []
        for opportunistic in (False, True):   # exact for greedy decoding without penalties only
            proc = GrammarLogitsProcessor(grammar, max_tokens=120, opportunistic=opportunistic)
            out = llm.create_chat_completion(messages=schema_prompt(schema), max_tokens=120, temperature=0.0,
                                             repeat_penalty=1.0, logits_processor=LogitsProcessorList([proc]))
            texts.append(out["choices"][0]["message"]["content"])
            masks.append(proc.masks_computed)
        result["opportunistic"].append([name, *texts, *masks])
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
