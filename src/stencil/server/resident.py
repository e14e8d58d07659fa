"""The server's resident memory (RSS, the model included) kept under ``ServerLimits.rss_limit``.

The grammar memory limit (``stencil.set_memory_limit``) counts only what stencil builds for grammars;
the rest of a server's memory (the model, a request's own objects, a compile's transient builder
state, malloc's slack) is not counted by it. ``ResidentLimit`` watches the RSS on a thread of its
own (a read of /proc every ``INTERVAL`` s) and lowers the grammar memory limit to what the RSS limit
leaves beside the memory that is not grammars' (never above the configured ``memory_limit``): the
least recently used grammars are evicted as under any limit. A request reserves an estimate of its
compile's transient memory before it compiles (``reserve``): it waits briefly while the RSS and the
reservations leave no room for it (the grammar memory limit is lowered meanwhile to make some), then gets
a 503 ``server_busy`` that names the memory (a 413 where no other request compiles: it will not fit later).

Example::

    resident = ResidentLimit(rss_limit=2 << 30, memory_limit=512 << 20)
    reservation = await resident.reserve(body_bytes=len(raw))   # RequestError 503 after a wait
    try:
        ...  # compile the request's grammar
    finally:
        reservation.release()
"""
from __future__ import annotations

import asyncio
import threading

import stencil
from stencil import _core
from stencil.memory import MIN_MEMORY_LIMIT, reclaim, resident_bytes
from stencil.server.protocol import RequestError

#: seconds between two reads of the RSS
INTERVAL = 0.05
#: bytes a request's compile and first masks may raise the RSS by per byte of its body: a
#: 40,000-value enum (a 312 KB body) raised the server's RSS by about 230 MB (its rules, the budget's
#: cost tables, the builder's expressions, the front-end's objects), 750 a byte, for a moment that a
#: read every INTERVAL may miss (512 let it pass the limit by 10-35 MB, seen where the machine was
#: loaded and the compile slower)
COMPILE_BYTES_PER_BODY_BYTE = 1024
#: what a request that compiles nothing (or a tiny grammar) reserves at least
MIN_RESERVE = 4 << 20
#: seconds a request waits for room before its 503
ADMIT_WAIT = 3.0


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.0f} MB"


class ResidentLimit:
    """Keeps the process's RSS under ``rss_limit`` bytes by lowering the grammar memory limit (at most
    ``memory_limit``, None: the library's default) and by admitting compiles only where they fit.

    A matcher call may build past its grammar memory limit by up to a half before it fails (the
    limit is enforced in steps from inside the call), so the grammar memory limit is set to two thirds of what
    the RSS limit leaves, less ``headroom`` (default a quarter of the margin over the RSS at the
    start) for what moves between two reads.

    Example::

        resident = ResidentLimit(rss_limit=resident_bytes() + (256 << 20), memory_limit=128 << 20)
        resident.close()
    """

    def __init__(self, rss_limit: int, memory_limit: int | None = None, headroom: int | None = None):
        self.rss_limit = int(rss_limit)
        self.memory_limit = int(memory_limit or _core.memory_usage()["limit"])
        start = resident_bytes()
        if start and start >= self.rss_limit:
            raise ValueError(f"rss_limit ({_mb(self.rss_limit)}) must be above the server's resident memory "
                             f"with the model loaded ({_mb(start)})")
        self.headroom = headroom if headroom is not None else max(MIN_RESERVE, (self.rss_limit - start) // 4)
        self.base = start      # the RSS at the start, the model loaded
        self.reserved = 0      # bytes reserved by compiles in flight
        self.pending = 0       # bytes that requests waiting for room want
        self.refused = 0       # requests refused for memory
        self.rss = self.peak = start  # the RSS last read, the highest read
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._limit = 0        # the grammar memory limit last set
        self.watch()
        self._thread = threading.Thread(target=self._run, name="stencil-rss", daemon=True)
        self._thread.start()

    def grammar_limit(self, rss: int, counted: int, fixed: int = 0) -> int:
        """The grammar memory limit that RSS ``rss`` and ``counted`` bytes of grammar memory leave,
        ``fixed`` of them out of the evictions' reach (the grammars' rules, dropped epochs that a
        matcher still holds). Calls build past the limit by up to a half of it: so at most two
        thirds of the room, and where the fixed bytes alone keep the count over the limit, at most
        twice what they leave (``fixed`` plus a half of the limit fits)."""
        other = max(0, rss - counted)
        room = self.rss_limit - self.headroom - self.reserved - self.pending - other
        return max(MIN_MEMORY_LIMIT, min(self.memory_limit, room * 2 // 3, 2 * (room - fixed)))

    def watch(self) -> int:
        """Reads the RSS and sets the grammar memory limit it leaves; returns the RSS."""
        rss = resident_bytes()
        if not rss:
            return 0
        with self._lock:
            self.rss, self.peak = rss, max(self.peak, rss)
            u = _core.memory_usage()
            limit = self.grammar_limit(rss, u["total"], u["grammar_ir"] + u["retired"])
            # small moves are not worth an eviction pass; any move down past the RSS limit is
            if limit != self._limit and (abs(limit - self._limit) > self.memory_limit // 32 or rss > self.rss_limit):
                self._limit = limit
                stencil.set_memory_limit(limit)
                if limit < self.memory_limit:
                    reclaim()  # evicted pages back to the OS soon
        return rss

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            self.watch()

    def close(self) -> None:
        """Stops the watch and gives the grammar memory limit its configured limit back."""
        self._stop.set()
        self._thread.join(1.0)
        stencil.set_memory_limit(self.memory_limit)

    def usage(self) -> dict:
        """For /health: the limit, the highest RSS read, the reservations, the grammar memory limit it leaves, the refusals."""
        return {"limit": self.rss_limit, "peak": self.peak, "reserved": self.reserved,
                "grammar_limit": self._limit, "refused": self.refused}

    async def reserve(self, body_bytes: int) -> Reservation:
        """Reserves the transient memory of a request's compile (``body_bytes``: its body's size)
        until ``release()``. While the RSS and the reservations leave no room, the grammar memory limit
        is lowered to make some and the request waits, up to ``ADMIT_WAIT`` s; then a 503
        ``server_busy`` (a 413 where the RSS at the start leaves no room for it at all, or where
        it found no room with no other request compiling)."""
        need = max(MIN_RESERVE, body_bytes * COMPILE_BYTES_PER_BODY_BYTE)
        if self.base + need > self.rss_limit - self.headroom:
            self.refused += 1
            raise RequestError(f"the request's grammar would need about {_mb(need)} to compile, more than the "
                               f"server's resident memory limit of {_mb(self.rss_limit)} leaves beside the model "
                               f"({_mb(self.base)}; stencil serve --rss-limit)", status=413,
                               code="request_too_large")
        loop = asyncio.get_running_loop()
        end = loop.time() + ADMIT_WAIT
        with self._lock:
            self.pending += need
        try:
            while not self._take(need):
                if loop.time() > end:
                    self.refused += 1
                    self._refuse_if_never(need)
                    raise RequestError(
                        f"the server is busy: its resident memory ({_mb(self.rss)}, {_mb(self.reserved)} reserved "
                        f"by requests compiling) leaves no room for this request (about {_mb(need)}) under its "
                        f"limit of {_mb(self.rss_limit)} (stencil serve --rss-limit); retry later",
                        status=503, code="server_busy")
                self.watch()  # the pending need lowers the grammar memory limit: grammars are evicted
                reclaim()
                await asyncio.sleep(INTERVAL)
        finally:
            with self._lock:
                self.pending -= need
        return Reservation(self, need)

    def _refuse_if_never(self, need: int) -> None:
        """A 413 where waiting cannot help: no other request compiles or waits, the grammars were
        evicted for ``ADMIT_WAIT`` s, and what the server holds beside its grammars (the model
        once warm, its runtime) leaves less than ``need`` under the limit."""
        with self._lock:
            alone = self.reserved == 0 and self.pending == need
        held = self.rss - _core.memory_usage()["total"]
        if alone and held + need > self.rss_limit - self.headroom:
            raise RequestError(f"the request is too large for this server: its grammar would need about {_mb(need)} "
                               f"to compile, and the server holds {_mb(held)} besides its grammars, under a resident "
                               f"memory limit of {_mb(self.rss_limit)} (stencil serve --rss-limit)", status=413,
                               code="request_too_large")

    def _take(self, need: int) -> bool:
        rss = resident_bytes()
        with self._lock:
            self.rss = rss or self.rss
            if rss + self.reserved + need > self.rss_limit - self.headroom:
                return False
            self.reserved += need
        return True

    def _release(self, need: int) -> None:
        with self._lock:
            self.reserved -= need
        self.watch()


class Reservation:
    """A request's reserved bytes (``ResidentLimit.reserve``); ``release()`` once or more."""

    def __init__(self, resident: ResidentLimit | None = None, need: int = 0):
        self._resident, self._need = resident, need
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            resident, self._resident = self._resident, None
        if resident is not None:
            resident._release(self._need)
