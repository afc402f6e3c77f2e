"""The lean norms of `blocklab.nn.lean` against the reference RMSNorm.

Tolerances: float32 values and gradients to 1e-6 (atol and rtol; the fused RMSNorm sums x² in
another order, so 1/s differs in the last bit); bfloat16 forward values are bit for bit the
reference's (same op order), bfloat16 gradients to one bfloat16 ulp (rtol = atol = 2⁻⁶ ≈ 1.6e-2),
since the reference rounds intermediate gradients to bfloat16 and the fused path does not; the
weight gradient sums N such terms, so its bfloat16 atol is 0.1 at these sizes.
"""

import pytest
import torch
from torch.testing import assert_close

from blocklab.nn import backends, lean
from blocklab.nn.norm import RMSNorm

from .conftest import forward_backward

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


@pytest.mark.parametrize("cast", ["llama", "gemma"])
@pytest.mark.parametrize("unit_offset", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_rmsnorm_matches_reference(cast, unit_offset, dtype):
    ref, new = _pair(cast, unit_offset)
    x = torch.randn(2, 3, 5, 24, dtype=dtype)
    g = torch.randn_like(x)
    y_ref, dx_ref, dw_ref = forward_backward(ref, x, g)
    y_new, dx_new, dw_new = forward_backward(new, x, g)
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


def test_fast_is_lean_where_no_kernel_runs_and_reference_rejects_nothing():
    x = torch.randn(2, 8)
    assert backends.resolve("rms_norm", "fast", x.half()) == "lean"
    assert backends.resolve("rms_norm", "fast", x.double()) == "lean"
    assert backends.resolve("rms_norm", "reference", x) == "reference"
    with pytest.raises(ValueError, match="impl='bogus'"):
        RMSNorm(8, impl="bogus")


def test_triton_impl_on_cpu_raises_clearly(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    norm = RMSNorm(8, impl="triton")
    with pytest.raises(RuntimeError, match="impl='triton' cannot run here"):
        norm(torch.randn(2, 8))
