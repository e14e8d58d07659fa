"""What one request may ask of the server: ``create_app(limits=...)`` and ``stencil serve``'s options."""
from __future__ import annotations

from dataclasses import dataclass

from stencil.server.engine import DEFAULT_STEP_TIME_LIMIT


@dataclass(frozen=True)
class ServerLimits:
    """Bounds on one request's cost, each an option of ``stencil serve``.

    ``compile_timeout``: seconds for a request's grammar to compile AND compute its first mask and
    shortest completion (past it: 400; the server answers within ``warmup.COMPILE_GRACE`` s of it).
    ``step_time_limit``: seconds a running row's calls on its matcher may take in one decode step
    together (forced tokens, mask, accepts; past it that row fails with a 400; the batch goes on).
    ``grammar_time_limit``: seconds of such grammar work per choice over a request's whole
    generation (its ``n`` choices share ``n`` times it; past it the request fails with a 400;
    None: no total), so that a grammar just under the step limit cannot slow the batch for long.
    ``max_body_bytes``: request body size (413). ``body_timeout``: seconds for the whole body to
    arrive (408 past it: a client that stops sending holds no connection forever).
    ``max_waiting``: requests queued for a slot (503 past it; None: no limit). ``max_n``: choices per request. ``max_tokens``: the largest
    ``max_tokens`` accepted (None: the model's context length). ``memory_limit``: bytes for all
    grammars' lexers and mask caches together (``stencil.set_memory_limit``; None keeps the
    library's default). ``rss_limit``: bytes of resident memory for the whole server, the model
    included (``server.resident.ResidentLimit``): the grammar memory limit is lowered to what it leaves
    (never above ``memory_limit``) and a request that finds no room waits briefly, then gets a 503
    ``server_busy`` (a 413 where it would not fit even with no other request compiling); it must be above the RSS with the model loaded (None: no limit).

    Example::

        app = create_app(lm, limits=ServerLimits(compile_timeout=2.0, max_waiting=64))
    """

    compile_timeout: float = 5.0
    step_time_limit: float | None = DEFAULT_STEP_TIME_LIMIT
    grammar_time_limit: float | None = 10.0
    max_body_bytes: int = 8 << 20
    body_timeout: float = 30.0
    max_waiting: int | None = 256
    max_n: int = 16
    max_tokens: int | None = None
    memory_limit: int | None = None
    rss_limit: int | None = None

    def __post_init__(self):
        for name in ("compile_timeout", "step_time_limit", "grammar_time_limit", "max_body_bytes", "body_timeout", "max_waiting", "max_n",
                     "max_tokens", "memory_limit", "rss_limit"):
            v = getattr(self, name)
            optional = name not in ("compile_timeout", "max_body_bytes", "body_timeout", "max_n")
            if (v is None and optional) or (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0):
                continue
            raise ValueError(f"ServerLimits.{name} must be a number > 0{' or None' if optional else ''}, got {v!r}")
