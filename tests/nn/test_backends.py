"""blocklab.nn.backends and DecoderLM(backend=..., precision=...): every backend computes the
reference's function, values and gradients, in float32 and bfloat16; `backends()` names what
runs; bfloat16 keeps float32 weights, gradients and logits.

Tolerances: float32, 1e-6 relative to the largest magnitude of the tensor compared (F.rms_norm's
backward and Inductor's fused code sum in their own order, so bit equality is not expected);
bfloat16, 2⁻⁶ of the largest magnitude (two units in the last place of bfloat16's 8-bit
significand: Inductor keeps fused intermediates in float32).
"""

import pytest
import torch

from blocklab.config import ModelConfig
from blocklab.errors import InputError
from blocklab.nn import DecoderLM, RMSNorm, backends
from blocklab.nn.linear import Linear
from blocklab.nn.norm import library_rms_norm, reference_rms_norm

from .conftest import randn

F32_TOL = 1e-6
BF16_TOL = 2.0**-6
TINY = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48,
            max_seq_len=32, position="rope")


pytestmark = pytest.mark.usefixtures("one_thread")


def _close(got: torch.Tensor, want: torch.Tensor, tol: float, what: str) -> None:
    scale = want.abs().max().item()
    err = (got.float() - want.float()).abs().max().item()
    assert err <= tol * scale, f"{what}: max error {err:.3g} > {tol:.3g} × {scale:.3g}"


def _pair(backend: str, precision: str, packed: bool = False, **changes):
    cfg = ModelConfig(**{**TINY, **changes})
    torch.manual_seed(0)
    ref = DecoderLM(cfg, backend="reference", precision=precision, packed_qkv=packed,
                    packed_gate_up=packed)
    new = DecoderLM(cfg, backend=backend, precision=precision, packed_qkv=packed,
                    packed_gate_up=packed)
    new.load_state_dict(ref.state_dict())
    return ref, new


def _run(model: DecoderLM, ids: torch.Tensor):
    model.zero_grad(set_to_none=True)
    logits = model(ids[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
    loss.backward()
    return logits.detach(), {n: p.grad for n, p in model.named_parameters()}


def _ids(seed=1):
    return torch.randint(0, TINY["vocab_size"], (2, 13),
                         generator=torch.Generator().manual_seed(seed))


CONFIGS = {
    "llama": {},
    "packed": dict(packed=True),
    "gemma_like": dict(placement="sandwich", norm_unit_offset=True, norm_cast="gemma",
                       ffn="geglu", qk_norm=True, tie_embeddings=True),
    "post_layernorm_gelu": dict(placement="post", norm="layernorm", ffn="gelu",
                                position="learned"),
}


# "compiled" once, in bf16: each compile costs seconds (test_model compiles the fp32 one).
CASES = [("fast", config, precision) for config in CONFIGS for precision in ("fp32", "bf16")]


@pytest.mark.parametrize("backend,config,precision", CASES + [("compiled", "llama", "bf16")])
def test_backend_matches_reference_values_and_gradients(backend, config, precision):
    torch.compiler.reset()
    ref, model = _pair(backend, precision, **CONFIGS[config])
    ids = _ids()
    tol = F32_TOL if precision == "fp32" else BF16_TOL
    want_logits, want_grads = _run(ref, ids)
    got_logits, got_grads = _run(model, ids)
    _close(got_logits, want_logits, tol, "logits")
    for name, grad in want_grads.items():
        assert got_grads[name].dtype == torch.float32, name
        _close(got_grads[name], grad, tol, name)


@pytest.mark.parametrize("backend", backends.BACKENDS)
def test_backends_names_what_runs(backend):
    _, model = _pair(backend, "fp32")
    norm = "F.rms_norm" if backend == "fast" else "reference"
    assert model.backends() == {"rms_norm": norm, "attention": "sdpa"}
    model.norm.impl = "reference"  # the final norm alone
    assert model.backends()["rms_norm"] == ", ".join(sorted({norm, "reference"}))
    # Gemma's norms, a softcap and LayerNorm run no library kernel.
    _, gemma = _pair("fast", "fp32", **CONFIGS["gemma_like"], attn_logit_softcap=50.0)
    assert gemma.backends() == {"rms_norm": "reference", "attention": "math"}
    _, post = _pair("fast", "fp32", **CONFIGS["post_layernorm_gelu"])
    assert post.backends() == {"attention": "sdpa"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("gain_dtype", ["float32", "same"])
def test_library_rms_norm_gives_the_reference_values_and_gradients(dtype, gain_dtype):
    """F.rms_norm under "fast": the reference's values bit for bit, its gradients within
    rounding, whether the gain is float32 (as under precision "bf16") or x's dtype."""
    x = randn(3, 5, 24, dtype=dtype)
    g = randn(3, 5, 24, dtype=dtype, seed=1)
    weight = 1 + 0.1 * randn(24, seed=2)
    weight = weight.to(dtype) if gain_dtype == "same" else weight
    results = []
    for fn in (reference_rms_norm, library_rms_norm):
        xx, ww = x.clone().requires_grad_(), weight.clone().requires_grad_()
        y = fn(xx, ww, 1e-6)
        y.backward(g)
        results.append((y, xx.grad, ww.grad))
    (want, want_dx, want_dw), (got, got_dx, got_dw) = results
    assert got.dtype == dtype and torch.equal(got, want)
    tol = F32_TOL if dtype in (torch.float32, torch.float64) else 2.0**-6
    _close(got_dx, want_dx, tol, "x.grad")
    _close(got_dw, want_dw, tol, "weight.grad")


def test_bf16_keeps_float32_weights_and_gradients_and_computes_in_bfloat16():
    _, model = _pair("fast", "bf16")
    seen = {}
    model.layers[0].ffn.down_proj.register_forward_hook(
        lambda m, args, out: seen.update(x=args[0].dtype, y=out.dtype))
    logits, grads = _run(model, _ids())
    assert seen == {"x": torch.bfloat16, "y": torch.bfloat16}
    assert logits.dtype == torch.float32
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert all(g.dtype == torch.float32 for g in grads.values())
    assert model.compute_dtype() == torch.bfloat16
    ids = _ids()[:, :5]  # generation matches the full recompute
    assert torch.equal(model.generate(ids, 4), model.generate(ids, 4, use_cache=False))


def test_bf16_is_close_to_fp32():
    torch.manual_seed(0)
    cfg = ModelConfig(**TINY)
    fp32 = DecoderLM(cfg)
    bf16 = DecoderLM(cfg, precision="bf16")
    bf16.load_state_dict(fp32.state_dict())
    ids = _ids()
    _close(_run(bf16, ids)[0], _run(fp32, ids)[0], 2.0**-5, "logits")


def test_linear_follows_its_input_dtype_and_returns_float32_weight_gradients():
    torch.manual_seed(0)
    layer = Linear(8, 4)
    x = torch.randn(3, 8)
    y = layer(x.bfloat16())
    assert y.dtype == torch.bfloat16
    y.float().sum().backward()
    assert layer.weight.grad.dtype == torch.float32
    want = torch.nn.functional.linear(x.bfloat16(), layer.weight.bfloat16(),
                                      layer.bias.bfloat16())
    assert torch.equal(y, want)
    assert torch.equal(layer(x), torch.nn.functional.linear(x, layer.weight, layer.bias))


@pytest.mark.parametrize("make,match", [
    (lambda: DecoderLM(ModelConfig(**TINY), backend="turbo"),
     r"backend='turbo' is not allowed; expected one of"),
    (lambda: DecoderLM(ModelConfig(**TINY), precision="fp16"),
     r"precision='fp16' is not allowed; expected one of"),
    (lambda: RMSNorm(8, impl="fused"), r"RMSNorm: impl='fused' is not allowed; expected a backend"),
])
def test_bad_backend_precision_or_impl_is_one_clear_line(make, match):
    with pytest.raises(InputError, match=match) as info:
        make()
    assert "\n" not in str(info.value)
