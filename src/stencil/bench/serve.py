"""Load benchmark of `stencil serve`: concurrent clients x schema requests, then the same requests
one at a time; prints requests/s, tokens/s, p50/p99 latency and the throughput ratio.

    python -m stencil.bench.serve --clients 32 --requests 4 --max-tokens 24
"""
from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
import time

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120}},
          "required": ["name", "age"], "additionalProperties": False}


async def _one(client, model, max_tokens, lat, toks, bad):
    import jsonschema
    t = time.perf_counter()
    r = await client.chat.completions.create(
        model=model, max_tokens=max_tokens, messages=[{"role": "user", "content": "A person as JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA, "strict": True}})
    lat.append(time.perf_counter() - t)
    toks.append(r.usage.completion_tokens)
    if r.choices[0].finish_reason != "length":
        try:
            jsonschema.validate(json.loads(r.choices[0].message.content), SCHEMA)
        except Exception:  # noqa: BLE001 - counted as invalid
            bad.append(r.choices[0].message.content)


async def _phase(base, clients, requests, max_tokens):
    import openai
    client = openai.AsyncOpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=600)
    model = (await client.models.list()).data[0].id
    lat, toks, bad = [], [], []

    async def worker():
        for _ in range(requests):
            await _one(client, model, max_tokens, lat, toks, bad)
    t = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return time.perf_counter() - t, sorted(lat), sum(toks), bad


def _report(label, n, secs, lat, toks, bad):
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
    print(f"{label}: {len(lat)}/{n} requests, {len(bad)} invalid, {len(lat) / secs:.2f} req/s, "
          f"{toks / secs:.1f} tokens/s, p50 {p(0.5):.2f} s, p99 {p(0.99):.2f} s")
    return len(lat) / secs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=24)
    args = ap.parse_args(argv)
    import uvicorn
    from stencil.models import load_model
    from stencil.server import create_app
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(load_model(quiet=True)), host="127.0.0.1", port=port,
                                           log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.1)
    base = f"http://127.0.0.1:{port}"
    n = args.clients * args.requests
    batched = _report(f"{args.clients} clients x {args.requests}", n,
                      *asyncio.run(_phase(base, args.clients, args.requests, args.max_tokens)))
    serial = _report("1 client (one at a time)", min(n, 16),
                     *asyncio.run(_phase(base, 1, min(n, 16), args.max_tokens)))
    print(f"throughput ratio batched / one at a time: {batched / serial:.2f}x")
    server.should_exit = True
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
