"""`ffn` suite: plain vs gated FFNs at equal parameter count (claims C16, C17).

Seven arms share everything except the FFN of every layer:

    plain  relu, gelu                              y = W_d φ(W_u x)           d_ff = 4·d
    gated  glu, reglu, geglu, swiglu, bilinear     y = W_d (φ(W_g x) ⊙ W_u x)  d_ff = ⌈2·4d/3⌉

so every arm holds (within 3·d weights a layer) the same 2·d·4d FFN weights
(`blocklab.nn.ffn.equal_param_gated_width`). Each arm × seed is one trainer run on the default
`stdlib` corpus with the same optimiser, schedule and token budget; arms with the same seed
start from the same embeddings and attention weights and see the same batches in the same order
(the trainer draws every parameter from its own (seed, name) stream and batches from (seed,
step)), so differences are paired by seed.

Fair arms. Weights start from the `fan_in` init (std 1/√fan_in: unit-variance pre-activations,
where GELU and SiLU are curved; gpt2's fixed 0.02 leaves them nearly linear at small width).
Each arm trains at its own learning rate: the tuning stage runs every arm at every rate of
`lr_grid` on `tuning_seeds` seeds taken from `TUNING_SEEDS` (never an evaluation seed), and
the rate with the lowest mean final validation loss is the arm's. A best rate at an edge of the
grid grows the grid there until it is interior (`blocklab.experiments.suites.tuning`); one still
at an edge is flagged. Sensitivity: relu, gelu and swiglu run again on the evaluation seeds at the
old settings (gpt2 init, one shared lr), so the summary shows how much of a difference those
choices made. Scale trend: relu and swiglu are also tuned and trained at other widths.

What each size runs (`blocklab.experiments.suites.evaluation`): at --size tiny and --size quick
the suite plans only the runs a registered rule grades. C16 grades swiglu, geglu and glu
against relu, so those sizes tune and train relu, glu, geglu and swiglu at their own width and
nothing else; gelu, reglu, bilinear, the sensitivity re-runs, the scale-trend widths and the
timing run below (reported in tables only) run at --size full, and the summary names them.

Two extra measurements ride along:

    timing      one run, not per seed: every arm's optimizer step timed round-robin (the arms
                interleaved, so load from other processes falls on all of them alike); the
                median ms/step sets the equal-wall-clock comparison below.
    zero grads  (C17) in every training run, at initialisation and after training, on fixed
                validation windows: the fraction of the FFN activation's inputs (the gate branch
                of a gated FFN, the up branch of a plain one) whose loss gradient is exactly 0.
                ReLU zeroes it for every negative input; SiLU, GELU and sigmoid do not.

Equal wall-clock: arm a's validation curve is put on a time axis t = step · ms_a (ms_a its
timed ms/step). T* is the time at which the fastest arm finishes its steps; every run's curve
is interpolated linearly at T*, i.e. at step `steps · ms_fastest / ms_a`. Slower arms are read
mid-schedule, before their cosine decay has ended, which favours the fastest arm somewhat: a
run given only T* from the start would decay earlier and end a little lower.

A run counts towards the statistics when its status is "ok" and its final validation loss is
below the unigram entropy of the training bytes (the loss of the best context-free model).

`Summary.data` (read by the claims ledger and the report) is a
`blocklab.experiments.summaries.FfnData`: per arm (`FfnArm`) the validation loss, its paired
difference from ReLU (nats and %), timings, loss at equal wall-clock, run statuses and zero-gradient
fractions; deltas are arm − relu, so negative is better.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from blocklab.config import FFNS, ModelConfig
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
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION, full_only, listed
from blocklab.experiments.suites.tuning import (
    LrGrid,
    counted_loss,
    lr_trials,
    mean_loss,
    trains,
    tune_arm,
    tune_arms,
)
from blocklab.experiments.summaries import (
    FfnArm,
    FfnData,
    FfnSensitivity,
    FfnTrendPoint,
    Interval,
    LrTrial,
    Summary,
    Table,
    decode,
)

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig

ARMS = ("relu", "gelu", "glu", "reglu", "geglu", "swiglu", "bilinear")
BASELINE = "relu"
DATA = "stdlib"
# The page's "FFN 变体对比" table: quality gain over the ReLU FFN, in % (no sign convention is
# given; we read a gain as that much lower validation loss).
# Page 001's quality gains over a ReLU FFN at equal parameters, in % (low, high): the one place
# these figures are written; tables, captions, the summary and claim C16 read them from here.
PAGE_GAIN_PCT: dict[str, tuple[float, float]] = {"glu": (0.5, 0.5), "geglu": (1.0, 1.0),
                                                 "swiglu": (1.0, 2.0)}
# The arms C16 grades (the page's gains over ReLU) and their baseline: all that the tiny and
# quick sizes train.
GRADED_ARMS = tuple(arm for arm in ARMS if arm == BASELINE or arm in PAGE_GAIN_PCT)
SENSITIVITY_ARMS = ("relu", "gelu", "swiglu")
TREND_ARMS = ("relu", "swiglu")


def page_gain_text(arm: str) -> str:
    """The page's gain for `arm` as it writes it: "+1–2%", "+1%"; "—" for an arm it omits."""
    if arm not in PAGE_GAIN_PCT:
        return "—"
    low, high = PAGE_GAIN_PCT[arm]
    return f"+{low:g}%" if low == high else f"+{low:g}–{high:g}%"


@dataclass(frozen=True)
class Size:
    """Model and training budget of one suite size."""

    d_model: int
    n_layers: int
    n_heads: int
    seq_len: int
    batch_size: int
    steps: int
    lr_grid: LrGrid  # each arm's learning rate is the best of these (grown at an edge)
    tuning_seeds: int
    warmup_steps: int
    eval_every: int
    eval_batches: int
    timing_steps: int  # timed steps per arm per round (after one untimed step)
    timing_rounds: int
    init: str = "fan_in"
    # The sensitivity arms' settings: the suite's earlier design (one lr for every arm).
    sensitivity_init: str = "gpt2"
    sensitivity_lr: float = 3e-3
    # Scale trend: relu and swiglu also trained (and tuned) at these widths, so the summary
    # can say whether SwiGLU's effect grows or shrinks with model size.
    trend_widths: tuple[int, ...] = ()
    # The arms tuned and trained at the size's own width, those trained again under the
    # sensitivity settings, and whether every arm's step is timed: all of them at full, only
    # what C16 grades at tiny and quick (`evaluation.graded_only`).
    arms: tuple[str, ...] = ARMS
    sensitivity_arms: tuple[str, ...] = SENSITIVITY_ARMS
    timing: bool = True
    # The validation fraction every run scores at its end (`evaluation.FINAL_EVAL_FRACTION`).
    final_eval_fraction: float = 0.0


SIZES = {
    # tiny and quick: C16's arms and relu only, at the size's own width (no sensitivity
    # re-runs, no trend widths, no timing run): what a registered rule grades.
    "tiny": Size(d_model=32, n_layers=1, n_heads=2, seq_len=32, batch_size=4, steps=5,
                 lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0, max_extensions=1), tuning_seeds=1,
                 warmup_steps=0, eval_every=0,
                 eval_batches=1, timing_steps=2, timing_rounds=1, arms=GRADED_ARMS,
                 sensitivity_arms=(), timing=False,
                 final_eval_fraction=FINAL_EVAL_FRACTION["tiny"]),
    # 11-14 s a run (300 steps) on one core of the 2-core reference machine. Under fan_in
    # init every arm tried so far was best at 1e-2 of {1e-3, 3e-3, 1e-2, 3e-2} (seed 0), so
    # the grid is centred there; a coarse grid (×3) is enough at quick because it grows at an
    # edge until the optimum is interior.
    "quick": Size(d_model=64, n_layers=2, n_heads=4, seq_len=64, batch_size=16, steps=300,
                  lr_grid=LrGrid((3e-3, 1e-2, 3e-2), 3.0), tuning_seeds=1, warmup_steps=15,
                  eval_every=25,
                  eval_batches=8, timing_steps=10, timing_rounds=3, arms=GRADED_ARMS,
                  sensitivity_arms=(), timing=False,
                  final_eval_fraction=FINAL_EVAL_FRACTION["quick"]),
    # Hours: 7 arms × 8 seeds plus 7 × 5 × 2 tuning runs, an estimated 6 minutes each on one
    # core. Five points spaced 2×, two tuning seeds.
    "full": Size(d_model=96, n_layers=3, n_heads=4, seq_len=128, batch_size=16, steps=1500,
                 lr_grid=LrGrid((2.5e-3, 5e-3, 1e-2, 2e-2, 4e-2), 2.0), tuning_seeds=2,
                 warmup_steps=75, eval_every=50,
                 eval_batches=16, timing_steps=20, timing_rounds=5, sensitivity_lr=2e-3,
                 trend_widths=(48, 64), final_eval_fraction=FINAL_EVAL_FRACTION["full"]),
}


def ffn_width(arm: str, d_model: int) -> int:
    """d_ff of an arm: 4·d for plain FFNs, `equal_param_gated_width(4·d)` for gated ones."""
    from blocklab.nn.ffn import equal_param_gated_width

    plain = 4 * d_model
    return equal_param_gated_width(plain) if FFNS[arm][0] else plain


def model_config(arm: str, size: Size, d_model: int | None = None) -> ModelConfig:
    """The arm's model: a pre-norm RMSNorm RoPE decoder that differs from the others only in
    its FFN kind and width (`d_model`: a scale-trend width instead of the size's own)."""
    d = size.d_model if d_model is None else d_model
    return ModelConfig(vocab_size=256, d_model=d, n_layers=size.n_layers,
                       n_heads=size.n_heads, ffn=arm, d_ff=ffn_width(arm, d),
                       max_seq_len=size.seq_len,
                       name=f"ffn-{arm}" if d == size.d_model else f"ffn-{arm}-d{d}")


def train_config(size: Size, options: RunOptions, seed: int, lr: float,
                 init: str | None = None) -> TrainConfig:
    """The same optimisation for every arm but its learning rate, in the options' precision
    and backend: every TrainConfig of the suite is built here. One thread: on a shared 2-core
    machine two threads per run lose more to waiting than they gain, and one thread keeps
    runs bit-reproducible."""
    from blocklab.experiments.trainer import TrainConfig

    return TrainConfig(steps=size.steps, batch_size=size.batch_size, seq_len=size.seq_len,
                       lr=lr, warmup_steps=size.warmup_steps, eval_every=size.eval_every,
                       eval_batches=size.eval_batches, log_every=50, seed=seed, threads=1,
                       init=init or size.init, precision=options.precision,
                       backend=options.backend, final_eval_fraction=size.final_eval_fraction)


def param_count(arm: str, size: Size, d_model: int | None = None) -> int:
    from blocklab.budget.params import count_params

    return count_params(model_config(arm, size, d_model)).total


# --- what a run records beyond the trainer's result (`RunResult.extra`) -------------------------
@dataclass(frozen=True)
class ZeroGradFraction:
    """A training run's C17 probe: the fraction of FFN activation inputs whose loss gradient
    is exactly zero, at initialisation and after training (`zero_gradient_fraction`)."""

    init: float
    final: float

    @classmethod
    def of(cls, result: RunResult, where: str) -> ZeroGradFraction | None:
        """The probe `result` recorded; None for a run that recorded none."""
        if "zero_grad_fraction" not in result.extra:
            return None
        return decode(cls, result.extra["zero_grad_fraction"], f"{where}.zero_grad_fraction")


@dataclass(frozen=True)
class StepTiming:
    """The timing run's record (`time_arms`): each arm's median ms per optimizer step, every
    timed step (ms) and the threads it ran on."""

    ms_per_step: dict[str, float]
    samples_ms: dict[str, list[float]]
    threads: int

    @classmethod
    def of(cls, result: RunResult, where: str) -> StepTiming:
        """The record of a stored timing run (its per-arm "ms_per_step" is the suite's own,
        in `extra`, though a training run's field has the name)."""
        return decode(cls, {name: result.extra[name] for name in ("ms_per_step", "samples_ms",
                                                                    "threads")}, where)


# --- measurements --------------------------------------------------------------------------------
def zero_gradient_fraction(model, batch) -> float:
    """Fraction of FFN activation inputs whose loss gradient is exactly zero, over all layers.

    Args:
        model: a `DecoderLM` (unfused FFNs).
        batch: LongTensor [B, T + 1]; inputs batch[:, :-1], targets batch[:, 1:].

    The activation φ acts on gate_proj's output z (gated FFNs) or up_proj's (plain ones), so
    ∂loss/∂z = (∂loss/∂φ(z)) · φ'(z) [· up]: exactly zero wherever φ'(z) = 0, as for ReLU at z < 0.
    """
    import torch.nn.functional as F

    counts = [0, 0]  # zeros, elements

    def count(grad) -> None:
        counts[0] += int((grad == 0).sum())
        counts[1] += grad.numel()

    def watch(module, inputs, output) -> None:
        output.register_hook(count)

    handles = []
    for layer in model.layers:
        ffn = layer.ffn
        branch = ffn.gate_proj if hasattr(ffn, "gate_proj") else ffn.up_proj
        handles.append(branch.register_forward_hook(watch))
    try:
        logits = model(batch[:, :-1])  # [B, T, V]
        F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten()).backward()
    finally:
        for handle in handles:
            handle.remove()
        model.zero_grad(set_to_none=True)
    return counts[0] / counts[1]


def _probe_batch(size: Size):
    from blocklab.experiments.data import load_corpus, validation_windows

    return validation_windows(load_corpus(DATA).val, size.seq_len, size.batch_size)


def train_arm(mc: ModelConfig, size: Size, tc: TrainConfig, progress: Any = False,
              label: str | None = None) -> RunResult:
    """One trainer run of model `mc` under TrainConfig `tc`, with the zero-gradient fractions
    at init and after training."""
    from blocklab.experiments.trainer import build_model, train

    batch = _probe_batch(size)
    with torch_threads(1):
        initial = zero_gradient_fraction(build_model(mc, tc), batch)
    model, result = train(mc, tc, DATA, progress=progress, label=label)
    with torch_threads(1):
        final = zero_gradient_fraction(model, batch)
    result.extra["zero_grad_fraction"] = asdict(ZeroGradFraction(initial, final))
    return result


def time_arms(size: Size, options: RunOptions, arms: tuple[str, ...] = ARMS) -> RunResult:
    """Median ms per optimizer step of each arm, arms interleaved round-robin on one thread.

    Each round builds every arm afresh, takes one untimed step (allocations), then times
    `timing_steps` steps of forward, backward, clipping and AdamW on the suite's batches. The
    result trains no model: its `extra` is the `StepTiming` record.
    """
    from blocklab.experiments.data import load_corpus, sample_batch
    from blocklab.experiments.trainer import (
        build_model,
        learning_rate,
        make_optimizer,
        train_step,
    )

    started = time.perf_counter()
    tokens = load_corpus(DATA).train
    samples: dict[str, list[float]] = {arm: [] for arm in arms}
    with torch_threads(1):
        for round_ in range(size.timing_rounds):
            for arm in arms:
                tc = train_config(size, options, seed=0,
                                  lr=size.lr_grid.base[len(size.lr_grid.base) // 2])
                model = build_model(model_config(arm, size), tc)
                optimizer, params = make_optimizer(model, tc), list(model.parameters())
                for step in range(size.timing_steps + 1):
                    batch = sample_batch(tokens, seed=round_, step=step,
                                         batch_size=size.batch_size, seq_len=size.seq_len)
                    tick = time.perf_counter()
                    train_step(model, batch, optimizer, params, lr=learning_rate(step, tc),
                               grad_clip=tc.grad_clip)  # the step the arms are trained with
                    if step:
                        samples[arm].append(1000 * (time.perf_counter() - tick))
    timing = StepTiming({arm: statistics.median(v) for arm, v in samples.items()}, samples, 1)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=asdict(timing))


# --- plan ----------------------------------------------------------------------------------------
def _train_spec(kind: str, arm: str, size: Size, options: RunOptions, seed: int, lr: float,
                init: str, label: str, d_model: int | None = None) -> RunSpec:
    mc, tc = model_config(arm, size, d_model), train_config(size, options, seed, lr, init)
    payload = {"suite": "ffn", "kind": kind, "arm": arm, "model": mc.to_dict(),
               "train": train_identity(tc),
               "data": DATA, "probe": "zero_grad_fraction"}

    def execute(progress: Any) -> RunResult:
        return train_arm(mc, size, tc, progress, label)

    return RunSpec(label, arm, seed, payload, execute)


def _widths(size: Size) -> list[tuple[int, tuple[str, ...]]]:
    """(d_model, arms) of every width the size trains: its own with the size's arms, then
    each scale-trend width with the trend arms."""
    return [(size.d_model, size.arms), *((w, TREND_ARMS) for w in size.trend_widths)]


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The tuning stage: every arm the size trains at every lr of its grid (the registered
    one, grown at an edge from the results `tuned` so far), on the tuning seeds, at every
    width the size trains."""
    size = SIZES[options.size]
    trials = lr_trials(tuned)
    return [_train_spec("tune", arm, size, options, seed, lr, size.init,
                        f"ffn tune {arm}" + ("" if d == size.d_model else f" d={d}")
                        + f" lr {lr:g} seed {seed}", d)
            for d, arms in _widths(size) for arm in arms
            for lr in tune_arm(size.lr_grid, trials, arm, d).grid
            for seed in range(TUNING_SEEDS, TUNING_SEEDS + size.tuning_seeds)]


def choose_lrs(size: Size, trials: list[LrTrial], d_model: int | None = None,
               arms: tuple[str, ...] = ARMS) -> dict[str, float]:
    """Each arm's lr at width `d_model` (default: the size's): the rate of its (grown) grid
    with the lowest mean final validation loss over the tuning seeds (`tuning.tune_arm`)."""
    d = size.d_model if d_model is None else d_model
    return {arm: t.lr for arm, t in tune_arms(size.lr_grid, trials, arms, d).items()}


def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """The evaluation runs: every arm of the size at its tuned lr on `seeds`, the sensitivity
    arms at the earlier shared settings, the scale-trend arms at their widths' tuned lrs, and
    one timing run (the last three at full only); every model trained in the options'
    precision."""
    size = SIZES[options.size]
    trials = lr_trials(tuned)
    return plan_at(options, choose_lrs(size, trials, arms=size.arms),
                   {w: choose_lrs(size, trials, w, TREND_ARMS) for w in size.trend_widths})


def longer(options: RunOptions, tuned: Results, arms: list[str]) -> list[RunSpec]:
    """`arms` at their tuned lrs on `seeds`, each trained twice as long (steps, warmup and the
    evaluation interval doubled): the check of a would-be contradiction of C16, whose parts
    compare an arm with ReLU at equal steps."""
    size = SIZES[options.size]
    lrs = choose_lrs(size, lr_trials(tuned), arms=size.arms)
    long = replace(size, steps=2 * size.steps, warmup_steps=2 * size.warmup_steps,
                   eval_every=2 * size.eval_every)
    return [_train_spec("train", arm, long, options, seed, lrs[arm], long.init,
                        f"ffn {arm} ×2 steps seed {seed}")
            for arm in arms if arm in lrs for seed in options.seeds]


def plan_at(options: RunOptions, lrs: dict[str, float],
            trend_lrs: dict[int, dict[str, float]] | None = None) -> list[RunSpec]:
    """`plan` with each arm's learning rate given (`trend_lrs`: per trend width; default the
    same as `lrs`)."""
    size, seeds = SIZES[options.size], options.seeds
    specs = [_train_spec("train", arm, size, options, seed, lrs[arm], size.init,
                         f"ffn {arm} seed {seed}") for arm in size.arms for seed in seeds]
    specs += [_train_spec("sensitivity", arm, size, options, seed, size.sensitivity_lr,
                          size.sensitivity_init,
                          f"ffn {arm} {size.sensitivity_init} lr {size.sensitivity_lr:g} "
                          f"seed {seed}")
              for arm in size.sensitivity_arms for seed in seeds]
    for d in size.trend_widths:
        chosen = (trend_lrs or {}).get(d, lrs)
        specs += [_train_spec("trend", arm, size, options, seed, chosen[arm], size.init,
                              f"ffn {arm} d={d} seed {seed}", d)
                  for arm in TREND_ARMS for seed in seeds]
    if not size.timing:
        return specs
    timing_payload = {"suite": "ffn", "kind": "timing", "arms": list(size.arms),
                      "models": [model_config(arm, size).to_dict() for arm in size.arms],
                      "batch_size": size.batch_size, "seq_len": size.seq_len,
                      "steps": size.timing_steps, "rounds": size.timing_rounds}
    timing_payload.update(added_identity(precision=options.precision))
    specs.append(RunSpec("ffn timing", "timing", 0, timing_payload,
                         lambda progress: time_arms(size, options, size.arms), timed=True,
                         reads_tuning=False))
    return specs


# --- summary -------------------------------------------------------------------------------------
def interpolate(xs: Sequence[float], ys: Sequence[float | None], x: float) -> float | None:
    """The piecewise-linear curve through (xs, ys) at x (xs ascending); None outside
    [xs[0], xs[-1]] or when a bracketing y is missing."""
    for i, (xi, yi) in enumerate(zip(xs, ys, strict=True)):
        if abs(x - xi) <= 1e-9:
            return yi
        if i and xs[i - 1] < x < xi:
            y0 = ys[i - 1]
            if y0 is None or yi is None:
                return None
            return y0 + (x - xs[i - 1]) / (xi - xs[i - 1]) * (yi - y0)
    return None


def _fmt(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def summarise(options: RunOptions, results: Results) -> Summary:
    """Per-arm statistics first (`arm_stats`, `sensitivity_stats`, `scale_trend`), then the
    tables and notes built from them."""
    size, seeds = SIZES[options.size], options.seeds
    runs = sort_runs(size, seeds, results)
    trials = lr_trials(runs.tuned)
    tunings = tune_arms(size.lr_grid, trials, size.arms, size.d_model)  # the arms it tuned
    arms = arm_stats(size, runs, {arm: t.lr for arm, t in tunings.items()})
    trend, trend_change = scale_trend(size, seeds, trials, arms, runs)
    timed = runs.timing.ms_per_step if runs.timing is not None else {}
    fastest = min(timed.values()) if timed else None
    data = FfnData(arms=arms, seeds=len(seeds), steps=size.steps, init=size.init,
                   lr_grid=sorted({lr for t in tunings.values() for lr in t.grid}),
                   lr_trials=trials,
                   lr_at_edge=[arm for arm, t in tunings.items() if not t.interior],
                   lr_tuning=list(tunings.values()),
                   sensitivity=sensitivity_stats(size, runs), trend=trend,
                   trend_change=trend_change, warmup_steps=size.warmup_steps,
                   unigram_entropy=unigram_entropy(runs), baseline=BASELINE,
                   page=dict(PAGE_GAIN_PCT),
                   equal_time_ms=None if fastest is None else fastest * size.steps,
                   size=size_record(size, options))
    return Summary("ffn", options.size, len(seeds), _tables(size, data), _notes(size, data),
                   data, first_seed=seeds.start)


@dataclass
class FfnRuns:
    """The suite's results by kind: per arm one slot per evaluation seed (None where no result
    is stored) for the training runs, the sensitivity re-runs and, per (d_model, arm), the
    scale-trend runs; the tuning runs; the timing run's record (None without one)."""

    train: dict[str, list[RunResult | None]]
    sensitivity: dict[str, list[RunResult | None]]
    trend: dict[tuple[int, str], list[RunResult | None]]
    tuned: Results
    timing: StepTiming | None


def sort_runs(size: Size, seeds: range, results: Results) -> FfnRuns:
    """`results` sorted by the kind their payload names (the timing run's record decoded)."""
    runs = FfnRuns(train={arm: [None] * len(seeds) for arm in size.arms},
                   sensitivity={arm: [None] * len(seeds) for arm in size.sensitivity_arms},
                   trend={}, tuned=[], timing=None)
    for spec, result in results:
        kind = spec.payload["kind"]
        if kind == "timing":
            runs.timing = StepTiming.of(result, f"ffn run {spec.label!r}")
        elif kind == "tune":
            runs.tuned.append((spec, result))
        elif kind == "sensitivity":
            runs.sensitivity[spec.arm][seeds.index(spec.seed)] = result
        elif kind == "trend":
            d = spec.payload["model"]["d_model"]
            runs.trend.setdefault((d, spec.arm), [None] * len(seeds))[seeds.index(spec.seed)] \
                = result
        else:
            runs.train[spec.arm][seeds.index(spec.seed)] = result
    return runs


def _loss(result: RunResult | None) -> float | None:
    """The final val loss of a run that counts (`tuning.trains`); None otherwise or missing."""
    return None if result is None else counted_loss(result)


def _rel_pct(vals: list[float | None], base: list[float | None]) -> list[float | None]:
    """Per seed 100·(val − base)/base, None where either is missing."""
    return [100 * (a - b) / b if a is not None and b is not None else None
            for a, b in zip(vals, base, strict=True)]


def unigram_entropy(runs: FfnRuns) -> float | None:
    """The unigram entropy of the training bytes, from the first training run that has it."""
    entropies = [r.final.unigram_entropy for rs in runs.train.values() for r in rs
                 if r is not None and r.final is not None]
    return entropies[0] if entropies else None


def arm_stats(size: Size, runs: FfnRuns, lrs: dict[str, float]) -> dict[str, FfnArm]:
    """Each arm of the size over its seeds: quality, deltas vs relu paired by seed, timings,
    the loss at equal wall-clock, run statuses and zero-gradient fractions."""
    timed = runs.timing.ms_per_step if runs.timing is not None else {}
    fastest = min(timed.values()) if timed else None

    def equal_time_step(arm: str) -> float | None:
        return size.steps * fastest / timed[arm] if arm in timed and fastest is not None else None

    def equal_time(arm: str, result: RunResult | None) -> float | None:
        """The run's validation loss at T*, read off its curve (`interpolate`)."""
        step = equal_time_step(arm)
        if result is None or not trains(result) or step is None or result.curves is None:
            return None
        curves = result.curves
        return interpolate(curves.val_step, curves.val[str(size.seq_len)], step)

    base_vals = [_loss(r) for r in runs.train[BASELINE]]
    base_equal = [equal_time(BASELINE, r) for r in runs.train[BASELINE]]
    arms: dict[str, FfnArm] = {}
    for arm in size.arms:
        results = runs.train[arm]
        vals = [_loss(r) for r in results]
        status: dict[str, int] = {}
        for r in results:
            name = "missing" if r is None else r.status
            status[name] = status.get(name, 0) + 1
        train_ms = [r.ms_per_step for r in results if r is not None and r.ms_per_step]
        probes = [probe for r in results if r is not None
                  and (probe := ZeroGradFraction.of(r, f"ffn {arm} run {r.run_id}")) is not None]
        equal = [equal_time(arm, r) for r in results]
        arms[arm] = FfnArm(
            gated=FFNS[arm][0],
            activation=FFNS[arm][1],
            d_ff=ffn_width(arm, size.d_model),
            params=param_count(arm, size),
            val_loss=mean_ci(vals),
            val_bpb=mean_ci([r.final.val_bpb if r is not None and r.final is not None
                             and trains(r) else None for r in results]),
            delta_vs_relu=paired_difference(vals, base_vals),
            rel_delta_pct=mean_ci(_rel_pct(vals, base_vals)),
            ms_per_step=timed.get(arm),
            ms_per_step_train=sum(train_ms) / len(train_ms) if train_ms else None,
            val_loss_equal_time=mean_ci(equal),
            delta_vs_relu_equal_time=paired_difference(equal, base_equal),
            equal_time_step=equal_time_step(arm),
            status=status,
            counted=sum(v is not None for v in vals),
            zero_grad_fraction={"init": mean_ci([p.init for p in probes]).mean,
                                "final": mean_ci([p.final for p in probes]).mean},
            lr=lrs[arm],
        )
    return arms


def sensitivity_stats(size: Size, runs: FfnRuns) -> FfnSensitivity:
    """The sensitivity arms under the earlier settings, each against relu under them."""
    vals = {arm: [_loss(r) for r in results] for arm, results in runs.sensitivity.items()}
    return FfnSensitivity(
        init=size.sensitivity_init, lr=size.sensitivity_lr,
        val_loss={arm: mean_ci(v) for arm, v in vals.items()},
        rel_delta_pct={arm: mean_ci(_rel_pct(v, vals[BASELINE])) for arm, v in vals.items()})


def scale_trend(size: Size, seeds: range, trials: list[LrTrial], arms: dict[str, FfnArm],
                runs: FfnRuns) -> tuple[list[FfnTrendPoint], Interval]:
    """The scale-trend points in ascending width (swiglu vs relu, Δ% paired by seed), and the
    change of that Δ% from the smallest width to the largest, paired by seed."""
    points, per_seed = [], []
    for d in sorted({size.d_model, *size.trend_widths}):
        if d == size.d_model:
            width_runs = {arm: runs.train[arm] for arm in TREND_ARMS}
            lrs = {arm: arms[arm].lr for arm in TREND_ARMS}
        else:
            width_runs = {arm: runs.trend.get((d, arm), [None] * len(seeds))
                          for arm in TREND_ARMS}
            lrs = choose_lrs(size, trials, d, TREND_ARMS)
        rel = _rel_pct([_loss(r) for r in width_runs["swiglu"]],
                       [_loss(r) for r in width_runs["relu"]])
        per_seed.append(rel)
        points.append(FfnTrendPoint(d_model=d, params=param_count("relu", size, d),
                                    rel_delta_pct=mean_ci(rel), lrs=lrs))
    change = paired_difference(per_seed[-1], per_seed[0]) if len(per_seed) > 1 else Interval(0)
    return points, change


def size_record(size: Size, options: RunOptions) -> dict[str, Any]:
    """The size's settings as the summary records them (`FfnData.size`), with the precision
    its models trained in after `trend_widths`, where summaries have always held it."""
    record: dict[str, Any] = {}
    for name, value in asdict(size).items():
        record[name] = value
        if name == "trend_widths":
            record["precision"] = options.precision
    return record


def _tables(size: Size, data: FfnData) -> list[Table]:
    """The summary's tables, from its statistics (those the size ran)."""
    arms = data.arms
    base_params = arms[BASELINE].params
    widths = Table(
        "FFN arms at equal parameter count",
        ["arm", "FFN", "activation", "d_ff", "FFN weights/layer", "params", "vs relu"],
        [[arm, "gated" if a.gated else "plain", a.activation, a.d_ff,
          (3 if a.gated else 2) * size.d_model * a.d_ff, a.params,
          f"{100 * (a.params - base_params) / base_params:+.2f}%"]
         for arm, a in arms.items()],
        f"plain d_ff = 4·d = {4 * size.d_model}; gated d_ff = equal_param_gated_width(4·d) = "
        f"{ffn_width('swiglu', size.d_model)}; d_model={size.d_model}, "
        f"{size.n_layers} layer(s), bias-free, RMSNorm pre-norm, RoPE, untied embeddings.")
    quality = Table(
        f"Validation loss after {size.steps} steps (equal steps and tokens)",
        ["arm", "ok/div/stuck", "val loss (nats) [95% CI]", "bits/byte", "Δ vs relu [95% CI]",
         "Δ% vs relu [95% CI]", "page: gain vs ReLU"],
        [[arm, _status_cell(a.status), format_level(a.val_loss, 4),
          _fmt(a.val_bpb.mean), _delta_cell(arm, a.delta_vs_relu, 4),
          _delta_cell(arm, a.rel_delta_pct, 2),
          "baseline" if arm == BASELINE else page_gain_text(arm)]
         for arm, a in arms.items()],
        "Δ = arm − relu, paired by seed (same init streams and batches); negative = lower loss "
        f"= better, so the page's '{page_gain_text('swiglu')}' for SwiGLU reads as Δ% ≈ "
        f"−{PAGE_GAIN_PCT['swiglu'][0]:g} to −{PAGE_GAIN_PCT['swiglu'][1]:g}. "
        f"Unigram entropy of the training bytes: {_fmt(data.unigram_entropy)} nats.")
    clock = Table(
        "Cost per step and loss at equal wall-clock",
        ["arm", "ms/step (timed)", "ms/step (training runs)", "step at T*",
         "val loss at T* [95% CI]", "Δ vs relu at T* [95% CI]"],
        [[arm, _fmt(a.ms_per_step, 2), _fmt(a.ms_per_step_train, 2),
          _fmt(a.equal_time_step, 0), format_level(a.val_loss_equal_time, 4),
          _delta_cell(arm, a.delta_vs_relu_equal_time, 4)] for arm, a in arms.items()],
        "Timed: median of interleaved single-thread steps (forward, backward, clip, AdamW). "
        "T* = the fastest arm's time for all its steps; each curve is read at step "
        "steps·ms_fastest/ms_arm by linear interpolation between validations. Slower arms are "
        "read before their cosine decay ends (a bias against them).")
    zeros = Table(
        "C17: FFN activation inputs with an exactly zero gradient",
        ["arm", "activation", "at init", "after training"],
        [[arm, a.activation, _fmt(a.zero_grad_fraction["init"], 3),
          _fmt(a.zero_grad_fraction["final"], 3)] for arm, a in arms.items()],
        "Fraction of elements of ∂loss/∂z that are exactly 0, z the input of φ (the gate branch "
        f"of gated FFNs), over all layers, on {size.batch_size} fixed validation windows of "
        f"{size.seq_len} bytes; mean over seeds.")
    tunings = {t.arm: t for t in data.lr_tuning}
    tuning_seeds = sorted({t.seed for t in data.lr_trials})
    grid = Table(
        "Learning rate per arm: final validation loss on the tuning seeds",
        ["arm", *(f"lr {lr:g}" for lr in data.lr_grid), "chosen"],
        [[arm, *(_fmt(mean_loss(data.lr_trials, arm, lr, size.d_model), 4)
                 if lr in tunings[arm].grid else "" for lr in data.lr_grid),
          f"{arms[arm].lr:g}" + ("" if tunings[arm].interior else " (grid edge)")
          + (f", grid +{tunings[arm].extended}" if tunings[arm].extended else "")]
         for arm in size.arms],
        f"{size.tuning_seeds} tuning seed(s) ({', '.join(map(str, tuning_seeds))}), disjoint "
        "from the evaluation seeds; each arm is then evaluated at its own chosen lr. A best lr "
        f"at an edge of the registered grid {{{', '.join(f'{lr:g}' for lr in size.lr_grid.base)}"
        f"}} grows the grid there (×{size.lr_grid.factor:g}, at most "
        f"{size.lr_grid.max_extensions} points) until it is interior; blank: not tried for that "
        "arm. '—' marks an lr at which a tuning run did not count (diverged, stuck or above "
        "the unigram entropy).")
    trend_table = Table(
        "Scale trend: SwiGLU vs ReLU at each model width",
        ["d_model", "params (relu)", "lr relu", "lr swiglu", "Δ% vs relu [95% CI]"],
        [[p.d_model, p.params, f"{p.lrs['relu']:g}", f"{p.lrs['swiglu']:g}",
          format_ci(p.rel_delta_pct, 2)] for p in data.trend],
        "Each width with its own tuned lrs and the same seeds; change from the smallest to the "
        f"largest width, paired by seed: {format_ci(data.trend_change, 2)} points (negative: "
        "SwiGLU's advantage grows with size).")
    sensitivity = data.sensitivity
    init_table = Table(
        f"Sensitivity: {size.sensitivity_init} init and one shared lr "
        f"({size.sensitivity_lr:g}) instead of {size.init} init and tuned lrs",
        ["arm", f"Δ% vs relu, {size.init} + tuned lr", "val loss",
         f"Δ% vs relu, {size.sensitivity_init} + lr {size.sensitivity_lr:g}", "val loss"],
        [[arm, _delta_cell(arm, arms[arm].rel_delta_pct, 2), format_level(arms[arm].val_loss, 4),
          _delta_cell(arm, sensitivity.rel_delta_pct[arm], 2),
          format_level(sensitivity.val_loss[arm], 4)] for arm in size.sensitivity_arms],
        "The same evaluation seeds under both settings; Δ% paired by seed against relu under "
        "the same settings. A difference that changes sign or size between the two columns is "
        "an artefact of initialisation or learning rate, not of the FFN.")
    tables = [widths, grid, quality, trend_table if size.trend_widths else None,
              init_table if size.sensitivity_arms else None, clock if size.timing else None,
              zeros]
    return [t for t in tables if t is not None]


def _notes(size: Size, data: FfnData) -> list[str]:
    """The summary's notes: the budget, the widths, what counted, the lr grids, what the size
    left to full."""
    notes = [
        f"Budget: d_model={size.d_model}, n_layers={size.n_layers}, n_heads={size.n_heads}, "
        f"seq_len={size.seq_len}, batch={size.batch_size}, steps={size.steps} "
        f"({size.steps * size.batch_size * size.seq_len:,} training tokens a run), each arm at "
        f"its own lr from {{{', '.join(f'{lr:g}' for lr in data.lr_grid)}}}, "
        f"warmup={size.warmup_steps}, cosine to 0.1·lr, AdamW wd 0.1, clip 1.0, {size.init} "
        f"init, 1 thread, data={DATA}.",
        f"Widths: plain d_ff={4 * size.d_model}, gated d_ff={ffn_width('swiglu', size.d_model)}.",
        "A run counts when its status is ok and its final validation loss is below the unigram "
        "entropy; counted runs per arm: "
        + ", ".join(f"{arm} {a.counted}/{data.seeds}" for arm, a in data.arms.items()) + ".",
    ]
    if data.lr_at_edge:
        notes.append("Best lr still at an edge of the grid after growing it (the optimum may "
                     "lie beyond it): "
                     + ", ".join(f"{arm} {data.arms[arm].lr:g}" for arm in data.lr_at_edge)
                     + ".")
    grown = [t.words() for t in data.lr_tuning if t.extended]
    if grown:
        notes.append("Grid grown at an edge before evaluation: " + "; ".join(grown) + ".")
    left_out = _left_out(size)
    if left_out:
        notes.append(full_only(left_out, "C16 grades swiglu, geglu and glu against relu at "
                                         "equal steps and tokens; nothing else here is graded"))
    return notes


def _left_out(size: Size) -> list[str]:
    """What the full size runs and `size` does not, in words (the summary's note)."""
    full = SIZES["full"]
    out = []
    missing = [arm for arm in ARMS if arm not in size.arms]
    if missing:
        out.append(f"the {listed(missing)} arm{'s' if len(missing) > 1 else ''}")
    if set(size.sensitivity_arms) < set(full.sensitivity_arms):
        out.append(f"the sensitivity re-runs ({full.sensitivity_init} init, one shared lr) of "
                   f"{listed(full.sensitivity_arms)}")
    if not size.trend_widths and full.trend_widths:
        out.append(f"the scale trend of {listed(TREND_ARMS)} at other widths (d_model "
                   f"{listed([str(w) for w in full.trend_widths])} at full)")
    if not size.timing and full.timing:
        out.append("the timed step of every arm and the loss at equal wall-clock")
    return out


def _delta_cell(arm: str, stats: Interval, digits: int) -> str:
    return "—" if arm == BASELINE else format_ci(stats, digits)


def _status_cell(status: dict[str, int]) -> str:
    return "/".join(str(status.get(s, 0)) for s in ("ok", "diverged", "stuck"))


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run on this machine (`blocklab.experiments.estimate`): a
    training run is the trainer's run plus `train_arm`'s two zero-gradient probes (one more
    model build, and a forward+backward each, priced as a step); the timing run builds every arm
    `rounds` times and takes timing_steps + 1 steps of each."""
    from blocklab.experiments.estimate import TrainShape, training_s

    payload = spec.payload
    if payload["kind"] == "timing":
        b, t, precision = payload["batch_size"], payload["seq_len"], payload.get("precision",
                                                                                  "fp32")
        models = [ModelConfig.from_dict(m) for m in payload["models"]]
        return payload["rounds"] * sum(
            cal.build_s(m, b, t, precision) + (payload["steps"] + 1) * cal.step_s(m, b, t,
                                                                                   precision)
            for m in models)
    model = ModelConfig.from_dict(payload["model"])
    train = TrainShape.from_payload(payload["train"])
    b, t, precision = train.batch_size, train.seq_len, train.precision
    return (training_s(model, train, cal) + cal.build_s(model, b, t, precision)
            + 2 * cal.step_s(model, b, t, precision))


SUITE = Suite("ffn", "plain vs gated FFNs at equal parameter count (C16, C17)", plan, summarise,
              # C16's registered rule needs five paired seeds (blocklab.claims.ffn).
              default_seeds={"tiny": 1, "quick": 5, "full": 8}, tune=tune,
              precisions=("fp32", "bf16"), price=price, longer=longer)
