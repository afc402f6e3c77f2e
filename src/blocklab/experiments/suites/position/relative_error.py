"""C20: RoPE's relative-position error |score(m, n) − score(m+s, n+s)| by dtype, through a naive
pipeline and through blocklab's own numerics, and the run that measures it."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from blocklab.experiments.env import torch_threads
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.position.records import RelativeErrorRun, record_extra
from blocklab.experiments.suites.position.sizes import THETA

RELATIVE_ERROR_SHIFTS = (0, 10, 100, 1000, 10_000, 100_000, 1_000_000)
RELATIVE_ERROR_DTYPES = ("float64", "float32", "bfloat16", "float16")


def rope_relative_error(dtype: str, shifts: Sequence[int] = RELATIVE_ERROR_SHIFTS, *,
                        head_dim: int = 64, theta: float = THETA, samples: int = 64,
                        seed: int = 0) -> list[list[float | None]]:
    """[[s, max |score(m, n) − score(m + s, n + s)|], ...] with RoPE done entirely in `dtype`.

    Positions, frequencies, angles, cos/sin and the rotation are all computed in `dtype` (as
    code that casts everything to the model dtype does); the dot product q·k / sqrt(head_dim)
    is then taken in float64, so only the position arithmetic is measured. q, k ~ N(0, 1) and
    the offsets m − n in [0, 64) are drawn once from `seed` and reused for every shift; the
    maximum over `samples` draws is reported. Exactly, RoPE scores depend on m − n only, so the
    error is rounding alone; NaN/inf (a float16 position past 65504) is reported as None.
    """
    import torch

    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    k = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    n = torch.randint(0, 64, (samples,), generator=g)
    m = n + torch.randint(0, 64, (samples,), generator=g)
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))

    def rotate(x, positions):
        angles = positions.to(dt)[:, None] * inv_freq.to(dt)  # [samples, head_dim/2]
        cos, sin = angles.cos(), angles.sin()
        x = x.to(dt)
        x1, x2 = x[:, :head_dim // 2], x[:, head_dim // 2:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).double()

    def scores(shift: int):
        return (rotate(q, m + shift) * rotate(k, n + shift)).sum(-1) / math.sqrt(head_dim)

    return _shift_errors(scores, shifts)


def _shift_errors(scores, shifts: Sequence[int]) -> list[list[float | None]]:
    """[[s, max |scores(s) − scores(0)|], ...], None where the error is not finite."""
    base = scores(0)
    out: list[list[float | None]] = []
    for shift in shifts:
        err = (scores(shift) - base).abs().max().item()
        out.append([shift, err if math.isfinite(err) else None])
    return out


def rope_relative_error_blocklab(dtype: str, shifts: Sequence[int] = RELATIVE_ERROR_SHIFTS, *,
                                 head_dim: int = 64, theta: float = THETA, samples: int = 64,
                                 seed: int = 0) -> list[list[float | None]]:
    """As `rope_relative_error`, through blocklab's own RoPE numerics: float32 frequencies and
    angles (`rope_frequencies`, `rotary_cos_sin`, what `RotaryEmbedding` tables) and
    `apply_rotary` (rotation in float32, cast back to `dtype`), with q and k given in `dtype`.
    The table itself is skipped: at s = 10^6 it would hold a million rows."""
    import torch

    from blocklab.nn import apply_rotary
    from blocklab.nn.position import rotary_cos_sin
    from blocklab.nn.rope_scaling import rope_frequencies

    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    k = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    n = torch.randint(0, 64, (samples,), generator=g)
    m = n + torch.randint(0, 64, (samples,), generator=g)
    inv_freq, _ = rope_frequencies(head_dim, theta)

    def rotated(x, positions):
        cos, sin = rotary_cos_sin(positions[None], inv_freq)  # [1, samples, head_dim]
        x = x.to(dt)[None, None]  # [1, 1, samples, head_dim]
        out, _ = apply_rotary(x, x, cos, sin)
        return out.double().flatten(0, 2)

    def scores(shift: int):
        return (rotated(q, m + shift) * rotated(k, n + shift)).sum(-1) / math.sqrt(head_dim)

    return _shift_errors(scores, shifts)



def relative_error_run() -> RunResult:
    """C20's relative-position error in every dtype, both pipelines; its result's `extra` is
    a `RelativeErrorRun`."""
    started = time.perf_counter()
    with torch_threads(1):
        naive = {dt: rope_relative_error(dt) for dt in RELATIVE_ERROR_DTYPES}
        ours = {dt: rope_relative_error_blocklab(dt) for dt in RELATIVE_ERROR_DTYPES}
    record = RelativeErrorRun(shifts=list(RELATIVE_ERROR_SHIFTS), naive=naive, blocklab=ours)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=record_extra("relative_error", record))

