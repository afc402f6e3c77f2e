"""blocklab.nn.backends and DecoderLM(backend=..., precision=...): every backend computes the
reference's function, values and gradients, in float32 and bfloat16; `backends()` names what
actually ran; bfloat16 keeps float32 weights, gradients and logits.

Tolerances: float32, 1e-6 relative to the largest magnitude of the tensor compared (the C
kernels sum x² in their own order, so bit equality is not expected); bfloat16, 2⁻⁶ of the
largest magnitude (two units in the last place of bfloat16's 8-bit significand: the lean
Functions do not round intermediate gradients to bfloat16 as autograd on the reference does,
and Inductor keeps fused intermediates in float32).
"""

import dataclasses

import pytest
import torch

from blocklab.config import ModelConfig
from blocklab.errors import InputError, KernelUnavailable
from blocklab.nn import DecoderLM, backends
from blocklab.nn.linear import Linear

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
    "packed": dict(packed=True),  # the gated kernel reads the halves of gate_up in place
    "gemma_like": dict(placement="sandwich", norm_unit_offset=True, norm_cast="gemma",
                       ffn="geglu", qk_norm=True, tie_embeddings=True),
    "post_layernorm_gelu": dict(placement="post", norm="layernorm", ffn="gelu",
                                position="learned"),
}


# "compiled" on one config: each compile costs seconds, and the ops it traces are the same.
CASES = [("fast", config) for config in CONFIGS] + [("compiled", "llama")]


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("backend,config", CASES)
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


def _spy(monkeypatch) -> set[tuple[str, str]]:
    """Record (op, implementation) of every registered implementation that is called."""
    calls: set[tuple[str, str]] = set()
    for op in backends.OPS:
        for name in backends.implementations(op):
            entry = backends._REGISTRY[op, name]

            def recorder(*args, _fn=entry.fn, _key=(op, name)):
                calls.add(_key)
                return _fn(*args)

            monkeypatch.setitem(backends._REGISTRY, (op, name),
                                dataclasses.replace(entry, fn=recorder))
    return calls


@pytest.mark.parametrize("backend,precision", [("reference", "fp32"), ("fast", "fp32"),
                                               ("fast", "bf16"), ("compiled", "fp32")])
def test_backends_names_what_runs(monkeypatch, backend, precision):
    torch.compiler.reset()
    calls = _spy(monkeypatch)
    _, model = _pair(backend, precision)
    _run(model, _ids())
    said = model.backends()
    assert said.pop("attention") == "sdpa"  # fp32, or bf16 under the static calibration
    assert set(said) == {"rms_norm", "add_rms_norm", "gated_activation", "rope"}
    assert calls == set(said.items())
    if backend == "reference":
        assert set(said.values()) == {"reference"}


def test_fast_backend_on_cpu_float32_runs_the_c_kernels_where_they_build():
    from blocklab.nn import cpu_kernels
    _, model = _pair("fast", "fp32")
    if cpu_kernels.available():
        assert model.backends() == {**dict.fromkeys(backends.OPS, "cpu"), "attention": "sdpa"}
    else:
        assert model.backends() == {**backends.FAST_FALLBACK, "attention": "sdpa"}
    _, bf16 = _pair("fast", "bf16")
    # bfloat16: the C kernels too (bfloat16 in and out, float32 inside)
    if cpu_kernels.available():
        assert bf16.backends() == {**dict.fromkeys(backends.OPS, "cpu"), "attention": "sdpa"}
    else:
        assert bf16.backends() == {**backends.FAST_FALLBACK, "attention": "sdpa"}


def test_compiled_backend_keeps_kernels_only_where_they_beat_inductor():
    from blocklab.nn import cpu_kernels
    _, model = _pair("compiled", "fp32")
    said = model.backends()
    kernel = "cpu" if cpu_kernels.available() else "reference"
    assert said == {**{op: kernel if op in backends.COMPILED_KERNELS else "reference"
                       for op in backends.OPS}, "attention": "sdpa"}


def test_modules_given_other_impls_show_every_implementation_they_run(monkeypatch):
    calls = _spy(monkeypatch)
    _, model = _pair("fast", "fp32")
    model.norm.impl = "reference"  # the final norm alone
    said = model.backends()
    fast = backends.resolve("rms_norm", "fast", torch.empty(0), torch.empty(0))
    assert said["rms_norm"] == ", ".join(sorted({fast, "reference"}))
    _run(model, _ids())
    assert {impl for op, impl in calls if op == "rms_norm"} == {fast, "reference"}


def test_interleaved_rope_and_other_activations_report_the_reference(monkeypatch):
    calls = _spy(monkeypatch)
    _, model = _pair("fast", "fp32", rope_layout="interleaved", ffn="reglu")
    said = model.backends()
    assert said["rope"] == "reference"
    # ReLU: no kernel declares it, so "fast" runs the reference expression
    assert said["gated_activation"] == "reference"
    _run(model, _ids())
    assert ("gated_activation", "reference") in calls
    assert ("gated_activation", "cpu") not in calls


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


def test_bf16_is_close_to_fp32():
    torch.manual_seed(0)
    cfg = ModelConfig(**TINY)
    fp32 = DecoderLM(cfg)
    bf16 = DecoderLM(cfg, precision="bf16")
    bf16.load_state_dict(fp32.state_dict())
    ids = _ids()
    _close(_run(bf16, ids)[0], _run(fp32, ids)[0], 2.0**-5, "logits")


def test_generation_in_bf16_matches_the_full_recompute():
    _, model = _pair("fast", "bf16")
    ids = _ids()[:, :5]
    cached = model.generate(ids, 4)
    recomputed = model.generate(ids, 4, use_cache=False)
    assert torch.equal(cached, recomputed)


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


@pytest.mark.parametrize("kwargs,match", [
    (dict(backend="turbo"), r"backend='turbo' is not allowed; expected one of"),
    (dict(precision="fp16"), r"precision='fp16' is not allowed; expected one of"),
])
def test_bad_backend_or_precision_is_one_clear_line(kwargs, match):
    with pytest.raises(InputError, match=match) as info:
        DecoderLM(ModelConfig(**TINY), **kwargs)
    assert "\n" not in str(info.value)


def test_module_impl_names_backends_and_implementations():
    from blocklab.nn import RMSNorm
    with pytest.raises(InputError, match=r"impl='fused' is not allowed; expected a backend"):
        RMSNorm(8, impl="fused")
    for impl in backends.CHOICES:
        RMSNorm(8, impl=impl)


def test_registry_refuses_unknown_names_and_undeclared_capabilities():
    with pytest.raises(ValueError, match="unknown op or implementation"):
        backends.register("softmax", "reference", lambda x: x, backends.ANYWHERE)
    with pytest.raises(TypeError, match="capabilities must be a Capabilities"):
        backends.register("rope", "lean", lambda x: x, None)


def test_each_op_keeps_the_reference_and_the_kernels_only_where_they_win():
    """What benchmarks/backend_ops.py measured: no lean gated activation or RoPE (slower than the
    reference everywhere); the lean norms are "fast"'s fallback."""
    assert backends.implementations("rms_norm") == ("reference", "lean", "cpu", "triton")
    assert backends.implementations("add_rms_norm") == ("reference", "lean", "cpu", "triton")
    assert backends.implementations("gated_activation") == ("reference", "cpu", "triton")
    assert backends.implementations("rope") == ("reference", "cpu", "triton")
    for op, name in backends.FAST_FALLBACK.items():
        assert name in backends.implementations(op)
    with pytest.raises(KernelUnavailable, match=r"rope impl='lean' cannot run here: rope has "
                                                r"no 'lean' implementation"):
        backends.resolve("rope", "lean", torch.randn(1, 1, 2, 4))
