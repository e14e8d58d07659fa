"""apply_token_bitmask_inplace: numpy, torch CPU and the torch device path agree bit for bit with
a reference built from the bit layout, for random masks of every density, vocabularies that are
not multiples of 32, and bitmasks wider or narrower than the logits."""
from __future__ import annotations

import numpy as np
import pytest

import stencil
from stencil.bitmask import apply_token_bitmask_inplace

torch = pytest.importorskip("torch")
from stencil.kernels.torch import apply_token_bitmask_torch_ops  # noqa: E402


def reference(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """-inf where bit t of the mask row is clear or t lies past the mask; other values untouched."""
    vocab = logits.shape[-1]
    t = np.arange(vocab)
    covered = t < mask.shape[-1] * 32
    word = mask[:, np.minimum(t // 32, mask.shape[-1] - 1)].astype(np.int64)
    allowed = ((word >> (t % 32)) & 1).astype(bool) & covered
    return np.where(allowed, logits, logits.dtype.type(-np.inf))


def random_mask(rng, rows: int, words: int, density: float) -> np.ndarray:
    bits = rng.random((rows, words * 32)) < density
    return np.packbits(bits, axis=1, bitorder="little").view(np.int32).reshape(rows, words).copy()


def random_logits(rng, rows: int, vocab: int, dtype) -> np.ndarray:
    x = (rng.standard_normal((rows, vocab)) * 10).astype(dtype)
    x.flat[:: 97] = dtype(-0.0)  # signed zeros must survive when allowed
    return x


VOCABS = [1, 31, 33, 100, 1000, 4097, 49152, 128_003]
DENSITIES = [0.0, 0.001, 0.05, 0.3, 0.5, 0.8, 0.97, 1.0]


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("width_delta", [-2, 0, 1])
def test_numpy_matches_reference(vocab, width_delta):
    rng = np.random.default_rng(vocab * 7 + width_delta)
    words = max(1, (vocab + 31) // 32 + width_delta)
    for density in DENSITIES:
        logits = random_logits(rng, 3, vocab, np.float32)
        mask = random_mask(rng, 3, words, density)
        want = reference(logits, mask)
        apply_token_bitmask_inplace(logits, mask)
        assert np.array_equal(logits.view(np.int32), want.view(np.int32)), (vocab, words, density)


@pytest.mark.parametrize("kernel", stencil._core.bitmask_kernels())
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_every_kernel_matches_reference(kernel, dtype):
    """Each CPU kernel the core has (portable, AVX2, AVX-512 where the CPU runs them), forced."""
    from stencil.bitmask import apply_bitmask_bits
    itype = {np.float16: np.int16, np.float32: np.int32, np.float64: np.int64}[dtype]
    ninf = np.array(-np.inf, dtype).view(itype)[()]
    rng = np.random.default_rng(len(kernel))
    for vocab in (1, 31, 32, 65, 1000, 4097):
        for words in ((vocab + 31) // 32, max(1, (vocab + 31) // 32 - 1), (vocab + 31) // 32 + 2):
            for density in DENSITIES:
                logits = random_logits(rng, 2, vocab, dtype)
                mask = random_mask(rng, 2, words, density)
                want = reference(logits, mask)
                apply_bitmask_bits(logits.view(itype), ninf, mask, kernel=kernel)
                assert np.array_equal(logits.view(itype), want.view(itype)), (kernel, vocab, words, density)


def test_unknown_kernel_is_refused():
    from stencil.bitmask import apply_bitmask_bits
    with pytest.raises(ValueError, match="unknown bitmask kernel"):
        apply_bitmask_bits(np.zeros((1, 32), np.int32), -1, np.zeros((1, 1), np.int32), kernel="sse9")


@pytest.mark.parametrize("vocab", [33, 4097, 128_003])
def test_torch_cpu_identical_to_numpy(vocab):
    rng = np.random.default_rng(vocab)
    for density in DENSITIES:
        for words in ((vocab + 31) // 32, (vocab + 31) // 32 - 1, (vocab + 31) // 32 + 3):
            base = random_logits(rng, 4, vocab, np.float32)
            mask = random_mask(rng, 4, words, density)
            a = base.copy()
            apply_token_bitmask_inplace(a, mask)
            t = torch.from_numpy(base.copy())
            apply_token_bitmask_inplace(t, torch.from_numpy(mask))
            assert np.array_equal(a.view(np.int32), t.numpy().view(np.int32))
            # The device path (torch ops, used on CUDA) run on CPU gives the same bits.
            d = torch.from_numpy(base.copy())
            apply_token_bitmask_torch_ops(d, mask)
            assert np.array_equal(a.view(np.int32), d.numpy().view(np.int32))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_torch_dtypes(dtype):
    rng = np.random.default_rng(3)
    vocab = 1000
    mask = random_mask(rng, 2, 32, 0.4)
    base = torch.from_numpy(random_logits(rng, 2, vocab, np.float32)).to(dtype)
    want = base.clone()
    apply_token_bitmask_torch_ops(want, mask)
    got = base.clone()
    apply_token_bitmask_inplace(got, mask)
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))
    ref = reference(base.float().numpy(), mask)
    assert np.array_equal(got.float().numpy(), ref)


def test_float16_and_float64_numpy():
    rng = np.random.default_rng(5)
    for dtype, itype in ((np.float16, np.int16), (np.float64, np.int64)):
        for density in DENSITIES:
            logits = random_logits(rng, 2, 777, dtype)
            mask = random_mask(rng, 2, 25, density)
            want = reference(logits, mask)
            apply_token_bitmask_inplace(logits, mask)
            assert np.array_equal(logits.view(itype), want.view(itype))


def test_indices_one_dim_and_strided():
    rng = np.random.default_rng(9)
    logits = random_logits(rng, 5, 300, np.float32)
    mask = random_mask(rng, 2, 10, 0.5)
    want = logits.copy()
    want[[3, 1]] = reference(logits[[3, 1]], mask)
    got = logits.copy()
    apply_token_bitmask_inplace(got, mask, indices=[3, 1])
    assert np.array_equal(got.view(np.int32), want.view(np.int32))
    t = torch.from_numpy(logits.copy())
    apply_token_bitmask_inplace(t, mask, indices=[3, 1])
    assert np.array_equal(t.numpy().view(np.int32), want.view(np.int32))

    row = logits[0].copy()
    apply_token_bitmask_inplace(row, mask[:1])
    assert np.array_equal(row, reference(logits[:1], mask[:1])[0])

    wide = random_logits(rng, 2, 600, np.float32)
    view = wide[:, ::2]                       # not contiguous
    want = reference(view.copy(), mask)
    apply_token_bitmask_inplace(view, mask)
    assert np.array_equal(wide[:, ::2], want)
    assert np.all(np.isfinite(wide[:, 1::2]))  # the other columns are untouched
    rows_apart = random_logits(rng, 2, 700, np.float32)
    head = rows_apart[:, :300]                # rows contiguous, 700 apart: no copy needed
    want = reference(head.copy(), mask)
    apply_token_bitmask_inplace(head, mask)
    assert np.array_equal(rows_apart[:, :300], want)
    assert np.all(np.isfinite(rows_apart[:, 300:]))
    tw = torch.from_numpy(random_logits(rng, 2, 600, np.float32))
    tv = tw[:, ::2]
    want = reference(tv.numpy().copy(), mask)
    apply_token_bitmask_inplace(tv, mask)
    assert np.array_equal(tw[:, ::2].numpy(), want)


def test_matches_matcher_mask_on_real_tokenizer():
    """A mask filled by the engine, applied to logits, leaves exactly the allowed tokens."""
    info = stencil.TokenizerInfo.from_vocab([b"a", b"b", b"ab", b"1", b"</s>"], eos_token_ids=[4], vocab_size=45)
    g = stencil.GrammarCompiler(info).compile_regex("a+b")
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(bm, 0)
    logits = np.zeros(64, np.float32)             # the model's width exceeds the vocabulary
    apply_token_bitmask_inplace(logits, bm)
    assert np.flatnonzero(np.isfinite(logits)).tolist() == [0, 2]


def test_bad_input():
    logits = np.zeros((2, 40), np.float32)
    with pytest.raises(ValueError, match="2 logits rows"):
        apply_token_bitmask_inplace(logits, np.zeros((1, 2), np.int32))
    with pytest.raises(ValueError, match="indices"):
        apply_token_bitmask_inplace(logits, np.zeros((1, 2), np.int32), indices=[0, 1])
    with pytest.raises(IndexError):
        apply_token_bitmask_inplace(logits, np.zeros((1, 2), np.int32), indices=[5])
    with pytest.raises(TypeError, match="float"):
        apply_token_bitmask_inplace(np.zeros((1, 40), np.int32), np.zeros((1, 2), np.int32))
    with pytest.raises(ValueError, match="int32"):
        apply_token_bitmask_inplace(logits, np.zeros((2, 2), np.int64))
    with pytest.raises(TypeError):
        apply_token_bitmask_inplace([0.0] * 40, np.zeros((1, 2), np.int32))
