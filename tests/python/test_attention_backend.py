"""``shape_stable_attention``: cuDNN's attention (a graph built per new shape) is excluded for the
passes on CUDA and restored after; nothing changes elsewhere. torch's switches are process-wide
flags, so this runs without a GPU."""
import pytest

torch = pytest.importorskip("torch")
from torch.nn.attention import SDPBackend  # noqa: E402

from stencil.runtime.attention import shape_stable_attention  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(SDPBackend, "CUDNN_ATTENTION"), reason="torch without cuDNN attention")


def _flags():
    b = torch.backends.cuda
    return b.cudnn_sdp_enabled(), b.flash_sdp_enabled(), b.mem_efficient_sdp_enabled(), b.math_sdp_enabled()


@pytest.mark.parametrize("device", [torch.device("cuda"), torch.device("cuda", 0), "cuda:1"])
def test_cuda_passes_exclude_cudnn_attention_and_restore_it(device):
    before = _flags()
    assert before[0], "torch enables cuDNN attention by default"
    with shape_stable_attention(device):
        assert _flags() == (False, True, True, True)
    assert _flags() == before


@pytest.mark.parametrize("device", [torch.device("cpu"), "cpu", "mps", torch.device("meta")])
def test_other_devices_keep_every_kernel(device):
    before = _flags()
    with shape_stable_attention(device):
        assert _flags() == before
    with shape_stable_attention(device):   # reusable: one shared no-op context
        pass


def test_a_failing_pass_restores_the_switches():
    before = _flags()
    with pytest.raises(RuntimeError), shape_stable_attention("cuda"):
        raise RuntimeError("the pass failed")
    assert _flags() == before
