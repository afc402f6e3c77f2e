"""`blocklab.nn.triton_kernels` against the reference RMSNorm, under Triton's interpreter.

TRITON_INTERPRET must be set before triton is imported, so the checks run in a fresh Python
process with it set; they use CPU tensors at small shapes. `triton` is in the `test` extra, so
a missing package fails here rather than skipping. Tolerances as in test_fused.py: float32 to
1e-6; bfloat16 values and input gradients to one bfloat16 ulp (2⁻⁶ relative and absolute, the
kernel's 1/s may differ in the last float32 bit, which can move a rounding), weight gradients
(sums over rows) to atol 0.1.
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
