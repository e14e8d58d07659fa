"""The GPU bitmask kernel against XGrammar's, on CUDA logits (``make bench-gpu``).

Run ``python -m benchmarks.gpu [--vocab 128256] [--iters 200] [--batches 1,8,64,256,512]``.
First a check: the Triton kernel, the torch-ops fallback and the numpy kernel give the same bits
on random masks (row indices, bitmasks wider and narrower than the logits, three dtypes). Then,
for float32 and bfloat16 logits ``[batch, vocab]`` and a random bitmask (every third word zero),
the mean time of one call over ``--iters`` back-to-back calls, launch cost included
(``torch.cuda.synchronize`` before and after), in microseconds:

- ``kernel``: ``stencil.apply_token_bitmask_inplace`` with the bitmask on the GPU (the Triton
  kernel when triton is installed);
- ``torch ops``: the fallback, ``stencil.kernels.torch.apply_token_bitmask_torch_ops``;
- ``pinned``: the bitmask filled on the host, ``PinnedBitmask.apply`` (asynchronous copy + kernel);
- ``numpy``: the bitmask as a numpy array (a pageable host-to-device copy each call);
- ``xgrammar``: ``xgrammar.apply_token_bitmask_inplace`` when xgrammar is installed,
  and whether its result equals the kernel's.

``--serve``: then the server's decode steps on CUDA, structured rows against unconstrained rows
at equal output lengths (``benchmarks.serve --equal-lengths``, ``--repeats`` ABBA rounds per
``--clients`` count, so that neither kind always meets the new lengths first),
with ``--model`` (default: the default model) or, where the model files are not at hand,
``--random-weights TOKENIZER_DIR``: a Llama-shaped 1.7B model with random weights (the speed of a
step does not depend on them) and the tokenizer saved in that folder.

Without a CUDA device only the check runs (on CPU tensors, the kernel through Triton's
interpreter) and the script says "no CUDA device"; it exits 1 when a check fails.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

DTYPE_NAMES = ("float32", "bfloat16")


def cuda_time(torch, fn, iters: int, warm: int = 20) -> float:
    """Mean microseconds per call of ``iters`` back-to-back calls, launch cost included."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters * 1e6


def bench_mask(rng, rows: int, words: int) -> np.ndarray:
    """Random bits with every third word zero (the recipe of the issue's table)."""
    mask = rng.integers(-2**31, 2**31 - 1, size=(rows, words), dtype=np.int64).astype(np.int32)
    mask[:, 1::3] = 0
    return mask


def _bits(t):
    import torch
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def check(torch, device: str) -> int:
    """Kernel, torch ops and numpy kernel on random masks; the number of disagreements."""
    from stencil.bitmask import apply_token_bitmask_inplace
    from stencil.kernels.torch import apply_token_bitmask_torch_ops
    from stencil.kernels.triton import apply_token_bitmask_triton, triton_available
    rng = np.random.default_rng(0)
    bad = cases = 0
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for rows, vocab, words, idx in ((4, 1000, 32, None), (3, 4097, 120, None), (2, 3000, 100, [1]),
                                        (5, 2049, 70, [4, 0, 2]), (1, 64, 1, None)):
            n = rows if idx is None else len(idx)
            mask = rng.integers(-2**31, 2**31 - 1, size=(n, words), dtype=np.int64).astype(np.int32)
            mask[:, ::5], mask[:, 1::7] = 0, -1
            logits = torch.randn(rows, vocab).to(dtype)
            want = logits.clone()
            apply_token_bitmask_inplace(want, mask, idx)  # numpy kernel
            outs = {"torch ops": logits.to(device)}
            apply_token_bitmask_torch_ops(outs["torch ops"], mask, idx)
            if triton_available():
                outs["kernel"] = logits.to(device)
                apply_token_bitmask_triton(outs["kernel"], torch.from_numpy(mask).to(device), idx)
            for name, got in outs.items():
                cases += 1
                if not torch.equal(_bits(got.cpu()), _bits(want)):
                    bad += 1
                    print(f"MISMATCH {name} vs numpy kernel: {dtype} rows {rows} vocab {vocab} words {words} indices {idx}")
    paths = "Triton kernel, torch ops" if triton_available() else "torch ops (triton is not installed)"
    print(f"check on {device}: {paths} vs the numpy kernel, {cases} cases: {'OK' if not bad else f'{bad} FAILED'}")
    return bad


def _xgrammar():
    try:
        import xgrammar
        return xgrammar
    except Exception as e:  # noqa: BLE001 - optional reference; any import failure means "absent"
        print(f"xgrammar not available ({type(e).__name__}: {e}); its column stays empty")
        return None


def table(torch, vocab: int, batches: list[int], iters: int) -> int:
    """The timing table; returns the number of rows whose results differ."""
    xgr = _xgrammar()
    rng = np.random.default_rng(0)
    bad = 0
    print(f"\nvocab {vocab}, {iters} back-to-back calls per figure, mean us per call (launch included)")
    print(f"{'dtype':>9} {'batch':>5} {'kernel':>8} {'torch ops':>9} {'pinned':>8} {'numpy':>8} {'xgrammar':>9} "
          f"{'equal':>6}")
    for dname in DTYPE_NAMES:
        for b in batches:
            t, same = _time_row(torch, xgr, getattr(torch, dname), bench_mask(rng, b, (vocab + 31) // 32), vocab, iters)
            bad += not same
            print(f"{dname:>9} {b:>5} {t['kernel']:>8.1f} {t['torch ops']:>9.1f} {t['pinned']:>8.1f} {t['numpy']:>8.1f} "
                  f"{t['xgrammar']:>9.1f} {str(same):>6}", flush=True)
    return bad


def _time_row(torch, xgr, dtype, mask_np: np.ndarray, vocab: int, iters: int) -> tuple[dict, bool]:
    """One row of the table: each path's time on ``[batch, vocab]`` logits, and whether the
    kernel's result equals the fallback's (and XGrammar's)."""
    import stencil
    from stencil.kernels.torch import PinnedBitmask, apply_token_bitmask_torch_ops
    b = mask_np.shape[0]
    logits = torch.randn(b, vocab, device="cuda", dtype=dtype)
    mask = torch.from_numpy(mask_np).cuda()
    pinned = PinnedBitmask(b, vocab, device="cuda")
    pinned.host(b)[:] = mask_np
    work = logits.clone()
    t = {"kernel": cuda_time(torch, lambda: stencil.apply_token_bitmask_inplace(work, mask), iters),
         "torch ops": cuda_time(torch, lambda: apply_token_bitmask_torch_ops(work, mask), iters),
         "pinned": cuda_time(torch, lambda: pinned.apply(work), iters),
         "numpy": cuda_time(torch, lambda: stencil.apply_token_bitmask_inplace(work, mask_np), iters),
         "xgrammar": float("nan")}
    ref, fb = logits.clone(), logits.clone()
    stencil.apply_token_bitmask_inplace(ref, mask)
    apply_token_bitmask_torch_ops(fb, mask)
    same = torch.equal(_bits(ref), _bits(fb))
    if xgr is not None:
        t["xgrammar"] = cuda_time(torch, lambda: xgr.apply_token_bitmask_inplace(work, mask), iters)
        xg = logits.clone()
        xgr.apply_token_bitmask_inplace(xg, mask)
        same = same and torch.equal(_bits(ref), _bits(xg))
    return t, same


def sweep(torch, vocab: int, iters: int) -> None:
    """The kernel's time by words per program and warps (``stencil.kernels.triton.WORDS``/``WARPS``),
    and the bare launch of the jitted kernel beside the whole call (the host-side checks' cost)."""
    from stencil.kernels import triton as bt
    rng = np.random.default_rng(1)
    default = (bt.WORDS, bt.WARPS, bt.MIXED_READ)
    print(f"\nsweep: mean us per call, vocab {vocab}; WORDSxWARPS, r: mixed blocks read (default "
          f"{default[0]}x{default[1]}{'r' if default[2] else ''})")
    configs = [(w, n, r) for r in (False, True) for w in (4, 8, 16, 32) for n in (1, 2, 4, 8)]
    print(f"{'dtype':>9} {'batch':>5} " + " ".join(f"{f'{w}x{n}' + ('r' if r else ''):>6}" for w, n, r in configs)
          + f" {'bare':>6}")
    try:
        for dname in DTYPE_NAMES:
            for b in (1, 64, 512):
                logits = torch.randn(b, vocab, device="cuda", dtype=getattr(torch, dname))
                mask = torch.from_numpy(bench_mask(rng, b, (vocab + 31) // 32)).cuda()
                cells = []
                for w, n, r in configs:
                    bt.WORDS, bt.WARPS, bt.MIXED_READ = w, n, r
                    cells.append(cuda_time(torch, lambda lg=logits, m=mask: bt.apply_token_bitmask_triton(lg, m), iters))
                bt.WORDS, bt.WARPS, bt.MIXED_READ = default
                grid = (b, triton_cdiv(vocab, 32 * bt.WORDS))
                bare = cuda_time(torch, lambda lg=logits, m=mask, grid=grid: bt._apply_bitmask_kernel[grid](
                    lg, lg.stride(0), m, m.stride(0), m.shape[1], m, vocab,
                    HAS_ROWS=False, WORDS=bt.WORDS, MIXED_READ=bt.MIXED_READ, num_warps=bt.WARPS), iters)
                print(f"{dname:>9} {b:>5} " + " ".join(f"{c:>6.1f}" for c in cells) + f" {bare:>6.1f}", flush=True)
    finally:
        bt.WORDS, bt.WARPS, bt.MIXED_READ = default


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def random_llama(tokenizer_dir: str, device: str, dtype: str, layers: int = 24, hidden: int = 2048):
    """A ``LoadedModel``: a Llama-shaped model with random weights on ``device`` (by default
    SmolLM2-1.7B's shape: 1.7B parameters), with the tokenizer saved in ``tokenizer_dir``."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    from stencil.runtime.models import LoadedModel, tokenizer_info_for
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
                      num_attention_heads=hidden // 64, num_key_value_heads=hidden // 64, max_position_embeddings=8192,
                      tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(cfg).to(getattr(torch, dtype)).eval()
    name = "random-llama-1.7b" if (layers, hidden) == (24, 2048) else f"random-llama-{layers}x{hidden}"
    return LoadedModel(model, tok, tokenizer_info_for(tok, model), name, 0.0, 8192)


def serve_steps(args, device: str = "cuda", **shape) -> list[float]:
    """The server's decode steps on ``device``: structured / unconstrained at equal lengths, one
    ratio per (mask threads, clients), returned in that order (``shape``: ``random_llama``'s, for
    a small model in tests)."""
    from benchmarks import serve
    from stencil.runtime.models import load_model
    from stencil.server import serve_in_thread
    if args.random_weights:
        lm = random_llama(args.random_weights, device, args.dtype, **shape)
    else:
        lm = load_model(args.model, device=device, dtype=args.dtype, quiet=True)
    clients, ratios = [int(c) for c in args.clients.split(",")], []
    print(f"\nserver decode steps: {lm.name} on {lm.device} in {lm.dtype}, regex {args.regex!r}, "
          f"{args.max_tokens} tokens per row")
    for threads in [int(t) if t != "auto" else None for t in args.mask_threads.split(",")]:
        # the server's defaults otherwise (speculation on), as `stencil serve` runs
        with serve_in_thread(lm, max_batch=max(clients), mask_threads=threads) as server:
            print(f"mask threads {server.app.state.engine.mask_threads}, "
                  f"switch interval {sys.getswitchinterval() * 1e3:g} ms")
            for n in clients:
                ratios.append(serve.equal_lengths(server.url, n, args.max_tokens, args.regex, args.repeats))
    return ratios


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", type=int, default=128_256)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--batches", default="1,8,64,256,512")
    ap.add_argument("--sweep", action="store_true", help="then the kernel's time by words per program and warps")
    ap.add_argument("--serve", action="store_true", help="then the server's decode steps (structured / unconstrained)")
    ap.add_argument("--model", metavar="PATH", help="--serve's model (default: the default model)")
    ap.add_argument("--random-weights", metavar="TOKENIZER_DIR",
                    help="--serve a random-weight Llama-shaped 1.7B model with the tokenizer in this folder")
    ap.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"), help="--serve's dtype")
    ap.add_argument("--clients", default="16,32", help="--serve's concurrent requests, one run per count")
    # (the first run over new lengths pays the attention's setup per shape: a run of one kind first
    # each time made it look slower, 2.9-3.9x on an H200 and an H100 before ABBA)
    ap.add_argument("--repeats", type=int, default=2, help="--serve's ABBA rounds of structured and unconstrained "
                                                           "runs (default 2)")
    ap.add_argument("--max-tokens", type=int, default=64, help="--serve's tokens per row")
    ap.add_argument("--regex", default="[a-z ]+", help="--serve's structured rows' regex")
    ap.add_argument("--mask-threads", default="auto", help="--serve's mask threads, one server per value (auto: "
                                                           "the server's default)")
    ap.add_argument("--switch-interval", type=float, help="sys.setswitchinterval (seconds) for --serve")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to measure (pip install 'stencil-llm[hf]')")
        return 1
    cuda = torch.cuda.is_available()
    if not cuda:  # the kernel runs on CPU tensors through Triton's interpreter (read at its import)
        os.environ.setdefault("TRITON_INTERPRET", "1")
    t0 = time.perf_counter()
    bad = check(torch, "cuda" if cuda else "cpu")
    if not cuda:
        print("no CUDA device: the GPU timings are skipped (run `make bench-gpu` on a machine with one)")
        return 1 if bad else 0
    from stencil.kernels.triton import triton
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; "
          f"triton {getattr(triton, '__version__', 'not installed')}")
    bad += table(torch, args.vocab, [int(b) for b in args.batches.split(",")], args.iters)
    print(f"\n{'all results equal' if not bad else f'{bad} DIFFERENCES'}; {time.perf_counter() - t0:.0f} s")
    if args.sweep:
        sweep(torch, args.vocab, args.iters)
    if args.serve:
        if args.switch_interval:
            sys.setswitchinterval(args.switch_interval)
        serve_steps(args)
        print(f"done in {time.perf_counter() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
