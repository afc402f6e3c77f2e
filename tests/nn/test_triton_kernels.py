"""`blocklab.nn.triton_kernels` against the reference paths, under Triton's interpreter.

TRITON_INTERPRET must be set before triton is imported, so the checks run in a fresh Python
process with it set; they use CPU tensors at small shapes. `triton` is in the `test` extra, so
a missing package fails here rather than skipping. Tolerances as in test_fused.py: float32 to
1e-6; bfloat16 values and input gradients to one bfloat16 ulp (2⁻⁶ relative and absolute, the
kernel's 1/s may differ in the last float32 bit, which can move a rounding), weight gradients
(sums over rows) to atol 0.1. Gated activations in float32: the error from the float64 truth
at most twice PyTorch's own, or 1e-6 of the largest entry (exp and erf round differently).
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
