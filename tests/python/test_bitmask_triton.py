"""The Triton bitmask kernel and the torch-ops fallback give the numpy kernel's bits.

Without a CUDA device the kernel runs on CPU tensors through Triton's interpreter
(TRITON_INTERPRET=1, set before triton is imported); with one, compiled on the GPU. Random masks
of every density, with all-ones and all-zero words and blocks, vocabularies off multiples of 32
and of the kernel's 1,024-logit block, bitmasks wider and narrower than the logits, float32,
float16 and bfloat16, with and without row indices. The fallback (torch ops) is checked against
numpy whether or not triton is installed, and ``PinnedBitmask`` on CPU is a copy-free path.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
CUDA = torch.cuda.is_available()
if not CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when the kernel is defined, at import

from stencil.bitmask import apply_token_bitmask_inplace  # noqa: E402
from stencil.kernels.torch import PinnedBitmask, apply_token_bitmask_torch_ops  # noqa: E402

DEVICE = "cuda" if CUDA else "cpu"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
INT_OF = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def _triton():
    """The kernel module, or a skip that says why it cannot run here."""
    from stencil.kernels import triton as bitmask_triton
    if not bitmask_triton.triton_available():
        pytest.skip("triton is not installed (pip install 'stencil-llm[gpu]'); the torch-ops fallback is tested below")
    if not CUDA and type(bitmask_triton._apply_bitmask_kernel).__name__ != "InterpretedFunction":
        pytest.skip("triton was imported before TRITON_INTERPRET=1 was set: the kernel cannot run on CPU")
    return bitmask_triton


def random_mask(rng, rows: int, words: int) -> np.ndarray:
    """Random words with runs of all-ones and all-zero words, and some whole rows of each."""
    mask = rng.integers(-2**31, 2**31 - 1, size=(rows, words), dtype=np.int64).astype(np.int32)
    for r in range(rows):
        kind = rng.integers(6)
        if kind == 0:
            mask[r] = -1
        elif kind == 1:
            mask[r] = 0
        else:  # runs of whole words, some longer than a 32-word block
            for _ in range(3):
                a = int(rng.integers(words))
                b = min(words, a + int(rng.integers(1, 80)))
                mask[r, a:b] = rng.choice([0, -1])
    if rng.random() < 0.3:  # sparse bits
        mask &= rng.integers(-2**31, 2**31 - 1, size=mask.shape, dtype=np.int64).astype(np.int32)
    return mask


def random_logits(rng, rows: int, vocab: int, dtype) -> torch.Tensor:
    x = torch.from_numpy((rng.standard_normal((rows, vocab)) * 10).astype(np.float32)).to(dtype)
    x.view(-1)[::97] = -0.0  # signed zeros must survive when allowed
    return x


def numpy_result(logits: torch.Tensor, mask: np.ndarray, indices=None) -> torch.Tensor:
    """The numpy kernel's answer (the CPU path of apply_token_bitmask_inplace)."""
    want = logits.cpu().clone()
    apply_token_bitmask_inplace(want, mask, indices)
    return want


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a.cpu().view(INT_OF[a.dtype]), b.cpu().view(INT_OF[b.dtype]))


CASES = [  # (rows, vocab, words): exact, narrower and wider bitmasks, block edges, tiny
    (3, 1000, 32), (2, 1000, 30), (2, 1000, 40), (2, 1024, 32), (2, 1025, 33), (1, 2049, 64),
    (2, 4097, 129), (1, 31, 1), (1, 33, 1), (1, 1, 1), (2, 3000, 2), (4, 77, 3),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_kernel_equals_numpy_kernel(dtype):
    tr = _triton()
    rng = np.random.default_rng(len(str(dtype)))
    for rows, vocab, words in CASES:
        for _ in range(6):
            logits = random_logits(rng, rows, vocab, dtype)
            mask = random_mask(rng, rows, words)
            want = numpy_result(logits, mask)
            got = logits.to(DEVICE)
            tr.apply_token_bitmask_triton(got, torch.from_numpy(mask).to(DEVICE))
            assert same_bits(got, want), (dtype, rows, vocab, words)
            fallback = logits.to(DEVICE)
            apply_token_bitmask_torch_ops(fallback, mask)
            assert same_bits(fallback, want), (dtype, rows, vocab, words)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_kernel_with_indices(dtype):
    """``indices[k]`` is the logits row of bitmask row k; other rows are untouched."""
    tr = _triton()
    rng = np.random.default_rng(7)
    for indices in ([3, 1], [0], [-1, 2], [4, 0, 2, 1, 3], [2, 2], []):
        logits = random_logits(rng, 5, 1100, dtype)
        mask = random_mask(rng, len(indices), 35)
        want = numpy_result(logits, mask, indices)
        got = logits.to(DEVICE)
        tr.apply_token_bitmask_triton(got, mask, indices=indices)  # numpy mask: copied to the device
        assert same_bits(got, want), indices
        as_tensor = logits.to(DEVICE)
        tr.apply_token_bitmask_triton(as_tensor, mask, indices=torch.tensor(indices, dtype=torch.long))
        assert same_bits(as_tensor, want), indices


def test_kernel_one_dim_row_stride_and_uint32():
    tr = _triton()
    rng = np.random.default_rng(11)
    row = random_logits(rng, 1, 500, torch.float32)[0]
    mask = random_mask(rng, 1, 16)
    want = numpy_result(row, mask[0])
    got = row.to(DEVICE)
    tr.apply_token_bitmask_triton(got, mask[0].view(np.uint32))
    assert same_bits(got, want)
    wide = random_logits(rng, 3, 900, torch.bfloat16)
    full = wide.to(DEVICE)
    head = full[:, :600]  # rows 900 apart, contiguous along the vocabulary
    mask = random_mask(rng, 3, 19)
    want = numpy_result(wide[:, :600], mask)
    tr.apply_token_bitmask_triton(head, mask)
    assert same_bits(head, want)
    assert same_bits(full[:, 600:], wide[:, 600:])  # the columns past the view are untouched


def test_kernel_bad_input():
    tr = _triton()
    logits = torch.zeros(2, 40, device=DEVICE)
    mask = np.zeros((1, 2), np.int32)
    with pytest.raises(ValueError, match="2 logits rows; pass indices="):
        tr.apply_token_bitmask_triton(logits, mask)
    with pytest.raises(ValueError, match="2 indices for 1 bitmask rows"):
        tr.apply_token_bitmask_triton(logits, mask, indices=[0, 1])
    with pytest.raises(IndexError, match="index 5 is out of range for 2 logits rows"):
        tr.apply_token_bitmask_triton(logits, mask, indices=[5])
    with pytest.raises(IndexError, match="index -3"):
        tr.apply_token_bitmask_triton(logits, mask, indices=[-3])
    with pytest.raises(TypeError, match="indices must be a list of int, got float"):
        tr.apply_token_bitmask_triton(logits, mask, indices=[0.5])
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        tr.apply_token_bitmask_triton(logits.double(), mask)
    with pytest.raises(ValueError, match="contiguous along the vocabulary"):
        tr.apply_token_bitmask_triton(torch.zeros(40, 2, device=DEVICE).t(), np.zeros((2, 2), np.int32))
    with pytest.raises(ValueError, match="int32"):
        tr.apply_token_bitmask_triton(logits, np.zeros((2, 2), np.int64))
    with pytest.raises(ValueError, match="int32"):
        tr.apply_token_bitmask_triton(logits, torch.zeros(2, 2, dtype=torch.int64))
    with pytest.raises(TypeError, match="torch tensor"):
        tr.apply_token_bitmask_triton(np.zeros((2, 40), np.float32), mask)
    assert torch.all(logits == 0)  # nothing was written by a refused call


@pytest.mark.parametrize("dtype", DTYPES + [torch.float64], ids=str)
def test_fallback_equals_numpy_kernel(dtype):
    """The torch-ops path (CUDA without triton, float64, strided logits) on random masks,
    with and without indices; runs without triton."""
    rng = np.random.default_rng(3)
    ints = {torch.float64: torch.int64}
    for rows, vocab, words in CASES:
        logits = random_logits(rng, rows, vocab, dtype)
        mask = random_mask(rng, rows, words)
        want = numpy_result(logits, mask)
        got = logits.to(DEVICE)
        apply_token_bitmask_torch_ops(got, mask)
        it = ints.get(dtype, INT_OF.get(dtype))
        assert torch.equal(got.cpu().view(it), want.view(it)), (rows, vocab, words)
        idx = list(rng.permutation(rows))[: max(1, rows - 1)]
        want = numpy_result(logits, mask[: len(idx)], idx)
        got = logits.to(DEVICE)
        apply_token_bitmask_torch_ops(got, mask[: len(idx)], idx)
        assert torch.equal(got.cpu().view(it), want.view(it)), (rows, vocab, words, idx)


def test_pinned_bitmask_on_cpu_copies_nothing():
    pb = PinnedBitmask(4, 1000, device="cpu")
    assert pb.shape == (4, 32)
    host = pb.host(2)
    assert isinstance(host, np.ndarray) and host.dtype == np.int32 and np.all(host == -1)
    rng = np.random.default_rng(5)
    host[:] = random_mask(rng, 2, 32)
    dev = pb.to_device(2)
    assert dev.data_ptr() == host.ctypes.data  # the same memory: no copy on CPU
    logits = random_logits(rng, 2, 1000, torch.float32)
    want = numpy_result(logits, host)
    pb.apply(logits)
    assert same_bits(logits, want)
    logits = random_logits(rng, 5, 1000, torch.bfloat16)
    want = numpy_result(logits, host, [4, 0])
    pb.apply(logits, indices=[4, 0])
    assert same_bits(logits, want)
    with pytest.raises(ValueError, match="max_batch"):
        pb.host(5)
    with pytest.raises(ValueError, match="max_batch"):
        pb.apply(torch.zeros(5, 1000))


@pytest.mark.skipif(not CUDA, reason="no CUDA device: the pinned buffer's asynchronous copy needs one")
def test_pinned_bitmask_on_cuda_reuses_buffers():
    pb = PinnedBitmask(8, 5000, device="cuda")
    rng = np.random.default_rng(6)
    first = None
    for _ in range(3):
        host = pb.host(8)
        host[:] = random_mask(rng, 8, host.shape[1])
        logits = random_logits(rng, 8, 5000, torch.bfloat16)
        want = numpy_result(logits, host.copy())
        got = logits.cuda()
        pb.apply(got)  # the public path: the Triton kernel when triton is installed
        assert same_bits(got, want)
        ptr = pb.to_device(8).data_ptr()
        assert first is None or ptr == first
        first = ptr
