"""Block Jacobians and residual-stream sensitivity (`blocklab.experiments.jacobian`), each
against an independent reference: the analytic RMSNorm Jacobian (`blocklab.reference`), the
exact Jacobian from `torch.autograd.functional.jacobian`, and finite differences of the loss."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from blocklab import reference as ref
from blocklab.config import ModelConfig
from blocklab.experiments import jacobian as jac
from blocklab.experiments.init import INITS
from blocklab.nn import DecoderLM
from blocklab.nn.norm import RMSNorm

EPS = 1e-6


def _basis(shape: tuple[int, ...]) -> list[torch.Tensor]:
    """The n standard basis vectors of a [B, T, d] space, float64: exact probes."""
    n = math.prod(shape)
    return [torch.eye(n, dtype=torch.float64)[k].reshape(shape) for k in range(n)]


def _hand_case(matrix: np.ndarray):
    """C09's blocks on x = [1, 3] (as [B, T, d] = [1, 1, 2]) with F(x) = A x, float64."""
    norm = RMSNorm(2, eps=EPS, impl="reference").double()
    a = torch.tensor(matrix, dtype=torch.float64)

    def pre(x):  # x + F(N(x))
        return x + norm(x) @ a.T

    def post(x):  # N(x + F(x))
        return norm(x + x @ a.T)

    return pre, post, torch.tensor([[[1.0, 3.0]]], dtype=torch.float64)


def _frobenius_per_entry(m: np.ndarray) -> float:
    return float(np.linalg.norm(m) / math.sqrt(m.shape[0]))


def test_hand_case_pre_and_post_jacobians_with_a_zero_sublayer_and_another():
    pre, post, x = _hand_case(np.zeros((2, 2)))
    probes = _basis(x.shape)
    # Pre-norm with F ≡ 0: y = x, J = I exactly.
    got = jac.identity_deviation(pre, x, probes)
    assert got.deviation == 0.0
    assert got.gain == pytest.approx(1.0, abs=1e-12)
    # Post-norm with F ≡ 0: y = N(x), J = J_N = I/s − x xᵀ/(d s³) (C06's analytic form).
    j_n = ref.rmsnorm_jacobian([1.0, 3.0], eps=EPS)
    s = math.sqrt((1 + 9) / 2 + EPS)
    assert j_n == pytest.approx(np.eye(2) / s - np.outer([1, 3], [1, 3]) / (2 * s**3), abs=1e-15)
    got = jac.identity_deviation(post, x, probes)
    assert got.deviation == pytest.approx(_frobenius_per_entry(j_n - np.eye(2)), abs=1e-12)
    assert got.gain == pytest.approx(_frobenius_per_entry(j_n), abs=1e-12)
    # A norm scales a stream of RMS √5 down to 1: nearly all of J_N is not the identity.
    assert got.deviation > 0.5
    # With a sublayer: the reference Jacobians.
    matrix = np.array([[0.3, -0.7], [0.2, 0.5]])  # not symmetric: A·J_N ≠ J_N·A
    pre, post, x = _hand_case(matrix)
    want = ref.residual_paths([1.0, 3.0], matrix, eps=EPS)  # (the same x: the same probes)
    for block, key in ((pre, "pre_jacobian"), (post, "post_jacobian")):
        got = jac.identity_deviation(block, x, probes)
        assert got.deviation == pytest.approx(
            _frobenius_per_entry(want[key] - np.eye(2)), abs=1e-12)
        assert got.gain == pytest.approx(_frobenius_per_entry(want[key]), abs=1e-12)


def _tiny_model(placement: str, n_layers: int = 3, init: str = "xavier") -> DecoderLM:
    cfg = ModelConfig(vocab_size=32, d_model=8, n_layers=n_layers, n_heads=2,
                      placement=placement, max_seq_len=8)
    model = DecoderLM(cfg).double()
    INITS[init](model, 0, n_layers)
    return model


def _loss_of(ids: torch.Tensor):
    """model -> its next-token loss on `ids` [B, T + 1]."""
    return lambda m: F.cross_entropy(m(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())


def _exact_jacobian(block, x: torch.Tensor) -> np.ndarray:
    """The whole n × n Jacobian of `block` at `x` (autograd, column by column): the reference
    the probes estimate."""
    full = torch.autograd.functional.jacobian(block, x.detach())  # [B, T, d, B, T, d]
    return full.reshape(x.numel(), x.numel()).numpy()


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_gaussian_probes_estimate_the_exact_frobenius_norm_of_a_real_block(placement):
    # A real decoder layer (attention mixes positions, SwiGLU, RMSNorm), float64, n = 2·4·8.
    model = _tiny_model(placement)
    loss_of = _loss_of(torch.randint(0, 32, (2, 5), generator=torch.Generator().manual_seed(0)))

    _, _, inputs = jac.residual_sensitivity(model, loss_of)

    def block(v):
        return model.layers[1](v, **inputs[1].kwargs)

    j = _exact_jacobian(block, inputs[1].x)
    n = j.shape[0]
    exact = jac.IdentityDeviation(_frobenius_per_entry(j - np.eye(n)), _frobenius_per_entry(j))
    # The basis gives the exact value, to rounding.
    by_basis = jac.identity_deviation(block, inputs[1].x, _basis(tuple(inputs[1].x.shape)))
    assert by_basis.deviation == pytest.approx(exact.deviation, rel=1e-10)
    assert by_basis.gain == pytest.approx(exact.gain, rel=1e-10)
    # 100 Gaussian probes: over 20 seeds the relative error of either norm had an sd under 2%
    # (at most 4.6%) on these blocks; 10% is five sds. The seed is fixed: deterministic.
    probes = jac.gaussian_probes(inputs[1].x, 100, torch.Generator().manual_seed(1))
    estimate = jac.identity_deviation(block, inputs[1].x, probes)
    assert estimate.deviation == pytest.approx(exact.deviation, rel=0.1)
    assert estimate.gain == pytest.approx(exact.gain, rel=0.1)


def test_layer_deviations_probes_every_layer_at_its_recorded_input():
    model = _tiny_model("pre")
    loss_of = _loss_of(torch.randint(0, 32, (2, 5), generator=torch.Generator().manual_seed(0)))

    _, _, inputs = jac.residual_sensitivity(model, loss_of)
    every = jac.layer_deviations(model, inputs, probes=3, seed=7)
    assert len(every) == 3  # the final norm's input is no layer's
    # The same probes, drawn layer after layer from one seeded stream, by hand.
    generator = torch.Generator().manual_seed(7)
    for layer, recorded, got in zip(model.layers, inputs, every, strict=False):
        def block(v, layer=layer, recorded=recorded):
            return layer(v, **recorded.kwargs)

        want = jac.identity_deviation(block, recorded.x,
                                      jac.gaussian_probes(recorded.x, 3, generator))
        assert got == want
    # No parameter gradient from probing: only the loss's backward left .grad.
    before = [p.grad.clone() for p in model.parameters()]
    jac.layer_deviations(model, inputs, probes=1, seed=0)
    assert all(p.grad.equal(b) for p, b in zip(model.parameters(), before, strict=True))


def test_no_probes_a_non_square_block_or_no_backward_pass_are_refused():
    x = torch.zeros(1, 1, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="at least one probe"):
        jac.identity_deviation(lambda v: v, x, [])
    with pytest.raises(ValueError, match="square"):
        jac.identity_deviation(lambda v: v[..., :1], x, [x])
    with pytest.raises(ValueError, match="no gradient"):
        jac.stream_sensitivity(torch.ones(1, 1, 2))


def test_residual_sensitivity_matches_finite_differences_of_the_loss():
    model = _tiny_model("pre", n_layers=3)
    loss_of = _loss_of(torch.randint(0, 32, (2, 6), generator=torch.Generator().manual_seed(2)))

    loss, sens, inputs = jac.residual_sensitivity(model, loss_of)
    assert len(sens) == len(inputs) == 4  # three layer inputs, then the final norm's
    with torch.no_grad():
        assert float(loss) == pytest.approx(float(loss_of(model)), rel=1e-12)
    for where, recorded in enumerate(inputs):
        x = recorded.x.detach()
        grad = recorded.x.grad
        # The definition, from the kept gradient.
        want = float(grad.norm() * x.pow(2).mean().sqrt())
        assert sens[where] == pytest.approx(want, rel=1e-12)
        # The kept gradient is ∂L/∂x_l: central differences along a random direction,
        # adding h·v to the stream where it enters (layer `where`, or the final norm). v has
        # the stream's RMS, so h is a relative step (x_0, an embedding, has RMS ≈ 0.02).
        v = torch.randn(x.shape, generator=torch.Generator().manual_seed(where),
                        dtype=torch.float64) * x.pow(2).mean().sqrt()
        module = model.layers[where] if where < 3 else model.norm
        h = 1e-5

        def shifted(step, module=module, v=v):
            handle = module.register_forward_pre_hook(
                lambda mod, args: (args[0] + step * v, *args[1:]))
            try:
                with torch.no_grad():
                    return float(loss_of(model))
            finally:
                handle.remove()

        slope = (shifted(h) - shifted(-h)) / (2 * h)
        assert slope == pytest.approx(float((grad * v).sum()), rel=1e-6, abs=1e-9)


def test_sensitivity_ignores_a_global_rescaling_that_a_norm_divides_out():
    # L = f(N(c·x)) does not depend on c > 0 (ε = 0), so ‖∂L/∂x‖·rms(x) must not either,
    # while ‖∂L/∂x‖ alone scales as 1/c.
    norm = RMSNorm(4, eps=0.0, impl="reference").double()
    w = torch.randn(4, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    base = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    found = []
    for c in (0.01, 1.0, 100.0):
        x = (c * base).requires_grad_(True)
        (norm(x) @ w).sin().sum().backward()
        found.append((jac.stream_sensitivity(x), float(x.grad.norm())))
    assert [s for s, _ in found] == pytest.approx([found[0][0]] * 3, rel=1e-10)
    assert found[0][1] == pytest.approx(100 * found[1][1], rel=1e-10)
