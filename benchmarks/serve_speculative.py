"""``python -m benchmarks.serve --speculate``: speculative decoding in `stencil serve`, against the
same server without it, for three kinds of requests at several concurrencies:

- ``free``: free text ("Write a long sentence about the sea."), where prompt lookup rarely finds
  anything to draft: speculation must cost nothing there;
- ``schema``: short JSON objects under a strict ``json_schema`` (``tests.support.serve_schemas.SCHEMAS``);
- ``extraction``: a document in the prompt and a schema whose values come from it
  (``bench.extraction_cases``): drafts copy the values.

Greedy, one server started with ``speculate=True`` (each request's ``"speculate"`` picks the mode),
for each kind and concurrency N: N requests at once, without then with speculation, then with and
without again (ABBA, ``--repeats`` times), so that a drift of the machine's load weighs on both.
Printed per row: tokens/s of each mode end to end (completion tokens over the runs' wall time,
prefill and HTTP included), their ratio, the ratio in decode (over the server's decode steps,
``/health``'s ``step_seconds``) and per CPU second of the process (server and clients: on a machine
that other work shares, less noisy than wall time), the speculating rows' tokens per row per forward pass (accepted
draft tokens + 1), masks filled per generated token of constrained rows (``/health``'s ``masks``)
in each mode, the outputs identical to the plain ones and the valid ones.
"""
from __future__ import annotations

import asyncio
import json
import os
import time

from tests.support.extraction_cases import extraction_cases

KINDS = ("free", "schema", "extraction")

#: subjects of the free-text prompts (one per request, so that rows differ)
SUBJECTS = ["the sea", "a mountain", "bread", "a river", "the moon", "a forest", "rain", "a city", "music",
            "a garden", "winter", "a library", "trains", "the desert", "coffee", "a storm"]


def _schema_body(prompt: str, schema: dict, max_tokens: int) -> dict:
    return {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "temperature": 0,
            "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema, "strict": True}}}


def requests(kind: str, n: int, max_tokens: int, schemas: list) -> list[tuple[dict, dict | None]]:
    """``n`` request bodies of ``kind`` with the schema each output must follow (None: free text)."""
    if kind == "free":
        return [({"messages": [{"role": "user", "content": f"Write a long sentence about {SUBJECTS[k % 16]}."}],
                  "max_tokens": max_tokens, "temperature": 0}, None) for k in range(n)]
    if kind == "schema":
        return [(_schema_body(p, s, max_tokens), s) for p, s in (schemas[k % len(schemas)] for k in range(n))]
    return [(_schema_body(c.prompt, c.schema, max_tokens), c.schema) for c in extraction_cases(n, seed=11)]


async def _run(base: str, bodies: list[dict]) -> tuple[float, list[dict]]:
    import httpx
    async with httpx.AsyncClient(base_url=base, timeout=1200) as c:
        t = time.perf_counter()
        rs = await asyncio.gather(*(c.post("/v1/chat/completions", json=b) for b in bodies))
        secs = time.perf_counter() - t
    for r in rs:
        r.raise_for_status()
    return secs, [r.json() for r in rs]


def _valid(text: str, schema: dict | None) -> bool:
    import jsonschema
    if schema is None:
        return True
    try:
        jsonschema.validate(json.loads(text), schema)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


class _Mode:
    """One mode's sums over its runs."""

    def __init__(self):
        self.tokens = 0
        self.wall = self.decode = self.cpu = 0.0
        self.spec = dict.fromkeys(("row_steps", "tokens", "drafted", "accepted"), 0)
        self.masks = dict.fromkeys(("filled", "tokens"), 0)
        self.texts: list[str] = []
        self.valid = 0

    def add(self, secs: float, cpu: float, answers: list[dict], schemas: list, before: dict, after: dict) -> None:
        self.tokens += sum(a["usage"]["completion_tokens"] for a in answers)
        self.wall += secs
        self.cpu += cpu
        self.decode += after["step_seconds"] - before["step_seconds"]
        for part, keys in (("speculation", self.spec), ("masks", self.masks)):
            for k in keys:
                keys[k] += after[part][k] - before[part][k]
        texts = [a["choices"][0]["message"]["content"] for a in answers]
        self.texts = self.texts or texts
        self.valid += sum(_valid(t, s) for t, s in zip(texts, schemas))


def compare(base: str, kind: str, n: int, max_tokens: int, repeats: int, health, schemas: list) -> dict:
    """One row of the table: plain and speculative runs of ``n`` concurrent requests of ``kind``."""
    pairs = requests(kind, n, max_tokens, schemas)
    bodies, want = [b for b, _ in pairs], [s for _, s in pairs]
    modes = {False: _Mode(), True: _Mode()}
    asyncio.run(_run(base, bodies[:1]))   # warm-up: a grammar compiled, first passes
    for _ in range(repeats):
        for on in (False, True, True, False):
            before, cpu = health(base), time.process_time()
            secs, answers = asyncio.run(_run(base, [dict(b, speculate=on) for b in bodies]))
            cpu = time.process_time() - cpu
            modes[on].add(secs, cpu, answers, want, before, health(base))
    plain, spec = modes[False], modes[True]
    s = spec.spec
    return {"kind": kind, "n": n, "plain": plain.tokens / plain.wall, "spec": spec.tokens / spec.wall,
            "plain_decode": plain.tokens / plain.decode, "spec_decode": spec.tokens / spec.decode,
            "plain_cpu": plain.tokens / plain.cpu, "spec_cpu": spec.tokens / spec.cpu,
            "per_pass": s["tokens"] / s["row_steps"] if s["row_steps"] else None,
            "kept": f"{s['accepted']}/{s['drafted']}",
            "masks_plain": plain.masks["filled"] / plain.masks["tokens"] if plain.masks["tokens"] else None,
            "masks_spec": spec.masks["filled"] / spec.masks["tokens"] if spec.masks["tokens"] else None,
            "same": sum(a == b for a, b in zip(spec.texts, plain.texts)), "valid": (plain.valid, spec.valid),
            "runs": 2 * repeats}   # per mode


def _fmt(x, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def speculative_matrix(base: str, concurrency: list[int], kinds: list[str], max_tokens: int, repeats: int,
                       health, schemas: list) -> list[dict]:
    """The table, printed row by row as it is measured; returns its rows."""
    print(f"load average before: {os.getloadavg()[0]:.1f}; greedy, max {max_tokens} tokens, {repeats}x ABBA")
    print("| kind | concurrent | tokens/s plain | tokens/s speculative | ratio | decode ratio | CPU ratio | tokens per "
          "row per pass | drafts kept | masks/token plain / spec | identical | valid plain / spec |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for kind in kinds:
        for n in concurrency:
            r = compare(base, kind, n, max_tokens, repeats, health, schemas)
            rows.append(r)
            runs = n * r["runs"]
            valid = "-" if kind == "free" else f"{r['valid'][0]}/{runs} / {r['valid'][1]}/{runs}"
            print(f"| {kind} | {n} | {r['plain']:.1f} | {r['spec']:.1f} | {r['spec'] / r['plain']:.2f}x | "
                  f"{r['spec_decode'] / r['plain_decode']:.2f}x | {r['spec_cpu'] / r['plain_cpu']:.2f}x | "
                  f"{_fmt(r['per_pass'])} | {r['kept']} | "
                  f"{_fmt(r['masks_plain'])} / {_fmt(r['masks_spec'])} | {r['same']}/{n} | {valid} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return rows
