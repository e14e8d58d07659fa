"""`stencil serve` under a memory limit: hostile grammars (many distinct hungry patterns, a huge
enum, a pattern with a huge automaton, a grammar whose lexer reaches its work limit) keep the grammar
memory under the configured limit and the process's resident memory under its RSS limit
(``ServerLimits.rss_limit``), during and after them, while ordinary requests still succeed."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest
import regex

from server_fixture import start_server

httpx = pytest.importorskip("httpx")

LIMIT = 128 << 20
#: the RSS limit over the RSS with the model loaded: below the peak measured without it (267 MB
#: over the start with the grammar limit alone; the requests' own objects, KV cache rows and
#: malloc's slack are not grammar memory)
RSS_MARGIN = 224 << 20


#: an ordinary request, sent between the hostile ones: it must succeed
ORDINARY = {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 16,
            "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": {
                "type": "object", "properties": {"colour": {"enum": ["red", "green", "blue"]}},
                "required": ["colour"]}}}}


def _hostile_requests() -> list[dict]:
    def regex(p, **kw):
        return {"messages": [{"role": "user", "content": "Write a and b."}], "max_tokens": 120, "temperature": 2.0,
                "seed": 7, "structured_outputs": {"regex": p}, **kw}
    enum = {"enum": list(range(100_000, 140_000))}
    return ([regex("[ab]*a[ab]{%d}" % n) for n in range(14, 26)] + [ORDINARY]
            + [regex("(x|y|z)*x(x|y|z){%d}" % n) for n in range(8, 12)]
            + [{"messages": [{"role": "user", "content": "A number."}], "max_tokens": 8,
                "response_format": {"type": "json_schema", "json_schema": {"name": "e", "schema": enum}}},
               ORDINARY])


class _Sampler:
    """Polls /health every 0.2 s: the highest RSS and grammar memory seen."""

    def __init__(self, url):
        self.url, self.rss, self.grammar, self.limit, self.at_peak = url, 0, 0, 0, {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        with httpx.Client(base_url=self.url, timeout=30) as c:
            while not self._stop.is_set():
                h = c.get("/health").json()
                self.rss = max(self.rss, h["rss_bytes"])
                if h["grammar_memory"]["total"] > self.grammar:
                    self.grammar, self.at_peak = h["grammar_memory"]["total"], h["grammar_memory"]
                self.limit = h["grammar_memory"]["limit"]
                time.sleep(0.2)

    def stop(self):
        self._stop.set()
        self._t.join()


async def _send_all(url, bodies, concurrency=1):
    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=600) as c:
        async def one(b):
            async with sem:
                return await c.post("/v1/chat/completions", json=b)
        return await asyncio.gather(*(one(b) for b in bodies))


def _settled(url: str, seconds: float = 15.0) -> dict:
    """/health once the engine has dropped the finished rows and reclaimed their grammars'
    memory (a response can reach the client before the engine's next loop turn does that)."""
    end = time.monotonic() + seconds
    while True:
        h = httpx.get(url + "/health").json()
        if (h["running"] == 0 and h["grammar_memory"]["total"] <= h["grammar_memory"]["limit"]) \
                or time.monotonic() > end:
            return h
        time.sleep(0.2)


def test_rss_stays_under_its_limit():
    import stencil
    from generation_model import default_model
    from stencil.memory import resident_bytes
    from stencil.server import ServerLimits
    previous = stencil.memory_usage()["limit"]
    default_model()  # loaded: the RSS limit is over what the model holds
    rss_limit = resident_bytes() + RSS_MARGIN
    url, stop = start_server(limits=ServerLimits(memory_limit=LIMIT, rss_limit=rss_limit, compile_timeout=20))
    try:
        warm = httpx.post(url + "/v1/chat/completions", timeout=120, json={
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
            "structured_outputs": {"regex": "[a-z ]+"}})
        assert warm.status_code == 200, warm.text
        start = httpx.get(url + "/health").json()["rss_bytes"]
        sampler = _Sampler(url)
        rs = asyncio.run(_send_all(url, _hostile_requests()))
        sampler.stop()
        busy = [r for r in rs if r.status_code == 503]
        assert all(r.status_code in (200, 400) or _refused_for_memory(r) for r in rs), \
            [r.text[:300] for r in rs if r.status_code >= 500]
        ordinary = [r for b, r in zip(_hostile_requests(), rs) if b is ORDINARY]
        assert all(r.status_code == 200 for r in ordinary), [r.text[:300] for r in ordinary]
        _assert_regex_outputs(_hostile_requests(), rs)
        assert sum(r.status_code == 200 for r in rs) >= len(rs) // 2
        after = _settled(url)
        peak = max(sampler.rss, (after["resident"] or {}).get("peak", 0))  # read every 50 ms by the server
        print(f"\nRSS MB: start {start >> 20}, limit {rss_limit >> 20}, peak {peak >> 20}, "
              f"after {after['rss_bytes'] >> 20}; {len(rs)} requests: {sum(r.status_code == 200 for r in rs)} ok, "
              f"{sum(r.status_code == 400 for r in rs)} 400, {len(busy)} refused for memory (503)")
        assert after["rss_limit"] == rss_limit
        assert peak <= rss_limit, (start >> 20, peak >> 20, rss_limit >> 20)
        assert after["rss_bytes"] <= rss_limit, (after["rss_bytes"] >> 20, rss_limit >> 20)
        assert sampler.limit <= LIMIT
        assert after["grammar_memory"]["evictions"] > 0          # the limit was reached and enforced
        # calls are watched from inside: the count passes the limit by at most half (measured:
        # 162 MB, was 280-380 MB when the memory limit was looked at only between calls)
        assert sampler.grammar <= LIMIT + LIMIT // 2 + LIMIT // 16, sampler.at_peak
        assert after["grammar_memory"]["total"] <= LIMIT, after["grammar_memory"]
    finally:
        stop()
        stencil.set_memory_limit(previous)


def _assert_regex_outputs(bodies, rs) -> None:
    """A 200 answer to a regex request matches its regex (a prefix of a match where it was cut)."""
    for b, r in zip(bodies, rs):
        pattern = (b.get("structured_outputs") or {}).get("regex")
        if pattern is not None and r.status_code == 200:
            for ch in r.json()["choices"]:
                cut = ch["finish_reason"] == "length"
                assert regex.fullmatch(pattern, ch["message"]["content"], partial=cut), (pattern, ch)


def _refused_for_memory(r) -> bool:
    """A 503 server_busy (or, where no other request compiles, a 413) that names the resident
    memory limit."""
    err = r.json().get("error", {})
    return (r.status_code, err.get("code")) in ((503, "server_busy"), (413, "request_too_large")) \
        and "--rss-limit" in err.get("message", "")


def test_rss_limit_below_the_loaded_model_is_refused():
    from generation_model import default_model
    from stencil.memory import resident_bytes
    from stencil.server import ServerLimits
    from stencil.server.resident import ResidentLimit
    default_model()
    with pytest.raises(ValueError, match="rss_limit"):
        ServerLimits(rss_limit=0)
    with pytest.raises(ValueError, match=r"rss_limit \(\d+ MB\) must be above the server's resident memory"):
        ResidentLimit(resident_bytes() // 2)
    pytest.importorskip("fastapi")
    from stencil.server import create_app
    with pytest.raises(ValueError, match="with the model loaded"):
        create_app(default_model(), limits=ServerLimits(rss_limit=64 << 20))
