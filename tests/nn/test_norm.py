"""blocklab.nn.norm against Hugging Face and blocklab.reference's float64 formulas and
closed-form Jacobians."""


import numpy as np
import pytest
import torch
import transformers.models.gemma2.modeling_gemma2 as modeling_gemma2
import transformers.models.llama.modeling_llama as modeling_llama
from torch.autograd.functional import jacobian
from torch.testing import assert_close

from blocklab import config, reference
from blocklab.nn.norm import NORMS, LayerNorm, RMSNorm, build_norm

from .conftest import EXACT, randn

D = 16


def _random_weight(module, seed=1):
    with torch.no_grad():
        module.weight.copy_(randn(*module.weight.shape, seed=seed))
    return module


# --- Hugging Face parity (claim C10: fp32 mean square, cast back, then the gain) -------------
# bfloat16: the same ops in the same order (fp32 statistics, cast, then the gain).
@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, dict(atol=1e-6, rtol=1e-6)),
                                            (torch.bfloat16, EXACT)])
@pytest.mark.parametrize(("options", "hf_norm"), [
    (dict(), modeling_llama.LlamaRMSNorm),
    (dict(unit_offset=True, cast="gemma"), modeling_gemma2.Gemma2RMSNorm),
], ids=["llama", "gemma"])
def test_rmsnorm_matches_hf(options, hf_norm, dtype, tol):
    ours = _random_weight(RMSNorm(D, eps=1e-6, **options)).to(dtype)
    hf = hf_norm(D, eps=1e-6).to(dtype)
    hf.load_state_dict(ours.state_dict())
    x = (randn(4, 5, D) * 5).to(dtype)
    assert_close(ours(x), hf(x), **tol)  # dtypes too


def test_rmsnorm_llama_float32_weight_bfloat16_input_keeps_input_dtype():
    # Hugging Face promotes this product to float32; we return bfloat16, the same value rounded.
    ours = _random_weight(RMSNorm(D))
    hf = modeling_llama.LlamaRMSNorm(D)
    hf.load_state_dict(ours.state_dict())
    x = randn(3, D).to(torch.bfloat16)
    reference = hf(x)
    assert reference.dtype == torch.float32
    assert_close(ours(x), reference.to(torch.bfloat16), **EXACT)  # dtypes too


def test_llama_and_gemma_cast_orders_round_differently_in_bfloat16():
    # Why `cast` is an option: one rounding (gemma) vs two (llama) give different bf16 numbers,
    # each within bf16 precision of the float64 value.
    x = (randn(64, D) * 3).to(torch.bfloat16)
    llama = _random_weight(RMSNorm(D, cast="llama")).to(torch.bfloat16)
    gemma = _random_weight(RMSNorm(D, cast="gemma")).to(torch.bfloat16)
    exact = RMSNorm(D).double()
    exact.load_state_dict(llama.state_dict())  # the bf16-rounded gain, in float64
    y_llama, y_gemma = llama(x), gemma(x)
    assert not torch.equal(y_llama, y_gemma)
    # bf16 keeps 8 significant bits, so each rounding is off by at most 2^-8 relative; llama
    # rounds twice (after the cast and after the product), gemma once. The 0.01 covers u² and
    # the float32 statistics.
    for y in (y_llama, y_gemma):
        assert_close(y.double(), exact(x.double()), rtol=2.01 * 2**-8, atol=1e-12)


def test_rmsnorm_statistics_in_float32_survive_float16_overflow():
    # 300² = 90000 > 65504, the float16 maximum: a float16 mean square would be inf.
    x = torch.full((2, D), 300.0, dtype=torch.float16)
    assert torch.isinf(x.pow(2)).all()
    y = RMSNorm(D)(x)
    assert y.dtype == torch.float16
    assert_close(y, torch.ones_like(y), atol=1e-3, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("module", [RMSNorm(D, cast="llama"), RMSNorm(D, cast="gemma"),
                                    RMSNorm(D, unit_offset=True), LayerNorm(D),
                                    LayerNorm(D, bias=False)], ids=repr)
def test_output_dtype_equals_input_dtype(module, dtype):
    x = randn(2, 3, D).to(dtype)
    y = module(x)
    assert y.dtype == dtype
    assert y.shape == x.shape


# --- float64 against blocklab.reference's formulas and closed-form Jacobians -------------------
@pytest.mark.parametrize("kind, options", [
    *[("rmsnorm", dict(cast=cast, unit_offset=offset))
      for cast in ("llama", "gemma") for offset in (False, True)],
    ("layernorm", dict(bias=True)), ("layernorm", dict(bias=False)),
])
def test_matches_the_float64_reference(kind, options):
    eps = 1e-5
    norm = _random_weight(build_norm(kind, D, eps, **options)).double()
    gain = norm.weight.detach() + (1.0 if options.get("unit_offset") else 0.0)
    extra = {}
    if getattr(norm, "bias", None) is not None:
        with torch.no_grad():
            norm.bias.copy_(randn(D, seed=2))
        extra["bias"] = norm.bias.detach().numpy()
    x = randn(12, D, dtype=torch.float64) + 2.0
    formula = getattr(reference, kind)
    expected = [formula(row, eps, gain.numpy(), **extra) for row in x.numpy()]
    assert_close(norm(x), torch.tensor(np.array(expected)), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("kind", ["rmsnorm", "layernorm"])
def test_jacobian_matches_the_reference_closed_form(kind):
    # diag(γ) (I / s − x xᵀ / (d s³)) for RMSNorm; diag(γ) (C / σ − c cᵀ / (d σ³)) for LayerNorm,
    # C the centring matrix and c = x − mean(x).
    d, eps = 5, 1e-6
    norm = _random_weight(build_norm(kind, d, eps)).double()
    x = randn(d, dtype=torch.float64, seed=3)
    closed = getattr(reference, f"{kind}_jacobian")(x.numpy(), eps, norm.weight.detach().numpy())
    assert_close(jacobian(norm, x), torch.from_numpy(closed), atol=1e-10, rtol=1e-10)


# --- construction, registry, errors ----------------------------------------------------------
def test_initial_parameters_registry_and_build_norm():
    assert torch.equal(RMSNorm(D).weight, torch.ones(D))
    assert torch.equal(RMSNorm(D, unit_offset=True).weight, torch.zeros(D))
    x = randn(3, D)
    assert_close(RMSNorm(D, unit_offset=True)(x), RMSNorm(D)(x), **EXACT)
    assert [n for n, _ in RMSNorm(D).named_parameters()] == ["weight"]
    ln = LayerNorm(D)
    assert torch.equal(ln.weight, torch.ones(D)) and torch.equal(ln.bias, torch.zeros(D))
    assert LayerNorm(D, bias=False).bias is None
    assert set(NORMS) == set(config.NORMS)
    rms = build_norm("rmsnorm", 8, 1e-5, bias=True, unit_offset=True, cast="gemma")
    assert isinstance(rms, RMSNorm)
    assert (rms.dim, rms.eps, rms.unit_offset, rms.cast) == (8, 1e-5, True, "gemma")
    ln = build_norm("layernorm", 8, 1e-5, bias=False)
    assert isinstance(ln, LayerNorm) and ln.bias is None and ln.eps == 1e-5


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: RMSNorm(D, cast="t5"), r"cast='t5'.*\['llama', 'gemma'\]"),
        (lambda: RMSNorm(0), r"dim=0 .*positive integer"),
        (lambda: RMSNorm(True), r"dim=True "),
        (lambda: RMSNorm(D, eps=-1e-6), r"eps=-1e-06 .*>= 0"),
        (lambda: RMSNorm(D, eps=float("nan")), r"eps=nan "),
        (lambda: LayerNorm(-3), r"LayerNorm: dim=-3 "),
        (lambda: LayerNorm(D, eps=-1.0), r"LayerNorm: eps=-1.0 "),
        (lambda: build_norm("batchnorm", D, 1e-5), r"kind='batchnorm'.*\['layernorm', 'rmsnorm'\]"),
        (lambda: build_norm("layernorm", D, 1e-5, unit_offset=True), r"unit_offset=True"),
    ],
)
def test_bad_arguments_raise_one_line(make, match):
    with pytest.raises(ValueError, match=match) as info:
        make()
    assert "\n" not in str(info.value)
