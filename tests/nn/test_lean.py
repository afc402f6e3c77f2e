"""The fast paths of `blocklab.nn.lean` against the reference modules and functions.

Tolerances: float32 values and gradients to 1e-6 (atol and rtol; the fused RMSNorm sums x² in
another order, so 1/s differs in the last bit); bfloat16 forward values are bit for bit the
reference's (same op order), bfloat16 gradients to one bfloat16 ulp (rtol = atol = 2⁻⁶ ≈ 1.6e-2),
since the reference rounds intermediate gradients to bfloat16 and the fused path does not; the
weight gradient sums N such terms, so its bfloat16 atol is 0.1 at these sizes.
"""

import pytest
import torch
from torch.testing import assert_close

from blocklab.nn import lean
from blocklab.nn.ffn import GatedFeedForward
from blocklab.nn.norm import RMSNorm, resolve_rms_impl
from blocklab.nn.position import apply_rotary, rotary_cos_sin

F32 = dict(atol=1e-6, rtol=1e-6)
BF16 = dict(atol=2**-6, rtol=2**-6)


def _pair(cast, unit_offset, impl="lean", dim=24):
    torch.manual_seed(0)
    ref = RMSNorm(dim, cast=cast, unit_offset=unit_offset, impl="reference")
    with torch.no_grad():
        ref.weight.add_(0.1 * torch.randn(dim))
    new = RMSNorm(dim, cast=cast, unit_offset=unit_offset, impl=impl)
    new.load_state_dict(ref.state_dict())
    return ref, new


def _run(module, x, g):
    x = x.clone().requires_grad_()
    module.zero_grad()
    y = module(x)
    y.backward(g)
    return y, x.grad, module.weight.grad


@pytest.mark.parametrize("cast", ["llama", "gemma"])
@pytest.mark.parametrize("unit_offset", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_rmsnorm_matches_reference(cast, unit_offset, dtype):
    ref, new = _pair(cast, unit_offset)
    x = torch.randn(2, 3, 5, 24, dtype=dtype)
    g = torch.randn_like(x)
    y_ref, dx_ref, dw_ref = _run(ref, x, g)
    y_new, dx_new, dw_new = _run(new, x, g)
    assert y_new.dtype == dtype and dx_new.dtype == dtype
    if dtype == torch.float32:
        for a, b in ((y_new, y_ref), (dx_new, dx_ref), (dw_new, dw_ref)):
            assert_close(a, b, **F32)
    else:
        assert torch.equal(y_new, y_ref)
        assert_close(dx_new, dx_ref, **BF16)
        assert_close(dw_new, dw_ref, atol=0.1, rtol=2**-6)


def test_fused_rmsnorm_gradcheck_float64():
    torch.manual_seed(0)
    x = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    w = (1 + 0.1 * torch.randn(6, dtype=torch.float64)).requires_grad_()
    for cast in ("llama", "gemma"):
        assert torch.autograd.gradcheck(lambda a, b, c=cast: lean.rms_norm(a, b, 1e-6, c),
                                        (x, w))
        assert torch.autograd.gradcheck(
            lambda a, r, b, c=cast: lean.add_rms_norm(a, r, b, 1e-6, c), (x, x.detach().clone()
                                                                          .requires_grad_(), w))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_add_rms_norm_matches_sum_then_reference(dtype):
    ref, new = _pair("llama", False)
    x, r = torch.randn(4, 7, 24, dtype=dtype), torch.randn(4, 7, 24, dtype=dtype)
    gy, gh = torch.randn_like(x), torch.randn_like(x)
    outs = []
    for module in (ref, new):
        a, b = x.clone().requires_grad_(), r.clone().requires_grad_()
        y, h = module.forward_add(a, b)
        (y * gy + h * gh).float().sum().backward()
        outs.append((y, h, a.grad, b.grad))
    tol = F32 if dtype == torch.float32 else BF16
    for got, want in zip(outs[1], outs[0], strict=True):
        assert got.dtype == dtype
        assert_close(got, want, **tol)


def test_fast_is_lean_for_bfloat16_on_cpu_and_reference_rejects_nothing():
    x = torch.randn(2, 8)
    assert resolve_rms_impl("fast", x.bfloat16()) == "lean"
    assert resolve_rms_impl("reference", x) == "reference"
    with pytest.raises(ValueError, match="impl='bogus'"):
        RMSNorm(8, impl="bogus")


def test_triton_impl_on_cpu_raises_clearly(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    norm = RMSNorm(8, impl="triton")
    with pytest.raises(RuntimeError, match="impl='triton' cannot run here"):
        norm(torch.randn(2, 8))


@pytest.mark.parametrize("activation", ["silu", "gelu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gated_activation_matches_autograd(activation, dtype):
    torch.manual_seed(0)
    gate, up = torch.randn(3, 5, 16, dtype=dtype), torch.randn(3, 5, 16, dtype=dtype)
    g = torch.randn_like(gate)
    act = lean.GATED_ACTIVATIONS[activation]
    results = []
    for fn in (lambda a, b: act(a) * b, lambda a, b: lean.gated_activation(a, b, activation)):
        a, b = gate.clone().requires_grad_(), up.clone().requires_grad_()
        y = fn(a, b)
        y.backward(g)
        results.append((y, a.grad, b.grad))
    tol = F32 if dtype == torch.float32 else BF16
    if dtype == torch.float32:  # the compiled CPU kernel (tested in test_cpu_kernels)
        assert_close(results[1][0], results[0][0], **F32)
    else:  # the tensor-op Function: the reference's own expression
        assert torch.equal(results[1][0], results[0][0])
    for got, want in zip(results[1][1:], results[0][1:], strict=True):
        assert got.dtype == dtype
        assert_close(got, want, **tol)


def test_gated_activation_gradcheck_float64():
    torch.manual_seed(0)
    a = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    for activation in ("silu", "gelu"):
        assert torch.autograd.gradcheck(
            lambda x, y, k=activation: lean.gated_activation(x, y, k), (a, b))


@pytest.mark.parametrize("impl", ["fast", "lean", "compiled"])
def test_gated_ffn_implementations_match_the_reference(impl):
    torch.manual_seed(0)
    ffn = GatedFeedForward(8, 12, impl=impl)
    plain = GatedFeedForward(8, 12, impl="reference")
    plain.load_state_dict(ffn.state_dict())
    x = torch.randn(2, 3, 8)
    assert_close(ffn(x), plain(x), **F32)  # float32 on CPU: the C kernel's exp under "fast"
    with pytest.raises(ValueError, match="impl='fused'"):
        GatedFeedForward(8, 12, impl="fused")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("rotary_dim", [8, 4])
def test_rotate_half_split_is_exactly_apply_rotary(dtype, rotary_dim):
    torch.manual_seed(0)
    q = torch.randn(2, 3, 5, 8, dtype=dtype)
    inv_freq = 1.0 / 10000 ** (torch.arange(0, rotary_dim, 2).float() / rotary_dim)
    cos, sin = rotary_cos_sin(torch.arange(5), inv_freq)
    want, _ = apply_rotary(q, q, cos, sin)
    got, _ = apply_rotary(q, q, cos, sin, impl="lean")
    assert got.dtype == dtype
    assert torch.equal(got, want)
    assert torch.equal(lean.rotate_half_split(q, cos[None, None], sin[None, None]), want)
