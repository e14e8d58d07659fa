"""Speculative decoding under a grammar (stencil.runtime.speculative, generate(speculate=...)) with the real
default model: greedy output identical to plain constrained greedy, several tokens per forward pass
on extraction, refused drafts that leave the matcher as it was, and speculative sampling that keeps
the masked distribution."""
from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

import stencil
import stencil.runtime
from tests.support.extraction_cases import extraction_cases
from stencil.cli import DEFAULT_INDENT
from stencil.runtime.sampling import Sampler
from stencil.runtime.draft_plan import StepCost
from stencil.runtime.speculative import DraftBudget, Drafter, SpeculationOptions, TextLookup, first_near_tie, verify

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def compiler(lm):
    return stencil.GrammarCompiler(lm.tokenizer_info)


def _case(compiler, lm, i, fields=None):
    case = extraction_cases(4, seed=3)[i]
    schema = dict(case.schema)
    if fields:  # the first fields only: a shorter output
        schema["properties"] = dict(list(schema["properties"].items())[:fields])
        schema["required"] = list(schema["properties"])
    g = compiler.compile_json_schema(schema, whitespace=DEFAULT_INDENT, string_spelling="plain")
    return g, lm.encode_prompt(case.prompt)


@pytest.mark.parametrize("i", [0, 2])
def test_greedy_identical_and_faster_per_pass(lm, compiler, i):
    g, ids = _case(compiler, lm, i)
    plain = stencil.runtime.generate(lm, g, input_ids=ids, max_tokens=120, jump_forward=False, draft=False, speculate=False)
    # Fixed draft lengths: adaptive ones follow the measured cost of passes, which a test cannot fix.
    spec = stencil.runtime.generate(lm, g, input_ids=ids, max_tokens=120, speculate=SpeculationOptions(adaptive=False))
    assert spec.token_ids == plain.token_ids
    assert spec.finish_reason == plain.finish_reason and spec.complete == plain.complete
    assert len(spec.token_ids) / spec.forward_passes > 1.5, (len(spec.token_ids), spec.forward_passes)
    assert spec.rejected_draft_tokens < spec.drafted_tokens
    if plain.finish_reason != "max_tokens":
        json.loads(spec.text)


def test_greedy_identical_with_penalty_and_draft_model(lm, compiler):
    g, ids = _case(compiler, lm, 1, fields=3)
    kw = dict(input_ids=ids, max_tokens=50, repetition_penalty=1.1)
    plain = stencil.runtime.generate(lm, g, jump_forward=False, draft=False, speculate=False, **kw)
    # The model itself as its draft model: the mechanics (its own cache, cropped after rejections).
    spec = stencil.runtime.generate(lm, g, speculate=SpeculationOptions(max_draft=6, draft_model=lm), **kw)
    assert spec.token_ids == plain.token_ids
    assert spec.forward_passes < len(spec.token_ids) / 2


# An extraction the project had not seen, at a repetition penalty where plain greedy decoding meets
# a near tie: after "... Norwich NR4 7TJ" (output token 59) the closing '",' and '"' differ by
# 2e-6 of a logit, less than a pass over several tokens rounds differently (up to 8e-5). Without
# the exact replay, speculation and jump-forward took the other token there.
VET_DOCUMENT = """Riverbend Veterinary Clinic - Appointment confirmation
Patient: Biscuit (golden retriever, 7 years, 31.4 kg)
Owner: Hannah Whitcombe, 14 Larkspur Close, Norwich NR4 7TJ
Appointment: Thursday 12 June 2025 at 10:45 with Dr. Emeka Obi
Reason for visit: annual vaccination and limping on the left hind leg
Please arrive ten minutes early and bring any medication your pet is currently taking. \
Cancellations with less than 24 hours notice are charged a fee of GBP 25."""
VET_SCHEMA = {"type": "object", "properties": {
    "pet_name": {"type": "string"}, "breed": {"type": "string"}, "age_years": {"type": "integer", "minimum": 0},
    "owner": {"type": "string"}, "vet": {"type": "string"}},
    "required": ["pet_name", "breed", "age_years", "owner", "vet"], "additionalProperties": False}
NEAR_TIE_PENALTY = 1.0993186516311917


def test_greedy_identical_at_a_near_tie(lm, compiler):
    g = compiler.compile_json_schema(VET_SCHEMA, whitespace=DEFAULT_INDENT, string_spelling="plain")
    prompt = ("Extract the following fields from the document as JSON matching this schema.\n"
              f"Schema: {json.dumps(VET_SCHEMA)}\n\nDocument:\n{VET_DOCUMENT}")
    kw = dict(input_ids=lm.encode_prompt(prompt), max_tokens=120, repetition_penalty=NEAR_TIE_PENALTY)
    plain = stencil.runtime.generate(lm, g, jump_forward=False, draft=False, speculate=False, **kw)
    assert plain.replayed_tokens == 0   # every pass of plain decoding is a one-token pass
    assert json.loads(plain.text)["owner"].endswith("NR4 7TJ")
    # Speculation with fixed draft lengths (adaptive ones follow timings: the tie's row may come from
    # a one-token pass, exact already), and jump-forward with drafts.
    for mode in ({"speculate": SpeculationOptions(adaptive=False)}, {"speculate": False}):
        out = stencil.runtime.generate(lm, g, **mode, **kw)
        assert out.token_ids == plain.token_ids, mode
        # the tie was seen in a batched row and decided on logits computed as plain decoding does
        assert 0 < out.replayed_tokens <= len(plain.token_ids), mode


def test_every_choice_decided_on_exact_logits_is_still_plain_greedy(lm, compiler, monkeypatch):
    """With every choice counted as a near tie, each one in a row of a pass over several tokens is
    decided on replayed logits (sampling, draft verification and speculation alike): the output
    stays plain greedy's, so the replays leave cache and matcher where they should."""
    monkeypatch.setattr(importlib.import_module("stencil.runtime.generate"), "EXACT_MARGIN", 1e30)
    g, ids = _case(compiler, lm, 1, fields=3)
    kw = dict(input_ids=ids, max_tokens=40, repetition_penalty=1.1)
    plain = stencil.runtime.generate(lm, g, jump_forward=False, draft=False, speculate=False, **kw)
    assert plain.replayed_tokens == 0
    for mode in ({}, {"speculate": False}):
        out = stencil.runtime.generate(lm, g, **mode, **kw)
        assert out.token_ids == plain.token_ids, mode
        assert out.replayed_tokens > 0, mode


def test_first_near_tie():
    rows = torch.tensor([[1.0, 3.0, 2.0, -float("inf")],
                         [5.0, -float("inf"), -float("inf"), -float("inf")],   # one allowed token
                         [-float("inf")] * 4,
                         [0.0, 2.0, 2.0005, 1.0]])
    assert first_near_tie(rows, 1e-3) == 3
    assert first_near_tie(rows, 1.0) == 0
    assert first_near_tie(rows[1:3], 10.0) is None
    assert first_near_tie(rows, 0.0) is None   # off


def test_text_lookup_longest_most_recent_match():
    look = TextLookup(b"Name: John Smith\nCity: Lyon\nName: Jane Smith-Doe, Oslo", min_match=3, max_match=32)
    assert look.continuation(b"John", 4) == b" Smi"
    assert look.continuation(b'"Jo', 4) == b""          # no suffix of min_match bytes occurs
    assert look.continuation(b"hn Smith", 3) == b"\nCi"  # a longer match beats a more recent one
    assert look.continuation(b"xyz", 5) == b""
    assert TextLookup(b"ab", 3, 8).continuation(b"", 4) == b""
    # the most recent occurrence's, as far as the one before it agrees
    assert look.continuation(b"\nName: ", 4) == b"Jane"   # "\nName: " once: the whole continuation
    assert look.continuation(b"Name: ", 4) == b"J"       # "Name: John", "Name: Jane"
    assert look.continuation(b" Smith", 3) == b""        # "\nCi" against "-Do": nothing is sure


def test_text_lookup_drafts_what_recurring_structure_agrees_on():
    """A JSON object's values: the text before each value recurs, what follows differs (a draft
    of the previous value would fail); a list of objects with the same keys repeats them."""
    values = TextLookup(b'{"name": "Ada", "city": "Oslo", "job": "', 3, 64)
    assert values.continuation(b"", 8) == b""
    keys = TextLookup(b'[{"name": "a", "n": 1}, {"name": "b", "n": 2}, {"', 3, 64)
    assert keys.continuation(b"", 8) == b'name": "'
    assert keys.continuation(b'name": "c", "', 4) == b'n": '
    assert keys.continuation(b'name": "c", "n": ', 4) == b""   # 1 against 2


def test_refused_draft_token_leaves_the_matcher_in_step(lm, compiler):
    info = lm.tokenizer_info
    g = compiler.compile_regex(r'\{"id": "[a-z]+", "n": [0-9]+\}')
    prompt = lm.tokenizer.encode("record abcdef1234 end", add_special_tokens=False)
    m = stencil.Matcher(g, max_rollback=8)
    head = lm.tokenizer.encode('{"id": "abc', add_special_tokens=False)
    assert m.accept_tokens(head) == len(head)
    ref = m.fork()
    drafter = Drafter(SpeculationOptions(max_draft=8), info, lm.tokenizer, prompt)
    drafter.sync(head)
    bm = stencil.allocate_token_bitmask(9, info.vocab_size)
    drafts = drafter.draft(m, bm, limit=8, remaining=None)
    # The lookup proposes "def1234 end"; the grammar refuses the digits inside the string.
    assert info.decode_bytes(drafts) == b"def", info.decode_bytes(drafts)
    one = stencil.allocate_token_bitmask(1, info.vocab_size)
    walk = ref.fork()
    for i, t in enumerate(drafts + [None]):
        walk.fill_next_token_bitmask(one, 0)
        assert np.array_equal(one[0], bm[i]), f"mask row {i}"
        if t is not None:
            assert walk.accept_token(t)
    m.rollback(len(drafts))
    assert m.debug_state() == ref.debug_state()
    m.fill_next_token_bitmask(one, 0)
    ref.fill_next_token_bitmask(bm, 0)
    assert np.array_equal(one[0], bm[0])
    tail = lm.tokenizer.encode('x", "n": 7}', add_special_tokens=False)
    assert m.accept_tokens(tail) == len(tail) and m.is_accepting()


def test_speculative_sampling_keeps_the_masked_distribution(lm, compiler):
    """Chi-square of verify()'s token against the masked distribution p, on a 3-way choice."""
    info = lm.tokenizer_info
    g = compiler.compile_regex("[0-2]")  # three single-byte tokens
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(bm, 0)
    net_ids = lm.encode_prompt("Pick 0, 1 or 2.")
    with torch.inference_mode():
        logits = lm.model(input_ids=torch.tensor([net_ids])).logits[0, -1].float()
    sampler = Sampler(1.5, seed=7)
    masked = logits.clone()
    stencil.apply_token_bitmask_inplace(masked, bm)
    p = sampler.probs(masked)
    allowed = torch.nonzero(p > 0).flatten().tolist()
    assert len(allowed) == 3 and min(float(p[t]) for t in allowed) * 3000 > 20, p[allowed]
    draft = max(allowed, key=lambda t: float(p[t]))
    counts = dict.fromkeys(allowed, 0)
    draws = 3000
    for _ in range(draws):
        n, t = verify(logits.clone().unsqueeze(0).repeat(2, 1), [draft], np.repeat(bm, 2, axis=0), sampler, [])
        counts[draft if n == 1 else t] += 1
    chi2 = sum((counts[t] - draws * float(p[t])) ** 2 / (draws * float(p[t])) for t in allowed)
    # 99.9% quantiles of chi-square with 1, 2, 3 degrees of freedom
    assert chi2 < 13.82, (chi2, counts, [float(p[t]) for t in allowed])  # 99.9% quantile, 2 degrees of freedom


def test_bad_options_name_the_argument(lm):
    with pytest.raises(ValueError, match="max_draft"):
        SpeculationOptions(max_draft=0)
    with pytest.raises(ValueError, match="max_match"):
        SpeculationOptions(min_match=8, max_match=4)
    with pytest.raises(TypeError, match="speculate"):
        stencil.runtime.generate(lm, None, "Hi", max_tokens=2, speculate="yes")


def _guesses(budget, steps, keep, per_token):
    """The budget's guesses over ``steps`` steps whose guessed tokens are kept with ``keep(j)`` (j:
    the token's place in its draft), a pass of T tokens taking 1 + per_token * (T - 1) seconds."""
    out = []
    for _ in range(steps):
        k = budget.guesses(1)
        kept = next((j for j in range(k) if not keep(j)), k)
        budget.learn(1 + k, 1.0 + per_token * k, kept + (kept < k), kept)
        out.append(k)
    return out


def test_draft_budget_follows_acceptance_and_cost():
    """The real planner (stencil.runtime.draft_plan) on synthetic drafts: no guesses while they fail (a one-token
    try after a wait that doubles), long drafts when they are kept and a token costs little, none at
    an even chance when each token costs a whole pass."""
    failing = _guesses(DraftBudget(SpeculationOptions(max_draft=8)), 200, lambda j: False, 0.05)
    assert sum(failing[20:]) <= 6 and set(failing[20:]) <= {0, 1}, failing
    kept = _guesses(DraftBudget(SpeculationOptions(max_draft=8)), 60, lambda j: True, 0.05)
    # (one step in StepCost.PLAIN_FRESH guesses nothing: the plain pass drafts are weighed against)
    assert set(kept[10:]) <= {0, 8} and kept[10:].count(0) <= 1 + 50 // StepCost.PLAIN_FRESH, kept
    coin = iter(np.random.default_rng(0).random(10_000) < 0.5)
    dear = _guesses(DraftBudget(SpeculationOptions(max_draft=8)), 200, lambda j: next(coin), 1.0)
    assert sum(dear[50:]) <= 10, dear
    fixed = _guesses(DraftBudget(SpeculationOptions(max_draft=8, adaptive=False)), 20, lambda j: False, 1.0)
    assert fixed == [8] * 20


def test_sampled_free_text_takes_plain_sampling_draws(lm):
    """A drafted row keeps its draft token where the row's own draw is it: the draws are those of
    plain sampling, so a seed gives the output of speculate=False (rounding aside), drafts or not."""
    ids = lm.encode_prompt("Repeat this line three times: the quick brown fox jumps over the lazy dog.")
    kw = dict(input_ids=ids, max_tokens=40, temperature=0.7, seed=5)
    off = stencil.runtime.generate(lm, None, speculate=False, **kw)
    on = stencil.runtime.generate(lm, None, speculate=SpeculationOptions(adaptive=False), **kw)
    assert on.token_ids == off.token_ids, (on.text, off.text)
    assert on.drafted_tokens > on.rejected_draft_tokens > 0 and on.forward_passes < off.forward_passes

