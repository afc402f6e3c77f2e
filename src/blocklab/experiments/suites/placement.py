"""`placement` suite: pre vs post vs sandwich norm, at initialisation, in training at each arm's
best lr, and at the largest lr each trains stably (C12, C13, C19, C36).

    pre:       y = x + F(N(x))         post:  y = N(x + F(x))         sandwich:  y = x + P(F(N(x)))

Part (a), at initialisation, no training. For every placement × init (gpt2, xavier, depth) ×
depth L × seed: one forward and backward pass of the next-byte loss on fixed validation windows,
then the gradient norm of every layer's FFN output matrix (`down_proj`, Xiong et al.'s W²), the
RMS of the residual stream each layer outputs, and the stream's sensitivity ‖∂L/∂x_l‖·rms(x_l)
where it enters each layer (C12: unlike a parameter gradient, no global rescaling of the stream
moves it); at the deepest L also each block's Jacobian's distance from the identity,
‖J_l − I‖_F/√n (C36's "gradient ≈ 1"), from Gaussian-probe vector-Jacobian products
(`blocklab.experiments.jacobian`). How the last (and first) layer's gradient scales
with depth is the least-squares slope of log ‖∇W²‖ on log L. Xiong et al. 2020, "On Layer
Normalization in the Transformer Architecture" (Theorems 1–2, Xavier initialisation): for
post-LN the last layer's gradient does not depend on L (slope 0), for pre-LN it falls as
1/√L (slope −0.5), because the pre-LN residual stream grows as √L and the final norm divides
by it. GPT-2's init shrinks the residual output projections by 1/√(2L), which keeps the stream
from growing, so the prediction is for xavier; gpt2 is measured beside it.

Part (b), training. placement × depth × warmup × seed, xavier init, gradient clipping OFF
(clipping would hide the failure being studied), otherwise the trainer's defaults. Each
(placement, depth, warmup) arm trains at its own peak lr: the tuning stage runs every arm at
every lr of `Training.lr_grid` on tuning seeds of its own, the grid grows at an edge holding the
best lr until that optimum is interior (`blocklab.experiments.suites.tuning`), and the summary
records for every arm whether it is. Outcomes are continuous: the final validation loss, the
mean validation loss over the run (area under the curve) and, from the per-layer gradient norms
the trainer logs during training, log2 of the first layer's gradient norm over the last
layer's. A run that diverges (NaN/inf or a loss above 4·ln 256) is counted as a failure, apart
from the losses. Post and sandwich cells are compared with the pre cell of the same depth and
warmup, paired by seed (same init streams and batches), and the warmup effect is read as an
interaction: (post cold − post warm) − (pre cold − pre warm), per seed, with its interval. A
warmup spends less learning rate (Σ lr over the steps, shown per arm): that confound is shown,
not removed.

Largest stable lr (C13, C19 at part (b)'s deepest depth; part (c), C36's deep stacks of 50
layers and more). Stability's natural outcome: per arm and seed, short runs on a doubling ladder
of peak lrs (`Sweep`), bisected, taking stability as monotone in lr; a run is stable when it
finishes and ends below the unigram entropy of the training bytes (a post-norm stack that
stalls at the byte-frequency model has stopped training). The contrasts are paired by seed in
doublings: without − with warmup for pre-norm, the warmup interaction, and pre − post. These
sweeps replace the deep grid of losses at one shared lr that C36 was once graded on.

What each size runs (`blocklab.experiments.suites.evaluation`): at --size tiny and --size quick
the suite plans only the runs a registered rule grades. C13 and C19 read part (b) at its
deepest depth, pre and post, with and without warmup, and that depth's sweep; the shallower
depths (the depth trend) and sandwich norm run at --size full, and the summary names them. C36
reads the deep sweep. The gradient probes of (a) keep every placement at every size: C12 grades
the pre-norm ones, and the post and sandwich probes beside them (one forward and backward each,
and the block Jacobians at the deepest depth: 216 probes, about 57 s of one core together at
quick on the 2-core reference machine, of which about 15 s the Jacobians) are the comparison
C12's and C19's texts and the gradients figure read.

`Summary.data` (read by the claims ledger and the report) is a
`blocklab.experiments.summaries.PlacementData`: per placement and init a `GradientProbe` (gradient
norms at initialisation across depth, fitted slopes with intervals over per-seed slopes, residual
RMS, spread across one stack's layers), the predicted slopes, one `PlacementCell` per training
arm (its tuned lr, statuses, validation loss of the finished runs, paired difference from
pre-norm, loss-curve area, gradient ratio during training, Σ lr), the `PlacementEffect`
contrasts, each arm's tuning (`lr_trials`, `lr_tuning`), and per swept arm a `StabilityArm` with
the `StabilityEffect` contrasts.

Every run returns a `RunResult`: a training run the trainer's; a probe and a largest-stable-lr
run train no model of their own and carry their record in `extra` (`ProbeRecord`; `StableLr`,
its trainer runs as `SweepRung`s), which the summary decodes once (`stored_results`) before it
computes its statistics (`statistics_of`) and then its tables.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from blocklab.config import ModelConfig
from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import added_identity, train_identity
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import (
    TUNING_SEEDS,
    Results,
    RunSpec,
    Suite,
    format_ci,
    format_level,
    mean_ci,
    paired_difference,
)
from blocklab.experiments.suites.evaluation import (
    FINAL_EVAL_FRACTION,
    full_only,
    graded_only,
    listed,
)
from blocklab.experiments.suites.tuning import (
    LrGrid,
    lr_trials,
    rounded,
    trains,
    tune_arm,
)
from blocklab.experiments.suites.tuning import tuning_table as tuned_table
from blocklab.experiments.summaries import (
    ArmTuning,
    GradientProbe,
    Interval,
    LrTrial,
    PlacementCell,
    PlacementData,
    PlacementEffect,
    SlopePrediction,
    StabilityArm,
    StabilityEffect,
    Summary,
    Table,
    decode,
)

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig

DATA = "stdlib"
PREDICTED_SLOPE_LAST = {"post": 0.0, "pre": -0.5}  # Xiong et al. 2020, Xavier init
XIONG = "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture"


@dataclass(frozen=True)
class Probe:
    """Part (a): gradients, residual-stream sensitivity and block Jacobians at initialisation.
    The Jacobians (`blocklab.experiments.jacobian.identity_deviation`, `jacobian_probes`
    Gaussian probes per layer) are measured at the deepest depth only, on the first
    `jacobian_windows` windows of the batch: each probe costs about one backward pass of the
    stack, and J is block-diagonal over the windows (attention mixes positions within a
    window only), so a few windows are a sample of the same per-entry norm. At quick this
    halves their cost (2 of 8 windows: about 0.25 s a stack of 64 instead of 0.6 s)."""

    d_model: int
    n_heads: int
    depths: tuple[int, ...]
    seq_len: int
    batch_size: int
    placements: tuple[str, ...] = ("pre", "post", "sandwich")
    # gpt2 and depth shrink the residual branches (by 1/√(2L), or by 1/√(2(i + 1)) at
    # layer i); xavier does not, and its stream grows with depth.
    inits: tuple[str, ...] = ("gpt2", "xavier", "depth")
    jacobian_probes: int = 2
    jacobian_windows: int = 2


@dataclass(frozen=True)
class Training:
    """Part (b): pre vs post at each depth, with and without warmup, each arm at its own peak
    lr tuned on `lr_grid` (grown at an edge until the optimum is interior)."""

    d_model: int
    n_heads: int
    depths: tuple[int, ...]
    warmups: tuple[int, ...]
    lr_grid: LrGrid
    tuning_seeds: int
    placements: tuple[str, ...]
    seq_len: int
    batch_size: int
    steps: int
    stuck_patience: int | None
    eval_every: int
    eval_batches: int
    log_every: int = 10  # per-layer gradient norms every this many steps
    # Placements trained at the deepest depth only (the shallower depths are there for the
    # pre/post depth trend).
    deepest_only: tuple[str, ...] = ()
    # The validation fraction every run scores at its end (`evaluation.FINAL_EVAL_FRACTION`).
    final_eval_fraction: float = 0.0

    def cells(self) -> list[tuple[str, int]]:
        """(placement, depth) pairs of the grid."""
        deepest = max(self.depths)
        return [(p, d) for p in self.placements for d in self.depths
                if d == deepest or p not in self.deepest_only]

    def arms(self) -> list[tuple[str, int, int]]:
        """(placement, depth, warmup) of every tuned and evaluated arm."""
        return [(p, d, w) for p, d in self.cells() for w in self.warmups]


@dataclass(frozen=True)
class Sweep:
    """The largest stable peak lr per (placement, warmup) arm at each depth: per seed, short
    runs on the doubling ladder `lr_min · 2^k` (k < rungs), bisected. With rungs = 2^j − 1,
    j runs a seed find the rung between "none stable" and "the top one stable"."""

    d_model: int
    n_heads: int
    depths: tuple[int, ...]
    warmup: int  # the warm arms' warmup (the cold arms have none)
    placements: tuple[str, ...]
    warm: tuple[bool, ...]  # which of cold (False) and warm (True) are swept
    seq_len: int
    batch_size: int
    steps: int
    lr_min: float
    rungs: int = 7
    final_eval_fraction: float = 0.0

    def ladder(self) -> list[float]:
        return [rounded(self.lr_min * 2 ** k) for k in range(self.rungs)]

    def arms(self) -> list[tuple[str, int, int]]:
        return [(p, d, self.warmup if w else 0) for p in self.placements for d in self.depths
                for w in self.warm]


@dataclass(frozen=True)
class Size:
    probe: Probe
    training: Training
    sweep: Sweep  # the training grid's largest stable lrs (C13, C19)
    deep: Sweep  # part (c): C36's deep stacks, pre and post


SIZES = {
    "tiny": Size(
        Probe(d_model=32, n_heads=2, depths=(2, 4), seq_len=16, batch_size=2),
        Training(d_model=32, n_heads=2, depths=(2,), warmups=(0, 2),
                 lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0, max_extensions=1), tuning_seeds=1,
                 placements=("pre", "post"), seq_len=16, batch_size=2, steps=5,
                 stuck_patience=None, eval_every=0, eval_batches=1, log_every=1,
                 final_eval_fraction=FINAL_EVAL_FRACTION["tiny"]),
        Sweep(d_model=32, n_heads=2, depths=(2,), warmup=2, placements=("pre", "post"),
              warm=(False, True), seq_len=16, batch_size=2, steps=5, lr_min=1e-3, rungs=3,
              final_eval_fraction=FINAL_EVAL_FRACTION["tiny"]),
        Sweep(d_model=16, n_heads=2, depths=(4,), warmup=2, placements=("pre", "post"),
              warm=(True,), seq_len=16, batch_size=2, steps=5, lr_min=1e-3, rungs=3,
              final_eval_fraction=FINAL_EVAL_FRACTION["tiny"])),
    # Depth 12, pre and post, with and without warmup, each arm at its own tuned lr: the
    # contrast C13 and C19 grade, and nothing else (the depth trend and sandwich norm run at
    # full). Every run to the end (no stuck test: outcomes are losses, not counts), 4 seeds so
    # the warmup interaction has an interval.
    "quick": Size(
        Probe(d_model=64, n_heads=4, depths=(2, 4, 8, 16, 32, 64), seq_len=64, batch_size=8),
        # 200 steps with warmup over the first third (about 17 s a run on one core of the
        # 2-core reference machine), so that `report --quick` fits 20 minutes.
        # A coarse grid (×3) centred on the earlier shared 3e-3; it grows at an edge. 150 steps
        # (warmup over the first third), about 15 s a run on one core of the 2-core reference
        # machine, tuning runs included, so that `report --quick` fits 20 minutes.
        Training(d_model=32, n_heads=2, depths=(12,), warmups=(0, 50),
                 lr_grid=LrGrid((3e-3, 1e-2, 3e-2), 3.0), tuning_seeds=1,
                 placements=("pre", "post"), seq_len=64, batch_size=16, steps=150,
                 stuck_patience=None, eval_every=25, eval_batches=4,
                 final_eval_fraction=FINAL_EVAL_FRACTION["quick"]),
        # Largest stable lr at depth 12: 60 steps (warmup over the first third), ladder
        # 0.032 … 2.048. Seed 0 in 60 steps: every arm trained at 0.064 and 0.256, both cold
        # arms diverged at 1.0, both warm arms still trained there. 3 bisected runs a seed and
        # arm, about 6 s each.
        Sweep(d_model=32, n_heads=2, depths=(12,), warmup=20, placements=("pre", "post"),
              warm=(False, True), seq_len=64, batch_size=16, steps=60, lr_min=0.032,
              final_eval_fraction=FINAL_EVAL_FRACTION["quick"]),
        # C36: 50 layers (the page's "50+"), pre and post, both with warmup (post-norm's best
        # schedule). A 50-layer d = 32 step at seq_len 32 takes about 0.23 s on one core
        # (per-op overhead), so 30 steps and the end-of-run evaluation cost about 12 s a run,
        # 3 runs a seed and arm. Ladder 0.032 … 2.048: in 40 steps both placements trained
        # past the unigram model from 0.016 to 1.024 on every seed (0.002 was too slow), so the
        # ladder starts higher and reaches past where depth 12 diverged.
        Sweep(d_model=32, n_heads=2, depths=(50,), warmup=10, placements=("pre", "post"),
              warm=(True,), seq_len=32, batch_size=16, steps=30, lr_min=0.032,
              final_eval_fraction=FINAL_EVAL_FRACTION["quick"])),
    # Hours: (pre, post at 3 depths + sandwich at 24) × 2 warmups × 5 seeds = 70 training
    # runs after 7 × 2 × 5 tuning runs, and the sweeps' 3 runs per arm and seed
    # (`blocklab report --full --plan` estimates them).
    "full": Size(
        Probe(d_model=128, n_heads=4, depths=(2, 4, 8, 16, 32, 64), seq_len=128, batch_size=8),
        Training(d_model=64, n_heads=4, depths=(6, 12, 24), warmups=(0, 100),
                 lr_grid=LrGrid((1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2), 2.0), tuning_seeds=2,
                 placements=("pre", "post", "sandwich"), seq_len=64,
                 batch_size=16, steps=1000, stuck_patience=None, eval_every=50, eval_batches=8,
                 deepest_only=("sandwich",), final_eval_fraction=FINAL_EVAL_FRACTION["full"]),
        Sweep(d_model=64, n_heads=4, depths=(24,), warmup=100, placements=("pre", "post"),
              warm=(False, True), seq_len=64, batch_size=16, steps=500, lr_min=8e-3,
              final_eval_fraction=FINAL_EVAL_FRACTION["full"]),
        # C36 at 48 and 64 layers. Both ladders 0.008 … 0.512 (quick's runs diverged near 1.0).
        Sweep(d_model=64, n_heads=4, depths=(48, 64), warmup=100, placements=("pre", "post"),
              warm=(False, True), seq_len=64, batch_size=16, steps=500, lr_min=8e-3,
              final_eval_fraction=FINAL_EVAL_FRACTION["full"])),
}


def probe_model_config(placement: str, depth: int, probe: Probe) -> ModelConfig:
    """The project's default block (RMSNorm, SwiGLU at 8d/3, RoPE, final norm); only the
    placement and depth vary."""
    return ModelConfig(vocab_size=256, d_model=probe.d_model, n_layers=depth,
                       n_heads=probe.n_heads, placement=placement, max_seq_len=probe.seq_len,
                       name=f"placement-{placement}-{depth}")


def train_model_config(placement: str, depth: int, training: Training | Sweep) -> ModelConfig:
    """The model of a training grid's or an lr sweep's arm (the same block as the probe's)."""
    return ModelConfig(vocab_size=256, d_model=training.d_model, n_layers=depth,
                       n_heads=training.n_heads, placement=placement,
                       max_seq_len=training.seq_len, name=f"placement-{placement}-{depth}")


def train_config(grid: Probe | Training | Sweep, options: RunOptions, seed: int, *,
                 warmup: int = 0, lr: float | None = None, init: str = "xavier"
                 ) -> TrainConfig:
    """Every TrainConfig the suite builds, under `options` (its precision and backend; run ids
    ignore the backend, so they do not change with it).

    Part (b)'s runs and the sweeps' (`grid` a Training or a Sweep): xavier init, no gradient
    clipping, one thread (bit-reproducible, and faster than two on a busy 2-core machine), peak
    `lr` after `warmup` steps; a sweep's runs are shorter and evaluated once, at the end. A
    probe's (`grid` a Probe) trains nothing: `build_model` reads only its seed, `init`,
    precision and backend."""
    from blocklab.experiments.trainer import TrainConfig

    if isinstance(grid, Probe):
        return TrainConfig(init=init, seed=seed, precision=options.precision,
                           backend=options.backend)
    if lr is None:
        raise ValueError("a training or sweep run needs its peak lr")
    if isinstance(grid, Training):
        eval_every, eval_batches = grid.eval_every, grid.eval_batches
        stuck_patience, log_every = grid.stuck_patience, grid.log_every
    else:  # a sweep: one evaluation at the end, no stuck test, no per-layer logging
        eval_every, eval_batches, stuck_patience, log_every = 0, 1, None, 0
    return TrainConfig(steps=grid.steps, batch_size=grid.batch_size, seq_len=grid.seq_len,
                       lr=lr, warmup_steps=warmup, grad_clip=None, init="xavier", seed=seed,
                       eval_every=eval_every, eval_batches=eval_batches,
                       stuck_patience=stuck_patience, log_every=log_every, threads=1,
                       precision=options.precision, backend=options.backend,
                       final_eval_fraction=grid.final_eval_fraction)


# --- part (a): gradients at initialisation ------------------------------------------------------
@dataclass(frozen=True)
class ProbeRecord:
    """What one gradient probe at initialisation adds to its RunResult (`extra`; these are the
    keys of its stored JSON). Per layer, bottom first; None in a list stands for a non-finite
    value (stored JSON has no NaN).

    `down_proj_grad`: ‖∇ down_proj.weight‖; `layer_grad`: ‖∇ all of the layer's parameters‖;
    `residual_rms`: the RMS of each layer's output over the batch; `sensitivity`:
    ‖∂L/∂x_l‖·rms(x_l) for the stream x_l ENTERING layer l, then the stream entering the final
    norm (depth + 1 values); `identity_deviation`, `jacobian_gain`: ‖J_l − I‖_F/√n and
    ‖J_l‖_F/√n, J_l the layer's Jacobian at its input in this pass over the first
    `Probe.jacobian_windows` windows, at the deepest probed depth only (None below it);
    `jacobian_s`: the seconds those Jacobians took."""

    placement: str
    init: str
    depth: int
    seed: int
    loss: float | None
    down_proj_grad: list[float | None]
    layer_grad: list[float | None]
    residual_rms: list[float | None]
    sensitivity: list[float | None]
    identity_deviation: list[float | None] | None
    jacobian_gain: list[float | None] | None
    jacobian_s: float

    @classmethod
    def of(cls, result: RunResult, where: str = "probe") -> ProbeRecord:
        """The record a probe's result carries; ResultsError names what does not fit."""
        return decode(cls, result.extra, where)


def init_gradients(placement: str, init: str, depth: int, seed: int, probe: Probe,
                   options: RunOptions) -> RunResult:
    """One forward/backward at initialisation; per-layer gradient norms, residual RMS and the
    residual stream's sensitivity; at the deepest probed depth also each block's Jacobian
    (`blocklab.experiments.jacobian`). The result trains no model: status "ok", wall_time_s and
    a `ProbeRecord` in `extra`."""
    import torch
    import torch.nn.functional as F

    from blocklab.experiments import jacobian
    from blocklab.experiments.data import load_corpus, validation_windows
    from blocklab.experiments.trainer import build_model

    started = time.perf_counter()
    batch = validation_windows(load_corpus(DATA).val, probe.seq_len, probe.batch_size)
    rms: list[float] = []

    def record(module, inputs, output) -> None:
        rms.append(float(output.detach().float().pow(2).mean().sqrt()))

    def loss_of(model) -> torch.Tensor:
        logits = model(batch[:, :-1])  # [B, T, V]
        return F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())

    with torch_threads(1):
        model = build_model(probe_model_config(placement, depth, probe),
                            train_config(probe, options, seed, init=init))
        model.train()
        handles = [layer.register_forward_hook(record) for layer in model.layers]
        try:
            loss, sensitivity, inputs = jacobian.residual_sensitivity(model, loss_of)
        finally:
            for handle in handles:
                handle.remove()

        def norm(params) -> float:
            return float(torch.linalg.vector_norm(torch.stack(
                [torch.linalg.vector_norm(p.grad) for p in params if p.grad is not None])))

        down = [norm([layer.ffn.down_proj.weight]) for layer in model.layers]
        whole = [norm(list(layer.parameters())) for layer in model.layers]
        jacobian_started = time.perf_counter()
        sample = [jacobian.LayerInput(i.x[:probe.jacobian_windows], i.kwargs) for i in inputs]
        blocks = (jacobian.layer_deviations(model, sample, probe.jacobian_probes, seed)
                  if depth == max(probe.depths) else None)
        jacobian_s = time.perf_counter() - jacobian_started
    found = ProbeRecord(
        placement=placement, init=init, depth=depth, seed=seed, loss=float(loss),
        down_proj_grad=list(down), layer_grad=list(whole), residual_rms=list(rms),
        sensitivity=list(sensitivity),
        identity_deviation=None if blocks is None else [b.deviation for b in blocks],
        jacobian_gain=None if blocks is None else [b.gain for b in blocks],
        jacobian_s=jacobian_s)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=asdict(found))


def loglog_slope(xs: Sequence[float], ys: Sequence[float | None]) -> float | None:
    """Least-squares slope b of log y = a + b·log x; None with fewer than two usable points.

    y = c·x^p gives exactly p.
    """
    points = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True)
              if x is not None and y is not None and x > 0 and y > 0 and math.isfinite(y)]
    if len(points) < 2:
        return None
    mx = sum(u for u, _ in points) / len(points)
    my = sum(v for _, v in points) / len(points)
    sxx = sum((u - mx) ** 2 for u, _ in points)
    if sxx == 0:
        return None
    return sum((u - mx) * (v - my) for u, v in points) / sxx


def _geometric_mean(values: Sequence[float | None]) -> float | None:
    usable = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not usable:
        return None
    return math.exp(sum(math.log(v) for v in usable) / len(usable))


# --- plan ----------------------------------------------------------------------------------------
def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """Every evaluation run of the suite under `options` (its size, seeds and precision): the
    gradient probes, every training arm at the peak lr its tuning runs `tuned` chose, and the
    largest-stable-lr sweeps."""
    size = SIZES[options.size]
    probe, training = size.probe, size.training
    specs = []
    for placement in probe.placements:
        for init in probe.inits:
            for depth in probe.depths:
                for seed in options.seeds:
                    payload = {"suite": "placement", "kind": "init_gradients",
                               "placement": placement, "init": init, "depth": depth,
                               "seed": seed, "probe": asdict(probe),
                               "model": probe_model_config(placement, depth, probe).to_dict(),
                               "data": DATA}
                    payload.update(added_identity(precision=options.precision))

                    def execute(progress, placement=placement, init=init, depth=depth,
                                seed=seed):
                        return init_gradients(placement, init, depth, seed, probe, options)

                    specs.append(RunSpec(f"init {placement} {init} L={depth} seed {seed}",
                                         f"init/{placement}/{init}/{depth}", seed, payload,
                                         execute, reads_tuning=False))
    lrs = tuned_lrs(training, lr_trials(tuned))
    return (specs + _training_specs(training, options, lrs)
            + _sweep_specs(size.sweep, options, "sweep")
            + _sweep_specs(size.deep, options, "deep"))


def arm_name(placement: str, depth: int, warmup: int) -> str:
    """A training arm's tuning name: "<placement>/<depth>/<warmup>"."""
    return f"{placement}/{depth}/{warmup}"


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The tuning stage: every training arm at every peak lr of its grid (grown at an edge
    from the results `tuned` so far) on the tuning seeds, as long as the evaluation runs."""
    from blocklab.experiments.trainer import run

    training = SIZES[options.size].training
    trials = lr_trials(list(tuned))
    specs = []
    for placement, depth, warmup in training.arms():
        arm = arm_name(placement, depth, warmup)
        mc = train_model_config(placement, depth, training)
        for lr in tune_arm(training.lr_grid, trials, arm).grid:
            for seed in range(TUNING_SEEDS, TUNING_SEEDS + training.tuning_seeds):
                tc = train_config(training, options, seed, warmup=warmup, lr=lr)
                label = f"tune {placement} L={depth} warmup {warmup} lr {lr:g} seed {seed}"
                payload = {"suite": "placement", "kind": "tune", "arm": arm,
                           "model": mc.to_dict(), "train": train_identity(tc), "data": DATA}

                def execute(progress, mc=mc, tc=tc, label=label, run=run):
                    return run(mc, tc, DATA, progress=progress, label=label)

                specs.append(RunSpec(label, f"tune/{arm}", seed, payload, execute))
    return specs


def tuned_lrs(training: Training, trials: list[LrTrial]) -> dict[str, ArmTuning]:
    """Each training arm's tuning: its grid, chosen peak lr and whether that is interior."""
    return {arm_name(*a): tune_arm(training.lr_grid, trials, arm_name(*a))
            for a in training.arms()}


def _training_specs(training: Training, options: RunOptions, lrs: dict[str, ArmTuning]
                    ) -> list[RunSpec]:
    """Part (b): every arm at its tuned peak lr on `options.seeds`; arms
    `train/<placement>/<depth>/<warmup>`."""
    from blocklab.experiments.trainer import run

    specs = []
    for placement, depth, warmup in training.arms():
        mc = train_model_config(placement, depth, training)
        lr = lrs[arm_name(placement, depth, warmup)].lr
        for seed in options.seeds:
            tc = train_config(training, options, seed, warmup=warmup, lr=lr)
            label = f"{placement} L={depth} warmup {warmup} lr {lr:g} seed {seed}"
            payload = {"suite": "placement", "kind": "train", "model": mc.to_dict(),
                       "train": train_identity(tc), "data": DATA}

            def execute(progress, mc=mc, tc=tc, label=label, run=run):
                return run(mc, tc, DATA, progress=progress, label=label)

            specs.append(RunSpec(label, f"train/{arm_name(placement, depth, warmup)}", seed,
                                 payload, execute))
    return specs


# --- the largest stable learning rate ------------------------------------------------------------
@dataclass(frozen=True)
class SweepRung:
    """One short run of a largest-stable-lr bisection: its peak lr, the trainer's status, its
    final validation loss (None: not finite) and whether it trains (`tuning.trains`)."""

    lr: float
    status: str
    val_loss: float | None
    trains: bool


@dataclass(frozen=True)
class StableLr:
    """What one largest-stable-lr run (one arm on one seed) adds to its RunResult (`extra`;
    these are the keys of its stored JSON): the `rung` of `ladder` it found (−1: none stable),
    that lr (`max_stable_lr`, None below the ladder), the bisection's runs in the order they
    were made (`trials`), and the unigram entropy of the training bytes (None when no run
    reported it)."""

    placement: str
    depth: int
    warmup: int
    seed: int
    rung: int
    ladder: list[float]
    max_stable_lr: float | None
    trials: list[SweepRung]
    unigram_entropy: float | None

    @classmethod
    def of(cls, result: RunResult, where: str = "sweep") -> StableLr:
        """The record a sweep's result carries; ResultsError names what does not fit."""
        return decode(cls, result.extra, where)


Record = TypeVar("Record")


def bisect_stable(ladder: list[float], attempt: Callable[[float], tuple[bool, Record]]
                  ) -> tuple[int, list[Record]]:
    """The rung of the largest lr in `ladder` (ascending) at which `attempt(lr)` makes a run
    that trains, by bisection, taking stability as monotone in lr: −1 when none does.
    `attempt(lr)` returns (stable, record); the records of the runs made come back in order."""
    low, high = -1, len(ladder)  # low: known stable (or none), high: known unstable (or none)
    records = []
    while high - low > 1:
        mid = (low + high) // 2
        stable, record = attempt(ladder[mid])
        records.append(record)
        if stable:
            low = mid
        else:
            high = mid
    return low, records


def largest_stable_lr(placement: str, depth: int, warmup: int, seed: int, sweep: Sweep,
                      options: RunOptions, progress: Any = False) -> RunResult:
    """One arm's largest stable peak lr on `seed`: bisected short runs on the sweep's ladder.
    The result trains no model of its own: status "ok", wall_time_s and a `StableLr` (its
    trainer runs as `SweepRung`s) in `extra`."""
    from blocklab.experiments.trainer import run

    started = time.perf_counter()
    mc = train_model_config(placement, depth, sweep)
    entropy: list[float] = []

    def attempt(lr: float) -> tuple[bool, SweepRung]:
        result = run(mc, train_config(sweep, options, seed, warmup=warmup, lr=lr), DATA,
                     progress=False, label=f"sweep {placement} L={depth} lr {lr:g}")
        if result.final is not None:
            entropy.append(result.final.unigram_entropy)
        ok = trains(result)
        return ok, SweepRung(lr=lr, status=result.status, val_loss=_final_val(result),
                             trains=ok)

    ladder = sweep.ladder()
    rung, trials = bisect_stable(ladder, attempt)
    found = StableLr(placement=placement, depth=depth, warmup=warmup, seed=seed, rung=rung,
                     ladder=ladder, max_stable_lr=ladder[rung] if rung >= 0 else None,
                     trials=trials, unigram_entropy=entropy[0] if entropy else None)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=asdict(found))


def _sweep_specs(sweep: Sweep, options: RunOptions, grid: str) -> list[RunSpec]:
    """One run per arm and seed of `options.seeds`, each bisecting its ladder; arms
    `<grid>/<placement>/<depth>/<warmup>` (grid "sweep" or "deep")."""
    specs = []
    for placement, depth, warmup in sweep.arms():
        for seed in options.seeds:
            tc = train_config(sweep, options, seed, warmup=warmup, lr=sweep.lr_min)
            payload = {"suite": "placement", "kind": grid,
                       "model": train_model_config(placement, depth, sweep).to_dict(),
                       "train": train_identity(tc), "ladder": sweep.ladder(), "data": DATA}

            def execute(progress, placement=placement, depth=depth, warmup=warmup, seed=seed):
                return largest_stable_lr(placement, depth, warmup, seed, sweep, options,
                                         progress)

            label = (f"{'deep ' if grid == 'deep' else ''}largest stable lr {placement} "
                     f"L={depth} warmup {warmup} seed {seed}")
            specs.append(RunSpec(label, f"{grid}/{arm_name(placement, depth, warmup)}", seed,
                                 payload, execute, reads_tuning=False))
    return specs


# --- summary: the results, read once -------------------------------------------------------------
ProbeKey = tuple[str, str, int, int]  # (placement, init, depth, seed)
ArmKey = tuple[str, int, int, int]  # (placement, depth, warmup, seed)
# (grid: "sweep" or "deep", placement, depth, warmup, seed)
SweepKey = tuple[str, str, int, int, int]


@dataclass(frozen=True)
class Stored:
    """A summary's results, each read once: the finished gradient probes' records, part (b)'s
    training runs, the lr sweeps' records, the tuning runs, and the unigram entropy of the
    training bytes (from the first training run that reports it). A sweep run always ends "ok"
    (a failure raises, and nothing is stored)."""

    probes: dict[ProbeKey, ProbeRecord]
    trained: dict[ArmKey, RunResult]
    swept: dict[SweepKey, StableLr]
    tuned: Results
    unigram_entropy: float | None


def stored_results(results: Results) -> Stored:
    """`results` sorted by kind and keyed; each suite record decoded once."""
    probes: dict[ProbeKey, ProbeRecord] = {}
    trained: dict[ArmKey, RunResult] = {}
    swept: dict[SweepKey, StableLr] = {}
    tuned: Results = []
    entropy = None
    for spec, result in results:
        payload = spec.payload
        if payload["kind"] == "init_gradients":
            if result.status == "ok":
                probes[(payload["placement"], payload["init"], payload["depth"],
                        spec.seed)] = ProbeRecord.of(result, spec.label)
        elif payload["kind"] == "tune":
            tuned.append((spec, result))
        else:
            model, train = payload["model"], payload["train"]
            arm = (model["placement"], model["n_layers"], train["warmup_steps"], spec.seed)
            if payload["kind"] == "train":
                trained[arm] = result
            elif result.status == "ok":
                swept[(payload["kind"], *arm)] = StableLr.of(result, spec.label)
            entropy = entropy or (None if result.final is None
                                  else result.final.unigram_entropy)
    return Stored(probes, trained, swept, tuned, entropy)


# --- summary: part (a) ---------------------------------------------------------------------------
def _gradient_summary(probe: Probe, seeds: range, probes: dict[ProbeKey, ProbeRecord]
                      ) -> dict[str, dict[str, GradientProbe]]:
    """placement -> init -> its `GradientProbe` over `seeds`."""
    return {placement: {init: _gradient_probe(probe, seeds, probes, placement, init)
                        for init in probe.inits}
            for placement in probe.placements}


def _gradient_probe(probe: Probe, seeds: range, probes: dict[ProbeKey, ProbeRecord],
                    placement: str, init: str) -> GradientProbe:
    depths = list(probe.depths)
    deepest = max(depths)

    def runs(depth: int) -> list[ProbeRecord]:
        found = [probes.get((placement, init, depth, s)) for s in seeds]
        return [r for r in found if r is not None]

    def at(index: int, depth: int) -> float | None:
        return _geometric_mean([r.down_proj_grad[index] for r in runs(depth)])

    def mean_per_layer(rows: list[list[float | None]], count: int) -> list[float | None]:
        return [mean_ci([row[i] for row in rows]).mean for i in range(count)]

    last = [at(-1, d) for d in depths]
    first = [at(0, d) for d in depths]
    per_seed_last, per_seed_first = [], []
    for seed in seeds:
        found = [probes.get((placement, init, d, seed)) for d in depths]
        rows = [r for r in found if r is not None]
        if len(rows) == len(depths):
            per_seed_last.append(loglog_slope(depths, [r.down_proj_grad[-1] for r in rows]))
            per_seed_first.append(loglog_slope(depths, [r.down_proj_grad[0] for r in rows]))
    return GradientProbe(
        depths=depths,
        last_layer_grad=last,
        first_layer_grad=first,
        slope_last=loglog_slope(depths, last),
        slope_first=loglog_slope(depths, first),
        slope_last_ci=mean_ci(per_seed_last),
        slope_first_ci=mean_ci(per_seed_first),
        residual_rms_last=[mean_ci([r.residual_rms[-1] for r in runs(d)]).mean
                           for d in depths],
        per_layer_grad={
            str(d): mean_per_layer([r.down_proj_grad for r in runs(d)], d) for d in depths},
        layer_spread_log2={
            str(d): mean_ci([_spread_log2(r.down_proj_grad) for r in runs(d)])
            for d in depths},
        per_layer_sensitivity={
            str(d): mean_per_layer([r.sensitivity for r in runs(d)], d + 1) for d in depths},
        # The layers' inputs only: the final norm's input is the last layer's output.
        sensitivity_spread_log2={
            str(d): mean_ci([_spread_log2(r.sensitivity[:d]) for r in runs(d)
                             if r.sensitivity]) for d in depths},
        jacobian_depth=deepest,
        identity_deviation=mean_per_layer(
            [r.identity_deviation for r in runs(deepest) if r.identity_deviation is not None],
            deepest),
        jacobian_gain=mean_per_layer(
            [r.jacobian_gain for r in runs(deepest) if r.jacobian_gain is not None], deepest),
        # The median over layers: layer 0's input is the embedding (RMS 0.02 under most
        # inits), where a norm's Jacobian is about 50·I; one such layer must not set the
        # stack's number.
        identity_deviation_median=_median_per_seed(
            [r.identity_deviation for r in runs(deepest)]),
        jacobian_gain_median=_median_per_seed([r.jacobian_gain for r in runs(deepest)]),
    )


def _median_per_seed(per_seed: list[list[float | None] | None]) -> Interval:
    """Over seeds, the median over one stack's layers; a seed with no value or a non-finite one
    left out."""
    medians = []
    for values in per_seed:
        finite = [v for v in values or [] if v is not None and math.isfinite(v)]
        if values and len(finite) == len(values):
            medians.append(statistics.median(finite))
    return mean_ci(medians)


def _spread_log2(norms: Sequence[float | None]) -> float | None:
    """log2(max / min) over one stack's per-layer gradient norms."""
    usable = [v for v in norms if v is not None and math.isfinite(v) and v > 0]
    return math.log2(max(usable) / min(usable)) if len(usable) == len(norms) > 1 else None


# --- summary: part (b) ---------------------------------------------------------------------------
def _val_auc(result: RunResult | None, seq_len: int) -> float | None:
    """Mean validation loss over a finished run's evaluations: the area under its curve
    divided by its length (evaluations are evenly spaced)."""
    if result is None or result.status != "ok" or result.curves is None:
        return None
    values = result.curves.val.get(str(seq_len)) or []
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not values or len(finite) != len(values):
        return None
    return sum(finite) / len(finite)


def _first_over_last_log2(result: RunResult | None, warmup: int) -> float | None:
    """Mean over the logged steps at or after warmup of log2(‖∇ first layer‖ / ‖∇ last
    layer‖) (all of a layer's parameters), for a finished run."""
    if result is None or result.status != "ok" or result.curves is None:
        return None
    logged = result.curves.layer_grad_norms
    ratios = []
    for step, layers in zip(logged.step, logged.layer, strict=True):
        first, last = (layers[0], layers[-1]) if len(layers) > 1 else (None, None)
        if step >= warmup and first and last and math.isfinite(first) and math.isfinite(last):
            ratios.append(math.log2(first / last))
    return sum(ratios) / len(ratios) if ratios else None


def _final_val(result: RunResult | None) -> float | None:
    value = None if result is None or result.final is None else result.final.val_loss
    return value if value is not None and math.isfinite(value) else None


def _ok_val(result: RunResult | None) -> float | None:
    """The final val loss of a run that finished ("ok"); None for a failed or missing one."""
    return _final_val(result) if result is not None and result.status == "ok" else None


def lr_area(training: Training, warmup: int, lr: float) -> float:
    """Σ over the run's steps of the scheduled lr (`trainer.learning_rate`)."""
    from blocklab.experiments.trainer import TrainConfig, learning_rate

    tc = TrainConfig(steps=training.steps, lr=lr, warmup_steps=warmup)
    return sum(learning_rate(step, tc) for step in range(training.steps))


def _training_summary(training: Training, seeds: range, trained: dict[ArmKey, RunResult],
                      lrs: dict[str, ArmTuning]) -> list[PlacementCell]:
    """One cell per (placement, depth, warmup) arm, its runs keyed
    `(placement, depth, warmup, seed)` in `trained`."""
    rows = []
    for placement, depth, warmup in training.arms():
        def results(p: str, depth=depth, warmup=warmup) -> list[RunResult | None]:
            return [trained.get((p, depth, warmup, s)) for s in seeds]

        mine = results(placement)
        status: dict[str, int] = {}
        for r in mine:
            if r is None:  # a seed the sequential design added to other arms only
                continue
            status[r.status] = status.get(r.status, 0) + 1
        # Quality from the runs that finished; stuck and diverged runs are counted in the
        # status columns only. Pairs need both seeds finished (n shown).
        vals = [_ok_val(r) for r in mine]
        delta = None
        if placement != "pre" and "pre" in training.placements:
            delta = paired_difference(vals, [_ok_val(r) for r in results("pre")])
        lr = lrs[arm_name(placement, depth, warmup)].lr
        rows.append(PlacementCell(
            placement=placement, depth=depth, warmup=warmup, lr=lr,
            failures=status.get("diverged", 0) + status.get("stuck", 0),
            runs=sum(1 for r in mine if r is not None), status=status,
            val_loss=mean_ci(vals), delta_vs_pre=delta,
            steps_done=mean_ci([None if r is None else r.steps_done for r in mine]).mean,
            val_auc=mean_ci([_val_auc(r, training.seq_len) for r in mine]),
            grad_first_over_last_log2=mean_ci(
                [_first_over_last_log2(r, warmup) for r in mine]),
            lr_area=lr_area(training, warmup, lr)))
    return rows


def _ok_vals(trained: dict[ArmKey, RunResult], seeds: range, placement: str, depth: int,
             warmup: int) -> list[float | None]:
    """Per seed, the final val loss of one arm's run if it finished (`_ok_val`)."""
    return [_ok_val(trained.get((placement, depth, warmup, s))) for s in seeds]


def interaction_per_seed(training: Training, seeds: range, trained: dict[ArmKey, RunResult],
                         depth: int, warmup: int) -> list[float | None]:
    """Per seed, (post cold − post warm) − (pre cold − pre warm) of the final validation loss
    (each arm at its own lr); None for a seed where any of the four runs did not finish."""
    def vals(p: str, w: int) -> list[float | None]:
        return _ok_vals(trained, seeds, p, depth, w)

    return [None if a is None or b is None or c is None or d is None else (a - b) - (c - d)
            for a, b, c, d in zip(vals("post", 0), vals("post", warmup), vals("pre", 0),
                                  vals("pre", warmup), strict=True)]


def interaction_trend(training: Training, seeds: range,
                      trained: dict[ArmKey, RunResult]) -> Interval:
    """The warmup interaction at the deepest depth minus at the shallowest, paired by seed, at
    the longest warmup: positive = post-norm's need for warmup grows with depth. No interval
    with one depth."""
    if len(training.depths) < 2 or not {"pre", "post"} <= set(training.placements):
        return Interval(0)
    warmup = max(training.warmups)
    deep, shallow = (interaction_per_seed(training, seeds, trained, d, warmup)
                     for d in (max(training.depths), min(training.depths)))
    return paired_difference(deep, shallow)


def _effects(training: Training, seeds: range, trained: dict[ArmKey, RunResult],
             lrs: dict[str, ArmTuning]) -> list[PlacementEffect]:
    """The contrasts C13 and C19 are graded on, per depth and non-zero warmup."""
    if not {"pre", "post"} <= set(training.placements) or 0 not in training.warmups:
        return []
    effects = []
    for depth in training.depths:
        for warmup in [w for w in training.warmups if w > 0]:
            def ratios(p: str, depth=depth, warmup=warmup) -> Interval:
                return mean_ci([_first_over_last_log2(trained.get((p, depth, warmup, s)),
                                                      warmup) for s in seeds])

            post_warm = _ok_vals(trained, seeds, "post", depth, warmup)
            pre_warm = _ok_vals(trained, seeds, "pre", depth, warmup)
            interaction = interaction_per_seed(training, seeds, trained, depth, warmup)
            effects.append(PlacementEffect(
                depth=depth, warmup=warmup,
                lrs={f"{p} {'warm' if w else 'cold'}": lrs[arm_name(p, depth, w)].lr
                     for p in ("pre", "post") for w in (0, warmup)},
                warmup_interaction=mean_ci(interaction),
                pre_warmup_effect=paired_difference(
                    _ok_vals(trained, seeds, "pre", depth, 0), pre_warm),
                post_vs_pre_warm=paired_difference(post_warm, pre_warm),
                post_grad_first_over_last_log2=ratios("post"),
                pre_grad_first_over_last_log2=ratios("pre")))
    return effects


# --- summary: the largest stable lr --------------------------------------------------------------
def _stability(sweep: Sweep, grid: str, seeds: range, swept: dict[SweepKey, StableLr]
               ) -> list[StabilityArm]:
    """Per swept arm, the largest stable lr over seeds (records keyed
    `(grid, placement, depth, warmup, seed)` in `swept`)."""
    ladder = sweep.ladder()
    out = []
    for placement, depth, warmup in sweep.arms():
        mine = [swept.get((grid, placement, depth, warmup, s)) for s in seeds]
        rungs = [None if r is None else r.rung for r in mine]
        log2 = mean_ci([None if k is None else float(k) for k in rungs])
        losses: dict[str, list[float | None]] = {}
        for r in mine:
            for trial in [] if r is None else r.trials:
                losses.setdefault(f"{trial.lr:g}", []).append(trial.val_loss)
        out.append(StabilityArm(
            grid=grid, placement=placement, depth=depth, warmup=warmup, steps=sweep.steps,
            ladder=ladder, rungs=rungs, log2_max_stable=log2,
            max_stable_lr=None if log2.mean is None else ladder[0] * 2 ** log2.mean,
            censored_low=sum(1 for k in rungs if k == -1),
            censored_high=sum(1 for k in rungs if k == len(ladder) - 1),
            loss_at_lr=dict(sorted(losses.items(), key=lambda kv: float(kv[0])))))
    return out


def _stability_effects(sweep: Sweep, grid: str, seeds: range,
                       swept: dict[SweepKey, StableLr]) -> list[StabilityEffect]:
    """The contrasts of the largest stable lr, per depth, paired by seed, in doublings. A seed
    where both arms are censored at the same end of the ladder (neither stable anywhere, or
    both still stable at its top) says nothing about their difference and drops out; one
    censored on one side counts at the ladder's end, a bound on the difference."""
    top = sweep.rungs - 1

    def rungs(p: str, depth: int, w: int) -> list[float | None]:
        found = [swept.get((grid, p, depth, w, s)) for s in seeds]
        return [None if r is None else float(r.rung) for r in found]

    def known(a: list[float | None], b: list[float | None]
              ) -> tuple[list[float | None], list[float | None]]:
        both_censored = [x is not None and x == y and x in (-1, top) for x, y in
                         zip(a, b, strict=True)]
        return ([None if c else x for x, c in zip(a, both_censored, strict=True)],
                [None if c else y for y, c in zip(b, both_censored, strict=True)])

    swept_arms = set(sweep.arms())
    out = []
    for depth in sweep.depths:
        w = sweep.warmup

        def have(*arms: tuple[str, int], depth=depth) -> bool:
            return all((p, depth, warm) in swept_arms for p, warm in arms)

        def diff(a: tuple[str, int], b: tuple[str, int], depth=depth) -> Interval:
            return (paired_difference(*known(rungs(a[0], depth, a[1]),
                                             rungs(b[0], depth, b[1])))
                    if have(a, b) else Interval(0))

        interaction = Interval(0)
        if have(("pre", 0), ("pre", w), ("post", 0), ("post", w)):
            post_warm, post_cold = known(rungs("post", depth, w), rungs("post", depth, 0))
            pre_warm, pre_cold = known(rungs("pre", depth, w), rungs("pre", depth, 0))
            per_seed = [None if a is None or b is None or c is None or d is None
                        else (a - b) - (c - d)
                        for a, b, c, d in zip(post_warm, post_cold, pre_warm, pre_cold,
                                              strict=True)]
            interaction = mean_ci(per_seed)
        out.append(StabilityEffect(
            grid=grid, depth=depth, warmup=w,
            pre_cold_vs_warm=diff(("pre", 0), ("pre", w)),
            post_warm_vs_cold=diff(("post", w), ("post", 0)),
            warmup_interaction=interaction,
            pre_vs_post_warm=diff(("pre", w), ("post", w)),
            pre_vs_post_cold=diff(("pre", 0), ("post", 0))))
    return out


# --- summary: statistics, then tables ------------------------------------------------------------
def statistics_of(size: Size, seeds: range, stored: Stored) -> PlacementData:
    """Every statistic the summary shows (and the claims ledger reads), from the results read
    once (`stored_results`)."""
    training, sweep, deep = size.training, size.sweep, size.deep
    trials = lr_trials(stored.tuned)
    lrs = tuned_lrs(training, trials)
    return PlacementData(
        init_gradients=_gradient_summary(size.probe, seeds, stored.probes),
        predictions=SlopePrediction(slope_last=dict(PREDICTED_SLOPE_LAST), init="xavier",
                                    source=XIONG),
        training=_training_summary(training, seeds, stored.trained, lrs),
        effects=_effects(training, seeds, stored.trained, lrs),
        interaction_trend=interaction_trend(training, seeds, stored.trained),
        unigram_entropy=stored.unigram_entropy, seeds=len(seeds),
        steps=training.steps, size=asdict(size), lr_trials=trials,
        lr_tuning=[lrs[arm_name(*a)] for a in training.arms()],
        stability=(_stability(sweep, "sweep", seeds, stored.swept)
                   + _stability(deep, "deep", seeds, stored.swept)),
        stability_effects=(_stability_effects(sweep, "sweep", seeds, stored.swept)
                           + _stability_effects(deep, "deep", seeds, stored.swept)))


def _g(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _slope_cell(stats: Interval, fitted: float | None) -> str:
    if fitted is None:
        return "—"
    if not stats.resolved:
        return f"{fitted:+.2f}"
    return f"{fitted:+.2f} [{stats.ci_low:+.2f}, {stats.ci_high:+.2f}]"


def summarise(options: RunOptions, results: Results) -> Summary:
    size = SIZES[options.size]
    data = statistics_of(size, options.seeds, stored_results(results))
    return Summary("placement", options.size, len(options.seeds), _tables(size, data),
                   _notes(size, options.size), data, first_seed=options.seeds.start)


def _tables(size: Size, data: PlacementData) -> list[Table]:
    """The summary's tables, in order, from its statistics."""
    probe, training = size.probe, size.training
    gradients = data.init_gradients
    depth_columns = [f"L={d}" for d in probe.depths]
    last_table = Table(
        "At initialisation: ‖∇W_down‖ of the LAST layer vs depth",
        ["placement", "init", *depth_columns, "slope [95% CI]", "Xiong et al. (xavier)"],
        [[p, i, *[_g(v) for v in g.last_layer_grad],
          _slope_cell(g.slope_last_ci, g.slope_last),
          "—" if p not in PREDICTED_SLOPE_LAST else f"{PREDICTED_SLOPE_LAST[p]:+.1f}"]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "Slope: least squares of log ‖∇W_down‖ on log L, fitted to the geometric means over "
        "seeds; the interval is over per-seed slopes. Predicted: post-LN 0 (independent of L), "
        "pre-LN −0.5 (∝ 1/√L), for Xavier init (gpt2 init scales residual outputs by "
        "1/√(2L) and is outside the theorem).")
    first_table = Table(
        "At initialisation: ‖∇W_down‖ of the FIRST layer vs depth",
        ["placement", "init", *depth_columns, "slope [95% CI]"],
        [[p, i, *[_g(v) for v in g.first_layer_grad],
          _slope_cell(g.slope_first_ci, g.slope_first)]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "A negative slope means the gradient reaching the bottom of the stack shrinks as layers "
        "are added (vanishing with depth), whatever identity path the block has.")
    sensitivity_table = Table(
        "At initialisation: the residual stream's sensitivity and each block's distance from "
        "the identity (C12, C36)",
        ["placement", "init", *[f"sensitivity spread L={d}" for d in probe.depths],
         "‖J − I‖_F/√n (median over layers)", "‖J‖_F/√n (median)"],
        [[p, i, *[format_level(g.sensitivity_spread_log2.get(str(d), Interval(0)), 2)
                  for d in probe.depths],
          format_level(g.identity_deviation_median, 3), format_level(g.jacobian_gain_median, 3)]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "Sensitivity spread: log2(max / min) over one stack's layer inputs of ‖∂L/∂x_l‖·rms(x_l), "
        "mean [95% CI] over seeds (a global rescaling of the stream cancels; 1 = one layer's "
        "relative perturbation moves the loss twice as much as another's). ‖J − I‖_F/√n: each "
        "block's Jacobian ∂x_{l+1}/∂x_l at the deepest probed depth, from Gaussian-probe "
        "vector-Jacobian products (0 = the block is the identity, the page's 'gradient ≈ 1').")
    rms_table = Table(
        "At initialisation: RMS of the residual stream leaving the last layer",
        ["placement", "init", *depth_columns],
        [[p, i, *[_g(v) for v in g.residual_rms_last]]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "Post-norm ends every layer in a norm (RMS ≈ 1); the pre-norm stream grows with depth "
        "unless the init scales the residual outputs down.")
    spread_table = Table(
        "At initialisation: how unevenly the layers of ONE stack get gradient",
        ["placement", "init", *depth_columns],
        [[p, i, *[format_level(g.layer_spread_log2[str(d)], 2) for d in probe.depths]]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "log2(max / min) of ‖∇W_down‖ over the layers of one model, mean [95% CI] over seeds: "
        "1 means some layer gets twice the gradient of another. A factor that scales every "
        "layer alike (the final norm's 1/√L) cancels here.")
    tuning_table = tuned_table(
        data.lr_tuning, data.lr_trials, training.lr_grid,
        f"{training.tuning_seeds} tuning seed(s), disjoint from the evaluation seeds, each run "
        "as long as the evaluation runs")
    train_table = Table(
        f"Training {training.steps} steps, xavier init, no gradient clipping, each arm at its "
        "own tuned peak lr",
        ["placement", "depth", "warmup", "lr", "Σ lr over steps", "failed/runs (div, stuck)",
         "val loss [95% CI]", "Δ vs pre [95% CI]", "mean val loss over training",
         "log2 ‖∇first‖/‖∇last‖ [95% CI]"],
        [[r.placement, r.depth, r.warmup, f"{r.lr:g}", _g(r.lr_area),
          f"{r.failures}/{r.runs} ({r.status.get('diverged', 0)}, "
          f"{r.status.get('stuck', 0)})",
          format_level(r.val_loss),
          "—" if r.delta_vs_pre is None else format_ci(r.delta_vs_pre, 3),
          format_level(r.val_auc), format_level(r.grad_first_over_last_log2, 2)]
         for r in data.training],
        "Val loss over the runs that finished (status ok); diverged and stuck runs count in "
        "the failed column only"
        + ("" if training.stuck_patience is None else
           f" (a stuck run stops at warmup + {training.stuck_patience} steps)")
        + ". Δ = this − pre at the same "
        "depth and warmup (each at its own lr), paired by seed over the seeds where both "
        "finished (n shown); Σ lr over steps: the schedule's area, which warmup lowers (the "
        "warmup confound, shown rather than removed); "
        "negative = lower loss than pre-norm. Mean val loss over training: the area under the "
        "validation curve over its length. Gradient ratio: whole first layer over whole last "
        f"layer, logged every {training.log_every} steps after warmup. Unigram "
        f"entropy of the training bytes: {_g(data.unigram_entropy)} nats.")
    effect_table = Table(
        "Warmup and placement effects, paired by seed (final val loss, nats)",
        ["depth", "lrs", "warmup", "(post cold − warm) − (pre cold − warm) [95% CI]",
         "pre cold − pre warm [95% CI]", "post warm − pre warm [95% CI]",
         "log2 ‖∇first‖/‖∇last‖ post", "… pre"],
        [[e.depth, ", ".join(f"{k} {v:g}" for k, v in e.lrs.items()), e.warmup,
          format_ci(e.warmup_interaction),
          format_ci(e.pre_warmup_effect), format_ci(e.post_vs_pre_warm),
          format_level(e.post_grad_first_over_last_log2, 2),
          format_level(e.pre_grad_first_over_last_log2, 2)] for e in data.effects],
        "Positive interaction: leaving warmup out costs post-norm more than pre-norm. Seeds "
        "where any of the four runs failed drop out of the interaction (n shown); failures "
        "are in the training table. Gradient ratios from the runs with warmup. "
        + (f"Depth trend (interaction at the deepest minus the shallowest depth, paired by "
           f"seed): {format_ci(data.interaction_trend)} nats (positive: "
           "the need for warmup grows with depth)." if len(training.depths) > 1 else
           "Depth trend: at --size full only (this size trains one depth, the deepest)."))
    stability_table = Table(
        "Largest stable peak lr per arm (C13, C19 at the training depth; C36 in deep stacks)",
        ["grid", "placement", "depth", "warmup", "steps", "largest stable lr (geo. mean)",
         "log2 vs ladder start [95% CI]", "none stable / top stable", "val loss at each lr tried"],
        [[a.grid, a.placement, a.depth, a.warmup, a.steps, _g(a.max_stable_lr),
          format_level(a.log2_max_stable, 2), f"{a.censored_low}/{a.censored_high}",
          "; ".join(f"{lr}: {_g(_mean_of(v))}" for lr, v in a.loss_at_lr.items())]
         for a in data.stability],
        "Per seed, short runs on a doubling ladder of peak lrs, bisected (stability taken as "
        "monotone in lr); a run is stable when it finishes (no NaN/inf, loss never above "
        "4·ln 256) and ends below the unigram entropy. Seeds with no stable rung count as one "
        "rung below the ladder, and those stable at the top as the top (both censored, "
        "counted). Loss at each lr: the mean final val loss of the sweep runs made there "
        "('—' when one did not finish).")
    stability_effect_table = Table(
        "Largest stable lr: contrasts paired by seed, in doublings (+1 = twice the lr)",
        ["grid", "depth", "warmup", "pre cold − pre warm", "post warm − post cold",
         "(post warm − cold) − (pre warm − cold)", "pre warm − post warm",
         "pre cold − post cold"],
        [[e.grid, e.depth, e.warmup, format_ci(e.pre_cold_vs_warm, 2),
          format_ci(e.post_warm_vs_cold, 2), format_ci(e.warmup_interaction, 2),
          format_ci(e.pre_vs_post_warm, 2), format_ci(e.pre_vs_post_cold, 2)]
         for e in data.stability_effects],
        "Positive post warm − post cold: warmup lets post-norm train at a larger lr; positive "
        "interaction: post-norm gains more from warmup than pre-norm; positive pre − post: "
        "pre-norm stays stable at a larger lr. '—': that arm is not swept at this size.")
    return [last_table, first_table, spread_table, sensitivity_table, rms_table, tuning_table,
            train_table, effect_table, stability_table, stability_effect_table]


def _notes(size: Size, size_name: str) -> list[str]:
    """The summary's notes: what each part ran at `size`, and what only --size full runs."""
    probe, training, sweep, deep = size.probe, size.training, size.sweep, size.deep
    notes = [
        f"(a) probe: d_model={probe.d_model}, n_heads={probe.n_heads}, depths "
        f"{list(probe.depths)}, inits {list(probe.inits)}, one forward/backward of the "
        f"next-byte loss on {probe.batch_size} fixed validation windows of {probe.seq_len} "
        "bytes; RMSNorm, SwiGLU (d_ff 8d/3), RoPE, final norm in every placement.",
        f"(b) training: d_model={training.d_model}, n_heads={training.n_heads}, depths "
        f"{list(training.depths)}, placements {list(training.placements)}, warmups "
        f"{list(training.warmups)}, each arm's peak lr tuned (table above), "
        f"seq_len={training.seq_len}, "
        f"batch={training.batch_size}, steps={training.steps}, cosine to 0.1·lr, AdamW wd 0.1, "
        "xavier init, clipping off, "
        + ("no stuck test" if training.stuck_patience is None else
           f"stuck after {training.stuck_patience} post-warmup steps above the unigram entropy")
        + f", 1 thread, data={DATA}.",
        f"Largest stable lr: at the training depth d_model={sweep.d_model}, depths "
        f"{list(sweep.depths)}, {sweep.steps} steps (warm arms: warmup {sweep.warmup}), "
        f"ladder {_g(sweep.ladder()[0])} … {_g(sweep.ladder()[-1])}; (c) deep stacks (C36): "
        f"d_model={deep.d_model}, depths {list(deep.depths)}, {deep.steps} steps (warm arms: "
        f"warmup {deep.warmup}), ladder {_g(deep.ladder()[0])} … {_g(deep.ladder()[-1])}; "
        "otherwise as (b).",
    ]
    left_out = _left_out(size) if graded_only(size_name) else []
    if left_out:
        notes.append(full_only(left_out, "C13 and C19 read part (b) at its deepest depth and "
                                         "highest lr, pre and post only"))
    return notes


def _mean_of(values: list[float | None]) -> float | None:
    return None if not values or None in values else sum(values) / len(values)


def _left_out(size: Size) -> list[str]:
    """What the full size's part (b) trains and `size`'s does not, in words."""
    full, training = SIZES["full"].training, size.training
    out = []
    if len(training.depths) < len(full.depths):
        out.append(f"part (b)'s depth trend (depths {listed([str(d) for d in full.depths])} "
                   "at full)")
    missing = [p for p in full.placements if p not in training.placements]
    if missing:
        out.append(f"{listed(missing)} norm in part (b)")
    if len(training.lr_grid.base) < len(full.lr_grid.base):
        out.append(f"part (b)'s finer lr grid "
                   f"({listed([f'{lr:g}' for lr in full.lr_grid.base])} at full)")
    return out


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run on this machine (`blocklab.experiments.estimate`): a
    gradient probe builds its model and takes one forward+backward (priced as a step) on
    [batch_size, seq_len]; a largest-stable-lr run is as many trainer runs as its bisection
    makes (⌈log2(rungs + 1)⌉); training runs are the trainer's (the default)."""
    payload = spec.payload
    if payload["kind"] in ("sweep", "deep"):
        from blocklab.experiments.estimate import TrainShape, training_s

        runs = math.ceil(math.log2(len(payload["ladder"]) + 1))
        return runs * training_s(ModelConfig.from_dict(payload["model"]),
                                 TrainShape.from_payload(payload["train"]), cal)
    if payload["kind"] != "init_gradients":
        return None
    probe, model = payload["probe"], ModelConfig.from_dict(payload["model"])
    b, t, precision = probe["batch_size"], probe["seq_len"], payload.get("precision", "fp32")
    return cal.build_s(model, b, t, precision) + cal.step_s(model, b, t, precision)


SUITE = Suite("placement", "pre vs post vs sandwich norm: gradients at init and training, "
              "and deep stacks (C12, C13, C19, C36)", plan, summarise,
              # C19's and C36's registered rules need four paired seeds (blocklab.claims).
              default_seeds={"tiny": 1, "quick": 4, "full": 5}, tune=tune,
              precisions=("fp32", "bf16"), price=price)
