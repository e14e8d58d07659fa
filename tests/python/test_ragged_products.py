"""``runtime.ragged.Matmuls``: the products of a few rows that a CPU BLAS computes faster as
``weight @ x.T``, chosen per row count for the decoder's layers and, apart, for the output layer;
and the library's passes through them (``stencil.runtime.generate``'s ``_Model``)."""
import pytest

torch = pytest.importorskip("torch")

from stencil.runtime.ragged import Matmuls, RaggedModel  # noqa: E402
from tiny_model import tiny_model_folder  # noqa: E402


@pytest.mark.parametrize("bias", [False, True])
def test_each_row_count_takes_the_product_its_set_names(bias):
    torch.manual_seed(0)
    layer = torch.nn.Linear(48, 80, bias=bias)
    k = Matmuls(torch)
    k.transposed, k.head_transposed = {1, 3}, {2, 3}
    for n in range(1, Matmuls.MOST + 2):
        x = torch.randn(n, 48)
        plain = torch.nn.functional.linear(x, layer.weight, layer.bias)
        rows = x if n > 1 else torch.cat([x, x])
        flipped = torch.mm(layer.weight, rows.t()).t()[:n] + (layer.bias if bias else 0)
        for head, chosen in ((False, k.transposed), (True, k.head_transposed)):
            got = k.linear(layer, layer.forward, x, head)
            assert got.shape == (n, 80)
            assert torch.equal(got, flipped if n in chosen else plain), (n, head)
            assert torch.allclose(got, plain, atol=1e-5)


def test_calibration_times_the_output_layer_apart():
    k = Matmuls(torch)
    seen = []
    k.faster = lambda weights, reps: seen.append([tuple(w.shape) for w in weights]) or {len(seen)}
    k.calibrate([torch.zeros(8, 4), torch.zeros(4, 8)], head=torch.zeros(100, 4))
    assert seen == [[(8, 4), (4, 8)], [(100, 4)]]
    assert k.calibrated and k.transposed == {1} and k.head_transposed == {2}


def test_faster_returns_row_counts_in_range_and_leaves_the_global_rng_alone():
    k = Matmuls(torch)
    weights = [torch.randn(64, 32), torch.randn(32, 64)]
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    got = k.faster(weights, 1)
    assert torch.equal(torch.rand(3), expected)   # a caller's seeded draws are not moved
    assert got <= set(range(1, Matmuls.MOST + 1))


def test_library_passes_go_through_the_calibrated_products():
    """``stencil.runtime.generate`` on a CPU model runs its passes inside ragged passes: the
    products are calibrated at its first one, one-token passes through them are computed alike
    every time (what the cache's exactness stands on), and a pass through them gives the logits
    of transformers' own pass, up to rounding; outside a pass the wrapped model computes as before."""
    import stencil.runtime
    from stencil.runtime.models import load_model
    lm = load_model(tiny_model_folder(), quiet=True)
    ragged = RaggedModel.of(lm.model)
    assert ragged.supported and not ragged.kernels.calibrated
    first = stencil.runtime.generate(lm, None, "hello", max_tokens=6, speculate=False)
    assert ragged.kernels.calibrated
    assert stencil.runtime.generate(lm, None, "hello", max_tokens=6, speculate=False).token_ids == first.token_ids
    ids = torch.tensor([[5, 17, 42, 99, 7, 120, 64, 3]])
    with torch.inference_mode():
        from transformers import DynamicCache
        cache = DynamicCache()
        lm.model(input_ids=ids[:, :4], past_key_values=cache, use_cache=True)

        def singles():
            out = []
            for t in ids[0, 4:]:
                with ragged.run([1], [1], 1, False) as p:
                    lm.model(input_ids=t.view(1, 1), past_key_values=cache, use_cache=True, logits_to_keep=1)
                out.append(p.logits[0])
            cache.crop(-len(out))
            return torch.stack(out)
        assert torch.equal(singles(), singles())
        plain = lm.model(input_ids=ids).logits[0]
        for n in (1, 2, 3, 8):   # the whole sequence, its last n positions' logits
            ragged.kernels.transposed = ragged.kernels.head_transposed = set(range(1, 9))
            with ragged.run([8], [n], 8, False) as p:
                lm.model(input_ids=ids, logits_to_keep=n)
            assert p.logits.shape == (n, plain.shape[-1])
            assert torch.allclose(p.logits, plain[-n:], atol=1e-4)


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_one_token_passes_on_a_cpu_group_query_heads_in_half_dtypes(dtype, padded, monkeypatch):
    """A one-token pass inside a ragged pass on a CPU: in bfloat16 and float16 its attention
    takes the query heads of each key/value head side by side, also where transformers would
    call torch's kernel with one query per head and ``enable_gqa`` (no mask: no padding), which
    is several times slower there; in float32 transformers' own call. The logits are
    transformers' own, up to rounding."""
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    model = LlamaForCausalLM(config).to(dtype).eval()
    ragged = RaggedModel.of(model)
    assert ragged.supported
    ragged.kernels.calibrated = True   # (the products' timings are not what this tests)
    ids = torch.randint(0, 300, (2, 20))
    mask = torch.ones(2, 21, dtype=torch.long)
    if padded:
        mask[0, :3] = 0   # row 0 left-padded
    nxt = torch.tensor([[7], [11]])
    queries = []
    sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda q, *a, **kw: queries.append(tuple(q.shape)) or sdpa(q, *a, **kw))
    grouped, per_head = (2, 2, 2, 16), (2, 4, 1, 16)
    with torch.inference_mode():
        cache = DynamicCache()
        model(input_ids=ids, attention_mask=mask[:, :20], past_key_values=cache, use_cache=True)
        queries.clear()
        plain = model(input_ids=nxt, attention_mask=mask, past_key_values=cache, use_cache=True).logits[:, -1]
        assert queries == [grouped if padded else per_head] * 2   # transformers' own layouts
        cache.crop(-1)
        queries.clear()
        with ragged.run([1, 1], [1, 1], 1, False) as p:
            model(input_ids=nxt, attention_mask=mask, past_key_values=cache, use_cache=True, logits_to_keep=1)
    half = dtype != torch.float32
    assert queries == [grouped if half or padded else per_head] * 2
    assert p.logits.shape == plain.shape
    tol = 3e-2 if half else 1e-5
    assert torch.allclose(p.logits.float(), plain.float(), atol=tol, rtol=tol)
