"""blocklab.nn.block: autograd Jacobians (float64) against blocklab.reference's closed forms, and
the three placements against their formulas."""

import numpy as np
import pytest
import torch
from torch import nn
from torch.autograd.functional import jacobian
from torch.testing import assert_close

from blocklab.nn.block import Block
from blocklab.nn.norm import LayerNorm, RMSNorm
from blocklab.reference.residual import residual_paths

D = 6
EPS = 1e-6
JAC = dict(atol=1e-10, rtol=1e-10)


pytestmark = pytest.mark.usefixtures("one_thread")


class Sublayer(nn.Module):
    """A sublayer F(x) = A x, or act(A x), that accepts the attention keywords Block passes."""

    def __init__(self, matrix: torch.Tensor, act=None) -> None:
        super().__init__()
        self.matrix = nn.Parameter(matrix)
        self.act = act

    def forward(self, x, rope=None, bias=None, cache=None):
        y = x @ self.matrix.T
        return y if self.act is None else self.act(y)


def _linear_block(placement, a, b):
    return Block(Sublayer(torch.from_numpy(a)), Sublayer(torch.from_numpy(b)),
                 RMSNorm(D, eps=EPS).double(), RMSNorm(D, eps=EPS).double(), placement=placement)


def _block_jacobian(block, x):
    return jacobian(lambda v: block(v[None, None])[0, 0], torch.from_numpy(x)).numpy()


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_block_jacobian_matches_reference(placement):
    # pre:  y = h + B N(h), h = x + A N(x);  post: y = N(h + B h), h = N(x + A x).
    # By the chain rule J = J(h; B) · J(x; A), each from residual_paths' closed form.
    rng = np.random.default_rng(0)
    x, a, b = rng.normal(size=D), rng.normal(size=(D, D)), rng.normal(size=(D, D))
    first = residual_paths(x, a, EPS)
    second = residual_paths(first[placement], b, EPS)
    expected = second[f"{placement}_jacobian"] @ first[f"{placement}_jacobian"]
    np.testing.assert_allclose(_block_jacobian(_linear_block(placement, a, b), x), expected,
                               **JAC)


def _tanh_sublayer(seed):
    generator = torch.Generator().manual_seed(seed)
    return Sublayer(torch.randn(D, D, dtype=torch.float64, generator=generator), torch.tanh)


def _gain_norm(seed):
    norm = LayerNorm(D, eps=EPS).double()
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(seed))
    return norm


@pytest.mark.parametrize("placement", ["pre", "post", "sandwich"])
@pytest.mark.parametrize("alpha", [1.0, 2.5])
def test_placement_formulas(placement, alpha):
    attn, ffn = _tanh_sublayer(0), _tanh_sublayer(1)
    na, nf, pa, pf = (_gain_norm(s) for s in range(4))
    sandwich = placement == "sandwich"
    block = Block(attn, ffn, na, nf, placement=placement, residual_scale=alpha,
                  attn_post_norm=pa if sandwich else None, ffn_post_norm=pf if sandwich else None)
    x = torch.randn(2, 3, D, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    if placement == "pre":
        h = alpha * x + attn(na(x))
        y = alpha * h + ffn(nf(h))
    elif placement == "post":
        h = na(alpha * x + attn(x))
        y = nf(alpha * h + ffn(h))
    else:
        h = alpha * x + pa(attn(na(x)))
        y = alpha * h + pf(ffn(nf(h)))
    assert_close(block(x), y, atol=1e-14, rtol=1e-14)


def test_block_rejects_inconsistent_parts():
    parts = (nn.Identity(), nn.Identity(), nn.Identity(), nn.Identity())
    with pytest.raises(ValueError, match="placement='middle'"):
        Block(*parts, placement="middle")
    with pytest.raises(ValueError, match="attn_post_norm and ffn_post_norm"):
        Block(*parts, placement="sandwich")
    with pytest.raises(ValueError, match="takes no attn_post_norm"):
        Block(*parts, placement="pre", attn_post_norm=nn.Identity())
