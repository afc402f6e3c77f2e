"""blocklab.nn.ffn against hand formulas, a closed-form Jacobian, Hugging Face and hand counts."""

import copy
import math

import pytest
import torch
import transformers.models.llama.modeling_llama as modeling_llama
from torch.autograd.functional import jacobian
from torch.testing import assert_close

from blocklab.config import FFNS, ModelConfig
from blocklab.nn import DecoderLM
from blocklab.nn.ffn import (
    ACTIVATIONS,
    FeedForward,
    GatedFeedForward,
    build_ffn,
    equal_param_gated_width,
    narrowed,
)
from blocklab.reference import swiglu_jacobian

from .conftest import EXACT, F64, randn

# The activations written out independently of torch.nn.functional.
FORMULAS = {
    "relu": lambda z: torch.where(z > 0, z, torch.zeros_like(z)),
    "gelu": lambda z: 0.5 * z * (1 + torch.erf(z / math.sqrt(2))),
    "gelu_tanh": lambda z: 0.5 * z * (1 + torch.tanh(math.sqrt(2 / math.pi)
                                                     * (z + 0.044715 * z**3))),
    "silu": lambda z: z / (1 + torch.exp(-z)),
    "sigmoid": lambda z: 1 / (1 + torch.exp(-z)),
    "identity": lambda z: z,
}


# --- activations -----------------------------------------------------------------------------
def test_activations_cover_every_ffn_and_match_formulas():
    assert set(ACTIVATIONS) == {act for _, act in FFNS.values()}
    z = torch.linspace(-6, 6, 241, dtype=torch.float64)
    for name, formula in FORMULAS.items():
        assert_close(ACTIVATIONS[name](z), formula(z), **F64, msg=name)


# --- every kind: shape, parameter count, function --------------------------------------------
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("kind", sorted(FFNS))
def test_every_kind_shape_and_parameter_count(kind, bias):
    d, m = 12, 20
    gated = FFNS[kind][0]
    for packed in ([False, True] if gated else [False]):
        ffn = build_ffn(kind, d, m, bias=bias, packed=packed)
        assert isinstance(ffn, GatedFeedForward if gated else FeedForward)
        assert ffn(randn(2, 3, d)).shape == (2, 3, d)  # [B, T, d_model]
        if gated:
            expected = 3 * d * m + ((2 * m + d) if bias else 0)
        else:
            expected = 2 * d * m + ((m + d) if bias else 0)
        assert sum(p.numel() for p in ffn.parameters()) == expected


@pytest.mark.parametrize("kind", sorted(FFNS))
def test_every_kind_matches_float64_formula(kind):
    d, m = 6, 10
    gated, act = FFNS[kind]
    phi = FORMULAS[act]
    ffn = build_ffn(kind, d, m, bias=True).double()
    x = randn(2, 3, d, dtype=torch.float64)
    with torch.no_grad():
        up = x @ ffn.up_proj.weight.T + ffn.up_proj.bias
        if gated:
            gate = x @ ffn.gate_proj.weight.T + ffn.gate_proj.bias
            hidden = phi(gate) * up
        else:
            hidden = phi(up)
        expected = hidden @ ffn.down_proj.weight.T + ffn.down_proj.bias
        assert_close(ffn(x), expected, **F64)


def test_swiglu_jacobian_matches_the_reference_closed_form():
    d, m = 5, 7
    ffn = GatedFeedForward(d, m, activation="silu").double()
    w_g, w_u, w_d = (p.weight.detach().numpy() for p in (ffn.gate_proj, ffn.up_proj, ffn.down_proj))
    x = randn(d, dtype=torch.float64, seed=5)
    closed = torch.from_numpy(swiglu_jacobian(x.numpy(), w_g, w_u, w_d))
    assert_close(jacobian(ffn, x), closed, atol=1e-10, rtol=1e-10)


# --- Hugging Face LlamaMLP -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "hidden_act"),
    [("swiglu", "silu"), ("geglu", "gelu"), ("geglu_tanh", "gelu_pytorch_tanh"),
     ("reglu", "relu")],
)
@pytest.mark.parametrize("bias", [False, True])
def test_gated_matches_hf_llama_mlp(kind, hidden_act, bias):
    d, m = 16, 40
    torch.manual_seed(0)
    cfg = modeling_llama.LlamaConfig(hidden_size=d, intermediate_size=m, num_attention_heads=4,
                                   num_key_value_heads=4, hidden_act=hidden_act,
                                   mlp_bias=bias)
    hf = modeling_llama.LlamaMLP(cfg)
    ours = build_ffn(kind, d, m, bias=bias)
    ours.load_state_dict(hf.state_dict())  # strict: the names are the same
    x = randn(2, 5, d)
    assert_close(ours(x), hf(x), atol=1e-6, rtol=1e-6)
    # bfloat16: exactly equal, since both run the same three Linear calls, the same activation
    # kernel and the same multiply in the same order; no tolerance is needed to hide anything.
    ours, hf = ours.to(torch.bfloat16), hf.to(torch.bfloat16)
    xb = x.to(torch.bfloat16)
    assert_close(ours(xb), hf(xb), **EXACT)  # dtypes too


# --- packed gate+up ---------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [False, True])
def test_packed_equals_separate_after_copying_weights(bias):
    d, m = 16, 24
    separate = GatedFeedForward(d, m, bias=bias)
    packed = GatedFeedForward(d, m, bias=bias, packed=True)
    with torch.no_grad():  # gate rows first, then up rows
        packed.gate_up_proj.weight.copy_(torch.cat([separate.gate_proj.weight,
                                                   separate.up_proj.weight]))
        if bias:
            packed.gate_up_proj.bias.copy_(torch.cat([separate.gate_proj.bias,
                                                     separate.up_proj.bias]))
        packed.down_proj.load_state_dict(separate.down_proj.state_dict())
    assert "gate_up_proj.weight" in packed.state_dict()
    assert "gate_proj.weight" not in packed.state_dict()
    x = randn(3, 4, d)
    # float32: one [2m, d] matmul may block its sums differently from two [m, d] ones.
    assert_close(packed(x), separate(x), atol=1e-6, rtol=1e-6)
    assert_close(packed.double()(x.double()), separate.double()(x.double()), **F64)


# --- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: FeedForward(8, 16, activation="tanh"), r"activation='tanh'.*'gelu'"),
        (lambda: GatedFeedForward(8, 16, activation="mish"), r"activation='mish'.*'silu'"),
        (lambda: FeedForward(0, 16), r"d_model=0 .*positive integer"),
        (lambda: GatedFeedForward(8, -1), r"d_ff=-1 "),
        (lambda: GatedFeedForward(8, 2.5), r"d_ff=2.5 "),
        (lambda: build_ffn("swishglu", 8, 16), r"kind='swishglu'.*'swiglu'"),
        (lambda: build_ffn("gelu", 8, 16, packed=True), r"packed=True.*'swiglu'"),
        (lambda: equal_param_gated_width(0), r"plain_width=0 "),
        (lambda: equal_param_gated_width(32, multiple_of=0), r"multiple_of=0 "),
        *[(lambda width=width: narrowed(GatedFeedForward(4, 8), width).__enter__(),
           "narrowed: width=") for width in (0, -1, 2.5, True, "8")],
    ],
)
def test_bad_arguments_raise_one_line(make, match):
    with pytest.raises(ValueError, match=match) as info:
        make()
    assert "\n" not in str(info.value)


# --- narrowed: nested widths -----------------------------------------------------------------
def _zero_dropped(ffn, k):
    """A copy of `ffn` whose channels k … d_ff−1 contribute nothing: down_proj's columns
    zeroed (the dropped channels then reach no output, whatever the activation)."""
    twin = copy.deepcopy(ffn)
    with torch.no_grad():
        twin.down_proj.weight[:, k:] = 0.0
    return twin


@pytest.mark.parametrize(("kind", "packed"), [("swiglu", False), ("swiglu", True), ("geglu", False),
                                              ("geglu", True), ("relu", False), ("gelu", False)])
@pytest.mark.parametrize("bias", [False, True])
def test_narrowed_equals_the_whole_ffn_with_dropped_channels_zeroed(kind, packed, bias):
    """Values and gradients: the FFN at its first k channels equals the whole FFN with the
    other channels' down columns zeroed; the dropped rows and columns get no gradient."""
    torch.manual_seed(0)
    d, m, k = 8, 12, 5
    ffn = build_ffn(kind, d, m, bias=bias, packed=packed).double()
    twin = _zero_dropped(ffn, k)
    x = randn(2, 3, d, dtype=torch.float64)
    with narrowed(ffn, k):
        out = ffn(x)
    assert ffn.width is None  # restored
    assert_close(out, twin(x), **F64)
    out.square().sum().backward()
    twin(x).square().sum().backward()
    down = ffn.down_proj.weight.grad
    assert_close(down[:, :k], twin.down_proj.weight.grad[:, :k], **F64)
    assert torch.count_nonzero(down[:, k:]) == 0
    inputs = ["gate_up_proj"] if packed else (["gate_proj", "up_proj"] if FFNS[kind][0]
                                             else ["up_proj"])
    for name in inputs:
        grad, want = getattr(ffn, name).weight.grad, getattr(twin, name).weight.grad
        rows = (torch.cat([torch.arange(k), torch.arange(m, m + k)]) if packed
                else torch.arange(k))
        assert_close(grad[rows], want[rows], **F64)
        dropped = torch.ones(grad.shape[0], dtype=torch.bool)
        dropped[rows] = False
        assert torch.count_nonzero(grad[dropped]) == 0


def test_narrowed_reaches_every_layer_and_restores_on_error():
    model = DecoderLM(ModelConfig(vocab_size=32, d_model=16, n_layers=3, n_heads=2,
                                  ffn="swiglu", d_ff=24))
    ffns = [layer.ffn for layer in model.layers]
    with narrowed(model, 6):
        assert [f.width for f in ffns] == [6, 6, 6]
    with pytest.raises(RuntimeError, match="inside"):
        with narrowed(model, 12):
            raise RuntimeError("inside")
    assert [f.width for f in ffns] == [None, None, None]
    with narrowed(model, 24):  # the whole width: nothing sliced
        assert [f.width for f in ffns] == [None, None, None]
    tokens = torch.randint(0, 32, (2, 5), generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), narrowed(model, 24):
        assert torch.equal(model(tokens), model(tokens))


def test_narrowed_bf16_is_close_to_float32():
    torch.manual_seed(2)
    ffn = GatedFeedForward(16, 32)
    x = randn(4, 16)
    with narrowed(ffn, 8):
        full = ffn(x)
        half = ffn(x.bfloat16())
    assert half.dtype == torch.bfloat16
    assert_close(half.float(), full, atol=2e-2 * full.abs().max().item(), rtol=0)
