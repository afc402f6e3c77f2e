"""The C kernels as torch.library custom ops: each op passes opcheck (schema, fake
implementation, autograd registration, AOT dispatch), and torch.compile traces the public
functions without a graph break, with eager's values and gradients (float32, 1e-6).

The kernels' parity with the reference maths is tested in test_cpu_kernels.
"""

import json
import os
import subprocess
import sys

import pytest
import torch
from torch.testing import assert_close

from blocklab.errors import InputError
from blocklab.nn import cpu_kernels

F32 = dict(atol=1e-6, rtol=1e-6)
ops = torch.ops.blocklab

needs_kernels = pytest.mark.skipif(not cpu_kernels.available(),
                                   reason=f"no CPU kernels: {cpu_kernels.unavailable_reason()}")


def _rope_tables(B, T, r):
    angles = torch.rand(B, 1, T, r) * 6
    return angles.cos(), angles.sin()


# --- opcheck ------------------------------------------------------------------------------------
@needs_kernels
@pytest.mark.parametrize("shape", [(5, 24), (2, 3, 7)])
@pytest.mark.parametrize("unit_offset", [False, True])
def test_opcheck_rms_norm_ops(shape, unit_offset):
    torch.manual_seed(0)
    d = shape[-1]
    x = torch.randn(shape, requires_grad=True)
    r = torch.randn(shape, requires_grad=True)
    w = (1 + 0.1 * torch.randn(d)).requires_grad_()
    torch.library.opcheck(ops.cpu_rms_norm, (x, w, 1e-6, unit_offset))
    strided = torch.randn(shape[::-1]).permute(*reversed(range(len(shape))))  # x's shape
    torch.library.opcheck(ops.cpu_rms_norm, (strided, w.detach(), 1e-5, unit_offset))
    torch.library.opcheck(ops.cpu_add_rms_norm, (x, r, w, 1e-6, unit_offset))
    _, rinv = ops.cpu_rms_norm(x.detach(), w.detach(), 1e-6, unit_offset)
    g = torch.randn(shape)
    for grad_h in (None, torch.randn(shape)):
        for weight_grad in (True, False):
            torch.library.opcheck(ops.cpu_rms_norm_backward,
                                  (g, x.detach(), rinv, w.detach(), grad_h, unit_offset,
                                   weight_grad))


@needs_kernels
@pytest.mark.parametrize("activation", ["silu", "gelu"])
@pytest.mark.parametrize("packed", [False, True])
def test_opcheck_gated_activation_ops(activation, packed):
    """Contiguous gate and up, and the strided halves of one packed gate_up output."""
    torch.manual_seed(0)
    if packed:
        gate, up = torch.randn(2, 5, 32).split(16, dim=-1)
    else:
        gate, up = torch.randn(3, 16), torch.randn(3, 16)
    a, b = gate.clone().requires_grad_(), up.clone().requires_grad_()
    torch.library.opcheck(ops.cpu_gated_activation, (a, b, activation))
    torch.library.opcheck(ops.cpu_gated_activation, (gate, up, activation))
    g = torch.randn(gate.shape)
    for gate_grad, up_grad in ((True, True), (True, False), (False, True)):
        torch.library.opcheck(ops.cpu_gated_activation_backward,
                              (g, gate, up, activation, gate_grad, up_grad))


@needs_kernels
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("hd, r, B_cos", [(8, 8, 1), (12, 6, 2)])
def test_opcheck_rope(inverse, hd, r, B_cos):
    torch.manual_seed(0)
    cos, sin = _rope_tables(B_cos, 5, r)
    q = torch.randn(2, 5, 3, hd).transpose(1, 2).requires_grad_()  # [B, H, T, hd], strided
    torch.library.opcheck(ops.cpu_rope, (q, cos, sin, inverse))


@needs_kernels
def test_gated_activation_reads_the_halves_of_a_packed_output_in_place():
    """Eager: the kernels get the strided views themselves and copy neither, either way."""
    gu = torch.randn(4, 6, 64, requires_grad=True)
    gate, up = gu.split(32, dim=-1)
    with torch.profiler.profile() as prof:
        cpu_kernels.gated_activation(gate, up).backward(torch.ones(4, 6, 32))
    names = {e.name for e in prof.events()}
    assert "_EagerGatedBackward" in names  # eager calls skip the op's dispatch
    assert not names & {"aten::contiguous", "aten::clone", "aten::copy_"}


@needs_kernels
def test_eager_calls_skip_the_op_dispatch_and_match_the_ops():
    """Outside a graph the public functions run the kernels through plain autograd Functions
    (the op's dispatch is pure overhead there): the same values and gradients as the ops."""
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16, requires_grad=True)
    w = torch.randn(16, requires_grad=True)
    gate, up = torch.randn(2, 4, 8, requires_grad=True), torch.randn(2, 4, 8, requires_grad=True)
    q = torch.randn(2, 3, 5, 8, requires_grad=True)
    cos, sin = _rope_tables(1, 5, 8)
    calls = {
        "rms": (lambda: cpu_kernels.rms_norm(x, w), lambda: ops.cpu_rms_norm(x, w, 1e-6,
                                                                             False)[0]),
        "add": (lambda: sum(cpu_kernels.add_rms_norm(x, x * 2, w)),
                lambda: sum(ops.cpu_add_rms_norm(x, x * 2, w, 1e-6, False)[:2])),
        "gated": (lambda: cpu_kernels.gated_activation(gate, up),
                  lambda: ops.cpu_gated_activation(gate, up, "silu")),
        "rope": (lambda: cpu_kernels.rope_half_split(q, cos, sin),
                 lambda: ops.cpu_rope(q, cos, sin, False)),
    }
    leaves = (x, w, gate, up, q)
    for name, (eager, op) in calls.items():
        results = []
        for fn in (eager, op):
            for t in leaves:
                t.grad = None
            with torch.profiler.profile() as prof:
                out = fn()
                out.backward(torch.ones_like(out))
            ran = {e.name for e in prof.events()}
            results.append((out.detach(), [None if t.grad is None else t.grad.clone()
                                           for t in leaves], ran))
        (got, got_grads, ran_eager), (want, want_grads, ran_op) = results
        assert not any(n.startswith("blocklab::") for n in ran_eager), name
        assert any(n.startswith("blocklab::cpu_") for n in ran_op), name
        assert torch.equal(got, want), name
        for a, b in zip(got_grads, want_grads, strict=True):
            assert (a is None) == (b is None), name
            if a is not None:
                assert torch.equal(a, b), name


# --- direct calls are checked -------------------------------------------------------------------
@needs_kernels
def test_ops_refuse_what_their_kernel_would_misread():
    x, w = torch.randn(4, 8), torch.ones(8)
    with pytest.raises(InputError, match=r"cpu_rms_norm: weight is torch.float32 \(7,\)"):
        ops.cpu_rms_norm(x, torch.ones(7), 1e-6, False)
    with pytest.raises(InputError, match="cpu_add_rms_norm: residual is torch.bfloat16"):
        ops.cpu_add_rms_norm(x, x.bfloat16(), w, 1e-6, False)
    _, rinv = ops.cpu_rms_norm(x, w, 1e-6, False)
    with pytest.raises(InputError, match=r"rinv is torch.float32 \(3, 1\)"):
        ops.cpu_rms_norm_backward(x, x, rinv[:3], w, None, False, True)
    with pytest.raises(InputError, match="activation='relu' is not allowed"):
        ops.cpu_gated_activation(x, x, "relu")
    with pytest.raises(InputError, match=r"up is torch.float32 \(4, 7\)"):
        ops.cpu_gated_activation(x, x[:, :7], "silu")
    with pytest.raises(InputError, match="cpu_rope: x is torch.float64"):
        ops.cpu_rope(torch.randn(1, 1, 2, 4).double(), *_rope_tables(1, 2, 4), False)


def test_registering_the_ops_builds_and_loads_nothing(tmp_path):
    """Importing registers the ops (cheaply); the library is built on the first real call, and
    a call where it cannot be built says why."""
    code = ("import json, torch; from blocklab.nn import cpu_kernels as ck\n"
            "ops = sorted(n for n in dir(torch.ops.blocklab) if n.startswith('cpu_'))\n"
            "loaded = ck._loaded\n"
            "try:\n"
            "    torch.ops.blocklab.cpu_rms_norm(torch.randn(2, 4), torch.ones(4), 1e-6, False)\n"
            "    err = None\n"
            "except RuntimeError as exc:\n"
            "    err = type(exc).__name__ + ': ' + str(exc)\n"
            "print(json.dumps([ops, loaded, err]))\n")
    env = {**os.environ, "BLOCKLAB_CACHE_DIR": str(tmp_path / "cache"),
           "CC": str(tmp_path / "no-such-cc")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    names, loaded, err = json.loads(proc.stdout)
    assert names == ["cpu_add_rms_norm", "cpu_gated_activation",
                     "cpu_gated_activation_backward", "cpu_rms_norm", "cpu_rms_norm_backward",
                     "cpu_rope"]
    assert loaded is False
    assert err.startswith("KernelUnavailable: the C kernels cannot run here: no C compiler")


# --- torch.compile ------------------------------------------------------------------------------
def _blocks(x, r, gu, q, w, cos, sin):
    """Every public function once: RMSNorm, residual add + RMSNorm, SwiGLU and GeGLU on the two
    halves of a packed gate_up output, RoPE on a transposed projection."""
    y = cpu_kernels.rms_norm(x, w)
    y2, h = cpu_kernels.add_rms_norm(x, r, w, unit_offset=True)
    gate, up = gu.chunk(2, dim=-1)
    a = cpu_kernels.gated_activation(gate, up, "silu")
    b = cpu_kernels.gated_activation(gate, up, "gelu")
    q2 = cpu_kernels.rope_half_split(q, cos, sin)
    return y, y2, h, a, b, q2


def _loss(outs, grads):
    return sum((o * g).sum() for o, g in zip(outs, grads, strict=True))


@needs_kernels
def test_compile_fullgraph_matches_eager_values_and_gradients():
    torch.manual_seed(0)
    x, r = torch.randn(6, 16), torch.randn(6, 16)
    gu = torch.randn(2, 3, 64)
    q = torch.randn(2, 5, 3, 8).transpose(1, 2)  # [B, H, T, hd] as attention makes it
    w = 1 + 0.1 * torch.randn(16)
    cos, sin = _rope_tables(1, 5, 8)
    leaves = [t.requires_grad_() for t in (x, r, gu, q, w)]
    grads = [torch.randn(s) for s in ((6, 16),) * 3 + ((2, 3, 32),) * 2 + ((2, 3, 5, 8),)]

    compiled = torch.compile(_blocks, fullgraph=True)  # fullgraph: a graph break would raise
    results = []
    for fn in (compiled, _blocks):
        outs = fn(*leaves, cos, sin)
        results.append((outs, torch.autograd.grad(_loss(outs, grads), leaves)))
    (outs, got), (want_outs, want) = results
    for a, b in zip((*outs, *got), (*want_outs, *want), strict=True):
        assert a.dtype == torch.float32
        assert_close(a, b, **F32)
    # a second compiled step (no tracing this time) runs the kernels both ways, not the
    # reference maths
    with torch.profiler.profile() as prof:
        torch.autograd.grad(_loss(compiled(*leaves, cos, sin), grads), leaves)
    kernels = {f"blocklab::cpu_{n}" for n in ("rms_norm", "add_rms_norm", "rms_norm_backward",
                                              "gated_activation", "gated_activation_backward",
                                              "rope")}
    assert kernels <= {e.name for e in prof.events()}


@needs_kernels
def test_compile_dynamic_shapes_rms_norm():
    torch.manual_seed(0)
    w = (1 + 0.1 * torch.randn(24)).requires_grad_()

    def fn(x):
        return cpu_kernels.rms_norm(x, w, 1e-5)

    compiled = torch.compile(fn, fullgraph=True, dynamic=True)
    for shape in ((3, 24), (2, 7, 24), (11, 24)):
        x = torch.randn(shape, requires_grad=True)
        g = torch.randn(shape)
        got = compiled(x)
        got_grads = torch.autograd.grad(got, (x, w), g)
        want = fn(x)
        want_grads = torch.autograd.grad(want, (x, w), g)
        for a, b in zip((got, *got_grads), (want, *want_grads), strict=True):
            assert_close(a, b, **F32)
