"""``python -m benchmarks.serve --speculate``: speculative decoding in `stencil serve` on
extraction. N concurrent requests (``bench.extraction_cases``: a document in the prompt, a schema
whose values come from it), greedy, through one server started with ``speculate=True``: first
every request with ``"speculate": false``, then the same requests speculating, then plain again
(the two plain runs show the noise). Prints tokens/s of each run (completion tokens over the
run's wall time), the ratio, the outputs identical to the plain ones, the valid ones, and the
tokens a speculating row adds per forward pass (``/health``'s ``speculation``).
"""
from __future__ import annotations

import asyncio
import json
import time

from benchmarks.extraction_cases import extraction_cases


async def _run(base: str, bodies: list[dict]) -> tuple[float, list[dict]]:
    import httpx
    async with httpx.AsyncClient(base_url=base, timeout=1200) as c:
        t = time.perf_counter()
        rs = await asyncio.gather(*(c.post("/v1/chat/completions", json=b) for b in bodies))
        secs = time.perf_counter() - t
    for r in rs:
        r.raise_for_status()
    return secs, [r.json() for r in rs]


def _valid(text: str, schema: dict) -> bool:
    import jsonschema
    try:
        jsonschema.validate(json.loads(text), schema)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


def speculative_extraction(base: str, clients: int, max_tokens: int, health) -> float:
    """The three runs, printed; returns tokens/s speculating over tokens/s plain (the mean of both)."""
    cases = extraction_cases(clients, seed=11)
    bodies = [{"messages": [{"role": "user", "content": c.prompt}], "max_tokens": max_tokens, "temperature": 0,
               "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": c.schema}}}
              for c in cases]
    rates, texts = {}, {}
    for label, on in (("plain", False), ("speculative", True), ("plain again", False)):
        before = health(base)["speculation"]
        secs, answers = asyncio.run(_run(base, [dict(b, speculate=on) for b in bodies]))
        after = health(base)["speculation"]
        tokens = sum(a["usage"]["completion_tokens"] for a in answers)
        texts[label] = [a["choices"][0]["message"]["content"] for a in answers]
        valid = sum(_valid(t, c.schema) for t, c in zip(texts[label], cases))
        rates[label] = tokens / secs
        extra = ""
        if on:
            steps, added = after["row_steps"] - before["row_steps"], after["tokens"] - before["tokens"]
            drafted, kept = after["drafted"] - before["drafted"], after["accepted"] - before["accepted"]
            extra = (f", {added / max(steps, 1):.2f} tokens per row per forward pass, "
                     f"{kept}/{drafted} draft tokens accepted")
        print(f"{label}: {clients} concurrent extraction requests, {tokens} tokens in {secs:.2f} s, "
              f"{rates[label]:.1f} tokens/s, {valid}/{clients} valid{extra}")
    same = sum(a == b for a, b in zip(texts["speculative"], texts["plain"]))
    plain = (rates["plain"] + rates["plain again"]) / 2
    print(f"speculative / plain tokens/s: {rates['speculative'] / plain:.2f}x; "
          f"{same}/{clients} outputs identical to plain greedy")
    return rates["speculative"] / plain
