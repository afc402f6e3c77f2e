"""The placement suite's grids (`SIZES`), configs, part (a)'s probe (`init_gradients`), one arm's
largest stable lr (`largest_stable_lr`), the tuning stage, the plan and its prices."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from blocklab.config import ModelConfig
from blocklab.experiments import ladder
from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import added_identity, train_identity
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.scale import Scale
from blocklab.experiments.suites.base import Results, RunSpec, training_spec, tuning_seeds
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION
from blocklab.experiments.suites.tuning import LrGrid, lr_trials, rounded, trains, tune_arm
from blocklab.experiments.summaries import ArmTuning, LrTrial

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig


DATA = "stdlib"


@dataclass(frozen=True)
class Probe:
    """Part (a) at initialisation. The Jacobians (`jacobian_probes` Gaussian probes per layer)
    only at the deepest depth, on the first `jacobian_windows` windows (J is block-diagonal
    over windows, so a few sample the same per-entry norm)."""

    d_model: int
    n_heads: int
    depths: tuple[int, ...]
    seq_len: int
    batch_size: int
    placements: tuple[str, ...] = ("pre", "post", "sandwich")
    # gpt2 and depth shrink residual branches by 1/√(2L), 1/√(2(i + 1)); xavier does not
    inits: tuple[str, ...] = ("gpt2", "xavier", "depth")
    jacobian_probes: int = 2
    jacobian_windows: int = 2


@dataclass(frozen=True)
class Training:
    """Part (b): each (placement, depth, warmup) arm at its own peak lr tuned on `lr_grid`."""

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
    # placements trained at the deepest depth only (the others serve the pre/post depth trend)
    deepest_only: tuple[str, ...] = ()
    final_eval_fraction: float = 0.0  # `evaluation.FINAL_EVAL_FRACTION`

    def cells(self) -> list[tuple[str, int]]:
        deepest = max(self.depths)
        return [(p, d) for p in self.placements for d in self.depths
                if d == deepest or p not in self.deepest_only]

    def arms(self) -> list[tuple[str, int, int]]:
        """(placement, depth, warmup) of every tuned and evaluated arm."""
        return [(p, d, w) for p, d in self.cells() for w in self.warmups]


@dataclass(frozen=True)
class Sweep:
    """The largest stable peak lr per arm: per seed, short runs on the ladder `lr_min · step^k`
    (k < rungs) bisected in ⌈log2(rungs + 1)⌉ runs; read in doublings."""

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
    step: float = 2.0  # the ratio of neighbouring rungs

    def ladder(self) -> list[float]:
        return [rounded(self.lr_min * self.step ** k) for k in range(self.rungs)]

    def doublings(self, rung: int) -> float:
        """A rung index (−1: below the ladder) in doublings of lr above lr_min."""
        return rung * math.log2(self.step)

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
    # Depth 6, pre and post, with and without warmup: the contrast C13 and C19 grade. Every run
    # to the end (outcomes are losses, not counts).
    "quick": Size(
        Probe(d_model=64, n_heads=4, depths=(2, 4, 8, 16, 32, 64), seq_len=64, batch_size=8),
        # A pilot: at depth 12 post-norm learned at almost no lr; at depth 6 and 300 steps every
        # arm learns at an interior optimum of (1e-3, 3e-3, 1e-2), refined at ×√3 either side.
        Training(d_model=32, n_heads=2, depths=(6,), warmups=(0, 100),
                 lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0, refine=True), tuning_seeds=2,
                 placements=("pre", "post"), seq_len=64, batch_size=16, steps=300,
                 stuck_patience=None, eval_every=50, eval_batches=4,
                 final_eval_fraction=FINAL_EVAL_FRACTION["quick"]),
        # Ladder 0.001 … 16.4 (15 rungs): at 0.001 … 0.512 pre-norm was still stable at the
        # top on most seeds, a censored reading that left its pair out.
        Sweep(d_model=32, n_heads=2, depths=(6,), warmup=50, placements=("pre", "post"),
              warm=(False, True), seq_len=64, batch_size=16, steps=150, lr_min=0.001,
              rungs=15, final_eval_fraction=FINAL_EVAL_FRACTION["quick"]),
        # C36: 50 layers (the page's "50+"), both with warmup (post-norm's best schedule).
        Sweep(d_model=32, n_heads=2, depths=(50,), warmup=30, placements=("pre", "post"),
              warm=(True,), seq_len=32, batch_size=16, steps=100, lr_min=0.001,
              final_eval_fraction=FINAL_EVAL_FRACTION["quick"])),
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
        # C36 at 48 and 64 layers (quick's runs diverged near lr 1.0).
        Sweep(d_model=64, n_heads=4, depths=(48, 64), warmup=100, placements=("pre", "post"),
              warm=(False, True), seq_len=64, batch_size=16, steps=500, lr_min=8e-3,
              final_eval_fraction=FINAL_EVAL_FRACTION["full"])),
}


def arm_name(placement: str, depth: int, warmup: int) -> str:
    return f"{placement}/{depth}/{warmup}"


def model_config(placement: str, depth: int, grid: Probe | Training | Sweep) -> ModelConfig:
    """The project's default block; only the placement and depth vary."""
    return ModelConfig(vocab_size=256, d_model=grid.d_model, n_layers=depth,
                       n_heads=grid.n_heads, placement=placement, max_seq_len=grid.seq_len,
                       name=f"placement-{placement}-{depth}")


def rung(name: str, base: Size) -> Size:
    """`base` grown to ladder rung `name` on part (b)'s pre-norm parameters (`ladder.grown`),
    lengths in steps keeping their share; the lr grid and the sweep's ladder moved by the width
    ratio (`ladder.centred`: Adam's largest stable lr ∝ 1 / width too). No probe, no deep
    stacks."""
    t, sweep = base.training, base.sweep
    head = t.d_model // t.n_heads
    d, b, n = ladder.grown(
        name, lambda d: model_config("pre", max(t.depths), replace(t, d_model=d,
                                                                   n_heads=d // head)),
        t.d_model, t.batch_size, t.steps, head, t.seq_len)
    training = replace(t, d_model=d, n_heads=d // head, batch_size=b, steps=n,
                       warmups=tuple(ladder.share(w, n, t.steps) for w in t.warmups),
                       eval_every=ladder.share(t.eval_every, n, t.steps),
                       lr_grid=replace(t.lr_grid, base=ladder.centred(t.lr_grid.base,
                                                                      t.d_model, d)))
    (lr_min,) = ladder.centred((sweep.lr_min,), t.d_model, d)
    swept = replace(sweep, d_model=d, n_heads=d // head, batch_size=b,
                    steps=ladder.share(sweep.steps, n, t.steps),
                    warmup=ladder.share(sweep.warmup, n, t.steps), lr_min=lr_min)
    return replace(base, probe=replace(base.probe, placements=()), training=training,
                   sweep=swept, deep=replace(base.deep, placements=()))


# The ladder's rungs (C19): the quick size at 4×, 16× and 64× its training compute.
SIZES.update({name: rung(name, SIZES[ladder.BASE]) for name in ladder.RUNGS})


def train_config(grid: Probe | Training | Sweep, options: RunOptions, seed: int, *,
                 warmup: int = 0, lr: float | None = None, init: str = "xavier"
                 ) -> TrainConfig:
    """Part (b)'s and the sweeps' runs: xavier init, no clipping, one thread, peak `lr` after
    `warmup` steps (a sweep evaluates once, at the end). A probe's: its seed and `init`."""
    from blocklab.experiments.trainer import TrainConfig

    if isinstance(grid, Probe):
        return TrainConfig.for_run(options, seed, init=init)
    if lr is None:
        raise ValueError("a training or sweep run needs its peak lr")
    if isinstance(grid, Training):
        eval_every, eval_batches = grid.eval_every, grid.eval_batches
        stuck_patience, log_every = grid.stuck_patience, grid.log_every
    else:  # a sweep: one evaluation at the end, no stuck test, no per-layer logging
        eval_every, eval_batches, stuck_patience, log_every = 0, 1, None, 0
    return TrainConfig.for_run(
        options, seed, steps=grid.steps, batch_size=grid.batch_size, seq_len=grid.seq_len,
        lr=lr, warmup_steps=warmup, grad_clip=None, init="xavier", eval_every=eval_every,
        eval_batches=eval_batches, stuck_patience=stuck_patience, log_every=log_every,
        threads=1, final_eval_fraction=grid.final_eval_fraction)


def lr_area(training: Training, warmup: int, lr: float) -> float:
    """Σ over the run's steps of the scheduled lr (`trainer.learning_rate`)."""
    from blocklab.experiments.trainer import TrainConfig, learning_rate

    tc = TrainConfig(steps=training.steps, lr=lr, warmup_steps=warmup)
    return sum(learning_rate(step, tc) for step in range(training.steps))


def shape(size: str) -> tuple[ModelConfig, int, int]:
    """Part (b)'s pre-norm model at its deepest depth, batch and sequence length at `size`."""
    t = SIZES[size].training
    return model_config("pre", max(t.depths), t), t.batch_size, t.seq_len


def scale(size: str, claim: str) -> Scale | None:
    """The scale of a claim's pre-norm runs: C36's deep stacks, C13's and C19's training grid
    at its deepest depth; None for C12, read at initialisation."""
    if claim == "C12":
        return None
    grid = SIZES[size].deep if claim == "C36" else SIZES[size].training
    return Scale.of(model_config("pre", grid.depths[-1], grid),
                    grid.steps * grid.batch_size * grid.seq_len)


@dataclass(frozen=True)
class ProbeRecord:
    """A probe's `extra`, per layer bottom first (None: not finite): ‖∇ down_proj.weight‖,
    ‖∇ the layer's parameters‖, its output's RMS, ‖∂L/∂x_l‖·rms(x_l) of the stream ENTERING
    layer l (then the final norm's), and at the deepest depth ‖J_l − I‖_F/√n and ‖J_l‖_F/√n."""

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


def init_gradients(placement: str, init: str, depth: int, seed: int, probe: Probe,
                   options: RunOptions) -> RunResult:
    """One forward/backward at initialisation (and each block's Jacobian): a `ProbeRecord`."""
    import torch
    import torch.nn.functional as F

    from blocklab.experiments import jacobian
    from blocklab.experiments.data import load_corpus, validation_windows
    from blocklab.experiments.trainer import build_model, layer_grad_norms

    started = time.perf_counter()
    batch = validation_windows(load_corpus(DATA).val, probe.seq_len, probe.batch_size)
    rms: list[float] = []

    def record(module, inputs, output) -> None:
        rms.append(float(output.detach().float().pow(2).mean().sqrt()))

    def loss_of(model) -> torch.Tensor:
        tokens = batch.to(next(model.parameters()).device)
        logits = model(tokens[:, :-1])  # [B, T, V]
        return F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())

    with torch_threads(1):
        model = build_model(model_config(placement, depth, probe),
                            train_config(probe, options, seed, init=init))
        model.train()
        handles = [layer.register_forward_hook(record) for layer in model.layers]
        try:
            loss, sensitivity, inputs = jacobian.residual_sensitivity(model, loss_of)
        finally:
            for handle in handles:
                handle.remove()
        whole, down = layer_grad_norms(model.layers)
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


def final_val(result: RunResult | None) -> float | None:
    """A run's final validation loss; None where it has none or it is not finite."""
    value = None if result is None or result.final is None else result.final.val_loss
    return value if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class SweepRung:
    """One short run of a bisection; `trains` as `tuning.trains` says."""

    lr: float
    status: str
    val_loss: float | None
    trains: bool


@dataclass(frozen=True)
class StableLr:
    """A largest-stable-lr run's `extra`: the `rung` of `ladder` found (−1: none stable), its
    lr, the bisection's runs in order and the unigram entropy of the training bytes."""

    placement: str
    depth: int
    warmup: int
    seed: int
    rung: int
    ladder: list[float]
    max_stable_lr: float | None
    trials: list[SweepRung]
    unigram_entropy: float | None


Record = TypeVar("Record")


def bisect_stable(ladder: list[float], attempt: Callable[[float], tuple[bool, Record]]
                  ) -> tuple[int, list[Record]]:
    """(rung of the largest lr in `ladder` where `attempt(lr)` -> (stable, record) is stable,
    −1 for none; the records in order), bisected: stability taken as monotone in lr."""
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
    """One arm's largest stable peak lr on `seed` (a `StableLr`)."""
    from blocklab.experiments.trainer import run

    started = time.perf_counter()
    mc = model_config(placement, depth, sweep)
    entropy: list[float] = []

    def attempt(lr: float) -> tuple[bool, SweepRung]:
        result = run(mc, train_config(sweep, options, seed, warmup=warmup, lr=lr), DATA,
                     progress=False, label=f"sweep {placement} L={depth} lr {lr:g}")
        if result.final is not None:
            entropy.append(result.final.unigram_entropy)
        ok = trains(result)
        return ok, SweepRung(lr=lr, status=result.status, val_loss=final_val(result),
                             trains=ok)

    ladder = sweep.ladder()
    rung, trials = bisect_stable(ladder, attempt)
    found = StableLr(placement=placement, depth=depth, warmup=warmup, seed=seed, rung=rung,
                     ladder=ladder, max_stable_lr=ladder[rung] if rung >= 0 else None,
                     trials=trials, unigram_entropy=entropy[0] if entropy else None)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=asdict(found))


def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """The gradient probes, every training arm at the lr its tuning chose, and the sweeps."""
    size = SIZES[options.size]
    probe, training = size.probe, size.training
    specs = []
    for placement, init, depth, seed in itertools.product(probe.placements, probe.inits,
                                                          probe.depths, options.seeds):
        payload = {"suite": "placement", "kind": "init_gradients", "placement": placement,
                   "init": init, "depth": depth, "seed": seed, "probe": asdict(probe),
                   "model": model_config(placement, depth, probe).to_dict(), "data": DATA}
        payload.update(added_identity(precision=options.precision))

        def execute(progress, placement=placement, init=init, depth=depth, seed=seed):
            return init_gradients(placement, init, depth, seed, probe, options)

        specs.append(RunSpec(f"init {placement} {init} L={depth} seed {seed}",
                             f"init/{placement}/{init}/{depth}", seed, payload, execute,
                             reads_tuning=False))
    lrs = tuned_lrs(training, lr_trials(tuned))
    return (specs + _training_specs(training, options, "train", lambda arm: [lrs[arm].lr],
                                    options.seeds)
            + _sweep_specs(size.sweep, options, "sweep")
            + _sweep_specs(size.deep, options, "deep"))


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """Every training arm at every peak lr of its grid (grown from `tuned`) on the tuning
    seeds, as long as the evaluation runs."""
    training = SIZES[options.size].training
    trials = lr_trials(list(tuned))
    return _training_specs(training, options, "tune",
                           lambda arm: tune_arm(training.lr_grid, trials, arm).grid,
                           tuning_seeds(options, training.tuning_seeds))


def tuned_lrs(training: Training, trials: list[LrTrial]) -> dict[str, ArmTuning]:
    return {arm_name(*a): tune_arm(training.lr_grid, trials, arm_name(*a))
            for a in training.arms()}


def _training_specs(training: Training, options: RunOptions, kind: str,
                    lrs: Callable[[str], Iterable[float]], seeds: Iterable[int]
                    ) -> list[RunSpec]:
    """Part (b)'s runs of `kind` ("tune" or "train"): every arm at each of `lrs(arm)` on `seeds`."""
    specs = []
    for placement, depth, warmup in training.arms():
        arm, mc = arm_name(placement, depth, warmup), model_config(placement, depth, training)
        for lr in lrs(arm):
            for seed in seeds:
                tc = train_config(training, options, seed, warmup=warmup, lr=lr)
                identity = {"suite": "placement", "kind": kind,
                            **({"arm": arm} if kind == "tune" else {})}
                label = f"{placement} L={depth} warmup {warmup} lr {lr:g} seed {seed}"
                specs.append(training_spec(f"tune {label}" if kind == "tune" else label,
                                           f"{kind}/{arm}", seed, mc, tc, identity, DATA))
    return specs


def _sweep_specs(sweep: Sweep, options: RunOptions, grid: str) -> list[RunSpec]:
    """One run per arm and seed, each bisecting its ladder (grid "sweep" or "deep")."""
    specs = []
    for placement, depth, warmup in sweep.arms():
        for seed in options.seeds:
            tc = train_config(sweep, options, seed, warmup=warmup, lr=sweep.lr_min)
            payload = {"suite": "placement", "kind": grid,
                       "model": model_config(placement, depth, sweep).to_dict(),
                       "train": train_identity(tc), "ladder": sweep.ladder(), "data": DATA}

            def execute(progress, placement=placement, depth=depth, warmup=warmup, seed=seed):
                return largest_stable_lr(placement, depth, warmup, seed, sweep, options,
                                         progress)

            label = (f"{'deep ' if grid == 'deep' else ''}largest stable lr {placement} "
                     f"L={depth} warmup {warmup} seed {seed}")
            specs.append(RunSpec(label, f"{grid}/{arm_name(placement, depth, warmup)}", seed,
                                 payload, execute, reads_tuning=False))
    return specs


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds here (`experiments.estimate`): a probe a build and a step, a sweep its
    bisection's runs; None (the trainer's) for training runs."""
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
