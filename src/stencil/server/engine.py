"""The generation thread: continuous batching of every running request.

Requests queue up; the engine thread admits them into the running batch (up to ``max_batch``
rows) between steps, and each step runs ONE forward pass for all rows (``KVBatch.step_rows``,
where each row pays for the tokens it is fed: ``runtime.ragged``). A row under a grammar then checks
the token the model picked (``Matcher.accept_token(t, remaining_tokens)``, about a microsecond) and
its mask is filled only where the grammar refuses it, the refused rows' masks in one native call
(``server.picks``; greedy outputs are those of full masks, sampling keeps the masked
distribution). Rows that need the mask before they choose (top-k, top-p, min-p,
log-probabilities; ``opportunistic=False``: every row) have it filled by a thread of the core
during the forward pass (``fill_next_token_bitmasks_async``, on ``mask_threads`` native threads)
without ever taking the GIL: Python threads filling masks took the GIL from the forward pass at
each hand-over, which on a GPU, where launching the forward pass is Python work, stretched a step
several-fold. Forced tokens (the only token a grammar allows) are appended without sampling and
fed with the row's next step. A finished, cancelled or failed row leaves the batch at once and
frees its slot; text pieces flow back to each request's asyncio queue.

Rows are isolated: an error in one row's grammar work, sampling or bookkeeping fails that row
alone (with a status that names the cause: 400 for a grammar that is too expensive) and the
others go on. A row's calls on its matcher in one step (forced tokens, its mask, accepts) share
``step_time_limit`` seconds, and a request's calls over its whole generation draw from its total
(``JobGrammar.grammar_time``): each call runs under what is left of both (``Matcher.time_limit``,
``server.grammar_time``), so one row's grammar cannot stall the others' step beyond the step limit,
nor the batch beyond its total. Only a failure of the forward pass itself fails the whole batch.

With ``speculate`` (the default), rows draft several tokens per step and keep those the model agrees with
(``server.speculation``), each as many as its recent acceptance and the cost of a token in the pass
make worth it (none for a row whose drafts keep failing: it then costs what a plain row costs).

A job with ``GenerationParams.aligned`` (``sampling: "aligned"``, ``stencil.runtime.aligned``) is no row: its particles
run to the end when it is admitted, in a batch of their own on their own KV cache, and the running
batch waits for them (one request's particles are that many rows at every step; the text comes in
one piece).

A row with a ``JobGrammar.healer`` (token healing, ``stencil.runtime.healing``) first samples the prompt's healed
end again, one token per step under the healer's mask (no forced tokens, no drafts until then),
and leaves those bytes out of its text.
"""
from __future__ import annotations

import atexit
import os
import queue
import threading
import time
import weakref
from typing import Any

import numpy as np

import stencil
from stencil.runtime.aligned import HFParticles, sample_aligned
from stencil.kernels.torch import PinnedBitmask
from stencil.memory import reclaim
from stencil.runtime.sampling import Sampler
from stencil.server.grammar_time import Fills
from stencil.server.job import DONE, Job
from stencil.server.kv_batch import KVBatch
from stencil.server.picks import DeadEnd, Pick, Picks, opportunistic
from stencil.server.row import Row
from stencil.runtime.draft_plan import DraftPrior, StepCost, draft_kind, drafts_pay, plan_drafts
from stencil.server.speculation import RowSpeculation, server_speculation
from stencil.runtime.speculative import SpeculationOptions

#: seconds a row's calls on its matcher may take in one decode step together (forced tokens, its
#: mask, accepts); past it the row fails with a 400 and the batch goes on without it
DEFAULT_STEP_TIME_LIMIT = 2.0


def default_mask_threads() -> int:
    """Threads filling masks beside the forward pass: a quarter of the cores (at least one,
    at most 8); the forward pass keeps the rest."""
    return max(1, min(8, (os.cpu_count() or 1) // 4))


class Engine:
    """Owns the model and the generation thread; ``max_batch`` rows run together.

    ``mask_threads``: threads filling masks during the forward pass (default
    ``default_mask_threads()``); ``step_time_limit``: seconds a row's calls on its matcher may take
    in one step together (None: no limit); ``max_waiting``: requests that may wait for a slot (None: no limit);
    ``speculate`` (True, the default, or ``SpeculationOptions``; False: off unless a job's
    ``GenerationParams.speculate`` True turns it on with ``SpeculationOptions()``): rows draft and
    verify several tokens per step unless their job's says False; by default, not the rows whose
    sampler truncates (top-k, top-p, min-p: they would fill the mask of every drafted position); ``opportunistic`` (default True): rows check their pick
    before a mask (``server.picks``), False: every constrained row's mask is filled at every step.

    Example::

        engine = Engine(lm, max_batch=8)
        job = engine.submit(Job(ids, GenerationParams(max_tokens=32), SamplingParams(), JobStream(loop)))
    """

    def __init__(self, lm, max_batch: int = 16, *, mask_threads: int | None = None,
                 step_time_limit: float | None = DEFAULT_STEP_TIME_LIMIT, max_waiting: int | None = None,
                 speculate: bool | SpeculationOptions = True, opportunistic: bool = True):
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        mask_threads = default_mask_threads() if mask_threads is None else mask_threads
        if mask_threads < 1:
            raise ValueError(f"mask_threads must be >= 1, got {mask_threads}")
        if step_time_limit is not None and not step_time_limit > 0:
            raise ValueError(f"step_time_limit must be None or > 0 seconds, got {step_time_limit}")
        self.speculation, self.speculate = server_speculation(speculate)
        self.draft_prior = DraftPrior()   # the chance new rows start with, per kind, from the rows before
        self.opportunistic = opportunistic
        self.lm = lm
        self.info = lm.tokenizer_info
        self.max_batch = max_batch
        self.max_waiting = max_waiting
        self.step_time_limit = step_time_limit
        self.eos = set(self.info.eos_token_ids)
        # reused every step: filled on the host (pinned on CUDA), applied where the logits are
        self.bitmask = PinnedBitmask(max_batch, self.info.vocab_size, device=lm.device)
        eos_words = np.zeros((self.bitmask.shape[1],), np.uint32)
        for t in self.eos:
            eos_words[t // 32] |= np.uint32(1 << (t % 32))
        self.not_eos = (~eos_words).view(np.int32)
        self.jobs: queue.Queue = queue.Queue()
        self.mask_threads = mask_threads
        self.steps = 0    # forward passes, for /health, tests and the benchmark
        self.step_seconds = 0.0  # wall time of decoding (forced tokens, masks, forward, sampling); not admission
        self.step_rows = 0       # rows summed over those steps (their mean batch is step_rows / steps)
        # where the step's time goes, cumulative seconds (see _decode); /health shows them
        self.step_phases = dict.fromkeys(STEP_PHASES, 0.0)
        self._eos_ids: Any = None  # EOS ids as a tensor on the logits' device, for ignore_eos
        self.running = 0  # rows in the batch
        self.failed_rows = 0  # rows failed alone (their batch went on)
        # speculating rows: row-steps, tokens they added in them, draft tokens proposed and accepted
        self.spec_counts = dict.fromkeys(("row_steps", "tokens", "drafted", "accepted"), 0)
        # constrained rows: masks filled, picks checked before a mask (server.picks), tokens of finished rows
        self.mask_counts = dict.fromkeys(("filled", "checked", "tokens"), 0)
        self.picks = Picks(self.eos, self.not_eos, self.info.vocab_size, stencil.allocate_token_bitmask(
            max_batch, self.info.vocab_size), mask_threads)
        self.step_cost = StepCost()   # what a token in the pass costs (the rows' draft lengths follow it)
        # sampling: "aligned" jobs (run alone between steps): how many, their passes and particle rows
        self.aligned_counts = dict.fromkeys(("jobs", "passes", "rows"), 0)
        self.thread = threading.Thread(target=self._run, name="stencil-serve", daemon=True)
        self.thread.start()
        atexit.register(_stop_at_exit, weakref.ref(self))

    def submit(self, job: Job) -> Job:
        """Queue ``job`` (``server.job``); its text comes back on ``job.stream``."""
        self.jobs.put(job)
        return job

    def has_room(self, n: int = 1) -> bool:
        """Whether ``n`` more requests fit: the free rows of the batch, then ``max_waiting`` more
        waiting for one."""
        if self.max_waiting is None:
            return True
        free = max(0, self.max_batch - self.running)
        return self.jobs.qsize() + n <= free + self.max_waiting

    def close(self) -> None:
        self.jobs.put(None)

    # -- the loop -------------------------------------------------------------------------------
    def _run(self) -> None:
        import torch
        batch = KVBatch(self.lm.model)
        rows: list[Row] = []
        with torch.inference_mode():
            while True:
                if not self._admit(batch, rows, block=not rows):
                    return
                if not rows:
                    continue
                try:
                    self._step(batch, rows)
                except Exception as e:  # noqa: BLE001 - the forward pass failed: the batch fails
                    for r in rows:
                        if r.finish is None:
                            r.fail(e)
                    batch = KVBatch(self.lm.model)
                self._drop_finished(batch, rows)

    def _drop_finished(self, batch: KVBatch, rows: list[Row]) -> None:
        keep = []
        for i, r in enumerate(rows):
            if r.finish is None and r.job.stream.cancelled:
                r.finish = "cancelled"
            if r.finish is None:
                keep.append(i)
            else:
                self.failed_rows += r.finish == "error"
                self.mask_counts["tokens"] += len(r.out) if r.constrained else 0
                r.close()
                r.job.stream.put(DONE)
        if len(keep) < len(rows):
            batch.keep(keep)
            rows[:] = [rows[i] for i in keep]
            reclaim()  # the rows' matchers are gone: their grammars' memory is back under the limit
        self.running = len(rows)

    def _admit(self, batch: KVBatch, rows: list[Row], block: bool) -> bool:
        """Move waiting jobs into the batch; False when the engine was closed."""
        while len(rows) < self.max_batch:
            try:
                job = self.jobs.get() if block else self.jobs.get_nowait()
            except queue.Empty:
                return True
            block = False
            if job is None:
                return False
            if job.stream.cancelled:
                job.stream.put(DONE)
                continue
            if job.params.aligned is not None:
                self._run_aligned(job)
                continue
            try:
                row = Row(job, self.info, self.step_time_limit, self._speculation(job), self.eos, self.not_eos)
                if row.spec_later is not None:   # drafts without masks where the row checks its picks
                    row.spec_later.masks = not self._checks_first(row)
                if job.params.max_tokens == 0:
                    row.finish = "max_tokens"
                    row.close()
                    job.stream.put(DONE)
                    continue
                batch.add(job.input_ids[:-1])
            except Exception as e:  # noqa: BLE001 - one bad request must not stop the others
                job.fail(e)
                job.stream.put(DONE)
                continue
            rows.append(row)
        return True

    def _run_aligned(self, job: Job) -> None:
        """A ``sampling: "aligned"`` job (``stencil.runtime.aligned``): its particles run to the end here,
        in one batch of their own on their own KV cache, between two steps of the running batch,
        which waits meanwhile; its text comes in one piece. Each call on the particles' matchers is
        held to the step time limit (past it the job fails alone, a 400)."""
        particles = job.params.aligned
        assert particles is not None   # called for aligned jobs only
        try:
            m = job.grammar.matcher
            m.time_limit = self.step_time_limit
            ctx = int(getattr(self.lm, "context_length", 0) or 0)
            p, sp = job.params, job.sampling
            limit = min(p.max_tokens, ctx - len(job.input_ids)) if ctx else p.max_tokens
            s = sample_aligned(HFParticles(self.lm.model), m, self.info, job.input_ids, particles=particles,
                               max_tokens=limit, temperature=sp.temperature, seed=sp.seed, penalties=sp.penalties(),
                               num_threads=self.mask_threads)
            job.result.completion_tokens = len(s.token_ids)
            job.push_text(self.info.decode_bytes(s.token_ids).decode("utf-8", errors="replace"))
            job.flush()
            job.result.finish_reason = "stop"   # every particle ends complete, within the limit
            self.aligned_counts["jobs"] += 1
            self.aligned_counts["passes"] += s.passes
            self.aligned_counts["rows"] += s.rows
        except Exception as e:  # noqa: BLE001 - one bad request must not stop the others
            job.fail(e)
            if isinstance(e, (stencil.GrammarError, stencil.LimitError)) and job.grammar.forget is not None:
                job.grammar.forget()
        job.grammar.matcher = None
        job.stream.put(DONE)

    def speculation_stats(self) -> dict:
        """Counts of the speculating rows since the start (/health): row-steps, tokens they added
        in them (``tokens_per_row_step`` > 1: drafts were accepted), draft tokens proposed and kept,
        and what a pass of the running batch is estimated to cost: plain, its first extra token's
        excess and each one's after that (ms, ``StepCost``), and the chance new rows start with
        (``prior``: free and constrained rows, greedy and sampled, ``DraftPrior``)."""
        rows = max(self.running, 1)
        first, each = self.step_cost.excess(rows)
        c: dict[str, Any] = dict(self.spec_counts, on=self.speculate, max_draft=self.speculation.max_draft,
                                 pass_ms={"rows": rows, "plain": 1e3 * self.step_cost.plain(rows),
                                          "first_extra": 1e3 * first, "each_extra": 1e3 * each})
        c["tokens_per_row_step"] = c["tokens"] / c["row_steps"] if c["row_steps"] else None
        c["prior"] = {f"{'constrained' if g else 'free'}{' sampled' if t else ''}": self.draft_prior.p((g, t))
                      for g in (False, True) for t in (False, True)}
        return c

    def mask_stats(self) -> dict:
        """The constrained rows' masks since the start (/health): masks filled (during the pass, while
        drafting, or for a refused pick), picks checked before a mask, tokens of finished rows, and
        masks per token."""
        c: dict[str, Any] = dict(self.mask_counts, opportunistic=self.opportunistic)
        c["per_token"] = c["filled"] / c["tokens"] if c["tokens"] else None
        return c

    def speculates(self, job: Job) -> bool:
        """Whether ``job``'s row drafts: its own ``speculate`` or the engine's default, and neither
        log-probabilities nor ``ignore_eos`` (the verification reports neither). By default a
        sampler that truncates does not (its drafts would need a mask per position)."""
        p = job.params
        on = (self.speculate and not job.sampling.truncates()) if p.speculate is None else p.speculate
        return on and p.logprobs is None and not p.ignore_eos

    def _speculation(self, job: Job) -> RowSpeculation | None:
        if not self.speculates(job):
            return None
        m = job.grammar.matcher
        if m is not None and m.max_rollback != -1 and m.max_rollback < self.speculation.max_draft:
            raise ValueError(f"a speculating row's matcher needs max_rollback >= {self.speculation.max_draft}")
        kind = draft_kind(m is not None, job.sampling.temperature)
        return RowSpeculation(self.speculation, self.lm, job.input_ids, prior=self.draft_prior, kind=kind)

    def _budget(self, r: Row) -> int:
        ctx = int(getattr(self.lm, "context_length", 0) or 0)
        left = r.job.params.max_tokens - len(r.out)
        if ctx:
            room = ctx - len(r.job.input_ids) - len(r.out)
            if room < left:
                return room if room > 0 else -1  # -1: the context is full
        return left

    # -- one step -------------------------------------------------------------------------------
    def _step(self, batch: KVBatch, rows: list[Row]) -> None:
        t0 = time.perf_counter()
        try:
            self._decode(batch, rows)
        finally:
            self.step_seconds += time.perf_counter() - t0

    def _decode(self, batch: KVBatch, rows: list[Row]) -> None:
        clock = _PhaseClock(self.step_phases)
        for r in rows:
            _isolated(r, self._forced, r)
        clock.lap("forced")
        if any(r.finish is not None for r in rows):
            return  # the loop drops finished rows first; the others' forced tokens wait in feed
        lengths = {i: r.spec.length for i, r in enumerate(rows) if r.spec is not None}
        most = plan_drafts(lengths, len(rows), sum(len(r.feed) for r in rows), self.step_cost) if lengths else {}
        drafting = {i for i, k in most.items() if k > 0}
        for i, r in enumerate(rows):
            if r.matcher is not None and i not in drafting:
                _isolated(r, r.clock.arm, r.matcher)  # what is left of the step and the total
        # bitmask row j is the mask of logits row constrained[j]: the rows that need their mask
        # before they choose, filled during the forward pass (the others check their pick first)
        filled = [i for i, r in enumerate(rows) if r.matcher is not None and i not in drafting and r.finish is None
                  and not r.healing() and not self._checks_first(r)]
        healing = [i for i, r in enumerate(rows) if r.finish is None and r.healing()]
        constrained = filled + healing
        bm = self.bitmask.host(len(constrained))
        for j, i in enumerate(healing, len(filled)):   # before the core's threads take the other rows
            _isolated(rows[i], self._heal_mask, rows[i], bm, j)
        fill = Fills([rows[i] for i in filled], bm, self.mask_threads) if filled else None
        self.mask_counts["filled"] += len(constrained)
        try:
            self._drafts(rows, drafting, most)
            self._drop_unpaid_drafts(rows, drafting)
            clock.lap("draft")
            feeds = [r.feed + _draft(r, i, drafting) for i, r in enumerate(rows)]
            logits = batch.step_rows(feeds, [len(f) - len(r.feed) + 1 for f, r in zip(feeds, rows)])
            self.step_cost.add(sum(map(len, feeds)), clock.lap("forward"), rows=len(rows))
        finally:
            errors = dict(zip(filled, fill.wait())) if fill is not None else {}
        clock.lap("masks_wait")
        if fill is not None:
            self.step_phases["masks"] += fill.seconds
        if constrained:  # one kernel for every constrained row, where the logits are
            self.bitmask.apply(logits.last, constrained)
        clock.lap("mask_apply")
        self.steps += 1
        self.step_rows += len(rows)
        rejected = self._choose_all(rows, logits, drafting, dict(zip(constrained, bm)), errors, clock)
        if drafting:
            batch.rollback(rejected)

    def _choose_all(self, rows: list[Row], logits, drafting: set[int], masks: dict, errors: dict,
                    clock: "_PhaseClock") -> list[int]:
        """Every row's tokens of this step, from ``logits`` (``StepLogits``; the rows of ``masks``
        masked, or failed with ``errors``); the draft tokens each row's cache must forget."""
        last = logits.last
        picks = self._greedy(last, rows, drafting)
        host = None
        clock.lap("to_host")
        rejected = [0] * len(rows)
        checks: dict[int, Pick] = {}
        for i, r in enumerate(rows):
            r.feed = []
            if r.finish is not None:  # failed while drafting
                continue
            rejected[i] = len(_draft(r, i, drafting))  # all of it, unless the verification keeps some
            if r.matcher is not None and i not in masks and (i not in drafting or not _masked_drafts(r)):
                checks[i] = self._pick(r, logits.of(i), picks.get(i), _draft(r, i, drafting))   # chosen below
            elif i in drafting:
                _isolated(r, self._verify, r, logits.of(i), rejected, i)
            else:
                if i not in picks and host is None:
                    host = last.float().cpu()  # only sampled rows read it
                row = None if host is None or i in picks else host[i]
                _isolated(r, self._sample, r, row, masks.get(i), errors.get(i), picks.get(i))
        clock.lap("sample")
        if checks:
            self._choose(rows, logits, checks, rejected, drafting)
        clock.lap("checks")
        return rejected

    def _checks_first(self, r: Row) -> bool:
        """Whether row ``r`` checks its pick before any mask (``server.picks``)."""
        return self.opportunistic and opportunistic(r.sampler, r.job.params.logprobs)

    def _drafts(self, rows: list[Row], drafting: set[int], most: dict[int, int]) -> None:
        """Each speculating row's draft for this step (its matcher walks it: within the budget, and
        filling the masks of its positions where it drafts with masks); a row not drafting this
        step, or that fails here, has an empty one."""
        for i, r in enumerate(rows):
            if r.spec is None:
                continue
            r.spec.draft = []
            if i in drafting:
                _isolated(r, r.grammar, r.spec.propose, r.matcher, r.out, r.remaining_tokens, most[i])
                if r.finish is not None:
                    r.spec.draft = []
                elif r.matcher is not None and r.spec.masks:
                    self.mask_counts["filled"] += len(r.spec.draft) + 1

    def _drop_unpaid_drafts(self, rows: list[Row], drafting: set[int]) -> None:
        """Empty the drafts of the step where, as made, they would lower its expected tokens per
        second (``drafts_pay``), rolling the matchers back. Kept: a row's one-token try after a
        wait (what tells whether its drafts keep failing) and drafts with masks (the row has no
        mask of its own this step)."""
        drop = [(r, r.spec) for i, r in enumerate(rows) if i in drafting and r.spec is not None and r.spec.draft
                and not r.spec.length.probing and not (r.matcher is not None and r.spec.masks)]
        if not drop:
            return
        made = [(spec.length, len(spec.draft)) for _, spec in drop]
        fed = sum(len(r.feed) + len(_draft(r, i, drafting)) for i, r in enumerate(rows)) - sum(k for _, k in made)
        if drafts_pay(made, len(rows), fed, self.step_cost):
            return
        for r, spec in drop:
            if r.matcher is not None:
                _isolated(r, r.grammar, r.matcher.rollback, len(spec.draft))
            spec.draft = []

    def _pick(self, r: Row, rows, pick: int | None, draft: list[int]) -> Pick:
        """What row ``r`` chooses from (``server.picks``): its logits ``rows`` (unmasked), the
        ``draft`` its matcher holds, its greedy ``pick`` where computed."""
        if r.sampler.gen is not None and rows.device.type != "cpu":
            rows = rows.float().cpu()   # (its random generator draws on the host)
        best = [pick] if pick is not None else None
        no_eos = self._eos_on(rows.device) if r.job.params.ignore_eos else None
        return Pick(r.matcher, r.sampler, rows, draft, r.remaining_tokens, r.out, r.grammar, r.clock, best, no_eos,
                    stops=r.stops, not_stops=r.not_stops)

    def _choose(self, rows: list[Row], logits, checks: dict[int, Pick], rejected: list[int],
                drafting: set[int]) -> None:
        """The rows of ``checks`` choose, their picks checked and the refused ones' masks filled
        together (``Picks.run``); each takes its tokens."""
        idx = [i for i, c in checks.items() if c.best is None and c.sampler.plain_greedy]
        if idx:   # the drafting greedy rows: one argmax over every kept position (no copy)
            best = logits.packed.argmax(-1).tolist()
            for i in idx:
                checks[i].best = best[logits.starts[i]:logits.starts[i] + logits.keep[i]]
        before = self.picks.filled
        results = self.picks.run(checks)
        self.mask_counts["filled"] += self.picks.filled - before
        self.mask_counts["checked"] = self.picks.checked
        for i, res in results.items():
            r = rows[i]
            if isinstance(res, Exception):
                r.fail(res)
                continue
            n, t = res
            draft = checks[i].draft
            if i in drafting and r.spec is not None:
                rejected[i] = len(draft) - n
                r.spec.kept(len(draft), n)
            _isolated(r, self._take, r, draft, n, t, i in drafting)

    def _verify(self, r: Row, row_logits, rejected: list[int], i: int) -> None:
        """Keep the draft tokens of row ``r`` the model agrees with (``row_logits``: its logits before
        each draft token and after the last; the row drafted with masks) and the token after them;
        ``rejected[i]``: the draft tokens its cache must forget."""
        spec, m = r.spec, r.matcher
        assert spec is not None   # called for speculating rows only
        draft = spec.draft
        if m is not None and not draft and spec.only_eos(0, r.not_stops):
            if not spec.bitmask[0].any():
                raise DeadEnd("the grammar allows no token and not EOS: " + m.debug_state())
            r.finish = "grammar"  # nothing but EOS is allowed: the output is complete
            return
        plain = r.sampler.plain_greedy
        rows = row_logits.float() if plain else row_logits.float().cpu()
        n, t = r.grammar(spec.check, m, rows, r.sampler, r.out)
        rejected[i] = len(draft) - n
        end = m is not None and n and spec.only_eos(n, r.not_stops)
        if m is not None and not end and t not in r.stops and not r.grammar(m.accept_token, t):
            raise RuntimeError(f"internal error: token {t} is not allowed: {m.debug_state()}")
        self._take(r, draft, n, None if end else t, True)

    def _take(self, r: Row, draft: list[int], n: int, t: int | None, drafted: bool) -> None:
        """Row ``r`` keeps ``draft[:n]`` and then token ``t`` (None: only EOS is allowed there, the
        output is complete); its matcher holds them already (not EOS). ``drafted``: the row drafted
        this step (its counts)."""
        counts = self.spec_counts if drafted else dict.fromkeys(self.spec_counts, 0)
        counts["row_steps"] += 1
        counts["drafted"] += len(draft)
        counts["accepted"] += n
        for tok in draft[:n]:  # one at a time: a stop string ends the row where plain decoding would
            r.emit([tok])
            counts["tokens"] += 1
            if r.finish is not None:
                return
        if t is None:
            r.finish = "grammar"
        elif t in r.stops or r.ended():
            r.finish = "eos"
        else:
            r.feed = [t]
            r.emit([t])
            counts["tokens"] += 1

    def _greedy(self, logits, rows: list[Row], drafting) -> dict[int, int]:
        """The tokens of the plain greedy rows not drafting (no penalty, bias or log-probabilities:
        the argmax of the masked logits, or of the unmasked ones for rows that check their pick),
        by one argmax where the logits are: {row: token}."""
        idx = [i for i, r in enumerate(rows)
               if r.sampler.plain_greedy and r.job.params.logprobs is None and i not in drafting]
        if not idx:
            return {}
        import torch
        no_eos = [i for i in idx if rows[i].job.params.ignore_eos]
        if no_eos:  # in place: these rows are read here only
            eos = self._eos_on(logits.device)
            logits[torch.tensor(no_eos, device=logits.device)[:, None], eos[None, :]] = float("-inf")
        sel = logits if len(idx) == len(rows) else logits[idx]  # no copy when every row is greedy
        return dict(zip(idx, sel.argmax(-1).tolist()))

    def _forced(self, r: Row) -> None:
        """The row's budget for this step, and the tokens its grammar forces (fed next step)."""
        r.remaining_tokens = self._budget(r)
        if r.remaining_tokens <= 0:
            r.finish = "context" if r.remaining_tokens < 0 else "max_tokens"
            return
        m = r.matcher
        if m is None:
            return
        r.clock.new_step()
        if r.healing():
            return   # the healed prefix first: its tokens are sampled under the healer's masks
        forced = r.grammar(m.forced_tokens)[:r.remaining_tokens]
        if forced:
            for t in forced:
                if not r.grammar(m.accept_token, t):
                    raise RuntimeError(f"internal error: forced token {t} was refused")
            r.feed = r.feed + forced
            k = r.job.params.logprobs
            if k is not None:  # the only allowed token: probability 1 under the mask
                r.job.result.token_logprobs.extend(_entry(self.info, t, 0.0, [(t, 0.0)][:k]) for t in forced)
            r.emit(forced)
            r.remaining_tokens -= len(forced)
            if r.finish is None and r.remaining_tokens == 0:
                r.finish = "max_tokens"

    def _sample(self, r: Row, row, mask: np.ndarray | None, error: Exception | None, pick: int | None) -> None:
        """Sample row ``r``'s next token from ``row``, its logits, already masked by ``mask``
        (None: unconstrained), or take ``pick``, its greedy token; ``error``: what filling the
        mask raised, which fails this row alone."""
        if error is not None:
            raise error
        if mask is not None:
            if not np.any(mask & r.not_stops):
                if not np.any(mask):
                    raise DeadEnd("the grammar allows no token and not EOS: " + r.matcher.debug_state())
                r.finish = "grammar"  # nothing but EOS is allowed: the output is complete
                return
        t = self._draw(r, row) if pick is None else pick
        if t in r.stops:
            r.finish = "eos"
            return
        if r.healing():
            r.heal(t)
        elif r.matcher is not None and not r.grammar(r.matcher.accept_token, t):
            raise RuntimeError(f"internal error: sampled token {t} is not allowed: {r.matcher.debug_state()}")
        if r.ended():   # the matcher took it as the end: neither text nor a logprobs entry
            r.finish = "eos"
            return
        if r.job.params.logprobs is not None:
            r.job.result.token_logprobs.append(_logprob_entry(self.info, r.sampler, row, t, r.job.params.logprobs))
        r.feed = [t]
        r.emit([t])


    def _heal_mask(self, r: Row, bm: np.ndarray, j: int) -> None:
        """Row ``j`` of ``bm``: the mask of healing row ``r``, within its budget where it has a grammar."""
        r.grammar(r.healer.fill, bm, j, r.remaining_tokens if r.matcher is not None else None)

    def _draw(self, r: Row, row) -> int:
        r.sampler.penalize(row, r.out)  # after the mask: penalties keep -inf at -inf
        if r.job.params.ignore_eos:
            row.index_fill_(0, self._eos_on(row.device), float("-inf"))
        r.sampler.truncate(row)
        return r.sampler.sample(row)

    def _eos_on(self, device):
        if self._eos_ids is None or self._eos_ids.device != device:
            import torch
            self._eos_ids = torch.tensor(sorted(self.eos), dtype=torch.long, device=device)
        return self._eos_ids


#: the parts of a decode step, in order: forced tokens; speculating rows' drafts (with their masks
#: where they fill them); the forward pass (on a GPU: launching its kernels); waiting for the masks
#: still being filled after it; applying them; the logits' copy to the host (on a GPU: the rest of
#: the forward pass); sampling and accepting (rows with their mask); the rows that check their pick
#: first (``server.picks``: checks, refused picks' masks, drafts verified). ``masks``: filling the
#: masks, on the core's threads during ``forward`` (not part of the step's sum)
STEP_PHASES = ("forced", "draft", "forward", "masks_wait", "mask_apply", "to_host", "sample", "checks", "masks")


#: seconds the interpreter's exit waits for an engine that was never stopped to end its loop
EXIT_JOIN_SECONDS = 30.0


def _stop_at_exit(ref: "weakref.ref[Engine]") -> None:
    """An engine still running when the interpreter exits (an app created, never served or
    stopped) is closed and waited for: its thread may be inside torch (the first passes at its
    start), and a daemon thread ended there by the interpreter's finalization aborts the process."""
    engine = ref()
    if engine is not None and engine.thread.is_alive():
        engine.close()
        engine.thread.join(EXIT_JOIN_SECONDS)


class _PhaseClock:
    """Adds the time since the last lap to ``phases[name]`` at each ``lap(name)``."""

    def __init__(self, phases: dict):
        self.phases = phases
        self.t = time.perf_counter()

    def lap(self, name: str) -> float:
        now = time.perf_counter()
        seconds, self.t = now - self.t, now
        self.phases[name] += seconds
        return seconds


def _draft(r: Row, i: int, drafting: set[int]) -> list[int]:
    """Row ``r``'s draft of this step (row ``i``; empty where it does not draft)."""
    return r.spec.draft if r.spec is not None and i in drafting else []


def _masked_drafts(r: Row) -> bool:
    """Whether row ``r`` drafts with the masks of its draft's positions (``RowSpeculation.masks``)."""
    return r.spec is not None and r.spec.masks


def _isolated(r: Row, fn, *args) -> None:
    """``fn(*args)``; an error fails row ``r`` alone."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - one row's failure must not touch the others
        r.fail(e)


def _logprob_entry(info, sampler: Sampler, row, t: int, k: int) -> dict:
    """Token ``t``'s entry: its log-probability and the ``k`` most likely tokens' under the
    distribution it was sampled from (masked and truncated: tokens the grammar refuses have none)."""
    import torch
    lp = sampler.logprobs(row)
    top: list = []
    if k:
        vals, ids = torch.topk(lp, min(k, lp.shape[-1]))
        top = [(i, v) for i, v in zip(ids.tolist(), vals.tolist()) if v != float("-inf")]
    return _entry(info, t, float(lp[t]), top)


def _entry(info, t: int, logprob: float, top: list) -> dict:
    def one(i: int, v: float) -> dict:
        b = info.decode_bytes([i])
        return {"token": b.decode("utf-8", errors="replace"), "logprob": v, "bytes": list(b)}
    return dict(one(t, logprob), top_logprobs=[one(i, v) for i, v in top])
