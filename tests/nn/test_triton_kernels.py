"""`blocklab.nn.triton_kernels` against the reference paths, under Triton's interpreter.

TRITON_INTERPRET must be set before triton is imported, so the checks run in a fresh Python
process with it set; they use CPU tensors at small shapes. `triton` is in the `test` extra, so
a missing package fails here rather than skipping. Tolerances as in test_fused.py: float32 to
1e-6; bfloat16 values and input gradients to one bfloat16 ulp (2⁻⁶ relative and absolute, the
kernel's 1/s may differ in the last float32 bit, which can move a rounding), weight gradients
(sums over rows) to atol 0.1. Gated activations in float32: the error from the float64 truth
at most twice PyTorch's own, or 1e-6 of the largest entry (exp and erf round differently).

The kernels are torch.library custom ops: each passes opcheck in float32 (all of its sub-tests,
the AOT-dispatch ones with dynamic shapes included; the interpreter runs them on CPU tensors),
and torch.compile(fullgraph=True) with the default Inductor backend traces the public functions
and gives eager's values and gradients (1e-6): Inductor compiles the code around the ops for
the CPU and calls each op as an opaque kernel, so the interpreter runs it as in eager mode.
The whole file takes 40-65 s on two shared cores (each check is a fresh process: ~3 s of
imports; opcheck ~15 s, torch.compile ~10 s).
"""

import os
import subprocess
import sys
import textwrap

CHECK = textwrap.dedent("""
    import torch
    from torch.testing import assert_close
    from blocklab.nn.norm import RMSNorm

    def pair(cast, unit_offset, dim):
        torch.manual_seed(0)
        ref = RMSNorm(dim, cast=cast, unit_offset=unit_offset, impl="reference")
        with torch.no_grad():
            ref.weight.add_(0.1 * torch.randn(dim))
        new = RMSNorm(dim, cast=cast, unit_offset=unit_offset, impl="triton")
        new.load_state_dict(ref.state_dict())
        return ref, new

    checked = 0
    for dtype in (torch.float32, torch.bfloat16):
        tol = dict(atol=1e-6, rtol=1e-6) if dtype == torch.float32 else dict(atol=2**-6,
                                                                             rtol=2**-6)
        wtol = tol if dtype == torch.float32 else dict(atol=0.1, rtol=2**-6)
        for cast in ("llama", "gemma"):
            for unit_offset in (False, True):
                for shape in ((3, 5, 24), (2, 2, 3, 16), (11, 40)):  # 40: masked columns
                    ref, new = pair(cast, unit_offset, shape[-1])
                    x = torch.randn(shape, dtype=dtype)
                    g = torch.randn_like(x)
                    outs = []
                    for m in (ref, new):
                        a = x.clone().requires_grad_()
                        y = m(a)
                        y.backward(g)
                        outs.append((y, a.grad, m.weight.grad))
                    assert outs[1][0].dtype == dtype and outs[1][1].dtype == dtype
                    assert_close(outs[1][0], outs[0][0], **tol)
                    assert_close(outs[1][1], outs[0][1], **tol)
                    assert_close(outs[1][2], outs[0][2], **wtol)
                    # residual add + norm
                    r = torch.randn_like(x)
                    gh = torch.randn_like(x)
                    res = []
                    for m in (ref, new):
                        a, b = x.clone().requires_grad_(), r.clone().requires_grad_()
                        y, h = m.forward_add(a, b)
                        (y.float() * g.float() + h.float() * gh.float()).sum().backward()
                        res.append((y, h, a.grad, b.grad))
                    for got, want in zip(res[1], res[0]):
                        assert got.dtype == dtype
                        assert_close(got, want, **tol)
                    checked += 1
    print("checked", checked)
""")


def test_triton_rmsnorm_matches_reference_in_interpreter():
    import triton  # noqa: F401  (in the test extra: fail, do not skip, when it is missing)

    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "checked 24" in done.stdout


CHECK_GATED_ROPE = textwrap.dedent("""
    import torch
    import torch.nn.functional as F
    from torch.testing import assert_close
    from blocklab.nn import lean, triton_kernels as tk
    from blocklab.nn.position import apply_rotary, rotary_cos_sin

    def run(fn, tensors, grad):
        leaves = [t.clone().requires_grad_() for t in tensors]
        y = fn(*leaves)
        y.backward(grad)
        return [y] + [t.grad for t in leaves]

    checked = 0
    for dtype in (torch.float32, torch.bfloat16):
        tol = dict(atol=1e-6, rtol=1e-6) if dtype == torch.float32 else dict(atol=2**-6,
                                                                             rtol=2**-6)
        # gated activations, plain and as the strided halves of one gate_up tensor
        for activation, act in (("silu", F.silu), ("gelu", F.gelu)):
            for shape in ((3, 5, 24), (4, 1100)):  # 1100: two column blocks, masked tail
                torch.manual_seed(0)
                gate, up = 3 * torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
                g = torch.randn(shape, dtype=dtype)
                want = run(lambda a, b: act(a) * b, (gate, up), g)
                got = run(lambda a, b: tk.gated_activation(a, b, activation), (gate, up), g)
                want64 = run(lambda a, b: act(a) * b, (gate.double(), up.double()), g.double())
                for x, y, y64 in zip(got, want, want64):
                    assert x.dtype == dtype
                    if dtype == torch.float32:  # exp/erf round differently: no worse than torch
                        err = (x.double() - y64).abs().max()
                        err_torch = (y.double() - y64).abs().max()
                        assert err <= max(2 * err_torch, 1e-6 * y64.abs().max()), (err, err_torch)
                    else:
                        assert_close(x, y, **tol)
                checked += 1
            gu = torch.randn(2, 6, 64, dtype=dtype)
            g = torch.randn(2, 6, 32, dtype=dtype)
            want = run(lambda t: act(t[..., :32]) * t[..., 32:], (gu,), g)
            got = run(lambda t: tk.gated_activation(*t.split(32, dim=-1), activation), (gu,), g)
            for x, y in zip(got, want):
                assert_close(x, y, **tol)
            checked += 1
        # RoPE, full and partial rotary width, shared and per-batch positions
        for hd, r, per_batch in ((16, 16, False), (16, 8, True), (12, 6, False)):
            torch.manual_seed(1)
            q = torch.randn(2, 3, 5, hd, dtype=dtype)
            inv_freq = 1.0 / 10000 ** (torch.arange(0, r, 2).float() / r)
            positions = torch.arange(5) if not per_batch else torch.tensor(
                [[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])
            cos, sin = rotary_cos_sin(positions, inv_freq)
            c4 = cos[None, None] if cos.dim() == 2 else cos[:, None]
            s4 = sin[None, None] if sin.dim() == 2 else sin[:, None]
            g = torch.randn_like(q)
            want = run(lambda x: apply_rotary(x, x, cos, sin)[0], (q,), g)
            got = run(lambda x: tk.rope_half_split(x, c4, s4), (q,), g)
            for x, y in zip(got, want):
                assert x.dtype == dtype
                assert_close(x, y, **tol)
            # a non-contiguous q (the transpose attention makes) reads in place
            qt = q.transpose(1, 2).contiguous().transpose(1, 2)
            assert_close(tk.rope_half_split(qt, c4, s4), want[0], **tol)
            checked += 1
    try:
        tk.gated_activation(torch.randn(2, 4), torch.randn(2, 4), "relu")
    except ValueError as e:
        assert "activation='relu'" in str(e)
    else:
        raise AssertionError("relu accepted")
    # the kernel itself has a branch per activation and refuses a name without one, rather
    # than computing it as another activation
    a, y = torch.randn(2, 8), torch.empty(2, 8)
    try:
        tk._gated_fwd_kernel[(2, 1)](a, a, y, 8, 8, 8, BLOCK=8, ACT="relu")
    except Exception as e:
        assert "gated activation without Triton code" in str(e), str(e)
    else:
        raise AssertionError("the kernel ran an activation it has no code for")
    assert tk.ACTIVATIONS == {"silu", "gelu"}
    try:
        tk.rope_half_split(torch.randn(1, 1, 3, 4), torch.randn(1, 1, 3, 6),
                           torch.randn(1, 1, 3, 6))
    except ValueError as e:
        assert "do not fit" in str(e)
    else:
        raise AssertionError("r > hd accepted")
    print("checked", checked)
""")


def test_triton_gated_activation_and_rope_match_reference_in_interpreter():
    import triton  # noqa: F401  (in the test extra: fail, do not skip, when it is missing)

    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", CHECK_GATED_ROPE], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "checked 18" in done.stdout


def _interpreted(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)


CHECK_OPCHECK = textwrap.dedent("""
    import torch
    from blocklab.errors import InputError
    from blocklab.nn import triton_kernels  # noqa: F401  (importing registers the ops)

    ops = torch.ops.blocklab
    torch.manual_seed(0)
    checked = 0

    # RMSNorm: both cast orders, unit_offset, 3-D and masked columns (d = 6 < BLOCK 8), a
    # strided x (opcheck is slow under the interpreter: a few combinations, not all)
    for shape, cast, unit_offset in (((3, 8), "llama", False), ((3, 8), "gemma", True),
                                     ((2, 2, 6), "llama", True)):
        d = shape[-1]
        x = torch.randn(shape, requires_grad=True)
        r = torch.randn(shape, requires_grad=True)
        w = (1 + 0.1 * torch.randn(d)).requires_grad_()
        torch.library.opcheck(ops.triton_rms_norm, (x, w, 1e-6, cast, unit_offset))
        torch.library.opcheck(ops.triton_add_rms_norm, (x, r, w, 1e-5, cast, unit_offset))
        _, rinv = ops.triton_rms_norm(x.detach(), w.detach(), 1e-6, cast, unit_offset)
        for weight_grad in (True, False):
            torch.library.opcheck(ops.triton_rms_norm_backward,
                                  (torch.randn(shape), x.detach(), rinv, w.detach(), cast,
                                   unit_offset, weight_grad))
        checked += 1
    strided = torch.randn(6, 2, 2).permute(2, 1, 0)  # [2, 2, 6]
    torch.library.opcheck(ops.triton_rms_norm, (strided, w.detach(), 1e-6, "gemma", False))

    # gated activations: contiguous, and the strided halves of one packed gate_up output
    for activation in ("silu", "gelu"):
        for gate, up in ((torch.randn(3, 8), torch.randn(3, 8)),
                         torch.randn(2, 3, 16).split(8, dim=-1)):
            a, b = gate.clone().requires_grad_(), up.clone().requires_grad_()
            torch.library.opcheck(ops.triton_gated_activation, (a, b, activation))
            torch.library.opcheck(ops.triton_gated_activation, (gate, up, activation))
            g = torch.randn(gate.shape)
            for gate_grad, up_grad in ((True, True), (True, False), (False, True)):
                torch.library.opcheck(ops.triton_gated_activation_backward,
                                      (g, gate, up, activation, gate_grad, up_grad))
            checked += 1

    # RoPE: full and partial rotary width, shared and per-batch tables, both directions, on a
    # transposed [B, H, T, hd] as attention makes it
    for hd, r, b_cos in ((8, 8, 1), (8, 6, 2)):
        angles = torch.rand(b_cos, 1, 5, r) * 6
        q = torch.randn(2, 5, 3, hd).transpose(1, 2).requires_grad_()
        for inverse in (False, True):
            torch.library.opcheck(ops.triton_rope, (q, angles.cos(), angles.sin(), inverse))
        checked += 1

    # a direct op call is checked as the public functions are: no kernel reads out of bounds
    x, w = torch.randn(4, 8), torch.ones(8)
    _, rinv = ops.triton_rms_norm(x, w, 1e-6, "llama", False)
    refused = [
        (lambda: ops.triton_rms_norm(x, torch.ones(7), 1e-6, "llama", False),
         "triton_rms_norm: weight is torch.float32 (7,)"),
        (lambda: ops.triton_rms_norm(x, w, 1e-6, "olmo", False), "cast='olmo' is not allowed"),
        (lambda: ops.triton_add_rms_norm(x, x.bfloat16(), w, 1e-6, "llama", False),
         "residual is torch.bfloat16"),
        (lambda: ops.triton_rms_norm_backward(x, x, rinv[:3], w, "llama", False, True),
         "rinv is torch.float32 (3, 1)"),
        (lambda: ops.triton_gated_activation(x, x, "relu"), "activation='relu' is not allowed"),
        (lambda: ops.triton_gated_activation(x, x[:, :7], "silu"), "up is torch.float32 (4, 7)"),
        (lambda: ops.triton_gated_activation_backward(x[:3], x, x, "silu", True, True),
         "grad is torch.float32 (3, 8)"),
        (lambda: ops.triton_rope(torch.randn(1, 1, 3, 4), torch.ones(1, 1, 3, 6),
                                 torch.ones(1, 1, 3, 6), False), "do not fit"),
        (lambda: ops.triton_rope(torch.randn(1, 1, 3, 4), torch.ones(1, 1, 3, 4),
                                 torch.ones(1, 1, 3, 4).int(), False),
         "sin is torch.int32"),
    ]
    for call, message in refused:
        try:
            call()
        except InputError as exc:
            assert message in str(exc), (message, str(exc))
        else:
            raise AssertionError(f"accepted: {message}")
    print("checked", checked)
""")


def test_ops_pass_opcheck_in_interpreter():
    done = _interpreted(CHECK_OPCHECK)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "checked 9" in done.stdout


CHECK_COMPILE = textwrap.dedent("""
    import torch
    from torch.testing import assert_close
    from blocklab.nn import triton_kernels as tk

    def blocks(x, r, gu, q, w, cos, sin):
        \"\"\"Every public function once: both RMSNorm cast orders, SwiGLU and GeGLU on the
        halves of a packed gate_up output, RoPE on a transposed projection.\"\"\"
        y = tk.rms_norm(x, w)
        y2, h = tk.add_rms_norm(x, r, w, cast="gemma", unit_offset=True)
        gate, up = gu.chunk(2, dim=-1)
        a = tk.gated_activation(gate, up, "silu")
        b = tk.gated_activation(gate, up, "gelu")
        return y, y2, h, a, b, tk.rope_half_split(q, cos, sin)

    def loss(outs, grads):
        return sum((o * g).sum() for o, g in zip(outs, grads, strict=True))

    torch.manual_seed(0)
    x, r = torch.randn(6, 16), torch.randn(6, 16)
    gu = torch.randn(2, 3, 64)
    q = torch.randn(2, 5, 3, 8).transpose(1, 2)  # [B, H, T, hd]
    w = 1 + 0.1 * torch.randn(16)
    angles = torch.rand(1, 1, 5, 6) * 6  # partial rotary width
    cos, sin = angles.cos(), angles.sin()
    leaves = [t.requires_grad_() for t in (x, r, gu, q, w)]
    grads = [torch.randn(s) for s in ((6, 16),) * 3 + ((2, 3, 32),) * 2 + ((2, 3, 5, 8),)]

    compiled = torch.compile(blocks, fullgraph=True)  # fullgraph: a graph break would raise
    results = []
    for fn in (compiled, blocks):
        outs = fn(*leaves, cos, sin)
        results.append((outs, torch.autograd.grad(loss(outs, grads), leaves)))
    (outs, got), (want_outs, want) = results
    for a, b in zip((*outs, *got), (*want_outs, *want), strict=True):
        assert a.dtype == torch.float32
        assert_close(a, b, atol=1e-6, rtol=1e-6)
    # a second compiled step (no tracing) launches the kernels both ways, not other maths
    with torch.profiler.profile() as prof:
        torch.autograd.grad(loss(compiled(*leaves, cos, sin), grads), leaves)
    names = {e.name for e in prof.events()}
    for op in ("rms_norm", "add_rms_norm", "rms_norm_backward", "gated_activation",
               "gated_activation_backward", "rope"):
        assert f"blocklab::triton_{op}" in names, op

    # dynamic shapes: one graph for several row counts
    def norm(x):
        return tk.rms_norm(x, w, 1e-5, "llama", True)

    dynamic = torch.compile(norm, fullgraph=True, dynamic=True)
    for shape in ((3, 16), (2, 7, 16)):
        x = torch.randn(shape, requires_grad=True)
        g = torch.randn(shape)
        got = dynamic(x)
        want = norm(x)
        for a, b in zip((got, *torch.autograd.grad(got, (x, w), g)),
                        (want, *torch.autograd.grad(want, (x, w), g)), strict=True):
            assert_close(a, b, atol=1e-6, rtol=1e-6)
    print("compiled")
""")


def test_compile_fullgraph_matches_eager_in_interpreter():
    done = _interpreted(CHECK_COMPILE)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "compiled" in done.stdout


CHECK_WITHOUT_TRITON = textwrap.dedent("""
    import sys
    sys.modules["triton"] = None  # as if the package were not installed
    import torch
    from blocklab.errors import KernelUnavailable
    from blocklab.nn import triton_kernels as tk

    names = sorted(n for n in dir(torch.ops.blocklab) if n.startswith("triton_"))
    assert names == ["triton_add_rms_norm", "triton_gated_activation",
                     "triton_gated_activation_backward", "triton_rms_norm",
                     "triton_rms_norm_backward", "triton_rope"], names
    x = torch.randn(2, 4)
    assert tk.unavailable_reason(x) == "the triton package is not installed"
    for call in (lambda: tk.rms_norm(x, torch.ones(4)),
                 lambda: torch.ops.blocklab.triton_rms_norm(x, torch.ones(4), 1e-6, "llama",
                                                            False)):
        try:
            call()
        except KernelUnavailable as exc:
            assert "the triton package is not installed" in str(exc), str(exc)
        else:
            raise AssertionError("ran without triton")
    print("ok")
""")


def test_module_registers_the_ops_without_triton():
    """The package is optional: the module imports and registers its ops without it, and a call
    says why it cannot run."""
    done = subprocess.run([sys.executable, "-c", CHECK_WITHOUT_TRITON], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "ok" in done.stdout
