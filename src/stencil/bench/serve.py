"""Load benchmark of `stencil serve`: concurrent clients x schema requests (four schemas of
different shapes, every output validated), then requests one at a time through the same server;
prints requests/s, tokens/s, p50/p99 latency, the mean batch per forward pass, the throughput
ratio and the peak resident memory of the process (server and clients: they share it).

    python -m stencil.bench.serve --clients 32 --requests 4 --max-tokens 48 --max-batch 32
    python -m stencil.bench.serve --clients 64 --requests 1 --max-batch 16 --no-serial   # load test
"""
from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
import time

from stencil.memory import resident_bytes


def _obj(props: dict) -> dict:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


#: (prompt, schema): strings and numbers bounded, so a small model finishes within max_tokens
SCHEMAS = [
    ("A person as JSON.", _obj({"name": {"type": "string", "maxLength": 12},
                                "age": {"type": "integer", "minimum": 0, "maximum": 120}})),
    ("A product as JSON.", _obj({"product": {"type": "string", "maxLength": 12},
                                 "size": {"enum": ["S", "M", "L"]}, "in_stock": {"type": "boolean"}})),
    ("A point as JSON.", _obj({"x": {"type": "integer", "minimum": -99, "maximum": 99},
                               "y": {"type": "integer", "minimum": -99, "maximum": 99}})),
    ("Three colors as JSON.", _obj({"colors": {"type": "array", "maxItems": 3,
                                               "items": {"enum": ["red", "green", "blue", "black"]}}})),
]


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--max-batch", type=int, default=32, help="the server's --max-batch (default 32)")
    ap.add_argument("--no-serial", action="store_true", help="skip the one-at-a-time phase")
    args = ap.parse_args(argv)
    import uvicorn
    from stencil.models import load_model
    from stencil.server import create_app
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(load_model(quiet=True), max_batch=args.max_batch), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.1)
    base = f"http://127.0.0.1:{port}"
    n = args.clients * args.requests
    engine = server.config.app.state.engine
    passes = engine.steps
    rss = _PeakRss()
    start_rss = rss.peak
    batched = _report(f"{args.clients} clients x {args.requests} requests", n,
                      *asyncio.run(_phase(base, args.clients, args.requests, args.max_tokens)))
    print(f"  forward passes {engine.steps - passes}, max batch {args.max_batch}, peak RSS "
          f"{rss.stop() / 2**20:.0f} MB (at start {start_rss / 2**20:.0f} MB)")
    if args.no_serial:
        server.should_exit = True
        thread.join(timeout=30)
        return 0
    serial = _report("1 client, one request at a time", min(n, 16),
                     *asyncio.run(_phase(base, 1, min(n, 16), args.max_tokens)))
    print(f"throughput ratio batched / one at a time: {batched / serial:.2f}x")
    server.should_exit = True
    thread.join(timeout=30)   # the app's lifespan stops the engine: nothing left alive at exit
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
