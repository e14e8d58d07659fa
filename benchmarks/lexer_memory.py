"""Memory and time per token of a long generation under a pattern whose automaton is huge.

``[ab]*a[ab]{25}`` ("the 26th character from the end is a") has 2**26 lexer states: every token
of a random a/b text reaches new ones. The lazy lexer is a cache: past its memory limit (or half
a work limit) the compiled grammar renews it with its masks, and the matcher moves over by replaying
its tokens. This prints, every ``--every`` tokens, the grammar's memory, lexer states, renewals,
the process's resident memory and the time per token (mask + accept), so that flat memory and
flat cost can be read off.

Example::

    python -m benchmarks.lexer_memory --tokens 20000 --limit-mb 32
"""
from __future__ import annotations

import argparse
import random
import time

import stencil
from tests.support.tokenizers import NAMES, load_tokenizer
from stencil.memory import resident_bytes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.lexer_memory", description=__doc__.split("\n")[0])
    ap.add_argument("--pattern", default="[ab]*a[ab]{25}")
    ap.add_argument("--tokens", type=int, default=20_000, help="tokens to generate (default 20000)")
    ap.add_argument("--limit-mb", type=float, default=256, help="GrammarCompiler lexer_memory_bytes, in MB")
    ap.add_argument("--tokenizer", default="deepseek", choices=NAMES)
    ap.add_argument("--every", type=int, default=2000)
    args = ap.parse_args(argv)
    info, encode = load_tokenizer(args.tokenizer)
    compiler = stencil.GrammarCompiler(info, lexer_memory_bytes=int(args.limit_mb * 2**20))
    g = compiler.compile_regex(args.pattern)
    rng = random.Random(0)
    ids: list[int] = []
    while len(ids) < args.tokens:
        ids += encode("".join(rng.choice("ab") for _ in range(4096)))
    ids = ids[:args.tokens]
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    print(f"pattern {args.pattern!r}, tokenizer {args.tokenizer}, lexer_memory_bytes {args.limit_mb:g} MB, "
          f"{args.tokens} tokens of random a/b text")
    print(f"{'tokens':>8} {'grammar MB':>10} {'lexer states':>12} {'renewals':>8} {'RSS MB':>7} {'us/token':>9}")
    t0 = time.perf_counter()
    for i, t in enumerate(ids, 1):
        m.fill_next_token_bitmask(bm, 0)
        if not m.accept_token(t):
            print(f"token {i} refused: the grammar does not hold this text")
            return 1
        if i % args.every == 0:
            now = time.perf_counter()
            print(f"{i:>8} {g.memory_bytes / 2**20:>10.1f} {g.num_lexer_states:>12} {g.num_lexer_renewals:>8} "
                  f"{resident_bytes() / 2**20:>7.0f} {(now - t0) / args.every * 1e6:>9.1f}")
            t0 = now
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
