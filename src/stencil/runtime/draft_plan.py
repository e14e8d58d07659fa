"""How many tokens a speculating sequence drafts this step: as many as make the step yield the most
tokens per second. ``stencil.runtime.generate`` plans its one sequence with it; the server
(``server.speculation``) each of its rows.

A draft token is kept with chance p^j, the j-th of a row whose drafts are kept token by token with
chance p (``DraftLength``: kept tokens over kept and first rejected ones, recent drafts weighing
more). A pass of R rows fed T tokens takes ``StepCost.seconds(T, T, R)``, measured: the plain pass of R
rows (one token each), plus an excess for the tokens beyond one a row, fitted as a first extra
token's cost and each one's after it. On a CPU that first token can be dear (16 rows fed 17
tokens: the linear layers' products of 17 rows take a third longer than those of 16, and the
rows fed several get attention calls of their own) while the next ones are cheap, and a pass of
few rows may take a few more tokens for almost nothing (``runtime.ragged.Matmuls``).
``plan_drafts`` gives the step's tokens, best first, to the rows whose next draft token is
likeliest kept, and stops where one more would lower the step's expected tokens per second (none
where the best plan raises it by less than ``MARGIN``, and none in one step of ``PLAIN_FRESH``
without a plain pass: the measure the others are weighed against);
``drafts_pay`` checks the drafts once made (prompt lookup may find less than the plan allotted).

A row whose drafts keep failing (p under ``DraftLength.FLOOR``) drafts nothing, so it costs what
a row that does not speculate costs, and after a wait tries one token again; the wait doubles
while the tries fail.

Example::

    cost = StepCost()
    lengths = {0: DraftLength(12), 1: DraftLength(12)}
    k = plan_drafts(lengths, rows=2, tokens=2, cost=cost)   # {0: 4, 1: 4}, say
    ... the drafts (drafts_pay), the pass ...
    cost.add(tokens, seconds, rows=2); lengths[0].update(drafted=4, kept=3)
"""
from __future__ import annotations

from typing import Any

from stencil.runtime.sampling import MIN_TEMPERATURE

__all__ = ["DraftLength", "DraftPrior", "StepCost", "draft_kind", "drafts_pay", "plan_drafts"]

#: the most draft tokens one step weighs (the likeliest kept)
MOST_TOKENS = 64
#: drafts must raise a step's expected tokens per second by this fraction at least: the costs are
#: estimates from passes that other work on the machine slows by a tenth or more, and where the
#: gain is within that, a plan that drafts loses as often as it wins
MARGIN = 0.05


class StepCost:
    """The seconds of a forward pass by its rows and tokens.

    A pass of ``rows`` rows fed one token each (a plain pass) costs the median of the last ``KEEP``
    plain passes of that many rows, or, where fewer than ``TRUST`` of them were seen in the last
    ``FRESH`` passes, the value at ``rows`` of a least-squares line through the plain passes
    (recent ones weighing more). Tokens beyond one a row (forced text, drafts) add an excess over
    the plain pass, fitted as ``first + each * extra`` on the passes of similar row counts (the
    same power of two): on a CPU the first extra token may cost much more than the next ones (the
    products of 17 rows take a third longer than those of 16; the rows fed several get attention
    calls of their own), and how much depends on the batch. Exact shapes seen often enough take
    their own median. Until a row count's excess is fitted (and again once its passes have faded:
    weights decay per pass, so drafts try again), each extra token costs ``plain / (rows +
    prior)`` and the first nothing more. A pass slower than ``OUTLIER`` times its estimate weighs
    on the fits as that (one pass slowed tenfold by other work would otherwise make every draft
    token look dear for a hundred passes)."""

    KEEP, TRUST, FRESH, OUTLIER = 8, 3, 256, 3.0
    FITTED = 3.0       # the weight of passes an excess fit needs
    PLAIN_FRESH = 32   # a plain pass at least this often (``stale``): the excess is measured against it

    def __init__(self, prior: float = 16.0, decay: float = 0.98):
        self.prior, self.decay = prior, decay
        self.passes = 0
        self.recent: dict[tuple[int, int], list[float]] = {}   # (rows, tokens) -> the last KEEP passes' seconds
        self.seen: dict[tuple[int, int], int] = {}             # (rows, tokens) -> the pass that last had it
        self.plain_fit = _Line()                               # plain passes: seconds by rows
        self.last_plain = -self.PLAIN_FRESH                    # the pass that was the last plain one
        self.excess_fits: dict[int, _Line] = {}                # rows.bit_length() -> excess by extra tokens

    def add(self, tokens: int, seconds: float, rows: int = 1) -> None:
        """One pass of ``rows`` rows fed ``tokens`` tokens in all, and its ``seconds``."""
        fit = min(seconds, self.OUTLIER * self.seconds(tokens, tokens, rows)[0]) if self.passes else seconds
        self.passes += 1
        key = (rows, tokens)
        got = self.recent.setdefault(key, [])
        got.append(seconds)
        del got[:-self.KEEP]
        self.seen[key] = self.passes
        if tokens <= rows:
            self.plain_fit.add(self.passes, self.decay, rows, fit)
            self.last_plain = self.passes
        else:
            line = self.excess_fits.setdefault(rows.bit_length(), _Line())
            line.add(self.passes, self.decay, tokens - rows, max(0.0, fit - self.plain(rows)))

    def stale(self) -> bool:
        """Whether no plain pass came in the last ``PLAIN_FRESH``: the machine's speed drifts (other
        work, a tenth or more within a minute), and drafting passes alone would leave the plain
        passes they are weighed against where they were; ``plan_drafts`` then plans none."""
        return self.passes - self.last_plain >= self.PLAIN_FRESH

    def median(self, rows: int, tokens: int) -> float | None:
        """The median of the shape's recent passes, where they are enough and fresh (else None)."""
        got = self.recent.get((rows, tokens), [])
        if len(got) < self.TRUST or self.passes - self.seen[(rows, tokens)] > self.FRESH:
            return None
        return sorted(got)[len(got) // 2]

    def plain(self, rows: int) -> float:
        """Estimated seconds of a pass of ``rows`` rows fed one token each."""
        got = self.median(rows, rows)
        if got is not None:
            return got
        line = self.plain_fit.line(self.passes, self.decay, spread=0.5)
        if line is not None:
            return max(line[0] + line[1] * rows, 1e-6)
        # (a copy of the items: /health reads this from another thread while passes are added)
        near = [(abs(r - rows), min(s)) for (r, _), s in list(self.recent.items())]
        return min(near)[1] if near else 1.0   # (the cheapest recent pass of the nearest row count)

    def excess(self, rows: int) -> tuple[float, float]:
        """(first, each): a pass of ``rows`` rows fed e > 0 more tokens than rows costs
        ``plain(rows) + first + each * e``."""
        line = self.excess_fits.get(rows.bit_length())
        got = None if line is None else line.line(self.passes, self.decay, spread=0.2, least=self.FITTED)
        if got is None:
            return 0.0, self.plain(rows) / (rows + self.prior)
        return got

    def seconds(self, tokens: int, upto: int, rows: int = 1) -> list[float]:
        """Estimated seconds of passes of ``rows`` rows fed ``tokens`` to ``upto`` tokens, never decreasing."""
        base = self.plain(rows)
        first, each = self.excess(rows)
        out: list[float] = []
        last = 0.0
        for t in range(tokens, upto + 1):
            est = self.median(rows, t)
            if est is None:
                est = base + (first + each * (t - rows) if t > rows else 0.0)
            last = max(last, est)
            out.append(last)
        return out


class DraftLength:
    """A row's chance that its next draft token is kept (``p``), from its recent drafts, and its
    wait after drafts that kept failing. ``prior``: a ``DraftPrior`` the row starts from, as a row
    of ``kind``, and tells of each draft (None: it starts at ``DraftPrior.DEFAULT``)."""

    DECAY = 0.7
    FLOOR = 0.1       # under it the row stops drafting for a while
    MAX_WAIT = 64

    PRIOR = 3.0       # the weight of the chance a row starts with, in drafted tokens

    def __init__(self, max_draft: int, prior: "DraftPrior | None" = None, kind: Any = None):
        self.max_draft = max_draft
        self.prior, self.kind = prior, kind
        p = prior.p(kind) if prior is not None else DraftPrior.DEFAULT
        self.kept, self.tried = self.PRIOR * p, self.PRIOR
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
        self.tried = d * self.tried + _judged(drafted, kept)
        if kept:
            self.backoff = 4
        if self.prior is not None:
            self.prior.update(self.kind, drafted, kept)


def _judged(drafted: int, kept: int) -> int:
    """The draft tokens a verification judged: the kept ones and the first refused one."""
    return kept + (kept < drafted)


class DraftPrior:
    """The chance a new row (a request, a ``generate`` call) starts with: how its kind of rows'
    draft tokens fared lately, where ``DraftLength`` alone starts every row at 2/3. Free text
    drafts from prompt lookup that the model seldom keeps, and each new row spent its first drafts
    learning that again (a server's free rows at 4 requests: 76 draft tokens drafted, none kept, 7%
    of the time). A kind is any key the caller picks (the server and ``generate``: under a grammar
    or not, sampled or greedy: forced text and copied values are kept more, a draw at T = 1 less).
    Every judged draft token of a kind counts, recent ones weighing more; until ``LEAST`` have,
    the prior stays ``DEFAULT``. Updates come from one thread (the server's engine, one generate
    call at a time per model); a lost one would only weigh one draft less.

    Example::

        prior = DraftPrior()
        d = DraftLength(12, prior, "free")   # starts at prior.p("free")
        ... the row's drafts: d.update(drafted, kept) tells the prior too
    """

    DEFAULT = 2 / 3   # the chance a row starts with, before its kind's drafts are known
    DECAY = 0.98   # per judged draft
    LEAST = 8.0    # judged draft tokens (decayed) before a kind's own chance is used

    def __init__(self):
        self.counts: dict = {}   # kind -> [kept, tried]

    def p(self, kind) -> float:
        """A new row's chance that its next draft token is kept."""
        kept, tried = self.counts.get(kind, (0.0, 0.0))
        return kept / tried if tried >= self.LEAST else self.DEFAULT

    def update(self, kind, drafted: int, kept: int) -> None:
        """A verified draft of a row of ``kind``: ``drafted`` tokens, ``kept`` of them kept,
        counted as ``DraftLength`` counts them (the kept ones and the first refused one)."""
        if not drafted:
            return
        c = self.counts.setdefault(kind, [0.0, 0.0])
        c[0] = self.DECAY * c[0] + kept
        c[1] = self.DECAY * c[1] + _judged(drafted, kept)


def draft_kind(constrained: bool, temperature: float) -> tuple[bool, bool]:
    """A row's kind for ``DraftPrior``: (under a grammar, sampled)."""
    return constrained, temperature >= MIN_TEMPERATURE


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
    if cost.stale():
        values = []
    seconds = cost.seconds(tokens, tokens + len(values), rows)
    best, best_rate, expected = 0, rows / seconds[0], 0.0
    for n, (v, _) in enumerate(values, 1):
        expected += v
        rate = (rows + expected) / seconds[n]
        if rate > best_rate:
            best, best_rate = n, rate
    if not _clears_margin(best_rate, rows, seconds[0]):
        best = 0
    out = {i: int(d.probing) for i, d in lengths.items()}   # (a try after a wait is what tells it ended)
    for _, i in values[:best]:
        out[i] = max(out[i], 1) if lengths[i].probing else out[i] + 1
    return out


def drafts_pay(made: list, rows: int, tokens: int, cost: StepCost) -> bool:
    """Whether the drafts as made (``made``: each row's ``DraftLength`` and its draft's length)
    raise the step's expected tokens per second over a pass of ``rows`` rows fed ``tokens``
    without them. A plan counts on the lengths it allots; drafts come out shorter where prompt
    lookup finds less, and where a pass's first extra token is dear, a short draft may not pay."""
    n = sum(k for _, k in made)
    if not n:
        return True
    expected = sum(d.p ** j for d, k in made for j in range(1, k + 1))
    seconds = cost.seconds(tokens, tokens + n, rows)
    return _clears_margin((rows + expected) / seconds[-1], rows, seconds[0])


def _clears_margin(rate: float, rows: int, plain_seconds: float) -> bool:
    """Whether a step's expected tokens per second ``rate`` beats the pass without drafts
    (``rows`` tokens in ``plain_seconds``) by ``MARGIN`` at least."""
    return rate >= (1 + MARGIN) * rows / plain_seconds


class _Line:
    """A least-squares line y = a + b x through weighted points, each point's weight decaying by
    ``decay`` per pass since it was added (``StepCost``'s fits)."""

    def __init__(self):
        self.n = self.x = self.xx = self.y = self.xy = 0.0
        self.at = 0   # the pass of the last point (the sums are weighted as of then)

    def _aged(self, now: int, decay: float) -> float:
        return decay ** (now - self.at)

    def add(self, now: int, decay: float, x: float, y: float) -> None:
        w = self._aged(now, decay)
        self.n, self.x, self.xx = w * self.n + 1, w * self.x + x, w * self.xx + x * x
        self.y, self.xy = w * self.y + y, w * self.xy + x * y
        self.at = now

    def line(self, now: int, decay: float, spread: float, least: float = 8.0) -> tuple[float, float] | None:
        """(a, b >= 0) as of pass ``now``; None until the points weigh ``least``. Points that vary
        too little in x (variance under ``spread``) give a flat line through their mean."""
        w = self._aged(now, decay)
        n = w * self.n
        if n < least:
            return None
        var = (self.n * self.xx - self.x * self.x) * w * w
        b = max(0.0, (self.n * self.xy - self.x * self.y) * w * w / var) if var > spread * n * n else 0.0
        a = (self.y - b * self.x) * w / n
        if a < 0:   # (a fixed cost is never negative: through the origin instead)
            a, b = 0.0, self.xy / self.xx if self.xx else 0.0
        return a, b
