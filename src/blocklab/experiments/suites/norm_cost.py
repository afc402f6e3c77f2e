"""`norm-cost`: what RMSNorm saves over LayerNorm in compute, time and memory, and what it costs in
quality.

The page says RMSNorm needs "about 7% less compute" than LayerNorm at nearly the same quality
(C18). What "compute" means is decided by counting (`count_compute`, no run needed): FLOPs per
normalised row of width d by `blocklab.budget.flops`' conventions (forward RMSNorm 4, LayerNorm
7 per element; backward 9 and 13), bytes an ideal fused kernel moves per row, and the norms'
share of a training step's FLOPs at the step model's shape and at meta-llama-3-8b's. Timings
are reported beside the counts, never graded. Four kinds of run:

    kernels    one run per (d, rows) shape: every implementation below, forward (no grad) and
               forward+backward, timed in R repeats; within a repeat each implementation runs
               once, in an order rotated by one every repeat, so machine drift hits all alike.
               Bytes saved for backward are counted by `saved_tensor_bytes` (exact, no timing).
    like-for-like
               one run at the step model's shape (d = d_model, rows = batch · seq_len): RMSNorm
               against LayerNorm with equally fused kernels (`time_like_for_like`): PyTorch's
               own where both F.rms_norm and F.layer_norm run fused (`torch_norms_fused`), else
               both through torch.compile (on a CPU F.rms_norm is a composite of six ops while
               F.layer_norm is one fused kernel); the summary says which.
    step       one run: a small DecoderLM with norm="rmsnorm" and one with "layernorm" (same
               everything else, same initial weights where names match), training steps
               alternated between the models, on two code paths:
                   blocklab       the models as built: blocklab's RMSNorm adds the residual and
                                  normalises in one fused kernel, LayerNorm is F.layer_norm
                   like-for-like  both norms by PyTorch's functional ops (F.rms_norm and
                                  F.layer_norm), the residual added apart in both (the name is
                                  kept for stored results; on a CPU F.rms_norm is unfused)
    quality    trainer runs of the same two models on stdlib, paired by seed; the paired Δ val
               loss is judged against an equivalence margin.

What each size runs (`blocklab.experiments.suites.evaluation`): at --size tiny and --size quick
the suite plans the quality runs C18 grades and the two reported timings (step, like-for-like);
the kernel runs (reported beside C18, not graded) run at --size full, and the summary says so.

Implementations (the RMSNorm and LayerNorm of one row share a "kind", and ratios compare within
a kind, so an implementation detail is never credited to the normalisation):

    kind       RMSNorm                                   LayerNorm
    blocklab   blocklab.nn.RMSNorm                       blocklab.nn.LayerNorm (F.layer_norm)
    torch      torch.nn.RMSNorm (F.rms_norm)             torch.nn.LayerNorm (F.layer_norm)
    plain      x · rsqrt(mean(x²) + ε) · g               (x − μ) · rsqrt(mean((x − μ)²) + ε) · g + b
    compiled   torch.compile(plain)                      torch.compile(plain)

Time ratios are median(RMSNorm) / median(LayerNorm) over the repeats, with a 95% percentile
bootstrap interval that resamples whole repeats (the two timings of a repeat stay paired).
Every timing runs on a stated number of CPU threads (one in tiny and quick: on a shared 2-core
machine two threads contend with other work and slow down many-fold).

Each run returns a `RunResult`: the trainer's for a quality run; for a timing run (no model
trained) its record in `extra` (`KernelTimes`, `LikeForLikeTimes`, `StepTimes`, read back
once by the record's `of`).

`Summary.data` (read by the claims ledger, C18, and the report) is a
`blocklab.experiments.summaries.NormCostData`: kernel timings and saved bytes per implementation
and shape, RMSNorm/LayerNorm time ratios (`KernelRatio`, `StepTime`, `FusedTiming`, each with a
bootstrap `TimeRatio`), compile times, the analytic counts (`NormCompute`) and the paired
quality comparison (`NormQuality`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from blocklab.config import ModelConfig
from blocklab.errors import InputError, ResultsError
from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import train_identity
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import (
    Results,
    RunSpec,
    Suite,
    format_ci,
    mean_ci,
    paired_difference,
)
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION, full_only
from blocklab.experiments.summaries import (
    CompileTime,
    FusedTiming,
    Interval,
    KernelRatio,
    KernelTiming,
    NormCompute,
    NormCostData,
    NormCount,
    NormQuality,
    StepShare,
    StepTime,
    Summary,
    Table,
    TimeRatio,
    decode,
)

if TYPE_CHECKING:
    from torch import nn

    from blocklab.experiments.estimate import Calibration
    from blocklab.experiments.trainer import TrainConfig

KINDS = ("blocklab", "torch", "plain", "compiled")
PASSES = ("fwd", "fwdbwd")  # forward (no grad), forward+backward
NORM_NAMES = ("rmsnorm", "layernorm")
EPS = 1e-5  # the same ε for every implementation; the cost does not depend on it
# Δ val loss (nats/token) inside which RMSNorm and LayerNorm count as equivalent in quality.
EQUIVALENCE_MARGIN = 0.02
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class KernelGrid:
    """The kernel runs of a size: one per (d, rows) shape and thread count, `repeats` timed
    blocks of about `block_s` each, the torch.compile'd implementations included or not (a
    cold compile takes ~3 s per implementation and shape on the 2-core reference machine)."""

    shapes: tuple[tuple[int, int], ...]
    repeats: int
    compile: bool
    block_s: float


@dataclass(frozen=True)
class StepShape:
    """The step-time run's models (d_model, n_layers, a [batch_size, seq_len] batch) and its
    timed repeats after `warmup` untimed ones."""

    d_model: int
    n_layers: int
    seq_len: int
    batch_size: int
    repeats: int
    warmup: int


@dataclass(frozen=True)
class LikeShape:
    """The like-for-like kernel timing (at the step model's shape): timed repeats and the
    length of one timed block."""

    repeats: int
    block_s: float


@dataclass(frozen=True)
class QualityShape:
    """The quality runs' model and training (stdlib, one run per norm and seed)."""

    d_model: int
    n_layers: int
    seq_len: int
    batch_size: int
    steps: int
    lr: float
    warmup_steps: int
    eval_batches: int
    final_eval_fraction: float  # `evaluation.FINAL_EVAL_FRACTION` of the size


@dataclass(frozen=True)
class Size:
    """What one suite size runs: the CPU threads of every timing run, the kernel runs (None:
    not at this size, see the module's docstring), the step-time and like-for-like timings and
    the quality runs."""

    threads: tuple[int, ...]
    kernels: KernelGrid | None
    step: StepShape
    like_for_like: LikeShape
    quality: QualityShape


SIZES: dict[str, Size] = {
    "tiny": Size(
        threads=(1,), kernels=None,
        step=StepShape(d_model=32, n_layers=2, seq_len=32, batch_size=4, repeats=3, warmup=1),
        like_for_like=LikeShape(repeats=3, block_s=0.005),
        quality=QualityShape(d_model=32, n_layers=2, seq_len=32, batch_size=4, steps=8,
                             lr=3e-3, warmup_steps=2, eval_batches=1,
                             final_eval_fraction=FINAL_EVAL_FRACTION["tiny"])),
    "quick": Size(
        threads=(1,), kernels=None,
        step=StepShape(d_model=128, n_layers=4, seq_len=128, batch_size=8, repeats=12,
                       warmup=2),
        like_for_like=LikeShape(repeats=15, block_s=0.01),
        quality=QualityShape(d_model=64, n_layers=2, seq_len=128, batch_size=16, steps=400,
                             lr=3e-3, warmup_steps=20, eval_batches=16,
                             final_eval_fraction=FINAL_EVAL_FRACTION["quick"])),
    "full": Size(
        threads=(1, 2),
        kernels=KernelGrid(shapes=tuple((d, rows) for rows in (1024, 8192)
                                        for d in (64, 256, 1024, 4096)),
                           repeats=30, compile=True, block_s=0.02),
        step=StepShape(d_model=256, n_layers=6, seq_len=256, batch_size=16, repeats=30,
                       warmup=3),
        like_for_like=LikeShape(repeats=30, block_s=0.02),
        quality=QualityShape(d_model=128, n_layers=4, seq_len=128, batch_size=32, steps=1500,
                             lr=2e-3, warmup_steps=100, eval_batches=16,
                             final_eval_fraction=FINAL_EVAL_FRACTION["full"])),
}


# --- what a timing run records (`RunResult.extra`) -----------------------------------------------
@dataclass(frozen=True)
class ImplTimes:
    """One implementation in a kernel timing (`time_kernels`): seconds per call in each timed
    repeat of each pass timed (`fwd_s`, `fwdbwd_s`), a compiled one's compile time, the error
    a compiled one failed with (then nothing else), and the bytes kept for backward
    (`saved_tensor_bytes`). A field is None where the implementation has none; its stored JSON
    leaves such keys out."""

    compile_s: float | None = None
    error: str | None = None
    bytes: int | None = None
    extra_bytes: int | None = None
    tensors: int | None = None
    fwd_s: list[float] | None = None
    fwdbwd_s: list[float] | None = None

    def seconds(self, pass_name: str) -> list[float] | None:
        """The timings of `pass_name` ("fwd" or "fwdbwd"), None where it was not timed."""
        return self.fwd_s if pass_name == "fwd" else self.fwdbwd_s

    def to_dict(self) -> dict[str, float | str | int | list[float]]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def of(cls, doc: object, where: str) -> ImplTimes:
        """An implementation's stored record (keys it has none of left out)."""
        names = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(doc, dict) or set(doc) - set(names):
            raise ResultsError(f"{where}: expected an object with keys among {names}")
        return decode(cls, {name: doc.get(name) for name in names}, where)


@dataclass(frozen=True)
class KernelTimes:
    """What a kernels run adds to its RunResult (`time_kernels`): its shape [rows, d],
    threads and repeats, the calls per timed block of each implementation (per pass, PASSES
    order), each implementation's record, and the process's one-off torch.compile start-up."""

    kind: str  # "kernels"
    d: int
    rows: int
    threads: int
    repeats: int
    inner: dict[str, list[int]]
    impls: dict[str, ImplTimes]
    inductor_warmup_s: float

    def extra(self) -> dict[str, object]:
        """The keys it adds to its run's stored JSON."""
        return {**dataclasses.asdict(self),
                "impls": {name: rec.to_dict() for name, rec in self.impls.items()}}

    @classmethod
    def of(cls, result: RunResult, where: str) -> Self:
        """The record of a stored run; ResultsError names what does not fit."""
        impls = result.extra.get("impls")
        if not isinstance(impls, dict):
            raise ResultsError(f"{where}.impls: expected an object, found {impls!r}")
        record = decode(cls, {**result.extra, "impls": {}}, where)
        return dataclasses.replace(record, impls={
            name: ImplTimes.of(doc, f"{where}.impls.{name}") for name, doc in impls.items()})


@dataclass(frozen=True)
class LikeForLikeTimes(KernelTimes):
    """What a like-for-like run adds (`time_like_for_like`): its kernel timing (kind
    "like-for-like"), the method (`like_method`), whether each of PyTorch's functional norms
    runs fused here, what ran for each norm, and the kind of `build_implementations` timed."""

    method: str
    torch_fused: dict[str, bool]
    kernels: dict[str, str]
    timed_kind: str


@dataclass(frozen=True)
class StepTimes:
    """What the step-time run adds (`time_training_steps`): threads, the models' shape,
    their parameter counts per norm and the seconds per optimizer step, {path: {norm: [s]}}."""

    kind: str  # "step"
    threads: int
    model: StepShape
    params: dict[str, int]
    step_s: dict[str, dict[str, list[float]]]

    def extra(self) -> dict[str, object]:
        """The keys it adds to its run's stored JSON."""
        return dataclasses.asdict(self)

    @classmethod
    def of(cls, result: RunResult, where: str) -> StepTimes:
        """The record of a stored run; ResultsError names what does not fit."""
        return decode(cls, result.extra, where)


def timed_run(measure: Callable[[], KernelTimes | StepTimes]) -> RunResult:
    """The RunResult of a timing run (no model trained): `measure()`'s record as its extra,
    the seconds it took as its wall time."""
    started = time.perf_counter()
    record = measure()
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=record.extra())


# --- statistics -----------------------------------------------------------------------------------
def bootstrap_ratio_ci(a: Sequence[float], b: Sequence[float], *,
                       samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED,
                       level: float = 0.95) -> TimeRatio:
    """median(a) / median(b) with a percentile bootstrap interval over paired repeats.

    a[i] and b[i] were measured in the same repeat i, so each bootstrap sample draws repeat
    indices with replacement and keeps the pairs together; the interval is the (1 − level)/2 and
    (1 + level)/2 percentiles (numpy's linear interpolation) of the resampled ratios. A fixed
    seed makes the interval reproducible.

    Returns the ratio, the interval and the number of repeats.
    """
    a_arr, b_arr = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a_arr.shape != b_arr.shape or a_arr.ndim != 1 or a_arr.size == 0:
        raise InputError(f"paired samples need equal, non-zero lengths, got {a_arr.shape} and "
                         f"{b_arr.shape}")
    rng = np.random.default_rng(seed)
    index = rng.integers(0, a_arr.size, size=(samples, a_arr.size))
    ratios = np.median(a_arr[index], axis=1) / np.median(b_arr[index], axis=1)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return TimeRatio(ratio=float(np.median(a_arr) / np.median(b_arr)), ci_low=float(low),
                     ci_high=float(high), repeats=int(a_arr.size))


def equivalence(delta: Interval, margin: float) -> tuple[bool, str]:
    """(equivalent, verdict) for a paired difference `delta` (`paired_difference`) against an
    equivalence margin: equivalent when the whole 95% CI lies strictly inside ±margin (the
    two one-sided tests at the 2.5% level each); "different" when it lies wholly outside."""
    low, high = delta.ci_low, delta.ci_high
    if low is None or high is None:
        return False, "undecided (fewer than two paired seeds)"
    if -margin < low and high < margin:
        return True, "equivalent"
    if low >= margin or high <= -margin:
        return False, "different (whole CI outside the margin)"
    return False, "not shown equivalent (CI crosses the margin)"


# --- the implementations --------------------------------------------------------------------------
def _plain_norms():
    import torch
    from torch import nn

    class PlainRMSNorm(nn.Module):
        """RMSNorm spelled in elementary ops (what a user writes without a fused kernel)."""

        def __init__(self, dim: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight

    class PlainLayerNorm(nn.Module):
        """LayerNorm spelled in the same elementary ops plus the centring and the bias."""

        def __init__(self, dim: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))
            self.bias = nn.Parameter(torch.zeros(dim))

        def forward(self, x):
            centred = x - x.mean(-1, keepdim=True)
            return centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + EPS) \
                * self.weight + self.bias

    return PlainRMSNorm, PlainLayerNorm


def build_implementations(d: int, kinds: Sequence[str] = KINDS) -> dict[str, nn.Module]:
    """'norm:kind' -> a module mapping [rows, d] -> [rows, d] (compiled ones not yet called)."""
    import torch
    from torch import nn

    from blocklab.nn import LayerNorm, RMSNorm

    plain_rms, plain_ln = _plain_norms()
    makers: dict[str, Callable[[], nn.Module]] = {
        "rmsnorm:blocklab": lambda: RMSNorm(d, eps=EPS),
        "layernorm:blocklab": lambda: LayerNorm(d, eps=EPS),
        "rmsnorm:torch": lambda: nn.RMSNorm(d, eps=EPS),
        "layernorm:torch": lambda: nn.LayerNorm(d, eps=EPS),
        "rmsnorm:plain": lambda: plain_rms(d),
        "layernorm:plain": lambda: plain_ln(d),
        "rmsnorm:compiled": lambda: torch.compile(plain_rms(d), dynamic=False),
        "layernorm:compiled": lambda: torch.compile(plain_ln(d), dynamic=False),
    }
    return {name: make() for name, make in makers.items() if name.split(":")[1] in kinds}


def saved_tensor_bytes(fn: Callable[[], Any], exclude: Sequence[Any] = ()) -> dict[str, int]:
    """Bytes autograd keeps for backward while `fn()` runs its forward, counted exactly.

    Every tensor saved for backward passes through a `saved_tensors_hooks` pack hook; distinct
    storages are summed once each (two ops saving the same x hold it once). `extra_bytes`
    leaves out the storages of `exclude` (the input and the parameters, which exist anyway), so
    it is the activation memory the layer adds. Deterministic: no allocator, no timing.

    Returns {"bytes", "extra_bytes", "tensors"}.
    """
    import torch

    seen: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        fn()
    excluded = {t.untyped_storage().data_ptr() for t in exclude}
    return {"bytes": sum(seen.values()),
            "extra_bytes": sum(n for ptr, n in seen.items() if ptr not in excluded),
            "tensors": len(seen)}


@contextlib.contextmanager
def _cold_compile() -> Iterator[None]:
    """Compile from scratch: a fresh, empty inductor cache folder (generated C++ and its builds,
    FX graphs, autograd graphs) and no compiled frames in memory, so a compile time means the
    same on the first run of a machine and the tenth; the folder is deleted afterwards.

    Public API only: the folder is set through the documented TORCHINDUCTOR_CACHE_DIR (and
    TRITON_CACHE_DIR) variables, read at each cache access, and restored afterwards;
    `torch.compiler.reset()` drops the compiled frames. Inductor's in-memory table of built
    kernels, keyed by their generated C++, has no public way to clear, and the same source
    compiled twice in one process skips its C++ build the second time (0.6 s instead of 5 s
    here). A kernel run never meets that: it compiles its own shape at its own thread count
    (which inductor writes into the C++), once.
    """
    import torch

    names = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
    saved = {name: os.environ.get(name) for name in names}
    torch.compiler.reset()
    with tempfile.TemporaryDirectory(prefix="blocklab-inductor-") as folder:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
        os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "triton")
        try:
            yield
        finally:
            torch.compiler.reset()
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


_INDUCTOR_WARM = False


def _warm_inductor() -> float:
    """Seconds spent on this process's first torch.compile of anything (imports, compiler
    checks); paid once per process, so it is reported apart from the per-shape compile times."""
    global _INDUCTOR_WARM
    if _INDUCTOR_WARM:
        return 0.0
    import torch

    start = time.perf_counter()
    x = torch.randn(8, 8, requires_grad=True)
    torch.compile(lambda t: (t * 2).sin(), dynamic=False)(x).sum().backward()
    _INDUCTOR_WARM = True
    return time.perf_counter() - start


def time_kernels(d: int, rows: int, *, repeats: int, compile: bool, threads: int,
                 block_s: float = 0.01, seed: int = 0,
                 kinds: Sequence[str] | None = None,
                 passes: Sequence[str] = PASSES) -> KernelTimes:
    """Forward and forward+backward seconds per call of every implementation at [rows, d]
    (`KernelTimes`).

    Forward runs under `torch.no_grad()` (inference); forward+backward computes the gradients
    of x and the parameters with `torch.autograd.grad` for a fixed upstream gradient. Each timed
    block repeats a call `inner` times (chosen once per implementation so a block lasts about
    `block_s`) and records the mean; repeat r runs the implementations in KINDS order rotated
    by r. Compiled implementations are compiled before timing, their compile time (first
    forward+backward, then first no-grad forward) recorded separately; if compiling fails the
    error is recorded and the other implementations are still timed. `kinds`: only these
    kinds (default: every kind of KINDS, "compiled" only when `compile`); `passes`: only these
    of PASSES (a compiled module compiles once per pass: grad mode is part of its guards).
    """
    import torch

    if kinds is None:
        kinds = KINDS if compile else tuple(k for k in KINDS if k != "compiled")
    elif "compiled" in kinds and not compile:
        raise InputError("time_kernels: the compiled kind needs compile=True")
    with torch_threads(threads):
        inductor_warmup_s = _warm_inductor() if compile else 0.0
    with torch_threads(threads), (_cold_compile() if compile else contextlib.nullcontext()):
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(rows, d, generator=generator).requires_grad_(True)
        upstream = torch.randn(rows, d, generator=generator)
        impls = build_implementations(d, kinds)
        compile_s: dict[str, float] = {}
        errors: dict[str, str] = {}
        saved: dict[str, dict[str, int]] = {}
        seconds: dict[str, dict[str, list[float]]] = {name: {} for name in impls}

        def forward(module):
            def call():
                with torch.no_grad():
                    module(x)
            return call

        def forward_backward(module):
            inputs = [x, *module.parameters()]

            def call():
                torch.autograd.grad(module(x), inputs, upstream)
            return call

        calls: dict[str, dict[str, Callable[[], None]]] = {}
        for name, module in impls.items():
            made = {"fwdbwd": forward_backward(module), "fwd": forward(module)}
            # forward+backward first, as the compile times have always been taken
            chosen = {key: call for key, call in made.items() if key in passes}
            try:
                tick = time.perf_counter()
                for call in chosen.values():
                    call()
                if name.endswith(":compiled"):
                    compile_s[name] = time.perf_counter() - tick
                for _ in range(2):  # warm-up, untimed
                    for call in chosen.values():
                        call()
            except Exception as err:
                # A compiler failure (any type: inductor raises many) must not sink the eager
                # numbers; it is recorded and shown in the summary's notes. An eager
                # implementation that fails is a bug and stops the run.
                if not name.endswith(":compiled"):
                    raise
                errors[name] = f"{type(err).__name__}: {err}".splitlines()[0]
                continue
            saved[name] = saved_tensor_bytes(lambda m=module: m(x),
                                             exclude=[x, *module.parameters()])
            calls[name] = {key: chosen[key] for key in PASSES if key in chosen}

        inner: dict[str, list[int]] = {}  # per pass, in PASSES order
        for name, pair in calls.items():
            counts = []
            for key, call in pair.items():
                tick = time.perf_counter()
                call()
                once = max(time.perf_counter() - tick, 1e-7)
                counts.append(max(1, min(1000, math.ceil(block_s / once))))
                seconds[name][key] = []
            inner[name] = counts

        names = list(calls)
        for r in range(repeats):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                for (key, call), count in zip(calls[name].items(), inner[name], strict=True):
                    tick = time.perf_counter()
                    for _ in range(count):
                        call()
                    seconds[name][key].append((time.perf_counter() - tick) / count)
    records = {}
    for name in impls:
        kept = saved.get(name, {})
        records[name] = ImplTimes(
            compile_s=compile_s.get(name), error=errors.get(name), bytes=kept.get("bytes"),
            extra_bytes=kept.get("extra_bytes"), tensors=kept.get("tensors"),
            fwd_s=seconds[name].get("fwd"), fwdbwd_s=seconds[name].get("fwdbwd"))
    return KernelTimes(kind="kernels", d=d, rows=rows, threads=threads, repeats=repeats,
                       inner=inner, impls=records, inductor_warmup_s=inductor_warmup_s)


# --- like for like: equally fused kernels ---------------------------------------------------------
def _backward_nodes(y) -> int:
    """Autograd nodes between the output `y` and its leaves (AccumulateGrad not counted): 1
    when one fused op computed y, one per elementary op when a composite did."""
    seen, stack = set(), [y.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(child for child, _ in node.next_functions)
    return sum(1 for node in seen if "AccumulateGrad" not in node.name())


def torch_norms_fused(d: int = 8) -> dict[str, bool]:
    """{norm: whether PyTorch's functional norm (F.rms_norm, F.layer_norm) runs as one fused op
    on this build and CPU}, read off the autograd graph of one call on a [2, d] input.

    In torch 2.13 on CPU, F.rms_norm dispatches to aten::_fused_rms_norm, whose CPU kernel is
    `rms_norm_composite` (`_fused_rms_norm_cuda` exists for CUDA only): pow, mean, add, rsqrt
    and two muls, each its own kernel and its own backward node. F.layer_norm runs
    aten::native_layer_norm, one fused CPU kernel with one fused backward.
    """
    import torch
    import torch.nn.functional as F

    x = torch.randn(2, d, requires_grad=True)
    weight = torch.ones(d, requires_grad=True)
    bias = torch.zeros(d, requires_grad=True)
    rms = F.rms_norm(x, (d,), weight, EPS)
    ln = F.layer_norm(x, (d,), weight, bias, EPS)
    return {"rmsnorm": _backward_nodes(rms) == 1, "layernorm": _backward_nodes(ln) == 1}


# What each like-for-like method times, by norm (the kinds of `build_implementations`).
LIKE_KERNELS = {
    "torch-fused": {"rmsnorm": "torch.nn.RMSNorm (F.rms_norm, fused)",
                    "layernorm": "torch.nn.LayerNorm (F.layer_norm, fused)"},
    "torch.compile": {"rmsnorm": "torch.compile of x·rsqrt(mean(x²) + ε)·γ (inductor)",
                      "layernorm": "torch.compile of (x − μ)·rsqrt(mean((x − μ)²) + ε)·γ + β "
                                   "(inductor)"},
}
_LIKE_KIND = {"torch-fused": "torch", "torch.compile": "compiled"}


def like_method(fused: dict[str, bool]) -> str:
    """The like-for-like method: PyTorch's own kernels when both norms run fused, else both
    through torch.compile, which fuses each pass of each the same way."""
    return "torch-fused" if all(fused.values()) else "torch.compile"


def time_like_for_like(d: int, rows: int, *, repeats: int, threads: int,
                       block_s: float = 0.01, seed: int = 0) -> LikeForLikeTimes:
    """RMSNorm and LayerNorm on a [rows, d] input timed with equally fused kernels
    (`like_method` of `torch_norms_fused`) by `time_kernels`: forward+backward, the training
    pass the claim is about, plus the no-grad forward when both are PyTorch's fused kernels
    (a compiled module compiles once more for it, ~2 s each here; the --size full kernel runs
    time the compiled forward). Compiled ones compile cold. Returns time_kernels' record with
    the method, `torch_fused`, the kernels (norm -> what ran) and the kind of
    `build_implementations` timed (`LikeForLikeTimes`)."""
    with torch_threads(threads):
        fused = torch_norms_fused()
    method = like_method(fused)
    kind = _LIKE_KIND[method]
    passes = PASSES if kind != "compiled" else ("fwdbwd",)
    timed = time_kernels(d, rows, repeats=repeats, compile=kind == "compiled",
                         threads=threads, block_s=block_s, seed=seed, kinds=(kind,),
                         passes=passes)
    return LikeForLikeTimes(**{**vars(timed), "kind": "like-for-like"}, method=method,
                            torch_fused=fused, kernels=dict(LIKE_KERNELS[method]),
                            timed_kind=kind)


# --- what "compute" means: FLOPs and bytes (analytic) ---------------------------------------------
# Per-row statistics a fused kernel keeps for backward (float32 whatever the input's dtype):
# RMSNorm the 1/rms, LayerNorm the mean and the 1/std. Parameters: γ; γ and β.
NORM_STATS = {"rmsnorm": 1, "layernorm": 2}
NORM_PARAMS = {"rmsnorm": 1, "layernorm": 2}
STAT_BYTES = 4
# The real model the counts are also read at (`blocklab.budget` zoo), in bf16 (2 bytes).
REAL_MODEL = "meta-llama-3-8b"
REAL_ELEMENT_BYTES = 2


def count_norm(norm: str, d: int, element_bytes: int = 4) -> NormCount:
    """FLOPs and bytes of `norm` on one row of width d.

    FLOPs: `budget.flops.norm_flops_per_row` (forward `ELEMENTWISE_COST`: RMSNorm 4 per
    element, LayerNorm 7; backward `NORM_BACKWARD_COST`: 9 and 13). Bytes: an ideal fused
    kernel touching each tensor once, `element_bytes` per element:

        training forward   read x, write y (2·d·e), write the row statistics (s·4)
        backward           read x and dy, write dx (3·d·e), read the statistics (s·4)
        per call           read γ (β) forward, read γ and write dγ (dβ) backward: (2p + 1)·d·e

    with s = NORM_STATS and p = NORM_PARAMS. The per-row bytes differ only by the statistics:
    both norms read and write the same activations.
    """
    from blocklab.budget.flops import norm_flops_per_row

    fwd_flops = norm_flops_per_row(norm, d)  # first: it refuses an unknown norm or d
    stats = NORM_STATS[norm] * STAT_BYTES
    fwd_bytes = 2 * d * element_bytes + stats
    return NormCount(
        norm=norm, d=d, element_bytes=element_bytes,
        fwd_flops=fwd_flops, fwdbwd_flops=norm_flops_per_row(norm, d, True),
        fwd_bytes=fwd_bytes, fwdbwd_bytes=fwd_bytes + 3 * d * element_bytes + stats,
        param_bytes=(2 * NORM_PARAMS[norm] + 1) * d * element_bytes)


def saving_pct(rms: float, ln: float) -> float:
    """100·(1 − rms / ln): how much less RMSNorm needs than LayerNorm, % (negative: more)."""
    return 100 * (1 - rms / ln)


def step_share(cfg, batch: int, seq_len: int, model: str) -> StepShare:
    """The norms' FLOPs in one training step of `cfg` ([batch, seq_len] tokens) with RMSNorm
    and with LayerNorm, everything else alike.

    Matmuls: 3× the forward (`budget.flops.prefill_flops`: backward = 2× forward, the 6·N
    rule); norms: `budget.flops.elementwise_flops`' forward norm count (2 per layer, 4 with
    sandwich placement, + the final norm) scaled to forward+backward. The other elementwise
    work (activations, softmax, RoPE) is left out of the step, so the saving is an upper
    bound.
    """
    from blocklab.budget.flops import (
        ELEMENTWISE_COST,
        NORM_BACKWARD_COST,
        elementwise_flops,
        prefill_flops,
    )

    matmul = 3 * prefill_flops(cfg, batch, seq_len).total
    norm_flops, calls = {}, 0
    for norm in NORM_NAMES:
        fwd = elementwise_flops(cfg.replace(norm=norm), batch, seq_len)["norms"]
        per_call = batch * seq_len * cfg.d_model * ELEMENTWISE_COST[norm]
        calls = fwd // per_call
        norm_flops[norm] = calls * batch * seq_len * cfg.d_model * (
            ELEMENTWISE_COST[norm] + NORM_BACKWARD_COST[norm])
    step = {norm: matmul + flops for norm, flops in norm_flops.items()}
    return StepShare(model=model, d_model=cfg.d_model, n_layers=cfg.n_layers, batch=batch,
                     seq_len=seq_len, norm_calls=calls, matmul_flops=matmul,
                     norm_flops=norm_flops, step_flops=step,
                     saving_pct=saving_pct(step["rmsnorm"], step["layernorm"]))


def count_compute(size: str) -> NormCompute:
    """C18's analytic part at `size`: per-row counts at the step model's width (float32, as
    the suite runs) and at the real model's (bf16), and the step shares of both models."""
    from blocklab.budget import resolve_model

    step = SIZES[size].step
    real = resolve_model(REAL_MODEL).config
    counts = [count_norm(norm, d, e) for d, e in ((step.d_model, 4),
                                                  (real.d_model, REAL_ELEMENT_BYTES))
              for norm in NORM_NAMES]
    by = {(c.norm, c.d, c.element_bytes): c for c in counts}
    bytes_saving = {
        f"d={d}/{e}B": saving_pct(by["rmsnorm", d, e].fwdbwd_bytes,
                                  by["layernorm", d, e].fwdbwd_bytes)
        for d, e in ((step.d_model, 4), (real.d_model, REAL_ELEMENT_BYTES))}
    rms, ln = counts[0], counts[1]
    suite_cfg = _model_config("rmsnorm", step.d_model, step.n_layers, step.seq_len)
    steps = [step_share(suite_cfg, step.batch_size, step.seq_len, f"norm-cost {size}"),
             step_share(real, 1, real.max_seq_len, REAL_MODEL)]
    return NormCompute(counts=counts,
                       flops_saving_pct=saving_pct(rms.fwdbwd_flops, ln.fwdbwd_flops),
                       fwd_flops_saving_pct=saving_pct(rms.fwd_flops, ln.fwd_flops),
                       bytes_saving_pct=bytes_saving, steps=steps)


# --- end to end -----------------------------------------------------------------------------------
def _model_config(norm: str, d_model: int, n_layers: int, seq_len: int) -> ModelConfig:
    # The project's default block (pre-norm, SwiGLU, RoPE), head_dim 32; only the norm differs.
    return ModelConfig(vocab_size=256, d_model=d_model, n_layers=n_layers,
                       n_heads=max(1, d_model // 32), max_seq_len=seq_len, norm=norm,
                       position="rope", name=f"norm-cost-{norm}")


def _torch_rms_norm_module(norm):
    """A module computing `norm`'s function (an RMSNorm with a plain gain) by PyTorch's own
    kernel, F.rms_norm, sharing its gain; it has no fused residual form, so a block adds the
    residual apart, as it does for LayerNorm."""
    import torch.nn.functional as F
    from torch import nn

    class _TorchRMSNorm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight, self.eps = norm.weight, norm.eps

        def forward(self, x):
            """x: [..., d] -> [..., d]."""
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)

    return _TorchRMSNorm()


def like_for_like(model):
    """`model` (a DecoderLM) with every RMSNorm replaced in place by PyTorch's F.rms_norm, the
    counterpart of the F.layer_norm every LayerNorm model runs. Refuses an RMSNorm whose
    function F.rms_norm does not compute (a (1 + γ) gain, or statistics in another dtype)."""
    from blocklab.nn.norm import RMSNorm

    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, RMSNorm):
                offset = getattr(child, "unit_offset", False)
                if offset or child.cast != "llama":
                    raise InputError(
                        f"like_for_like: {name} is not a plain RMSNorm (unit_offset={offset}, "
                        f"cast={child.cast!r}); F.rms_norm computes only unit_offset=False, "
                        "cast='llama'")
                setattr(parent, name, _torch_rms_norm_module(child))
    return model


STEP_PATHS = ("blocklab", "like-for-like")


def time_training_steps(step: StepShape, *, threads: int, seed: int = 0) -> StepTimes:
    """Seconds per optimizer step (forward, backward, clip, AdamW) of the rmsnorm and layernorm
    models on each code path of `STEP_PATHS`, the four models' steps interleaved (the order
    rotating by one every repeat); the first `warmup` repeats are not recorded. All see the
    same batches. The models are built as a default TrainConfig says (the "fast" backend,
    float32): the run's payload names no other.

    Returns `StepTimes`, its `step_s` {path: {norm: [seconds per repeat]}}.
    """
    from blocklab.experiments.data import load_corpus, sample_batch
    from blocklab.experiments.trainer import TrainConfig, build_model, make_optimizer, train_step

    corpus = load_corpus("stdlib")
    tc = TrainConfig(steps=1, batch_size=step.batch_size, seq_len=step.seq_len, seed=seed)
    keys = [(path, norm) for path in STEP_PATHS for norm in NORM_NAMES]
    with torch_threads(threads):
        models, optimizers = {}, {}
        for path, norm in keys:
            mc = _model_config(norm, step.d_model, step.n_layers, step.seq_len)
            model = build_model(mc, tc)
            models[path, norm] = like_for_like(model) if path == "like-for-like" else model
            optimizers[path, norm] = make_optimizer(models[path, norm], tc)
        params = {key: list(model.parameters()) for key, model in models.items()}
        times: dict[str, dict[str, list[float]]] = {
            path: {norm: [] for norm in NORM_NAMES} for path in STEP_PATHS}
        for i in range(step.warmup + step.repeats):
            batch = sample_batch(corpus.train, seed=seed, step=i, batch_size=tc.batch_size,
                                 seq_len=tc.seq_len)
            for path, norm in keys[i % len(keys):] + keys[:i % len(keys)]:
                tick = time.perf_counter()
                train_step(models[path, norm], batch, optimizers[path, norm],
                           params[path, norm], lr=tc.lr,
                           grad_clip=tc.grad_clip)  # the trainer's step, timed whole
                if i >= step.warmup:
                    times[path][norm].append(time.perf_counter() - tick)
    counts = {norm: sum(p.numel() for p in models["blocklab", norm].parameters())
              for norm in NORM_NAMES}
    return StepTimes(kind="step", threads=threads, model=step, params=counts, step_s=times)


# --- plan -----------------------------------------------------------------------------------------
def train_config(quality: QualityShape, seed: int, options: RunOptions) -> TrainConfig:
    """A quality run's training: the one place the suite builds a TrainConfig for a run (in
    `options`' precision and backend)."""
    from blocklab.experiments.trainer import TrainConfig

    q = quality
    return TrainConfig(steps=q.steps, batch_size=q.batch_size, seq_len=q.seq_len, lr=q.lr,
                       warmup_steps=q.warmup_steps, eval_batches=q.eval_batches, eval_every=0,
                       log_every=0, seed=seed, threads=1,
                       final_eval_fraction=q.final_eval_fraction,
                       precision=options.precision, backend=options.backend)


def _kernels_spec(grid: KernelGrid, d: int, rows: int, threads: int) -> RunSpec:
    payload = {"suite": "norm-cost", "kind": "kernels", "d": d, "rows": rows,
               "repeats": grid.repeats, "compile": grid.compile,
               "compile_cache": "fresh" if grid.compile else None,
               "threads": threads, "block_s": grid.block_s}
    return RunSpec(f"kernels d={d} rows={rows} threads={threads}", "kernels", 0, payload,
                   lambda progress: timed_run(lambda: time_kernels(
                       d, rows, repeats=grid.repeats, compile=grid.compile, threads=threads,
                       block_s=grid.block_s)),
                   timed=True)


def _step_spec(step: StepShape, threads: int) -> RunSpec:
    payload = {"suite": "norm-cost", "kind": "step", "threads": threads,
               **dataclasses.asdict(step)}
    return RunSpec(f"step time threads={threads}", "step", 0, payload,
                   lambda progress: timed_run(lambda: time_training_steps(step,
                                                                          threads=threads)),
                   timed=True)


def _like_for_like_spec(size: Size, threads: int) -> RunSpec:
    """The like-for-like kernel timing (`time_like_for_like`) at the step model's shape:
    d = d_model, rows = batch_size · seq_len."""
    like = size.like_for_like
    d, rows = size.step.d_model, size.step.batch_size * size.step.seq_len
    payload = {"suite": "norm-cost", "kind": "like-for-like", "d": d, "rows": rows,
               "threads": threads, **dataclasses.asdict(like)}
    return RunSpec(f"like-for-like kernels d={d} rows={rows} threads={threads}",
                   "like-for-like", 0, payload,
                   lambda progress: timed_run(lambda: time_like_for_like(
                       d, rows, repeats=like.repeats, threads=threads, block_s=like.block_s)),
                   timed=True)


def _quality_spec(options: RunOptions, norm: str, seed: int) -> RunSpec:
    from blocklab.experiments.trainer import run

    q = SIZES[options.size].quality
    mc = _model_config(norm, q.d_model, q.n_layers, q.seq_len)
    tc = train_config(q, seed, options)
    payload = {"suite": "norm-cost", "kind": "quality", "model": mc.to_dict(),
               "train": train_identity(tc), "data": "stdlib"}
    label = f"quality {norm} seed {seed}"
    return RunSpec(label, norm, seed, payload,
                   lambda progress: run(mc, tc, "stdlib", progress=progress, label=label))


def plan(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """Kernel runs (one per shape and thread count, at full only), one step-time run and one
    like-for-like kernel timing per thread count (both reported beside C18, which the
    analytic counts and the quality runs decide), then the quality runs (rmsnorm and
    layernorm × seeds)."""
    size = SIZES[options.size]
    specs = []
    for threads in size.threads:
        if size.kernels is not None:
            specs += [_kernels_spec(size.kernels, d, rows, threads)
                      for d, rows in size.kernels.shapes]
        specs.append(_step_spec(size.step, threads))
        specs.append(_like_for_like_spec(size, threads))
    specs += [_quality_spec(options, norm, seed) for seed in options.seeds
              for norm in NORM_NAMES]
    return specs


# Reference-machine seconds (`blocklab.experiments.estimate`) of what a calibration does not time:
# the process's first torch.compile, one cold compile of one implementation at one shape (forward
# and backward, then the no-grad forward), and one call per element of a [rows, d] input
# (forward; forward+backward) of blocklab's kernels, the other kinds a multiple of it.
_INDUCTOR_WARM_REFERENCE_S = 5.0
_COLD_COMPILE_REFERENCE_S = 4.2
_ELEMENT_REFERENCE_S = {"fwd_s": 3.0e-9, "fwdbwd_s": 6.6e-9}  # blocklab's kernels
_KIND_FACTOR = {"blocklab": 1.0, "torch": 2.5, "plain": 4.5, "compiled": 1.2}


def price(spec: RunSpec, cal: Calibration) -> float | None:
    """Estimated seconds of one run on this machine from a calibration (`blocklab.experiments.
    estimate`): a kernels run is (per implementation and pass) its warm-up and block-sizing
    calls plus `repeats` blocks of at least block_s, and the cold compiles; a step run builds
    the four models and takes (warmup + repeats) steps of each; quality runs are the
    trainer's (the default)."""
    payload = spec.payload
    if payload["kind"] == "kernels":
        elements = payload["d"] * payload["rows"]
        kinds = KINDS if payload["compile"] else tuple(k for k in KINDS if k != "compiled")
        seconds = 0.0
        for kind in kinds:
            factor = _KIND_FACTOR[kind]
            for per_element in _ELEMENT_REFERENCE_S.values():
                call = cal.reference_s(per_element * elements * factor)
                # two norms; 2 warm-up calls, 1 sizing call and (forward) 1 saved-bytes call
                seconds += len(NORM_NAMES) * (4 * call + payload["repeats"]
                                              * max(call, cal.fixed_s(payload["block_s"])))
        if payload["compile"]:
            seconds += len(NORM_NAMES) * cal.reference_s(_COLD_COMPILE_REFERENCE_S)
            # The process's first compile, paid by a size's first kernels run.
            firsts = {(c.kernels.shapes[0], c.threads[0])
                      for c in SIZES.values() if c.kernels is not None}
            if ((payload["d"], payload["rows"]), payload["threads"]) in firsts:
                seconds += cal.reference_s(_INDUCTOR_WARM_REFERENCE_S)
        return seconds
    if payload["kind"] == "like-for-like":
        return _like_for_like_price(payload, cal)
    if payload["kind"] == "step":
        b, t = payload["batch_size"], payload["seq_len"]
        seconds = 0.0
        for norm in NORM_NAMES:
            model = _model_config(norm, payload["d_model"], payload["n_layers"], t)
            seconds += len(STEP_PATHS) * (cal.build_s(model, b, t) + (
                payload["warmup"] + payload["repeats"]) * cal.step_s(model, b, t))
        return seconds
    return None


def _like_for_like_price(payload: dict[str, Any], cal: Calibration) -> float:
    """A like-for-like run priced as on a CPU, where F.rms_norm is not fused: the compiled
    kind, forward+backward only, two cold compiles, and the process's first compile at a size
    that plans no kernel runs (which would have paid it first)."""
    call = cal.reference_s(_ELEMENT_REFERENCE_S["fwdbwd_s"] * payload["d"] * payload["rows"]
                           * _KIND_FACTOR["compiled"])
    seconds = len(NORM_NAMES) * (4 * call + payload["repeats"]
                                 * max(call, cal.fixed_s(payload["block_s"])))
    seconds += len(NORM_NAMES) * cal.reference_s(_COLD_COMPILE_REFERENCE_S)
    alone = any(c.kernels is None and c.step.d_model == payload["d"]
                and c.step.batch_size * c.step.seq_len == payload["rows"]
                for c in SIZES.values())
    return seconds + (cal.reference_s(_INDUCTOR_WARM_REFERENCE_S) if alone else 0.0)


# --- summarise ------------------------------------------------------------------------------------
def _median_ms(values: Sequence[float] | None) -> float | None:
    return None if not values else 1000 * float(np.median(values))


def _kernel_rows(results: Results
                 ) -> tuple[list[KernelTiming], list[KernelRatio], list[CompileTime]]:
    """Every implementation's timing per kernels run, the RMSNorm/LayerNorm ratios within each
    kind (both passes) and the compile times of the compiled kind."""
    kernels, ratios, compiles = [], [], []
    for spec, result in results:
        if spec.arm != "kernels" or result.status != "ok":
            continue
        record = KernelTimes.of(result, spec.label)
        d, rows, threads = record.d, record.rows, record.threads
        for name, rec in record.impls.items():
            kernels.append(KernelTiming(
                impl=name, d=d, rows=rows, threads=threads,
                fwd_ms=_median_ms(rec.fwd_s), fwdbwd_ms=_median_ms(rec.fwdbwd_s),
                saved_bytes=rec.bytes, extra_saved_bytes=rec.extra_bytes,
                compile_s=rec.compile_s, error=rec.error))
        for kind in KINDS:
            rms = record.impls.get(f"rmsnorm:{kind}")
            ln = record.impls.get(f"layernorm:{kind}")
            if rms is None or ln is None:
                continue
            if kind == "compiled":
                compiles.append(CompileTime(
                    d=d, rows=rows, threads=threads, rmsnorm_s=rms.compile_s,
                    layernorm_s=ln.compile_s, error=rms.error or ln.error,
                    inductor_warmup_s=record.inductor_warmup_s))
            if rms.fwd_s is None or ln.fwd_s is None:
                continue
            for pass_name in ("fwd", "fwdbwd"):
                ratios.append(KernelRatio(
                    d=d, rows=rows, threads=threads, impl=f"rmsnorm:{kind}",
                    layernorm_impl=f"layernorm:{kind}", pass_name=pass_name,
                    time=bootstrap_ratio_ci(rms.seconds(pass_name) or [],
                                            ln.seconds(pass_name) or [])))
    return kernels, ratios, compiles


def _like_rows(results: Results) -> list[FusedTiming]:
    """The like-for-like kernel timings (`time_like_for_like`), one per thread count."""
    out = []
    for spec, result in results:
        if spec.arm != "like-for-like" or result.status != "ok":
            continue
        record = LikeForLikeTimes.of(result, spec.label)
        rms, ln = (record.impls.get(f"{norm}:{record.timed_kind}", ImplTimes())
                   for norm in NORM_NAMES)
        out.append(FusedTiming(
            d=record.d, rows=record.rows, threads=record.threads, method=record.method,
            kernels=record.kernels, torch_fused=record.torch_fused,
            rmsnorm_ms={p: _median_ms(rms.seconds(p)) for p in PASSES},
            layernorm_ms={p: _median_ms(ln.seconds(p)) for p in PASSES},
            ratios={p: bootstrap_ratio_ci(rms.seconds(p) or [], ln.seconds(p) or [])
                    for p in PASSES if rms.seconds(p) and ln.seconds(p)},
            compile_s={norm: rec.compile_s for norm, rec in zip(NORM_NAMES, (rms, ln),
                                                                strict=True)},
            error=rms.error or ln.error))
    return out


def _step_times(results: Results) -> dict[str, StepTime]:
    """"<path>/<threads>" -> the step time of each code path of each step-time run."""
    out = {}
    for spec, result in results:
        if spec.arm != "step" or result.status != "ok":
            continue
        record = StepTimes.of(result, spec.label)
        for path, times in record.step_s.items():
            out[f"{path}/{record.threads}"] = StepTime(
                threads=record.threads, model=dataclasses.asdict(record.model),
                params=record.params, rmsnorm_ms=_ms(times["rmsnorm"]),
                layernorm_ms=_ms(times["layernorm"]),
                time=bootstrap_ratio_ci(times["rmsnorm"], times["layernorm"]), path=path)
    return out


def _quality(results: Results) -> NormQuality:
    """RMSNorm's and LayerNorm's validation losses over the seeds both ran, their paired
    difference and its verdict against EQUIVALENCE_MARGIN."""
    losses: dict[str, dict[int, float | None]] = {norm: {} for norm in NORM_NAMES}
    statuses: dict[str, list[str]] = {norm: [] for norm in NORM_NAMES}
    entropy = None
    for spec, result in results:
        if spec.arm in NORM_NAMES:
            final = result.final
            losses[spec.arm][spec.seed] = (final.val_loss if result.status == "ok" and final
                                           else None)
            statuses[spec.arm].append(result.status)
            if final is not None:
                entropy = final.unigram_entropy
    seed_list = sorted(set(losses["rmsnorm"]) & set(losses["layernorm"]))
    rms_losses = [losses["rmsnorm"][s] for s in seed_list]
    ln_losses = [losses["layernorm"][s] for s in seed_list]
    delta = paired_difference(rms_losses, ln_losses)
    equivalent, verdict = equivalence(delta, EQUIVALENCE_MARGIN)
    return NormQuality(rmsnorm=mean_ci(rms_losses), layernorm=mean_ci(ln_losses), delta=delta,
                       margin=EQUIVALENCE_MARGIN, equivalent=equivalent, verdict=verdict,
                       seeds=seed_list, statuses=statuses, unigram_entropy=entropy)


def _ms(values: Sequence[float]) -> float:
    return 1000 * float(np.median(values))


def _kernel_tables(kernels: list[KernelTiming], ratios: list[KernelRatio]) -> list[Table]:
    """Per thread count, the forward+backward and forward times of every kind and shape, then
    the bytes saved for backward (none without kernel runs)."""
    by_key = {(k.impl, k.d, k.rows, k.threads): k for k in kernels}
    shapes = sorted({(k.threads, k.rows, k.d) for k in kernels})

    def pairs(threads: int) -> Iterator[tuple[int, int, str, KernelTiming, KernelTiming]]:
        for t, rows, d in shapes:
            for kind in KINDS:
                rms = by_key.get((f"rmsnorm:{kind}", d, rows, t))
                ln = by_key.get((f"layernorm:{kind}", d, rows, t))
                if t == threads and rms is not None and ln is not None:
                    yield d, rows, kind, rms, ln

    tables = []
    for threads in sorted({t for t, _, _ in shapes}):
        for pass_name, title in (("fwdbwd", "Forward+backward"), ("fwd", "Forward (no grad)")):
            tables.append(Table(
                f"{title}, {threads} thread(s): median ms per call",
                ["d", "rows", "impl", "RMSNorm ms", "LayerNorm ms", "RMS/LN [95% CI]"],
                [[d, rows, kind, getattr(rms, f"{pass_name}_ms"), getattr(ln, f"{pass_name}_ms"),
                  _ratio_cell(ratios, d, rows, threads, kind, pass_name)]
                 for d, rows, kind, rms, ln in pairs(threads)],
                "Ratio < 1: RMSNorm faster; CI: bootstrap over paired repeats."))
    if shapes:  # no kernel runs at a size that plans only what a rule grades
        first = min(t for t, _, _ in shapes)
        tables.append(Table(
            "Saved for backward beyond the input and parameters, KiB",
            ["d", "rows", "impl", "RMSNorm", "LayerNorm"],
            [[d, rows, kind, rms.extra_saved_bytes / 1024, ln.extra_saved_bytes / 1024]
             for d, rows, kind, rms, ln in pairs(first)
             if rms.extra_saved_bytes is not None and ln.extra_saved_bytes is not None],
            "Counted exactly with torch.autograd.graph.saved_tensors_hooks (distinct storages); "
            "the input x, also saved, is rows·d·4 bytes for every implementation."))
    return tables


def _span_notes(ratios: list[KernelRatio]) -> list[str]:
    notes = []
    for pass_name, title in (("fwdbwd", "forward+backward"), ("fwd", "forward")):
        spans = []
        for kind in KINDS:
            values = [r.time.ratio for r in ratios
                      if r.pass_name == pass_name and r.impl == f"rmsnorm:{kind}"]
            if values:
                spans.append(f"{kind} {min(values):.2f}–{max(values):.2f}")
        if spans:
            notes.append(f"RMSNorm/LayerNorm {title} time ratio over the shapes: "
                         + ", ".join(spans) + ".")
    return notes


def _step_table(step_time: dict[str, StepTime]) -> Table:
    return Table(
        "Training step time, DecoderLM with RMSNorm vs LayerNorm (median ms)",
        ["model", "code path", "threads", "RMSNorm ms", "LayerNorm ms",
         "ratio RMS/LN [95% CI]"],
        [[f"d={st.model['d_model']} L={st.model['n_layers']} T={st.model['seq_len']} "
          f"B={st.model['batch_size']}", st.path, st.threads, st.rmsnorm_ms, st.layernorm_ms,
          _ratio_text(st.time, 3)] for st in step_time.values()],
        "Forward, backward, clipping and AdamW; the four models' steps interleave. blocklab: "
        "the models as built (RMSNorm fused with the residual add in one kernel); "
        "like-for-like: both norms by PyTorch's functional ops (F.rms_norm, F.layer_norm), "
        "the residual added apart. On a CPU F.rms_norm is a composite of elementary ops and "
        "F.layer_norm one fused kernel, so neither path is equally fused; see the "
        "like-for-like kernel table.")


def _quality_table(quality: NormQuality) -> Table:
    entropy = quality.unigram_entropy
    return Table(
        "Quality: validation loss (nats/token) on stdlib, paired by seed",
        ["RMSNorm", "LayerNorm", "Δ RMS − LN", "margin", "verdict"],
        [[format_ci(quality.rmsnorm), format_ci(quality.layernorm), format_ci(quality.delta),
          f"±{EQUIVALENCE_MARGIN}", quality.verdict]],
        f"Equivalent when the whole 95% CI of Δ lies inside ±{EQUIVALENCE_MARGIN} nats/token; "
        f"unigram entropy of the training bytes: "
        f"{'—' if entropy is None else f'{entropy:.3f}'} nats.")


def _compute_tables(compute: NormCompute) -> list[Table]:
    """The analytic counts (`count_compute`) as two tables: per row, and per training step."""
    per_row = Table(
        "What 'compute' means: FLOPs and bytes per normalised row of width d (analytic)",
        ["norm", "d", "bytes/element", "fwd FLOPs", "fwd+bwd FLOPs", "fwd bytes",
         "fwd+bwd bytes", "γ, β bytes per call"],
        [[c.norm, c.d, c.element_bytes, c.fwd_flops, c.fwdbwd_flops, c.fwd_bytes,
          c.fwdbwd_bytes, c.param_bytes] for c in compute.counts],
        f"FLOPs by blocklab.budget's conventions (per element: RMSNorm 4 forward + 9 backward, "
        f"LayerNorm 7 + 13): RMSNorm needs {compute.flops_saving_pct:.1f}% fewer forward+"
        f"backward FLOPs ({compute.fwd_flops_saving_pct:.1f}% forward), at every d. Bytes: an "
        "ideal fused kernel reads and writes the same activations for both norms and differs "
        "only by the float32 row statistics (1 vs 2): "
        + ", ".join(f"{k} {v:.2f}%" for k, v in compute.bytes_saving_pct.items()) + " fewer.")
    per_step = Table(
        "The norms within one training step (analytic FLOPs)",
        ["model", "tokens", "norms per token", "norm GFLOPs RMSNorm", "norm GFLOPs LayerNorm",
         "step GFLOPs (LayerNorm)", "step saving %"],
        [[f"{st.model} (d={st.d_model}, L={st.n_layers})", st.batch * st.seq_len,
          st.norm_calls, st.norm_flops["rmsnorm"] / 1e9, st.norm_flops["layernorm"] / 1e9,
          st.step_flops["layernorm"] / 1e9, round(st.saving_pct, 4)] for st in compute.steps],
        "Step = 3 × forward matmul FLOPs (blocklab.budget) + every norm forward+backward; "
        "other elementwise work left out, so the saving is an upper bound.")
    return [per_row, per_step]


def _like_table(like: list[FusedTiming]) -> Table:
    rows = [[t.d, t.rows, t.threads, t.method, pass_name, t.rmsnorm_ms[pass_name],
             t.layernorm_ms[pass_name], _ratio_text(ratio, 3)]
            for t in like for pass_name, ratio in t.ratios.items()]
    kernels = "; ".join(f"{norm}: {what}" for norm, what in like[0].kernels.items())
    fused = like[0].torch_fused
    return Table(
        "Like-for-like kernel time: RMSNorm vs LayerNorm with equally fused kernels (median ms)",
        ["d", "rows", "threads", "method", "pass", "RMSNorm ms", "LayerNorm ms",
         "ratio RMS/LN [95% CI]"], rows,
        f"Timed: {kernels}. PyTorch's functional norms here: F.rms_norm "
        f"{'fused' if fused['rmsnorm'] else 'a composite of elementary ops'}, F.layer_norm "
        f"{'fused' if fused['layernorm'] else 'a composite'}; both are timed through "
        f"{'their fused kernels' if like[0].method == 'torch-fused' else 'torch.compile'}. "
        "Reported; C18's 'compute' is decided by the FLOP and byte counts.")


def _ratio_text(stats: TimeRatio, digits: int = 2) -> str:
    return (f"{stats.ratio:.{digits}f} [{stats.ci_low:.{digits}f}, "
            f"{stats.ci_high:.{digits}f}]")


def _ratio_cell(ratios: list[KernelRatio], d, rows, threads, kind, pass_name) -> str:
    for r in ratios:
        if (r.d, r.rows, r.threads, r.impl, r.pass_name) == (d, rows, threads,
                                                            f"rmsnorm:{kind}", pass_name):
            return _ratio_text(r.time)
    return "—"


def summarise(options: RunOptions, results: Results) -> Summary:
    size, seeds = options.size, options.seeds
    kernels, ratios, compiles = _kernel_rows(results)
    step_time = _step_times(results)
    like = _like_rows(results)
    compute = count_compute(size)
    quality = _quality(results)

    tables = _kernel_tables(kernels, ratios)
    notes = _span_notes(ratios)
    if compiles:
        tables.append(Table(
            "torch.compile time (cold: fresh inductor cache), seconds",
            ["d", "rows", "threads", "RMSNorm", "LayerNorm"],
            [[c.d, c.rows, c.threads, c.rmsnorm_s, c.layernorm_s] for c in compiles],
            "First forward+backward plus first no-grad forward of the compiled plain module."))
        warm = max((c.inductor_warmup_s or 0.0) for c in compiles)
        if warm:
            notes.append(f"torch.compile's one-off process start-up (imports, compiler checks) "
                         f"took {warm:.1f} s, not included in the per-shape compile times.")
        failed = [c for c in compiles if c.error]
        if failed:
            notes.append(f"torch.compile failed at {len(failed)} shape(s): {failed[0].error}")
    planned = SIZES[size].kernels
    if planned is None:
        notes.append(full_only(
            ["the kernel runs: each implementation's forward and forward+backward time per "
             "shape, the bytes saved for backward and torch.compile's compile times"],
            "C18 is decided by the analytic FLOP and byte counts and the quality runs; the "
            "kernels are reported beside them"))
    elif not planned.compile:
        notes.append(f"torch.compile is not part of the {size} grid (a cold compile takes "
                     "seconds per implementation and shape); the full grid includes it.")
    tables.append(_step_table(step_time))
    if like:
        tables.append(_like_table(like))
        failed_like = [t for t in like if t.error]
        if failed_like:
            notes.append("The like-for-like kernel timing failed to compile: "
                         f"{failed_like[0].error}")
    tables.extend(_compute_tables(compute))
    tables.append(_quality_table(quality))
    notes.append("Timings run on the stated number of CPU threads with other work possibly "
                 "sharing the machine; repeats interleave the implementations so drift hits all "
                 "of them, and medians ignore the slow outliers.")
    data = NormCostData(kernels=kernels, ratios=ratios, compile=compiles, step_time=step_time,
                        quality=quality, compute=compute, like_for_like=like)
    return Summary("norm-cost", size, len(seeds), tables, notes, data, first_seed=seeds.start)


SUITE = Suite(
    name="norm-cost",
    description="RMSNorm vs LayerNorm: kernel time and saved memory, training step time, and "
                "paired quality (C18)",
    plan=plan,
    summarise=summarise,
    # Seeds are the paired quality runs; timings get their repeats instead.
    default_seeds={"tiny": 2, "quick": 3, "full": 8},
    price=price,
)
