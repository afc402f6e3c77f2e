"""Property: every backend computes the reference's function and every gradient, for every FFN
kind of `blocklab.config.FFNS`, in float32 and bfloat16; and an implementation runs only what
its registered `Capabilities` declare.

One example is a small pre-norm step on random shapes: RMSNorm (random cast order and gain
form), the FFN (packed gate_up or not), residual add + RMSNorm, and half_split RoPE of q and k
at a random rotary width:

    h = norm1(x);  y, s = norm2.forward_add(ffn(h), x);  q', k' = rope(q, k)

Each backend's modules are loaded with the reference modules' weights; the outputs y, s, q', k'
and the gradients of x, q, k and of every parameter are compared with the reference's (a
weighted sum of the outputs is differentiated). Parameters stay float32 in both precisions, as
in `DecoderLM(precision="bf16")`.

"compiled" is checked eagerly: modules with impl="compiled" resolve each op as they do inside
torch.compile (`COMPILED_KERNELS`) and run the kernel chosen; that the compiled graph calls the
same kernels is tested in test_cpu_kernel_ops.py and test_backends.py.

Tolerance (`assert_matches_reference`): each tensor's largest error from the reference's at
most TOLERANCE × the reference tensor's largest magnitude, plus twice the reference's own error
from a float64 evaluation of the same step. The second term is for cancellation: a gradient
that is a small difference of large terms (the gain gradient of the first norm, which reaches
it through the FFN's narrow hidden layer) rounds far from the truth in either implementation,
and the reference's own error measures how far. TOLERANCE is 1e-5 in float32 (the C kernels sum
x² in their own order and take exp and erf from their own vector maths) and 2⁻⁵ in bfloat16,
four units in the last place of its 8-bit significand (the lean norms do not round
intermediate gradients to bfloat16 as autograd on the reference does). Over 1,200 random
examples of "fast", half of them at the smallest shapes drawn here, the largest excess over the
second term was 5.3e-7 (float32) and 0.0069 (bfloat16) of the tensor's magnitude. Shapes stay
at d_ff >= 8 and two rows or more: with one to three hidden units and one row, a bfloat16
gain gradient hangs on a few rounded dot products, and the two implementations were seen to
differ by 10% of its magnitude beyond twice the reference's own error.
"""

import copy
import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from blocklab.config import FFNS
from blocklab.errors import KernelUnavailable
from blocklab.nn import backends, cpu_kernels
from blocklab.nn.ffn import ACTIVATIONS, KERNEL_ACTIVATIONS, GatedFeedForward, build_ffn
from blocklab.nn.norm import RMSNorm
from blocklab.nn.position import apply_rotary, rotary_cos_sin

TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 2.0**-5}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
PROPERTY = settings(max_examples=10, deadline=None)

pytestmark = pytest.mark.usefixtures("one_thread")


@st.composite
def steps(draw):
    """The shapes and options of one example (tiny, so 60 cases × 10 examples stay fast)."""
    head_dim = draw(st.sampled_from([4, 8, 12]))
    return {
        "batch": draw(st.integers(1, 2)), "seq": draw(st.integers(2, 5)),
        "d_model": draw(st.sampled_from([8, 16, 24])), "d_ff": draw(st.integers(8, 40)),
        "packed": draw(st.booleans()), "cast": draw(st.sampled_from(["llama", "gemma"])),
        "unit_offset": draw(st.booleans()), "heads": draw(st.integers(1, 3)),
        "head_dim": head_dim,
        "rotary_dim": draw(st.sampled_from([r for r in (2, 4, 8, 12) if r <= head_dim])),
        "seed": draw(st.integers(0, 2**16)),
    }


def _modules(kind: str, impl: str, ex: dict) -> torch.nn.ModuleDict:
    gated = FFNS[kind][0]
    return torch.nn.ModuleDict({
        "norm1": RMSNorm(ex["d_model"], cast=ex["cast"], unit_offset=ex["unit_offset"],
                         impl=impl),
        "ffn": build_ffn(kind, ex["d_model"], ex["d_ff"], packed=ex["packed"] and gated,
                         impl=impl),
        "norm2": RMSNorm(ex["d_model"], cast=ex["cast"], unit_offset=ex["unit_offset"],
                         impl=impl)})


def _step(modules: torch.nn.ModuleDict, impl: str, inputs: dict, grads: dict,
          cos: torch.Tensor, sin: torch.Tensor) -> dict[str, torch.Tensor]:
    """Outputs and the gradients of inputs and parameters, by name."""
    modules.zero_grad(set_to_none=True)
    leaves = {name: t.detach().clone().requires_grad_() for name, t in inputs.items()}
    h = modules["norm1"](leaves["x"])
    y, s = modules["norm2"].forward_add(modules["ffn"](h), leaves["x"])
    q, k = apply_rotary(leaves["q"], leaves["k"], cos, sin, impl=impl)
    outs = {"y": y, "s": s, "q_rot": q, "k_rot": k}
    loss = sum((out.double() * grads[name]).sum() for name, out in outs.items())
    loss.backward()
    result = {name: out.detach() for name, out in outs.items()}
    result.update({f"{name}.grad": t.grad for name, t in leaves.items()})
    result.update({f"{name}.grad": p.grad for name, p in modules.named_parameters()})
    return result


def run_step(kind: str, backend: str, dtype: torch.dtype, ex: dict):
    """(got, want, truth): `_step` under `backend`, under the reference, and under the
    reference in float64 (weights and the dtype's rounded inputs widened), on the same weights
    and data, for one example."""
    torch.manual_seed(ex["seed"])
    ref = _modules(kind, "reference", ex)
    with torch.no_grad():  # gains away from 1, so that their gradients matter
        for name, p in ref.named_parameters():
            if name.startswith("norm"):
                p.add_(0.1 * torch.randn_like(p))
    new = _modules(kind, backend, ex)
    new.load_state_dict(ref.state_dict())
    b, t, d, hd = ex["batch"], ex["seq"], ex["d_model"], ex["head_dim"]
    shape_q = (b, ex["heads"], t, hd)
    inputs = {"x": torch.randn(b, t, d).to(dtype),
              # q as attention makes it: the transposed view of a [B, T, H, hd] projection
              "q": torch.randn(b, t, ex["heads"], hd).transpose(1, 2).to(dtype),
              "k": torch.randn(shape_q).to(dtype)}
    grads = {"y": torch.randn(b, t, d), "s": torch.randn(b, t, d),
             "q_rot": torch.randn(shape_q), "k_rot": torch.randn(shape_q)}
    r = ex["rotary_dim"]
    inv_freq = 1.0 / 10000 ** (torch.arange(0, r, 2).float() / r)
    cos, sin = rotary_cos_sin(torch.arange(t), inv_freq)
    wide = {name: t.double() for name, t in inputs.items()}
    return (_step(new, backend, inputs, grads, cos, sin),
            _step(ref, "reference", inputs, grads, cos, sin),
            _step(copy.deepcopy(ref).double(), "reference", wide, grads, cos, sin))


def assert_matches_reference(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor],
                             truth: dict[str, torch.Tensor], dtype: torch.dtype) -> None:
    """Every output and gradient of `got` within TOLERANCE[dtype] × the reference tensor's
    largest magnitude of `want`'s, plus twice the reference's own error from the float64
    `truth` (where the computation cancels, both round far from the truth and from each other);
    the first that is not raises, naming it."""
    tol = TOLERANCE[dtype]
    assert got.keys() == want.keys() == truth.keys()
    for name, w in want.items():
        g = got[name]
        assert (g is None) == (w is None), f"{name}: {g is None=} but {w is None=}"
        if w is None:
            continue
        assert g.dtype == w.dtype and g.shape == w.shape, f"{name}: {g.dtype} {g.shape}"
        scale = w.abs().max().item()
        own = (w.double() - truth[name]).abs().max().item()
        err = (g.double() - w.double()).abs().max().item()
        assert err <= tol * scale + 2 * own, \
            f"{name}: max error {err:.3g} > {tol:.3g} × {scale:.3g} + 2 × {own:.3g}"


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("backend", backends.BACKENDS)
@pytest.mark.parametrize("kind", sorted(FFNS))
@PROPERTY
@given(ex=steps())
def test_backend_matches_reference_values_and_every_gradient(kind, backend, dtype, ex):
    got, want, truth = run_step(kind, backend, DTYPES[dtype], ex)
    assert_matches_reference(got, want, truth, DTYPES[dtype])


# --- what an implementation declares -----------------------------------------------------------
_SQRT_HALF = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


class _GeluGradientForAll(torch.autograd.Function):
    """The bug a declaration must not let through: the forward is right for every activation,
    the backward knows SiLU's derivative and treats every other activation as exact GELU (what
    the removed lean gated activation and the C kernel's `else` branch did)."""

    @staticmethod
    def forward(ctx, gate, up, activation):
        ctx.save_for_backward(gate, up)
        ctx.activation = activation
        return ACTIVATIONS[activation](gate) * up

    @staticmethod
    def backward(ctx, grad):
        gate, up = ctx.saved_tensors
        z = gate.float()
        if ctx.activation == "silu":
            s = torch.sigmoid(z)
            act, dact = z * s, s * (1 + z * (1 - s))
        else:
            cdf = 0.5 * (1 + torch.erf(z * _SQRT_HALF))
            act, dact = z * cdf, cdf + z * torch.exp(-0.5 * z * z) * _INV_SQRT_2PI
        g = grad.float()
        return (g * up * dact).to(gate.dtype), (g * act).to(up.dtype), None


def _register_buggy(monkeypatch, activations: frozenset[str]) -> None:
    """The buggy Function as a lean gated activation declaring `activations`, made "fast"'s
    fallback (the C kernel, tried first, declares silu and gelu only)."""
    monkeypatch.setitem(backends._REGISTRY, ("gated_activation", "lean"), backends.Registered(
        lambda gate, up, activation: _GeluGradientForAll.apply(gate, up, activation),
        dataclasses.replace(backends.ANYWHERE, activations=activations)))
    monkeypatch.setitem(backends.FAST_FALLBACK, "gated_activation", "lean")


EXAMPLE = {"batch": 2, "seq": 3, "d_model": 8, "d_ff": 12, "packed": False, "cast": "llama",
           "unit_offset": False, "heads": 2, "head_dim": 8, "rotary_dim": 8, "seed": 0}


def test_the_property_check_fails_for_an_activation_declared_without_its_gradient(
        monkeypatch):
    """Declaring tanh-GELU for an implementation whose backward is exact GELU's: "fast" runs it
    for GeGLU-tanh, the outputs still agree, and the check fails on a gradient."""
    _register_buggy(monkeypatch, KERNEL_ACTIVATIONS | {"gelu_tanh"})
    gate = torch.randn(2, 4)
    assert backends.resolve("gated_activation", "fast", gate, gate, "gelu_tanh") == "lean"
    got, want, truth = run_step("geglu_tanh", "fast", torch.float32, EXAMPLE)
    values = [{k: v for k, v in d.items() if not k.endswith(".grad")} for d in (got, want, truth)]
    assert_matches_reference(*values, torch.float32)  # the forward is right
    with pytest.raises(AssertionError, match=r"\.grad: max error"):
        assert_matches_reference(got, want, truth, torch.float32)
    # the same implementation is right where its backward is: SiLU (bfloat16, where "fast"
    # reaches it; in float32 the C kernel comes first)
    assert_matches_reference(*run_step("swiglu", "fast", torch.bfloat16, EXAMPLE),
                             torch.bfloat16)


def test_an_undeclared_activation_never_reaches_the_implementation(monkeypatch):
    """The same buggy implementation declaring only what it computes right: "fast" gives
    tanh-GELU to the reference, and the property holds."""
    _register_buggy(monkeypatch, frozenset({"silu"}))
    gate = torch.randn(2, 4).bfloat16()
    assert backends.resolve("gated_activation", "fast", gate, gate, "gelu_tanh") == "reference"
    assert_matches_reference(*run_step("geglu_tanh", "fast", torch.bfloat16, EXAMPLE),
                             torch.bfloat16)
    with pytest.raises(KernelUnavailable, match="unsupported activation 'gelu_tanh'"):
        backends.resolve("gated_activation", "lean", gate, gate, "gelu_tanh")


@pytest.mark.parametrize("activation", sorted(set(ACTIVATIONS) - KERNEL_ACTIVATIONS))
def test_backends_fall_back_and_named_kernels_refuse_an_undeclared_activation(activation):
    gate, up = torch.randn(2, 4), torch.randn(2, 4)
    for backend in backends.BACKENDS:
        assert backends.resolve("gated_activation", backend, gate, up, activation) \
            == "reference"
    for name in ("cpu", "triton"):
        with pytest.raises(KernelUnavailable) as info:
            backends.resolve("gated_activation", name, gate, up, activation)
        message = str(info.value)
        assert message == (f"gated_activation impl={name!r} cannot run here: unsupported "
                           f"activation {activation!r} (it supports gelu, silu); use "
                           "impl='fast' or 'reference'")
    ffn = GatedFeedForward(4, 6, activation=activation, impl="cpu")
    with pytest.raises(KernelUnavailable, match=f"unsupported activation {activation!r}"):
        ffn(torch.randn(1, 2, 4))


def test_resolve_needs_the_activation_to_check_it():
    with pytest.raises(ValueError, match="activation is required"):
        backends.resolve("gated_activation", "fast", torch.randn(2, 4), torch.randn(2, 4))


def test_capabilities_name_the_unsupported_value_and_what_is_supported():
    kernel = backends.Capabilities(dtypes=frozenset({torch.float32}),
                                   devices=frozenset({"cuda"}),
                                   activations=frozenset({"silu", "gelu"}))
    x = torch.randn(2, 3)
    assert kernel.refusal(x, "relu") == "activation 'relu' (it supports gelu, silu)"
    assert kernel.refusal(x.double(), "silu") == "dtype float64 (it supports float32)"
    assert kernel.refusal(x, "silu") == "device 'cpu' (it supports cuda)"
    assert backends.ANYWHERE.refusal(x.bfloat16(), None) is None
    with pytest.raises(KernelUnavailable, match=r"rms_norm impl='cpu' cannot run here: "
                                                r"unsupported dtype float16 \(it supports "
                                                r"bfloat16, float32\)"):
        backends.resolve("rms_norm", "cpu", x.half(), torch.ones(3))
    with pytest.raises(KernelUnavailable, match=r"gated_activation impl='cpu' cannot run "
                                                r"here: unsupported dtype float64 \(it "
                                                r"supports bfloat16, float32\)"):
        backends.resolve("gated_activation", "cpu", x.double(), x.double(), "silu")
    assert backends.resolve("rms_norm", "fast", x.half(), torch.ones(3)) == "lean"


def test_kernel_declarations_match_the_kernels_own_tables():
    """The set ffn.py declares is the set each kernel module has code for."""
    from blocklab.nn import triton_kernels
    assert KERNEL_ACTIVATIONS == frozenset(cpu_kernels.ACTIVATIONS) == triton_kernels.ACTIVATIONS
    for name in ("cpu", "triton"):
        assert backends.capabilities("gated_activation", name).activations == KERNEL_ACTIVATIONS
    assert backends.capabilities("gated_activation", "reference").activations is None
    assert KERNEL_ACTIVATIONS <= set(ACTIVATIONS)


def test_fast_on_cpu_float32_runs_the_c_kernels_for_the_kernel_activations():
    """The default training path (backend "fast", CPU, float32) is unchanged: the C kernel for
    SiLU and GELU gates wherever the kernels build."""
    gate = torch.randn(2, 4)
    want = "cpu" if cpu_kernels.available() else "reference"
    for activation in sorted(KERNEL_ACTIVATIONS):
        assert backends.resolve("gated_activation", "fast", gate, gate, activation) == want
        assert backends.resolve("gated_activation", "compiled", gate, gate, activation) == want


def test_a_new_gated_activation_needs_only_its_ffn_kind_and_its_function(monkeypatch):
    """Adding a gated FFN to the model takes two entries: its kind in `blocklab.config.FFNS`
    and its function in `blocklab.nn.ffn.ACTIVATIONS`. No kernel declares it, so every backend
    runs the reference expression, and the property holds."""
    from blocklab.config import ModelConfig
    from blocklab.nn import DecoderLM
    monkeypatch.setitem(FFNS, "softglu", (True, "softplus"))
    monkeypatch.setitem(ACTIVATIONS, "softplus", torch.nn.functional.softplus)
    for backend in backends.BACKENDS:
        for dtype in DTYPES.values():
            assert_matches_reference(*run_step("softglu", backend, dtype, EXAMPLE), dtype)
    model = DecoderLM(ModelConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2, d_ff=24,
                                  max_seq_len=8, ffn="softglu"))
    assert model.backends()["gated_activation"] == "reference"
    model(torch.randint(0, 32, (1, 5))).sum().backward()
