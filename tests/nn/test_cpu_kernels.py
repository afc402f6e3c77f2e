"""The C kernels against the reference module, and their fallback.

Tolerances: float32 values and input gradients to 1e-6 (atol and rtol) against the float32
reference (the kernel sums x² in its own order). The gain gradient is a sum over all rows, which
the kernel accumulates in float64 and the reference in float32, so it is held to the float64
truth instead: its error at most twice the float32 reference's own, or 1e-6 of the largest entry.
Gated activations: the same float64-truth criterion for all outputs, since exp and erf round
differently in the kernel's vector math and in PyTorch's. Against a float64 evaluation of the
forward formula the kernel is held to 2e-6 relative to the
largest entry.
"""

import pytest
import torch
from torch.testing import assert_close

from blocklab.nn import backends, cpu_kernels
from blocklab.nn.norm import RMSNorm

from .conftest import forward_backward

F32 = dict(atol=1e-6, rtol=1e-6)

# The parity tests need a working C compiler (every machine we install on has one); the fallback
# tests below them run either way.
needs_kernels = pytest.mark.skipif(not cpu_kernels.available(),
                                   reason=f"no CPU kernels: {cpu_kernels.unavailable_reason()}")


def _pair(unit_offset, dim=24, impl="cpu"):
    torch.manual_seed(0)
    ref = RMSNorm(dim, unit_offset=unit_offset, impl="reference")
    with torch.no_grad():
        ref.weight.add_(0.1 * torch.randn(dim))
    new = RMSNorm(dim, unit_offset=unit_offset, impl=impl)
    new.load_state_dict(ref.state_dict())
    return ref, new


def _check(new, ref, x, g):
    """new's (y, dx, dw) against ref's in float32, and dw against ref's in float64."""
    (y, dx, dw), (y_ref, dx_ref, dw_ref) = forward_backward(new, x, g), forward_backward(ref, x, g)
    assert y.dtype == dx.dtype == dw.dtype == torch.float32
    assert_close(y, y_ref, **F32)
    assert_close(dx, dx_ref, **F32)
    dw64 = forward_backward(ref.double(), x.double(), g.double())[2]
    ref.float()
    err, err_ref = (dw.double() - dw64).abs().max(), (dw_ref.double() - dw64).abs().max()
    assert err <= max(2 * err_ref, 1e-6 * dw64.abs().max())


@needs_kernels
@pytest.mark.parametrize("unit_offset", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 5, 24), (1, 24), (64, 24)])
def test_cpu_rmsnorm_matches_reference(unit_offset, shape):
    ref, new = _pair(unit_offset)
    x = torch.randn(shape)
    _check(new, ref, x, torch.randn_like(x))


@needs_kernels
@pytest.mark.parametrize("dim", [1, 7, 256, 1000])
def test_cpu_rmsnorm_matches_float64_formula(dim):
    torch.manual_seed(dim)
    x = torch.randn(33, dim) * 3
    w = torch.randn(dim)
    y = cpu_kernels.rms_norm(x, w, 1e-5)
    x64 = x.double()
    want = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-5) * w.double()
    assert (y.double() - want).abs().max() <= 2e-6 * want.abs().max()


@needs_kernels
def test_cpu_rmsnorm_non_contiguous_input_and_grad():
    ref, new = _pair(False)
    x = torch.randn(24, 10).t()  # [10, 24], non-contiguous
    g = torch.randn(24, 10).t()
    _check(new, ref, x, g)


@needs_kernels
def test_cpu_rmsnorm_weight_without_grad_and_empty_rows():
    _, new = _pair(False)
    new.weight.requires_grad_(False)
    x = torch.randn(4, 24, requires_grad=True)
    new(x).sum().backward()
    assert x.grad.shape == (4, 24) and new.weight.grad is None
    empty = new(torch.randn(0, 24))
    assert empty.shape == (0, 24)


@needs_kernels
@pytest.mark.parametrize("use_h", [True, False])
@pytest.mark.parametrize("unit_offset", [False, True])
def test_cpu_add_rms_norm_matches_sum_then_reference(use_h, unit_offset):
    ref, new = _pair(unit_offset)
    x, r = torch.randn(4, 7, 24), torch.randn(4, 7, 24)
    gy, gh = torch.randn_like(x), torch.randn_like(x)
    outs = []
    for module in (ref, new):
        module.zero_grad()
        a, b = x.clone().requires_grad_(), r.clone().requires_grad_()
        y, h = module.forward_add(a, b)
        loss = (y * gy).sum() + ((h * gh).sum() if use_h else 0)
        loss.backward()
        outs.append((y, h, a.grad, b.grad, module.weight.grad))
    for a, b in zip(*outs, strict=True):
        assert_close(a, b, atol=1e-6, rtol=2e-6)


@needs_kernels
def test_cpu_add_rms_norm_only_h_used():
    _, new = _pair(False)
    a = torch.randn(3, 24, requires_grad=True)
    b = torch.randn(3, 24, requires_grad=True)
    _, h = new.forward_add(a, b)
    h.sum().backward()
    assert torch.equal(a.grad, torch.ones(3, 24)) and torch.equal(b.grad, torch.ones(3, 24))


@needs_kernels
def test_cpu_add_rms_norm_rejects_mismatch():
    w = torch.ones(24)
    with pytest.raises(ValueError, match="shapes differ"):
        cpu_kernels.add_rms_norm(torch.randn(2, 24), torch.randn(3, 24), w)
    with pytest.raises(ValueError, match="residual is torch.float64"):
        cpu_kernels.add_rms_norm(torch.randn(2, 24), torch.randn(2, 24).double(), w)


@needs_kernels
def test_fast_picks_cpu_for_float32_and_bfloat16_and_lean_otherwise():
    w = torch.ones(8)
    assert backends.resolve("rms_norm", "fast", torch.randn(2, 8), w) == "cpu"
    assert backends.resolve("rms_norm", "fast", torch.randn(2, 8, dtype=torch.bfloat16), w) == "cpu"
    assert backends.resolve("rms_norm", "fast", torch.randn(2, 8, dtype=torch.bfloat16),
                            w.bfloat16()) == "cpu"
    assert backends.resolve("rms_norm", "fast", torch.randn(2, 8), w.bfloat16()) == "lean"
    assert backends.resolve("rms_norm", "fast", torch.randn(2, 8, dtype=torch.float64), w) == "lean"
    assert backends.resolve("rms_norm", "fast", torch.randn(2, 8, dtype=torch.float16), w) == "lean"


def test_explicit_cpu_impl_on_float16_raises_with_reason():
    norm = RMSNorm(8, impl="cpu")
    with pytest.raises(RuntimeError, match=r"impl='cpu' cannot run here: unsupported dtype "
                                           r"float16 \(it supports bfloat16, float32\)"):
        norm(torch.randn(2, 8, dtype=torch.float16))


def _no_worse_than_torch(got, want32, want64):
    """got's error from the float64 truth at most twice PyTorch's own float32 error, or 1e-6
    of the largest entry (both compute φ with their own float32 exp/erf)."""
    err = (got.double() - want64).abs().max()
    err_torch = (want32.double() - want64).abs().max()
    assert err <= max(2 * err_torch, 1e-6 * want64.abs().max()), (err, err_torch)


def _gated_reference(gate, up, activation, grad):
    act = torch.nn.functional.silu if activation == "silu" else torch.nn.functional.gelu
    a, b = gate.detach().clone().requires_grad_(), up.detach().clone().requires_grad_()
    y = act(a) * b
    y.backward(grad)
    return y, a.grad, b.grad


@needs_kernels
@pytest.mark.parametrize("activation", ["silu", "gelu"])
@pytest.mark.parametrize("shape", [(3, 5, 16), (7, 688), (1, 1, 3)])
def test_cpu_gated_activation_matches_autograd(activation, shape):
    torch.manual_seed(0)
    gate, up = 3 * torch.randn(shape), torch.randn(shape)
    gate.view(-1)[:2] = torch.tensor([-90.0, 90.0])[: gate.numel()]  # saturated σ and Φ
    grad = torch.randn(shape)
    a, b = gate.clone().requires_grad_(), up.clone().requires_grad_()
    y = cpu_kernels.gated_activation(a, b, activation)
    y.backward(grad)
    ref32 = _gated_reference(gate, up, activation, grad)
    ref64 = _gated_reference(gate.double(), up.double(), activation, grad.double())
    for got, want32, want64 in zip((y, a.grad, b.grad), ref32, ref64, strict=True):
        assert torch.isfinite(got).all()
        _no_worse_than_torch(got, want32, want64)


@needs_kernels
def test_cpu_gated_activation_on_packed_gate_up_views():
    """The two halves of one gate_up output are strided views: read in place, same result."""
    torch.manual_seed(1)
    gu = torch.randn(2, 6, 32, requires_grad=True)
    gate, up = gu.split(16, dim=-1)
    grad = torch.randn(2, 6, 16)
    cpu_kernels.gated_activation(gate, up, "silu").backward(grad)
    ref = gu.detach().clone().requires_grad_()
    g2, u2 = ref.split(16, dim=-1)
    (torch.nn.functional.silu(g2) * u2).backward(grad)
    assert_close(gu.grad, ref.grad, **F32)


@needs_kernels
def test_cpu_gated_activation_grad_for_one_input_only():
    gate = torch.randn(4, 8, requires_grad=True)
    up = torch.randn(4, 8)
    cpu_kernels.gated_activation(gate, up, "gelu").sum().backward()
    want = _gated_reference(gate, up, "gelu", torch.ones(4, 8))[1]
    assert_close(gate.grad, want, **F32)


@needs_kernels
@pytest.mark.parametrize("activation", ["silu", "gelu"])
@pytest.mark.parametrize("packed", [False, True])
def test_cpu_gated_activation_bfloat16_rounds_where_the_reference_rounds(activation, packed):
    """bfloat16: φ(gate) rounded, then the product; backward dy·φ and dy·up rounded, then φ's
    derivative applied. SiLU: bit for bit the reference's values and gradients. GELU: its erf
    in the far negative tail is a different float32 function from PyTorch's, so each output is
    held to the float64 truth, no worse than PyTorch's own bfloat16 error (twice it, or 2⁻¹⁰
    of the largest entry), as the float32 kernels are."""
    torch.manual_seed(4)
    gu = (3 * torch.randn(2, 40, 2 * 176)).bfloat16()
    gate, up = ((gu[..., :176], gu[..., 176:]) if packed
                else (gu[..., :176].contiguous(), gu[..., 176:].contiguous()))
    grad = torch.randn(2, 40, 176).bfloat16()
    a, b = gate.clone().requires_grad_(), up.clone().requires_grad_()
    y = cpu_kernels.gated_activation(a, b, activation)
    y.backward(grad)
    got = (y, a.grad, b.grad)
    ref16 = _gated_reference(gate, up, activation, grad)
    ref64 = _gated_reference(gate.double(), up.double(), activation, grad.double())
    for g, want16, want64 in zip(got, ref16, ref64, strict=True):
        assert g.dtype == torch.bfloat16
        if activation == "silu":
            assert torch.equal(g, want16)
        err = (g.double() - want64).abs().max()
        err_torch = (want16.double() - want64).abs().max()
        assert err <= max(2 * err_torch, 2.0**-10 * want64.abs().max()), (err, err_torch)
    a = gate.clone().requires_grad_()  # a gradient for gate only, and a second derivative
    (ga,) = torch.autograd.grad(cpu_kernels.gated_activation(a, up, activation).float().sum(),
                                a, create_graph=True)
    (gg,) = torch.autograd.grad(ga.float().sum(), a)
    assert ga.dtype == gg.dtype == torch.bfloat16 and torch.isfinite(gg.float()).all()


def test_cpu_gated_activation_rejects_bad_input():
    with pytest.raises(ValueError, match="activation='relu' is not allowed"):
        cpu_kernels.gated_activation(torch.randn(2, 4), torch.randn(2, 4), "relu")
    with pytest.raises(ValueError, match="shapes differ"):
        cpu_kernels.gated_activation(torch.randn(2, 4), torch.randn(2, 5), "silu")
    with pytest.raises(ValueError, match="gate is torch.bfloat16 and up torch.float32"):
        cpu_kernels.gated_activation(torch.randn(2, 4).bfloat16(), torch.randn(2, 4), "silu")


@needs_kernels
def test_c_code_refuses_an_activation_code_it_has_no_loop_for(monkeypatch):
    """A name added to ACTIVATIONS without C code is refused by the C functions, forward and
    backward, instead of being computed as GELU (what their `else` branch used to do)."""
    from blocklab.errors import KernelUnavailable
    monkeypatch.setitem(cpu_kernels.ACTIVATIONS, "gelu_tanh", 2)
    gate, up = torch.randn(2, 4), torch.randn(2, 4)
    with pytest.raises(KernelUnavailable, match="no code for activation 'gelu_tanh'"):
        cpu_kernels.gated_activation(gate, up, "gelu_tanh")
    with pytest.raises(KernelUnavailable, match="no code for activation 'gelu_tanh'"):
        cpu_kernels._gated_backward_impl(up, gate, up, "gelu_tanh", True, True)


def _rope_tables(r, per_batch):
    from blocklab.nn.position import rotary_cos_sin
    inv_freq = 1.0 / 10000 ** (torch.arange(0, r, 2).float() / r)
    positions = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]]) if per_batch \
        else torch.arange(5)
    return rotary_cos_sin(positions, inv_freq)  # [T, r] or [B, T, r]


@needs_kernels
@pytest.mark.parametrize("hd, r, per_batch", [(16, 16, False), (16, 8, True), (12, 6, False)])
def test_cpu_rope_matches_reference(hd, r, per_batch):
    from blocklab.nn.position import apply_rotary
    torch.manual_seed(0)
    cos, sin = _rope_tables(r, per_batch)
    c4 = cos[:, None] if per_batch else cos[None, None]
    s4 = sin[:, None] if per_batch else sin[None, None]
    # q as attention makes it: a [B, T, H, hd] projection viewed as [B, H, T, hd]
    q = torch.randn(2, 5, 3, hd).transpose(1, 2)
    g = torch.randn(2, 3, 5, hd)
    outs = []
    for fn in (lambda a: apply_rotary(a, a, cos, sin)[0],
               lambda a: cpu_kernels.rope_half_split(a, c4, s4)):
        a = q.clone().requires_grad_()
        y = fn(a)
        y.backward(g)
        outs.append((y, a.grad))
    assert torch.equal(outs[1][0], outs[0][0])  # same products, same rounding
    assert_close(outs[1][1], outs[0][1], **F32)


@needs_kernels
@pytest.mark.parametrize("hd, r, per_batch", [(16, 16, False), (16, 8, True), (12, 6, False)])
def test_cpu_rope_bfloat16_matches_reference_bit_for_bit(hd, r, per_batch):
    """bfloat16: rotated in float32 and rounded once, as the reference does, both ways (the
    gradient is the transposed rotation of the rounded incoming gradient, rounded once)."""
    from blocklab.nn.position import _reference_half_split, apply_rotary
    torch.manual_seed(0)
    cos, sin = _rope_tables(r, per_batch)
    c4 = cos[:, None] if per_batch else cos[None, None]
    s4 = sin[:, None] if per_batch else sin[None, None]
    q = (3 * torch.randn(2, 5, 3, hd)).bfloat16().transpose(1, 2)
    g = torch.randn(2, 3, 5, hd).bfloat16()
    c16, s16 = c4.bfloat16(), s4.bfloat16()

    def run(fn):
        a = q.clone().requires_grad_()
        y = fn(a)
        y.backward(g)
        return y, a.grad

    for got, want in ((lambda a: cpu_kernels.rope_half_split(a, c4, s4),
                       lambda a: _reference_half_split(a, c4, s4)),
                      (lambda a: apply_rotary(a, a, cos, sin, impl="fast")[0],
                       lambda a: _reference_half_split(a, c4, s4)),
                      (lambda a: cpu_kernels.rope_half_split(a, c16, s16),
                       lambda a: _reference_half_split(a, c16, s16))):
        (y, dx), (y_ref, dx_ref) = run(got), run(want)
        assert y.dtype == dx.dtype == torch.bfloat16
        assert torch.equal(y, y_ref) and torch.equal(dx, dx_ref)
    a = q.clone().requires_grad_()  # a second derivative runs the rotation again
    (ga,) = torch.autograd.grad((cpu_kernels.rope_half_split(a, c4, s4).float() ** 2).sum(), a,
                                create_graph=True)
    (gg,) = torch.autograd.grad(ga.float().sum(), a)
    assert gg.dtype == torch.bfloat16 and torch.isfinite(gg.float()).all()


@needs_kernels
def test_cpu_rope_second_derivative_and_bad_input():
    torch.manual_seed(0)
    cos, sin = _rope_tables(8, False)
    c4, s4 = cos[None, None], sin[None, None]
    q = torch.randn(1, 2, 5, 8, requires_grad=True)
    out = cpu_kernels.rope_half_split(q, c4, s4)
    (g,) = torch.autograd.grad((out * q).sum(), q, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), q)
    # d/dq of (R q)·q is (R + Rᵀ) q; its sum's gradient is (R + Rᵀ)ᵀ 1 = (Rᵀ + R) 1
    ones = torch.ones_like(q)
    from blocklab.nn.position import apply_rotary
    rt = cpu_kernels._rope(ones, c4, s4, inverse=True)
    assert_close(h, apply_rotary(ones, ones, cos, sin, impl="reference")[0] + rt, **F32)
    with pytest.raises(ValueError, match="do not fit"):
        cpu_kernels.rope_half_split(torch.randn(1, 1, 5, 4), c4, s4)
    with pytest.raises(ValueError, match="expected torch.float32"):
        cpu_kernels.rope_half_split(q, c4.double(), s4.double())
    with pytest.raises(ValueError, match="expected torch.float32 with a float32 x"):
        cpu_kernels.rope_half_split(q, c4.bfloat16(), s4.bfloat16())


@pytest.fixture
def fresh_kernels(monkeypatch, tmp_path):
    monkeypatch.setenv("BLOCKLAB_CACHE_DIR", str(tmp_path))
    cpu_kernels.reset()
    yield tmp_path
    monkeypatch.undo()
    cpu_kernels.reset()


def test_disabled_kernels_fall_back_to_fused(fresh_kernels, monkeypatch):
    monkeypatch.setenv("BLOCKLAB_CPU_KERNELS", "0")
    assert cpu_kernels.unavailable_reason() == "disabled by BLOCKLAB_CPU_KERNELS=0"
    assert backends.resolve("rms_norm", "fast", torch.randn(2, 8)) == "lean"
    ref, auto = _pair(False, impl="fast")
    x = torch.randn(5, 24)
    assert_close(auto(x), ref(x), **F32)
    with pytest.raises(RuntimeError, match="impl='cpu' cannot run here: disabled"):
        RMSNorm(8, impl="cpu")(torch.randn(2, 8))


def test_missing_compiler_falls_back_with_reason(fresh_kernels, monkeypatch):
    monkeypatch.setenv("CC", str(fresh_kernels / "no-such-cc"))
    reason = cpu_kernels.unavailable_reason()
    assert reason is not None and "no-such-cc" in reason
    assert backends.resolve("rms_norm", "fast", torch.randn(2, 8)) == "lean"


@needs_kernels
@pytest.mark.parametrize("which", ["rms", "add", "gated"])
def test_second_derivatives_go_through_the_reference(which):
    """create_graph=True gives a differentiable gradient: Hessian-vector products equal the
    reference's (float32, 1e-5)."""
    torch.manual_seed(0)
    x, r = torch.randn(3, 8), torch.randn(3, 8)
    w = 1 + 0.1 * torch.randn(8)
    act = torch.nn.functional.silu
    fast = {"rms": lambda a, b: cpu_kernels.rms_norm(a, w),
            "add": lambda a, b: cpu_kernels.add_rms_norm(a, b, w)[0],
            "gated": lambda a, b: cpu_kernels.gated_activation(a, b, "silu")}[which]
    def rms(h):
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    slow = {"rms": lambda a, b: rms(a), "add": lambda a, b: rms(a + b),
            "gated": lambda a, b: act(a) * b}[which]
    hvps = []
    for fn in (fast, slow):
        a, b = x.clone().requires_grad_(), r.clone().requires_grad_()
        out = fn(a, b)
        (g,) = torch.autograd.grad((out.square() + a.square()).sum(), a, create_graph=True)
        hvps.append(torch.autograd.grad(g.square().sum(), (a, b), allow_unused=True))
    for got, want in zip(*hvps, strict=True):
        if want is None:
            assert got is None or not got.abs().max()
        else:
            assert_close(got, want, atol=1e-5, rtol=1e-5)


# --- RMSNorm and residual-add + RMSNorm in bfloat16 -------------------------------------------
# Forward: bit for bit the reference's bfloat16 output (the kernel widens, computes in float32
# and rounds where the reference rounds; only the order of the x² sum differs, which moved no
# output over these draws). Gradients: held to the float64 truth, at most twice the error of
# the lean Function (the bfloat16 fallback before these kernels) plus 2⁻¹⁰ of the largest
# entry: both round each gradient once, from float32.
def _bf16_case(seed, shape, weight_dtype, strided=False):
    gen = torch.Generator().manual_seed(seed)
    x = (3 * torch.randn(shape, generator=gen)).bfloat16()
    if strided:  # a transposed view, as q and k arrive under qk-norm
        x = x.transpose(0, 1).contiguous().transpose(0, 1)
    w = (1 + 0.3 * torch.randn(shape[-1], generator=gen)).to(weight_dtype)
    g = torch.randn(shape, generator=gen).bfloat16()
    res = torch.randn(shape, generator=gen).bfloat16()
    return x, w, g, res


def _grads(fn, x, w, g):
    x, w = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    y = fn(x, w)
    y.backward(g)
    return y.detach(), x.grad, w.grad


def _assert_no_worse(got, lean_got, truth, what):
    err = (got.double() - truth).abs().max()
    err_lean = (lean_got.double() - truth).abs().max()
    assert err <= 2 * err_lean + 2.0**-10 * truth.abs().max(), (what, err, err_lean)


@needs_kernels
@pytest.mark.parametrize("cast", ["llama", "gemma"])
@pytest.mark.parametrize("unit_offset", [False, True])
@pytest.mark.parametrize("weight_dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape, strided", [((64, 200), False), ((6, 5, 48), True),
                                            ((3, 7), False)])
def test_cpu_rmsnorm_bfloat16_matches_reference(cast, unit_offset, weight_dtype, shape,
                                                strided):
    from blocklab.nn import lean
    from blocklab.nn.norm import reference_rms_norm
    x, w, g, _ = _bf16_case(0, shape, weight_dtype, strided)

    def kernel(a, b):
        return cpu_kernels.rms_norm(a, b, 1e-5, unit_offset, cast)

    def leaned(a, b):
        return lean.rms_norm(a, b, 1e-5, cast, unit_offset)

    y, dx, dw = _grads(kernel, x, w, g)
    y_ref = reference_rms_norm(x, w, 1e-5, cast, unit_offset)
    assert y.dtype == dx.dtype == torch.bfloat16 and dw.dtype == weight_dtype
    assert torch.equal(y, y_ref)
    _, dx_lean, dw_lean = _grads(leaned, x, w, g)
    _, dx64, dw64 = _grads(lambda a, b: reference_rms_norm(a, b, 1e-5, cast, unit_offset),
                           x.double(), w.double(), g.double())
    _assert_no_worse(dx, dx_lean, dx64, "dx")
    _assert_no_worse(dw, dw_lean, dw64, "dw")


@needs_kernels
@pytest.mark.parametrize("cast", ["llama", "gemma"])
@pytest.mark.parametrize("use_h", [True, False])
def test_cpu_add_rms_norm_bfloat16_matches_sum_then_reference(cast, use_h):
    from blocklab.nn import lean
    from blocklab.nn.norm import reference_rms_norm
    x, w, g, res = _bf16_case(1, (32, 96), torch.float32)
    gh = torch.randn(32, 96, generator=torch.Generator().manual_seed(2)).bfloat16()

    def run(fn):
        a, b = x.clone().requires_grad_(), res.clone().requires_grad_()
        ww = w.clone().requires_grad_()
        y, h = fn(a, b, ww)
        ((y.float() * g.float()).sum() + ((h.float() * gh.float()).sum() if use_h else 0)
         ).backward()
        return y.detach(), h.detach(), a.grad, b.grad, ww.grad

    y, h, da, db, dw = run(lambda a, b, ww: cpu_kernels.add_rms_norm(a, b, ww, 1e-5, False,
                                                                     cast))
    assert torch.equal(h, x + res)
    assert torch.equal(y, reference_rms_norm(x + res, w, 1e-5, cast))
    assert torch.equal(da, db)  # the one gradient of h, handed to both summands
    _, _, da_lean, _, dw_lean = run(lambda a, b, ww: lean.add_rms_norm(a, b, ww, 1e-5, cast))
    _, _, da64, _, dw64 = run(lambda a, b, ww: tuple(
        t.double() for t in reversed(_reference_add_f64(a, b, ww, cast))))
    _assert_no_worse(da, da_lean, da64, "dx")
    _assert_no_worse(dw, dw_lean, dw64, "dw")


def _reference_add_f64(a, b, w, cast):
    """(h, y) of the sum then RMSNorm in float64, from bfloat16 leaves (gradients flow back)."""
    from blocklab.nn.norm import reference_rms_norm
    h = a.double() + b.double()
    return h, reference_rms_norm(h, w.double(), 1e-5, cast)


@needs_kernels
def test_cpu_rmsnorm_bfloat16_second_derivative_goes_through_the_reference():
    from blocklab.nn.norm import reference_rms_norm
    x, w, _, _ = _bf16_case(3, (4, 16), torch.float32)
    outs = []
    for fn in (lambda a, b: cpu_kernels.rms_norm(a, b, 1e-5),
               lambda a, b: reference_rms_norm(a, b, 1e-5)):
        a, b = x.clone().requires_grad_(), w.clone().requires_grad_()
        (ga,) = torch.autograd.grad(fn(a, b).float().pow(2).sum(), (a,), create_graph=True)
        (gb,) = torch.autograd.grad(ga.float().sum(), (b,))
        outs.append((ga, gb))
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


@needs_kernels
def test_bfloat16_norms_stay_out_of_torch_compile(monkeypatch):
    """Under torch.compile bfloat16 runs the reference expression (Inductor fuses it); the C
    norms take it in eager mode only, and float32 keeps its custom ops."""
    x, w = torch.randn(2, 8).bfloat16(), torch.ones(8)
    assert cpu_kernels.unavailable_reason(x, w, bfloat16=True) is None
    assert "float32 only" in cpu_kernels.unavailable_reason(x, w)
    assert "float32 or torch.bfloat16" in cpu_kernels.unavailable_reason(x.half(), w,
                                                                         bfloat16=True)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert cpu_kernels.unavailable_reason(x, w, bfloat16=True) == \
        "bfloat16 takes the C kernels in eager mode only"
    assert cpu_kernels.unavailable_reason(x.float(), w, bfloat16=True) is None


@needs_kernels
def test_cpu_rmsnorm_bfloat16_rounds_nan_and_inf_as_pytorch_does():
    from blocklab.nn.norm import reference_rms_norm
    x = torch.tensor([[1.0, float("nan"), 2.0], [1e30, 3.0, -4.0], [0.0, 0.0, 0.0]]).bfloat16()
    w = torch.ones(3)
    got, want = cpu_kernels.rms_norm(x, w, 1e-6), reference_rms_norm(x, w, 1e-6)
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(got[~got.isnan()], want[~want.isnan()])
