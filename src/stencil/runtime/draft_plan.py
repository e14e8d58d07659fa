"""How many tokens a speculating sequence drafts this step: as many as make the step yield the most
tokens per second. ``stencil.runtime.generate`` plans its one sequence with it; the server
(``server.speculation``) each of its rows.

A draft token is kept with chance p^j, the j-th of a row whose drafts are kept token by token with
chance p (``DraftLength``: kept tokens over kept and first rejected ones, recent drafts weighing
more). A pass of T tokens takes ``StepCost.seconds(T)``, measured per T (medians of recent passes): on a CPU a pass of a
few tokens may cost no more than a pass of one (the products of 2-4 rows are as fast as the one of
one row, ``server.ragged.Matmuls``), and each token after that costs a fraction of a row's share
of the pass (a tenth to a half for SmolLM2 at 1 to 16 rows). ``plan_drafts`` gives the step's
tokens, best first, to the rows whose next draft token is likeliest kept, and stops where one
more would lower the step's expected tokens per second.

A row whose drafts keep failing (p under ``DraftLength.FLOOR``) drafts nothing, so it costs what
a row that does not speculate costs, and after a wait tries one token again; the wait doubles
while the tries fail.

Example::

    cost = StepCost()
    lengths = {0: DraftLength(12), 1: DraftLength(12)}
    k = plan_drafts(lengths, rows=2, tokens=2, cost=cost)   # {0: 4, 1: 4}, say
    ... the pass ...
    cost.add(tokens, seconds); lengths[0].update(drafted=4, kept=3)
"""
from __future__ import annotations

__all__ = ["DraftLength", "StepCost", "plan_drafts"]

#: the most draft tokens one step weighs (the likeliest kept)
MOST_TOKENS = 64


class StepCost:
    """The seconds of a forward pass by its number of tokens: the median of the last ``KEEP``
    passes of that count where at least ``TRUST`` were seen in the last ``FRESH`` passes (a pass
    slowed by other work on the machine moves a median little), else from the nearest trusted
    count below along the slope of a least-squares line through every pass, recent ones weighing
    more (``prior`` tokens' worth of slope make a pass's fixed cost until the passes vary enough to
    fit). A count no pass has tried for a while is estimated from the line again, so that drafts
    try it again. A pass slower than ``OUTLIER`` times its estimate weighs on the line as that (one
    pass slowed tenfold by other work would otherwise make every draft token look dear for a
    hundred passes)."""

    KEEP, TRUST, FRESH, OUTLIER = 8, 3, 256, 3.0

    def __init__(self, prior: float = 16.0, decay: float = 0.98):
        self.prior, self.decay = prior, decay
        self.n = self.t = self.tt = self.s = self.ts = 0.0   # weighted sums: 1, tokens, tokens^2, s, tokens*s
        self.passes = 0
        self.recent: dict[int, list[float]] = {}   # tokens -> the last KEEP passes' seconds
        self.seen: dict[int, int] = {}             # tokens -> the pass that last had that count

    def add(self, tokens: int, seconds: float) -> None:
        d = self.decay
        fit = min(seconds, self.OUTLIER * self.seconds(tokens, tokens)[0]) if self.passes else seconds
        self.n, self.t, self.tt = d * self.n + 1, d * self.t + tokens, d * self.tt + tokens * tokens
        self.s, self.ts = d * self.s + fit, d * self.ts + tokens * fit
        self.passes += 1
        got = self.recent.setdefault(tokens, [])
        got.append(seconds)
        del got[:-self.KEEP]
        self.seen[tokens] = self.passes

    def median(self, tokens: int) -> float | None:
        """The median of the count's recent passes, where they are enough and fresh (else None)."""
        got = self.recent.get(tokens, [])
        if len(got) < self.TRUST or self.passes - self.seen[tokens] > self.FRESH:
            return None
        return sorted(got)[len(got) // 2]

    def slope(self) -> float | None:
        """Seconds per token of the fitted line; None until the passes vary (spread under ~0.7)."""
        var = self.n * self.tt - self.t * self.t
        if self.n < 8 or var <= 0.5 * self.n * self.n:
            return None
        return max(0.0, (self.n * self.ts - self.t * self.s) / var)

    def seconds(self, tokens: int, upto: int) -> list[float]:
        """Estimated seconds of passes of ``tokens`` to ``upto`` tokens, never decreasing."""
        slope = self.slope()
        base_t, base = tokens, None
        for t in range(tokens, 0, -1):
            base = self.median(t)
            if base is not None:
                base_t = t
                break
        if base is None:
            got = self.recent.get(tokens)
            base = min(got) if got else 1.0
        if slope is None:
            slope = base / (base_t + self.prior)
        out: list[float] = []
        last = 0.0
        for t in range(tokens, upto + 1):
            est = self.median(t)
            if est is None:
                est = last + slope if out else base + slope * (t - base_t)
            last = max(last, est)
            out.append(last)
        return out

    def fixed_tokens(self) -> float:
        """A pass's fixed cost in tokens' worth of the fitted slope (/health; the prior until fitted)."""
        slope = self.slope()
        if slope is None:
            return self.prior
        a = (self.s - slope * self.t) / self.n
        return 10_000.0 if slope <= 0 else min(10_000.0, max(0.0, a / slope))


class DraftLength:
    """A row's chance that its next draft token is kept (``p``), from its recent drafts, and its
    wait after drafts that kept failing."""

    DECAY = 0.7
    FLOOR = 0.1       # under it the row stops drafting for a while
    MAX_WAIT = 64

    def __init__(self, max_draft: int):
        self.max_draft = max_draft
        self.kept, self.tried = 2.0, 3.0   # a prior of p = 2/3
        self.wait = 0
        self.backoff = 4
        self.probing = False   # this step's one token after a wait: drafted whatever it costs

    @property
    def p(self) -> float:
        return self.kept / self.tried

    def most(self) -> int:
        """The most tokens the row may draft this step: 0 while it waits (it starts waiting when p
        falls under ``FLOOR``), 1 to try after the wait, else ``max_draft``. Call once per step."""
        self.probing = False
        if self.wait > 0:
            self.wait -= 1
            self.probing = self.wait == 0
            return int(self.probing)
        if self.p < self.FLOOR:
            self.wait = self.backoff
            self.backoff = min(2 * self.backoff, self.MAX_WAIT)
            return 0
        return self.max_draft

    def update(self, drafted: int, kept: int) -> None:
        """A verified draft of ``drafted`` tokens, ``kept`` of them kept (an empty one says nothing)."""
        if not drafted:
            return
        d = self.DECAY
        self.kept = d * self.kept + kept
        self.tried = d * self.tried + kept + (kept < drafted)
        if kept:
            self.backoff = 4


def plan_drafts(lengths: dict, rows: int, tokens: int, cost: StepCost) -> dict:
    """Each speculating row's draft length this step (``lengths``: row -> ``DraftLength``), for a
    pass of ``rows`` rows fed ``tokens`` tokens without drafts: the number of draft tokens that
    gives the step the most expected tokens per second, each token to the row likeliest to keep it."""
    values = []   # (chance the token is kept, row): a row's j-th token p^j
    for i, d in lengths.items():
        p, most = d.p, d.most()
        values += [(p ** j, i) for j in range(1, most + 1)]
    values.sort(key=lambda v: -v[0])
    del values[MOST_TOKENS:]
    seconds = cost.seconds(tokens, tokens + len(values))
    best, best_rate, expected = 0, rows / seconds[0], 0.0
    for n, (v, _) in enumerate(values, 1):
        expected += v
        rate = (rows + expected) / seconds[n]
        if rate > best_rate:
            best, best_rate = n, rate
    out = {i: int(d.probing) for i, d in lengths.items()}   # (a try after a wait is what tells it ended)
    for _, i in values[:best]:
        out[i] = max(out[i], 1) if lengths[i].probing else out[i] + 1
    return out
