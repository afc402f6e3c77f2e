"""What the norm-cost suite's summary holds (`Summary.data`, the suite's `data_type`):
`NormCostData`.

Kernel, step and like-for-like timings (`KernelTiming`, `StepTime`, `FusedTiming`) with their
RMSNorm/LayerNorm ratios (`KernelRatio`), compile times (`CompileTime`), the analytic counts
(`NormCompute`) and the paired quality comparison (`NormQuality`). Frozen dataclasses that
`blocklab.experiments.summaries.decode` reads back field by field, so a renamed or missing field
fails naming it. No PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from blocklab.experiments.summaries import Interval, TimeRatio


@dataclass(frozen=True)
class KernelTiming:
    impl: str
    d: int
    rows: int
    threads: int
    fwd_ms: float | None
    fwdbwd_ms: float | None
    saved_bytes: int | None
    extra_saved_bytes: int | None
    compile_s: float | None
    error: str | None


@dataclass(frozen=True)
class KernelRatio:
    d: int
    rows: int
    threads: int
    impl: str
    layernorm_impl: str
    pass_name: str  # "fwd" or "fwdbwd"
    time: TimeRatio


@dataclass(frozen=True)
class CompileTime:
    d: int
    rows: int
    threads: int
    rmsnorm_s: float | None
    layernorm_s: float | None
    error: str | None
    inductor_warmup_s: float | None


@dataclass(frozen=True)
class StepTime:
    threads: int
    model: dict[str, Any]
    params: dict[str, int]
    rmsnorm_ms: float
    layernorm_ms: float
    time: TimeRatio
    path: str  # "blocklab" (the models as built) or "like-for-like" (both by PyTorch's kernels)


@dataclass(frozen=True)
class NormQuality:
    rmsnorm: Interval
    layernorm: Interval
    delta: Interval  # RMS − LN, nats/token, paired by seed
    margin: float
    equivalent: bool
    verdict: str
    seeds: list[int]
    statuses: dict[str, list[str]]
    unigram_entropy: float | None


@dataclass(frozen=True)
class NormCount:
    """Analytic cost of one norm on one row of width d (`norm_cost.count_norm`): FLOPs by
    `budget.flops` conventions, bytes an ideal fused kernel moves (x and y, dy and dx, the
    per-row statistics; the parameters, read once per call, apart in `param_bytes`)."""

    norm: str  # "rmsnorm" or "layernorm"
    d: int
    element_bytes: int  # 4: float32, 2: bf16
    fwd_flops: int
    fwdbwd_flops: int
    fwd_bytes: int  # training forward: read x, write y and the statistics
    fwdbwd_bytes: int
    param_bytes: int  # per call, forward+backward: read γ (β), write their gradients


@dataclass(frozen=True)
class StepShare:
    """The norms' FLOPs within one training step (`norm_cost.step_share`): matmuls 3× the
    forward (`budget.flops.prefill_flops`), plus every norm forward+backward; other
    elementwise work left out, so `saving_pct` is an upper bound."""

    model: str
    d_model: int
    n_layers: int
    batch: int
    seq_len: int
    norm_calls: int  # norms a token passes through (2 per layer + the final one)
    matmul_flops: int
    norm_flops: dict[str, int]  # norm -> the norms' FLOPs in the step
    step_flops: dict[str, int]  # norm -> the whole step's FLOPs
    saving_pct: float  # 100·(1 − step rmsnorm / step layernorm)


@dataclass(frozen=True)
class NormCompute:
    """C18's analytic part: what "compute" RMSNorm saves, per row and per training step."""

    counts: list[NormCount]
    flops_saving_pct: float  # 100·(1 − RMSNorm / LayerNorm), forward+backward, any d
    fwd_flops_saving_pct: float
    bytes_saving_pct: dict[str, float]  # "d=<d>/<element_bytes>B" -> per-row fwd+bwd saving
    steps: list[StepShare]


@dataclass(frozen=True)
class FusedTiming:
    """RMSNorm against LayerNorm timed with equally fused kernels (`norm_cost.
    time_like_for_like`): both PyTorch's own fused kernels when both are, else both through
    torch.compile (one generated kernel per pass each). Reported, not graded."""

    d: int
    rows: int
    threads: int
    method: str  # "torch-fused" or "torch.compile"
    kernels: dict[str, str]  # norm -> what ran
    torch_fused: dict[str, bool]  # norm -> does PyTorch's functional norm run fused here
    rmsnorm_ms: dict[str, float | None]  # "fwd" / "fwdbwd" -> median ms per call
    layernorm_ms: dict[str, float | None]
    ratios: dict[str, TimeRatio]  # "fwd" / "fwdbwd" -> RMSNorm / LayerNorm time
    compile_s: dict[str, float | None]
    error: str | None


@dataclass(frozen=True)
class NormCostData:
    kernels: list[KernelTiming]
    ratios: list[KernelRatio]
    compile: list[CompileTime]
    step_time: dict[str, StepTime]  # "<path>/<threads>" -> step timing
    quality: NormQuality
    compute: NormCompute | None = None  # the analytic counts that decide "compute" (C18)
    like_for_like: list[FusedTiming] = field(default_factory=list)  # one per thread count
