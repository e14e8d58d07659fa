"""``stencil.runtime.draft_plan``: what a pass costs by its rows and tokens (``StepCost``), as the
server and ``generate`` learn it from their passes, and the draft plans it leads to. Pure Python:
the passes' seconds are given, shaped as measured on a CPU (16 rows: 150 ms plain, the first
extra token 40 ms more, each next one 2 ms)."""
from __future__ import annotations

import random

from stencil.runtime.draft_plan import DraftLength, DraftPrior, StepCost, draft_kind, drafts_pay, plan_drafts
from stencil.runtime.speculative import DraftBudget, SpeculationOptions, model_prior


def _dear_first(cost: StepCost, rows: int = 16, passes: int = 60, seed: int = 0) -> None:
    """Passes of ``rows`` rows: 150 ms plain, 40 ms more for any extra token, then 2 ms each."""
    rnd = random.Random(seed)
    for _ in range(passes):
        extra = rnd.choice([0, 0, 1, 2, 3, 5, 8])
        cost.add(rows + extra, 0.150 + (0.040 + 0.002 * (extra - 1) if extra else 0.0), rows=rows)


def _rows(n: int, kept: float) -> dict:
    """``n`` rows whose drafts were kept with chance ``kept`` (many drafts seen)."""
    out = {}
    for i in range(n):
        d = DraftLength(12)
        d.kept, d.tried = 100 * kept, 100.0
        out[i] = d
    return out


def test_the_first_extra_token_is_learned_apart_from_the_next():
    cost = StepCost()
    _dear_first(cost)
    first, each = cost.excess(16)
    assert abs(first - 0.038) < 0.004 and abs(each - 0.002) < 0.001, (first, each)
    assert abs(cost.plain(16) - 0.150) < 1e-9
    # a shape never seen is estimated from the fit: 16 rows fed 30 tokens
    assert abs(cost.seconds(30, 30, rows=16)[0] - (0.150 + first + 14 * each)) < 1e-9


def test_drafts_where_they_pay_none_where_the_first_token_costs_more_than_they_bring():
    cost = StepCost()
    _dear_first(cost)
    # two rows of 16 draft, p = 2/3: under 2 tokens expected from each, worth 150/16 ms a token
    # against 40 ms for the first: no drafts
    assert sum(plan_drafts(_rows(2, 2 / 3), rows=16, tokens=16, cost=cost).values()) == 0
    # one that keeps 95% of its drafts: 12 tokens bring 8.7 expected tokens, worth the 40 ms
    assert plan_drafts(_rows(1, 0.95), rows=16, tokens=16, cost=cost)[0] == 12
    # every row drafting at p = 2/3: 16 x 1.4 expected tokens for 40 + 47 x 2 ms: drafts pay
    assert sum(plan_drafts(_rows(16, 2 / 3), rows=16, tokens=16, cost=cost).values()) >= 32
    # once a token beyond one a row is fed anyway (forced text: the first extra token paid), drafts are cheap
    assert sum(plan_drafts(_rows(2, 2 / 3), rows=16, tokens=17, cost=cost).values()) > 0


def test_row_counts_keep_their_own_excess():
    """A batch of 16 where the first extra token is dear does not stop one row alone from drafting
    where extra tokens cost little, and the other way round."""
    cost = StepCost()
    _dear_first(cost)
    for t in [1, 2, 3, 5, 9, 13] * 10:
        cost.add(t, 0.040 + 0.001 * (t - 1), rows=1)
    assert cost.excess(1)[0] < 0.002 and cost.excess(16)[0] > 0.030
    assert plan_drafts(_rows(1, 2 / 3), rows=1, tokens=1, cost=cost)[0] >= 4
    assert sum(plan_drafts(_rows(2, 2 / 3), rows=16, tokens=16, cost=cost).values()) == 0


def test_a_faded_fit_lets_drafts_try_again():
    """Once drafting stops (no more passes with extra tokens), the fit's passes fade and the
    prior comes back: drafts are tried again, and the new passes decide."""
    cost = StepCost()
    _dear_first(cost)
    lengths = _rows(1, 0.9)   # 6 tokens bring 4.2: under the first token's 40 ms, over the prior's 28
    waited = 0
    while not sum(plan_drafts(lengths, rows=16, tokens=16, cost=cost).values()):
        cost.add(16, 0.150, rows=16)
        waited += 1
        assert waited < 1000
    assert 50 < waited <= StepCost.FRESH + 1, waited   # (the exact shapes' medians go stale last)


def test_plain_passes_of_other_row_counts_come_from_a_line():
    cost = StepCost()
    for _ in range(4):
        for rows in (4, 8, 12):
            cost.add(rows, 0.030 + 0.010 * rows, rows=rows)
    assert abs(cost.plain(16) - 0.190) < 1e-6 and abs(cost.plain(2) - 0.050) < 1e-6
    assert abs(cost.plain(8) - 0.110) < 1e-9   # (seen: its median)


def test_short_drafts_do_not_pay_long_ones_do():
    cost = StepCost()
    _dear_first(cost)
    sure, unsure = _rows(2, 0.95), _rows(1, 0.5)
    assert not drafts_pay([(unsure[0], 1)], rows=16, tokens=16, cost=cost)
    assert not drafts_pay([(sure[0], 1), (sure[1], 1)], rows=16, tokens=16, cost=cost)
    assert drafts_pay([(sure[0], 12), (sure[1], 12)], rows=16, tokens=16, cost=cost)
    assert drafts_pay([(sure[0], 2)], rows=16, tokens=17, cost=cost)   # (the first extra token paid)
    assert not drafts_pay([(unsure[0], 1)], rows=16, tokens=17, cost=cost)   # (a 3% gain: under MARGIN)
    assert drafts_pay([], rows=16, tokens=16, cost=cost)


def test_no_drafts_until_a_plain_pass_is_fresh():
    """Drafting every step would leave the plain passes the excess is measured against as old as
    the drafting: one step in ``PLAIN_FRESH`` drafts nothing."""
    cost = StepCost()
    lengths = _rows(1, 0.95)
    plans = []
    for _ in range(100):
        k = plan_drafts(lengths, rows=1, tokens=1, cost=cost)[0]
        plans.append(k)
        cost.add(1 + k, 0.040 + 0.001 * k)   # one row: 40 ms a pass, 1 ms a token
    assert plans[0] == 0 and 0 < plans.count(0) <= 1 + 100 // StepCost.PLAIN_FRESH, plans
    assert min(plans[1:StepCost.PLAIN_FRESH]) == 12


def test_a_slowed_pass_weighs_as_three_estimates():
    cost = StepCost()
    _dear_first(cost)
    before = cost.excess(16)
    cost.add(20, 10.0, rows=16)   # other work on the machine: 10 s
    first, each = cost.excess(16)
    assert first + 4 * each < 3 * (0.150 + before[0] + 4 * before[1]), (before, first, each)


def test_draft_length_adapts_to_acceptance():
    """``plan_drafts``: long drafts where a pass of a few more tokens costs little, fewer where each
    token costs much; a row whose drafts fail stops drafting (then tries one token after a wait
    that doubles), and drafts long again once they are kept."""
    cheap, dear = StepCost(), StepCost()
    for _ in range(3):
        for t in range(1, 14):
            cheap.add(t, 0.040 + 0.001 * t)   # one row: 40 ms a pass, 1 ms a token
        for t in range(16, 40):
            dear.add(t, 0.060 + 0.005 * t, rows=16)    # 16 rows: 5 ms a token against 9 ms a row's share
    assert abs(cheap.seconds(1, 2)[1] - 0.042) < 1e-9 and dear.excess(16)[1] > 0.004
    d = DraftLength(12)
    assert plan_drafts({0: d}, rows=1, tokens=1, cost=cheap)[0] >= 6
    assert plan_drafts({i: DraftLength(12) for i in range(16)}, rows=16, tokens=16, cost=dear)[0] < 6
    steps = []
    for _ in range(100):                # every draft fails at once
        k = plan_drafts({0: d}, rows=1, tokens=1, cost=cheap)[0]
        steps.append(k)
        d.update(k, 0)
    assert steps[0] > 0 and steps.count(0) > 80 and sum(steps[20:]) <= 4, steps
    first = steps.index(0)
    probes = [i for i in range(first, 100) if steps[i]]   # one token each, further apart each time
    assert all(steps[i] == 1 for i in probes) and len(probes) >= 2
    assert probes[1] - probes[0] > probes[0] - first
    for _ in range(80):                 # then drafts are kept whole: after the next probe, long drafts
        k = plan_drafts({0: d}, rows=1, tokens=1, cost=cheap)[0]
        d.update(k, k)
    assert plan_drafts({0: d}, rows=1, tokens=1, cost=cheap)[0] == 12


def test_a_kinds_prior_follows_its_drafts_and_leaves_other_kinds_alone():
    prior = DraftPrior()
    free, copied = draft_kind(False, 0.0), draft_kind(True, 0.0)
    assert free == (False, False) and draft_kind(False, 1.0) == (False, True) and draft_kind(False, 1e-9) == free
    assert prior.p(free) == prior.p(copied) == 2 / 3
    prior.update(free, 0, 0)   # an empty draft says nothing
    for _ in range(3):
        prior.update(free, 5, 0)   # refused at its first token: one judged, none kept
    assert prior.p(free) == 2 / 3, "until LEAST judged tokens, the default"
    for _ in range(20):
        prior.update(free, 5, 0)
        prior.update(copied, 6, 6)
    assert prior.p(free) == 0.0 and prior.p(copied) == 1.0
    prior.update(free, 3, 2)   # recent drafts weigh more: a kept pair lifts it at once
    assert 0.05 < prior.p(free) < 0.2


def test_a_row_started_from_a_failing_prior_waits_instead_of_drafting():
    prior = DraftPrior()
    for _ in range(30):
        prior.update("free", 8, 0)
    fresh, informed = DraftLength(12), DraftLength(12, prior, "free")
    assert fresh.most() == 12
    assert informed.most() == 0 and informed.wait > 0   # waits, then tries one token
    assert [informed.most() for _ in range(informed.wait)][-1] == 1


def test_generate_budgets_start_from_and_feed_their_models_prior():
    class Model:   # (a weak reference's target, as a torch module is)
        pass
    model = Model()
    prior = model_prior(model)
    assert model_prior(model) is prior and model_prior(Model()) is not prior
    for _ in range(30):
        prior.update((False, True), 4, 0)
    sampled = DraftBudget(SpeculationOptions(), prior, (False, True))
    greedy = DraftBudget(SpeculationOptions(), prior, (False, False))
    assert sampled.length.p < DraftLength.FLOOR and greedy.length.p == 2 / 3
    for _ in range(3):
        greedy.learn(5, 0.05, judged=4, kept=4)   # the call's drafts count for the calls after it
    assert prior.p((False, False)) == 1.0 and sampled.length.p < DraftLength.FLOOR
