"""Aligned sampling (``stencil.runtime.aligned``, ``generate(sampling="aligned")``) against the exact answer.

Small grammars whose every valid token sequence can be enumerated (``tests.support.aligned_exact``):

- by hand: a four-token model where the exact conditional and the particles' weights are
  computed on paper;
- a trap: a made-up model over a tiny vocabulary that likes a token leading into a branch where
  it gives the grammar little mass; plain masked sampling and aligned sampling, both through
  ``stencil.runtime.generate``, are compared with the exact conditional at fixed seeds;
- the real default model: the particles' weights against the model's own probabilities of the
  same outputs, computed without any cache.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import stencil  # noqa: E402
from tests.support.aligned_exact import PrefixTree, TableLM, kl, kl_from_samples, table_lm  # noqa: E402
from stencil.runtime.aligned import HFParticles, sample_aligned  # noqa: E402
from generation_model import default_model  # noqa: E402

#: the tiny vocabulary: EOS, grammar tokens, and "x", which no grammar here allows
VOCAB = [b"<eos>", b"a", b"b", b"ab", b"aa", b"c", b"x"]
EOS, A, B, AB, AA, C, X = range(len(VOCAB))
PROMPT = [X, X]


@pytest.fixture(scope="module")
def tiny():
    info = stencil.TokenizerInfo.from_vocab(VOCAB, eos_token_ids=EOS)
    return info, stencil.GrammarCompiler(info)


def _row(probs: dict) -> np.ndarray:
    """A row of logits giving each token its probability (the rest of the mass to "x")."""
    p = np.full(len(VOCAB), 1e-300)
    p[X] = 1.0 - sum(probs.values())
    for t, v in probs.items():
        p[t] = v
    return np.log(p)


#: by hand, for the grammar a(b)?: q(a)=.5, q(ab)=.1 at the start; after [a]: q(b)=.2, q(EOS)=.1;
#: after [a, b]: q(EOS)=.6; after [ab]: q(EOS)=.3 (everything else goes to "x", never allowed)
HAND = {(): {A: 0.5, AB: 0.1}, (A,): {B: 0.2, EOS: 0.1}, (A, B): {EOS: 0.6}, (AB,): {EOS: 0.3}}


def _hand_tree(tiny) -> tuple:
    info, compiler = tiny
    g = compiler.compile_regex("ab?")
    tree = PrefixTree.build(stencil.Matcher(g), info, max_tokens=4)
    tree.assign(lambda prefix: _row(HAND[prefix]))
    return g, tree


def test_weights_are_exact_by_hand(tiny):
    """With as many particles as the widest depth, nothing is resampled: every valid output is a
    particle with its exact weight q(y) q(EOS | y), and the evidence is Z = 0.05 + 0.06 + 0.03."""
    info, _ = tiny
    g, tree = _hand_tree(tiny)
    s = sample_aligned(HFParticles(TableLM(tree, len(PROMPT))), stencil.Matcher(g), info, PROMPT, particles=2,
                       max_tokens=4, seed=0)
    weights = {tuple(p.token_ids): round(math.exp(p.log_weight), 6) for p in s.particles}  # float32 logits
    assert weights == {(A,): 0.05, (A, B): 0.06, (AB,): 0.03}
    assert math.exp(s.log_evidence) == pytest.approx(0.14)
    assert s.resamples == 0 and s.passes == 3 and s.rows == 3   # prompt; [a] and [ab]; [a, b]
    reasons = {tuple(p.token_ids): p.finish_reason for p in s.particles}
    assert reasons == {(A,): "eos", (A, B): "grammar", (AB,): "grammar"}
    exact = tree.string_law("target")
    assert exact[b"a"] == pytest.approx(0.05 / 0.14) and exact[b"ab"] == pytest.approx(0.09 / 0.14)
    plain = tree.string_law("plain")   # masking: 5/6 * 1/3 for "a"
    assert plain[b"a"] == pytest.approx(5 / 18)


def test_one_particle_keeps_the_evidence_unbiased(tiny):
    """With one particle the first step keeps [a] (5/6) or [ab] (1/6) at weight 0.6: the evidence
    is then 0.6 * (0.1 + 0.2 * 0.6) = 0.132 or 0.6 * 0.3 = 0.18, on average Z = 0.14."""
    info, _ = tiny
    g, tree = _hand_tree(tiny)
    stand_in = TableLM(tree, len(PROMPT))
    zs = [math.exp(sample_aligned(HFParticles(stand_in), stencil.Matcher(g), info, PROMPT, particles=1,
                                  max_tokens=4, seed=seed).log_evidence) for seed in range(600)]
    assert {round(z, 6) for z in zs} == {0.132, 0.18}
    share = sum(round(z, 6) == 0.18 for z in zs) / len(zs)
    assert abs(share - 1 / 6) < 0.05
    assert abs(np.mean(zs) - 0.14) < 0.003


def _trap_tree(tiny, seed: int = 7) -> tuple:
    """``[ab]{1,3}c?`` under a made-up model that likes "aa" first, then wants to stop where the
    grammar forbids it (most of its mass on "x" after "aa")."""
    info, compiler = tiny
    g = compiler.compile_regex("[ab]{1,3}c?")
    tree = PrefixTree.build(stencil.Matcher(g), info, max_tokens=4)
    rng = np.random.default_rng(seed)

    def logits(prefix: tuple) -> np.ndarray:
        row = rng.normal(0.0, 1.5, len(VOCAB))
        if not prefix:
            row[AA] += 3.0
        if prefix[:1] == (AA,):
            row[X] += 6.0
        return row
    tree.assign(logits)
    return g, tree


def test_aligned_beats_plain_on_a_trap(tiny):
    """Both through ``stencil.runtime.generate`` at fixed seeds, on the stand-in replaying the made-up
    model: aligned sampling's KL from the exact conditional is at least 5x smaller than plain's."""
    info, _ = tiny
    g, tree = _trap_tree(tiny)
    exact, plain_law = tree.string_law("target"), tree.string_law("plain")
    assert kl(exact, plain_law) > 1.0   # masking skews this one
    lm = table_lm(tree, type("Like", (), {"tokenizer": None, "tokenizer_info": info})(), len(PROMPT))
    n = 500
    texts = {}
    for mode in ("plain", "aligned"):
        texts[mode] = [stencil.runtime.generate(lm, g, input_ids=PROMPT, max_tokens=4, temperature=1.0, seed=s, draft=False,
                                        sampling=mode, particles=8).text.encode() for s in range(n)]
    plain, aligned = kl_from_samples(exact, texts["plain"]), kl_from_samples(exact, texts["aligned"])
    print(f"trap: plain KL {plain:.3f}, aligned KL {aligned:.4f}, plain law KL {kl(exact, plain_law):.3f}")
    assert aligned * 5 < plain, (plain, aligned)
    assert aligned < 0.1


def test_generate_aligned_refuses_what_it_cannot_do(tiny):
    info, _ = tiny
    g, tree = _hand_tree(tiny)
    lm = table_lm(tree, type("Like", (), {"tokenizer": None, "tokenizer_info": info})(), len(PROMPT))
    ok = dict(input_ids=PROMPT, max_tokens=4, temperature=1.0, seed=0)
    out = stencil.runtime.generate(lm, g, sampling="aligned", particles=4, **ok)
    assert out.text in ("a", "ab") and out.complete and out.aligned is not None and out.forward_passes == 3
    with pytest.raises(ValueError, match="sampling must be 'plain' or 'aligned'"):
        stencil.runtime.generate(lm, g, sampling="smc", **ok)
    with pytest.raises(ValueError, match="needs a grammar"):
        stencil.runtime.generate(lm, None, sampling="aligned", **ok)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        stencil.runtime.generate(lm, g, sampling="aligned", **dict(ok, temperature=0.0))
    with pytest.raises(ValueError, match="particles must be an integer"):
        stencil.runtime.generate(lm, g, sampling="aligned", particles=0, **ok)
    with pytest.raises(ValueError, match="does not combine with speculate, budget=False"):
        stencil.runtime.generate(lm, g, sampling="aligned", speculate=True, budget=False, **ok)


def _log_q(lm, prompt_ids: list[int], outputs: list[tuple]) -> list[float]:
    """log q(y, EOS | prompt) of each output y, from one plain forward pass over all of them (no
    cache; right padding, which a causal model's earlier positions do not see)."""
    eos = lm.tokenizer_info.eos_token_ids[0]
    seqs = [prompt_ids + list(y) + [eos] for y in outputs]
    width = max(len(q) for q in seqs)
    ids = torch.tensor([q + [eos] * (width - len(q)) for q in seqs])
    with torch.inference_mode():
        logp = torch.log_softmax(lm.model(input_ids=ids).logits.double(), dim=-1)
    start = len(prompt_ids) - 1
    return [float(sum(logp[r, start + i, t] for i, t in enumerate(list(y) + [eos]))) for r, y in enumerate(outputs)]


def test_real_model_weights_are_the_models_probabilities():
    """On SmolLM2 with as many particles as the grammar's widest depth (nothing dropped): the
    complete outputs are every valid token sequence, each weighing the model's own probability of
    it (computed again in one pass without a cache), and ``generate`` returns one of them."""
    lm = default_model()
    torch.set_num_threads(1)
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_regex(r"(yes|no)[0-9]?")
    ids = lm.encode_prompt("Is the sky blue? Answer yes or no.")
    tree = PrefixTree.build(stencil.Matcher(g), lm.tokenizer_info, max_tokens=3)
    width = max(len(d) for d in tree.depths())
    s = sample_aligned(HFParticles(lm.model), stencil.Matcher(g), lm.tokenizer_info, ids, particles=width,
                       max_tokens=3, seed=1)
    assert s.resamples == 0
    got = {tuple(p.token_ids): p.log_weight for p in s.particles}
    tree.evaluate(HFParticles(lm.model), ids)
    assert set(got) == set(tree.outputs("target"))
    outputs = sorted(got)
    for tokens, want in zip(outputs, _log_q(lm, ids, outputs)):
        assert got[tokens] == pytest.approx(want, abs=2e-3), lm.tokenizer_info.decode_bytes(list(tokens))
    assert s.log_evidence == pytest.approx(tree.log_valid_mass(), abs=2e-3)
    out = stencil.runtime.generate(lm, g, input_ids=ids, max_tokens=3, temperature=1.0, seed=3, sampling="aligned",
                           particles=4)
    assert out.complete and tuple(out.token_ids) in got and out.forward_passes == out.aligned.passes <= 4
