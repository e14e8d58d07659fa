"""Random corruption of a serialized grammar, exercised in a child process: a crash there fails the
test that asked (with the signal), instead of taking the whole pytest process down. Each corrupted
blob that ``Grammar.deserialize`` accepts is used as a user would: compiled over a small
vocabulary, then masks filled and allowed tokens accepted for a few steps. Errors are fine
(GrammarError, ValueError); a crash, a hang or any other exception is not."""
from __future__ import annotations

import subprocess
import sys

CHILD = r"""
import sys
import numpy as np
import stencil

seed, rounds = int(sys.argv[1]), int(sys.argv[2])
data = sys.stdin.buffer.read()
vocab = [bytes([c]) for c in range(32, 127)] + [b"ab", b"-1", b"e3", b"<eos>"]
compiler = stencil.GrammarCompiler(stencil.TokenizerInfo.from_vocab(vocab, eos_token_ids=[len(vocab) - 1]))
bm = stencil.allocate_token_bitmask(1, len(vocab))
rng = np.random.default_rng(seed)
accepted = used = 0
for _ in range(rounds):
    arr = bytearray(data)
    for i in rng.integers(8, len(arr), size=3):
        arr[i] = int(rng.integers(0, 256))
    try:
        g = stencil.Grammar.deserialize(bytes(arr))
    except (stencil.GrammarError, stencil.LimitError):   # (a count past a limit: refused too)
        continue
    accepted += 1
    try:
        m = stencil.Matcher(compiler.compile_grammar(g))
        for _ in range(6):
            m.fill_next_token_bitmask(bm, 0)
            allowed = np.flatnonzero(np.unpackbits(bm[0].view(np.uint8), bitorder="little")[:len(vocab)])
            if len(allowed) == 0 or not m.accept_token(int(rng.choice(allowed))) or m.is_terminated():
                break
        used += 1
    except (stencil.GrammarError, ValueError):
        pass
print(accepted, used)
"""


def exercise_corrupted(data: bytes, seed: int, rounds: int) -> tuple[int, int]:
    """(blobs the deserializer accepted, of those compiled and walked without error)."""
    p = subprocess.run([sys.executable, "-c", CHILD, str(seed), str(rounds)], input=data, capture_output=True,
                       timeout=300)
    assert p.returncode == 0, f"the child died (status {p.returncode}): {p.stderr.decode(errors='replace')[-2000:]}"
    accepted, used = map(int, p.stdout.split())
    return accepted, used
