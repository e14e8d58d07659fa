"""A running request's grammar time: the calls on a row's matcher (forced tokens, its mask,
accepts, a draft's masks and rollbacks) in one decode step share the step limit
(``ServerLimits.step_time_limit``), and every call of the request's rows over its whole
generation draws from one total (``ServerLimits.grammar_time_limit``, per choice: a request of
``n`` choices has ``n`` times it, shared). Before each call the matcher's ``time_limit`` is set to
what is left of both, so a call never runs past either; past one, the row fails with a
``TimeLimitExceeded`` that names the limit (the server's 400 ``grammar_too_expensive``).

Masks are filled for many rows at once and the core reports one time per fill, so a row's share
of a fill shared by several rows is its time divided among them; rows that were in a fill slower
than ``SHARED_FILL_SLOW`` get a fill of their own from then on (a thread each), whose time is
theirs alone. A hostile row therefore pays for its masks from its second slow step on.

Example::

    budget = GrammarTime(total=10.0)
    clock = RowClock(step_limit=2.0, budget=budget)
    clock.new_step()
    forced = clock.call(m, m.forced_tokens)   # under min(2 s, 10 s) less what was spent
"""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import stencil

#: seconds past which a mask fill shared by several rows counts as slow: its rows are filled one
#: per thread from then on, so that each row's mask time is measured alone
SHARED_FILL_SLOW = 0.05


class GrammarTime:
    """The grammar time a request's rows may spend in all (``total`` seconds; None: no total)."""

    def __init__(self, total: float | None):
        self.total = total
        self.spent = 0.0


class RowClock:
    """One row's grammar time: ``step_limit`` seconds per step (None: none) and its request's
    ``budget``."""

    def __init__(self, step_limit: float | None, budget: GrammarTime | None = None):
        self.step_limit = step_limit
        self.budget = budget or GrammarTime(None)
        self.step_spent = 0.0
        self.own_fill = False   # filled on a thread of its own (it was in a slow shared fill)
        self._binding = ""      # the limit that set the last call's time: "step" or "total"

    def new_step(self) -> None:
        self.step_spent = 0.0

    def left(self) -> float | None:
        """Seconds the next call may take (None: no limit); TimeLimitExceeded where none is left."""
        step = None if self.step_limit is None else self.step_limit - self.step_spent
        total = self.budget.total
        whole = None if total is None else total - self.budget.spent
        self._binding = "total" if whole is not None and (step is None or whole < step) else "step"
        left = whole if self._binding == "total" else step
        if left is not None and left <= 0:
            raise self.exceeded()
        return left

    def arm(self, m: Any) -> None:
        """Sets ``m.time_limit`` to what is left (TimeLimitExceeded where nothing is)."""
        m.time_limit = self.left()

    def charge(self, seconds: float) -> None:
        self.step_spent += seconds
        self.budget.spent += seconds

    def call(self, m: Any, fn: Callable, *args):
        """``fn(*args)``, a call on matcher ``m``, under what is left; its time is charged."""
        self.arm(m)
        t0 = time.perf_counter()
        try:
            return fn(*args)
        except stencil.TimeLimitExceeded as e:
            raise self.exceeded(e) from None
        finally:
            self.charge(time.perf_counter() - t0)

    def exceeded(self, e: BaseException | None = None) -> stencil.TimeLimitExceeded:
        """The error that fails the row, naming the limit that ran out (``e``: the core's)."""
        if self._binding == "total":
            why = (f"the request's grammar work took more than its total of {self.budget.total:g} s "
                   f"(stencil serve --grammar-time-limit, per choice)")
        else:
            why = (f"the request's grammar work took more than the step time limit of {self.step_limit:g} s in one "
                   f"decode step (forced tokens, mask and accepts together; stencil serve --step-time-limit)")
        return stencil.TimeLimitExceeded(why if e is None else f"{why}: {e}")


class Fills:
    """The masks of this step's constrained rows (``rows[j]``: its ``matcher``, ``remaining_tokens`` and
    ``clock``, each clock armed) filled into ``bitmask`` row ``j`` on the core's threads: one fill
    for the rows that share, one per row for the others (see the module doc)."""

    def __init__(self, rows: Sequence[Any], bitmask, num_threads: int):
        self.rows = rows
        shared = [j for j, r in enumerate(rows) if not r.clock.own_fill]
        groups = ([shared] if shared else []) + [[j] for j, r in enumerate(rows) if r.clock.own_fill]
        self._fills = [(g, stencil.fill_next_token_bitmasks_async(
            [rows[j].matcher for j in g], bitmask, indices=g, num_threads=num_threads if len(g) > 1 else 1,
            remaining_tokens=[rows[j].remaining_tokens for j in g])) for g in groups]
        self.seconds = 0.0   # the longest fill, once waited for

    def wait(self) -> list[BaseException | None]:
        """Each row's error (None: its mask is filled); every row is charged its time."""
        errors: list[BaseException | None] = [None] * len(self.rows)
        for group, pending in self._fills:
            for j, e in zip(group, pending.wait()):
                errors[j] = self.rows[j].clock.exceeded(e) if isinstance(e, stencil.TimeLimitExceeded) else e
            seconds = pending.seconds
            self.seconds = max(self.seconds, seconds)
            for j in group:
                clock = self.rows[j].clock
                clock.charge(seconds / len(group))
                clock.own_fill = clock.own_fill or (len(group) > 1 and seconds > SHARED_FILL_SLOW)
        return errors
