"""Opportunistic masks (stencil.runtime.opportunistic): the model's pick checked with the grammar, the mask
computed only on a refusal. Greedy output is that of full-mask decoding token for token (default
model, several grammars, each decoding mode); rejection sampling from the unmasked distribution
draws from the masked one (chi-square over fixed logits); masks are counted."""
from __future__ import annotations

import numpy as np
import pytest

import stencil
import stencil.runtime
from generation_model import default_model
from stencil.bitmask import bitmask_to_bool
from stencil.runtime.opportunistic import Picker, truncates, verify_checked
from stencil.runtime.sampling import Sampler

torch = pytest.importorskip("torch")

PERSON = r'\{"name": "[A-Z][a-z]{1,12}", "age": [1-9][0-9]?\}'
CITY = {"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer"},
                                         "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
        "required": ["city", "population", "tags"]}
NESTED_GBNF = r'''
root  ::= list
list  ::= "[" ( elem ( ", " elem )* )? "]"
elem  ::= num | list
num   ::= [1-9] [0-9]? [0-9]?
'''


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)   # the machine is shared: two threads of ours would wait on each other
    return default_model()


@pytest.fixture(scope="module")
def grammars(lm):
    c = stencil.GrammarCompiler(lm.tokenizer_info)
    return [
        (c.compile_regex(PERSON), "Describe a famous scientist as JSON with a name and an age.", 32),
        (c.compile_json_schema(CITY), "Describe Paris as JSON with its population and three tags.", 48),
        (c.compile_gbnf(NESTED_GBNF), "Write a short nested list of small numbers, like [1, [2, 3]].", 24),
        (c.compile_choice(["red", "green", "blue", "light blue"]), "What color is the sky?", 6),
    ]


@pytest.mark.parametrize("mode", [
    {"jump_forward": False, "draft": False, "speculate": False},   # one token per pass
    {"speculate": False},                      # forced tokens and drafts
    {},                                        # prompt lookup and forced text, greedy checks per row (the default)
    {"repetition_penalty": 1.1, "max_tokens": "tight"},  # penalized logits; a binding budget
])
def test_greedy_is_full_mask_decoding(lm, grammars, mode):
    for g, prompt, max_tokens in grammars:
        kw = dict(mode)
        if kw.get("max_tokens") == "tight":   # a few tokens more than the shortest output needs
            kw["max_tokens"] = (stencil.Matcher(g).min_completion_tokens() or 0) + 4
        kw.setdefault("max_tokens", max_tokens)
        full = stencil.runtime.generate(lm, g, prompt, opportunistic=False, **kw)
        opp = stencil.runtime.generate(lm, g, prompt, **kw)
        assert opp.token_ids == full.token_ids, (mode, prompt, full.text, opp.text)
        assert opp.finish_reason == full.finish_reason and opp.complete == full.complete
        assert opp.masks_computed <= full.masks_computed


def test_masks_per_token(lm, grammars):
    g, prompt, _ = grammars[1]
    one = dict(jump_forward=False, draft=False, speculate=False)   # one token per step
    full = stencil.runtime.generate(lm, g, prompt, max_tokens=40, opportunistic=False, **one)
    # Full masks: one per step, the step that ends the output included.
    assert full.masks_computed == len(full.token_ids) + (full.finish_reason != "max_tokens")
    assert full.masks_per_token >= 1.0
    opp = stencil.runtime.generate(lm, g, prompt, max_tokens=40, **one)
    assert opp.token_ids == full.token_ids
    assert opp.masks_per_token < 0.5, (opp.masks_computed, len(opp.token_ids))
    fast = stencil.runtime.generate(lm, g, prompt, max_tokens=40)   # speculating (the default)
    assert fast.masks_per_token < 0.5, (fast.masks_computed, len(fast.token_ids))
    free = stencil.runtime.generate(lm, None, prompt, max_tokens=4)
    assert free.masks_computed == 0


# --- the sampled distribution: fixed logits over a one-character-per-token vocabulary ---

def _case(ascii_tokenizer, pattern: str, prefix: str):
    info = ascii_tokenizer
    g = stencil.GrammarCompiler(info).compile_regex(pattern)
    m = stencil.Matcher(g, max_rollback=2)
    assert m.accept_string(prefix)
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(bm, 0)
    allowed = bitmask_to_bool(bm, info.vocab_size)[0]
    # The model likes some refused characters most: about half the mass is refused, so draws are
    # rejected and the fall-back to the mask runs too.
    rng = np.random.default_rng(7)
    logits = torch.full((info.vocab_size,), -4.0)
    ids = np.flatnonzero(allowed)
    logits[torch.tensor(ids)] = torch.tensor(rng.uniform(0.0, 2.5, len(ids)), dtype=torch.float32)
    logits[torch.tensor([ord(c) - 32 for c in "xyzXYZ"])] = torch.tensor([2.5, 2.0, 1.5, 1.0, 0.5, 0.0])
    return info, m, logits, allowed


def _draws(info, m, logits, sampler, n, tries=2, picker_cls=Picker):
    picker = picker_cls(m, sampler, stencil.allocate_token_bitmask(1, info.vocab_size), info, tries=tries)
    counts = np.zeros(info.vocab_size, np.int64)
    eos = set(info.eos_token_ids)
    for _ in range(n):
        t = picker.pick(logits.clone(), None)
        counts[t] += 1
        if t not in eos:
            m.rollback(1)   # the picker accepted it: back to the state of the test
    return counts, picker.masks


def _p_value(counts: np.ndarray, expected_p: np.ndarray) -> float:
    """Pearson's chi-square test; categories of small expectation pooled."""
    n = counts.sum()
    exp = expected_p * n
    big = exp >= 5
    obs = np.append(counts[big], counts[~big].sum())
    ex = np.append(exp[big], exp[~big].sum())
    keep = ex > 0
    stat = float(((obs[keep] - ex[keep]) ** 2 / ex[keep]).sum())
    dof = int(keep.sum()) - 1
    return float(torch.special.gammaincc(torch.tensor(dof / 2, dtype=torch.float64),
                                         torch.tensor(stat / 2, dtype=torch.float64)))


@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize("pattern,prefix", [(r"[a-h][0-9]?", ""),   # 8 letters allowed
                                            (r"[a-h][0-9]?", "c")])  # 10 digits and EOS (complete)
def test_rejection_sampling_is_the_masked_distribution(ascii_tokenizer, pattern, prefix, temperature):
    info, m, logits, allowed = _case(ascii_tokenizer, pattern, prefix)
    s = Sampler(temperature, seed=11)
    masked = logits.clone()
    masked[torch.tensor(~allowed)] = float("-inf")
    p_masked = torch.softmax(masked / temperature, -1).numpy().astype(np.float64)
    p_free = torch.softmax(logits / temperature, -1).numpy()
    refused_mass = float(p_free[~allowed].sum())
    assert 0.3 < refused_mass < 0.9   # both paths run
    n = 4000
    counts, masks = _draws(info, m, logits, s, n)
    assert counts[~allowed].sum() == 0
    assert 0.5 * refused_mass ** 2 < masks / n < 1.5 * refused_mass ** 2   # the fall-back: 2 refusals
    assert _p_value(counts, p_masked) > 1e-3, (counts[allowed], p_masked[allowed] * n)

    class OneTryThenArgmax(Picker):   # not exact: a refused draw falls back to the masked argmax
        def pick(self, logits, remaining, **kw):
            t = self._try(logits, remaining, False)
            if t is None:
                self.fill(0, remaining)
                stencil.apply_token_bitmask_inplace(logits, self.bitmask[0])
                t = int(torch.argmax(logits))
                if t not in self.eos:
                    self.matcher.accept_token(t)
            return t

    wrong, _ = _draws(info, m, logits, Sampler(temperature, seed=12), n, tries=1, picker_cls=OneTryThenArgmax)
    assert _p_value(wrong, p_masked) < 1e-6   # the test sees the difference


def test_greedy_pick_and_truncation(ascii_tokenizer):
    info, m, logits, allowed = _case(ascii_tokenizer, r"[a-h][0-9]?", "")
    picker = Picker(m, Sampler(0.0), stencil.allocate_token_bitmask(1, info.vocab_size), info)
    best_allowed = int(np.flatnonzero(allowed)[int(torch.argmax(logits[torch.tensor(allowed)]))])
    t = picker.pick(logits.clone(), None)       # the argmax ('x') is refused: the mask decides
    assert t == best_allowed and picker.masks == 1
    m.rollback(1)
    logits[best_allowed] = 10.0                 # now the argmax is allowed: no mask
    assert picker.pick(logits.clone(), None) == best_allowed and picker.masks == 1
    m.rollback(1)
    assert not truncates(Sampler(1.0, seed=1)) and not truncates(Sampler(0.0, top_k=5))
    for kw in ({"top_k": 5}, {"top_p": 0.9}, {"min_p": 0.1}):
        s = Sampler(1.0, seed=1, **kw)
        assert truncates(s)
        p = Picker(m, s, stencil.allocate_token_bitmask(1, info.vocab_size), info)
        assert not p.opportunistic
        assert allowed[p.pick(logits.clone(), None)] and p.masks == 1
        m.rollback(1)


def test_verify_checked_checks_rows_without_masks(ascii_tokenizer):
    info = ascii_tokenizer
    g = stencil.GrammarCompiler(info).compile_regex(r"ab[0-9]+")
    m = stencil.Matcher(g, max_rollback=4)
    picker = Picker(m, Sampler(0.0), stencil.allocate_token_bitmask(4, info.vocab_size), info)
    draft = [ord(c) - 32 for c in "ab1"]
    rows = torch.full((4, info.vocab_size), -1.0)
    for i, c in enumerate("ab7"):   # the model agrees on 'a', 'b', then prefers '7' to the draft's '1'
        rows[i, ord(c) - 32] = 3.0
    rows[3, ord("z") - 32] = 5.0
    n, t = verify_checked(picker, rows.clone(), draft, [], None, ties=False)
    assert (n, t) == (2, ord("7") - 32) and picker.masks == 0
    assert m.num_accepted_tokens == 3   # 'a', 'b', '7'
    m.rollback(3)
    rows[2, ord("q") - 32] = 9.0          # refused at row 2: the mask there decides ('7')
    n, t = verify_checked(picker, rows.clone(), draft, [], None, ties=False)
    assert (n, t) == (2, ord("7") - 32) and picker.masks == 1


def test_sampled_verification_keeps_the_masked_distribution(ascii_tokenizer):
    """A sampled row keeps the draft token when its checked draw is it: the first token of the
    output (the kept draft token, or the draw that replaced it) follows the masked distribution."""
    info, m, logits, allowed = _case(ascii_tokenizer, r"[a-h][0-9]?", "")
    masked = logits.clone()
    masked[torch.tensor(~allowed)] = float("-inf")
    p_masked = torch.softmax(masked, -1).numpy().astype(np.float64)
    picker = Picker(m, Sampler(1.0, seed=5), stencil.allocate_token_bitmask(2, info.vocab_size), info, tries=2)
    d = ord("c") - 32
    counts = np.zeros(info.vocab_size, np.int64)
    eos = set(info.eos_token_ids)
    kept = 0
    for _ in range(3000):
        n, t = verify_checked(picker, torch.stack([logits, logits]), [d], [], None, ties=False)
        counts[d if n else t] += 1
        kept += n
        m.rollback(n + (t not in eos))
    assert counts[~allowed].sum() == 0
    assert abs(kept / 3000 - p_masked[d]) < 0.04
    assert _p_value(counts, p_masked) > 1e-3, (counts[allowed], p_masked[allowed] * 3000)
