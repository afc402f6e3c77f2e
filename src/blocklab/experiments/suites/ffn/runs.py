"""The `ffn` suite's arms, sizes, models, runs (`train_arm` with C17's probe, `time_arms`), plan
and prices."""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from blocklab.budget.params import count_params
from blocklab.config import FFNS, ModelConfig
from blocklab.experiments import ladder
from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import added_identity
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.scale import Scale
from blocklab.experiments.suites.base import Results, RunSpec, training_spec, tuning_seeds
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION
from blocklab.experiments.suites.tuning import LrGrid, lr_trials, tune_arm, tune_arms
from blocklab.experiments.summaries import LrTrial
from blocklab.jsonio import decode

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig


ARMS = ("relu", "gelu", "glu", "reglu", "geglu", "swiglu", "bilinear")
BASELINE = "relu"
DATA = "stdlib"
# Page 001's quality gains over a ReLU FFN at equal parameters, % (low, high) lower val loss.
PAGE_GAIN_PCT: dict[str, tuple[float, float]] = {"glu": (0.5, 0.5), "geglu": (1.0, 1.0),
                                                 "swiglu": (1.0, 2.0)}
# The arms C16 grades and their baseline: all that tiny and quick train.
GRADED_ARMS = tuple(arm for arm in ARMS if arm == BASELINE or arm in PAGE_GAIN_PCT)
SENSITIVITY_ARMS = ("relu", "gelu", "swiglu")
TREND_ARMS = ("relu", "swiglu")
# Paired seeds a ladder rung trains per arm (docs/rung_seeds.md: the most parts per CPU-hour).
RUNG_SEEDS = 12


def page_gain_text(arm: str) -> str:
    """The page's gain as it writes it: "+1–2%", "+1%"; "—" for an arm it omits."""
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
    lr_grid: LrGrid
    tuning_seeds: int
    warmup_steps: int
    eval_every: int
    eval_batches: int
    timing_steps: int  # timed steps per arm per round (after one untimed step)
    timing_rounds: int
    init: str = "fan_in"
    # the sensitivity arms' settings: one lr for every arm
    sensitivity_init: str = "gpt2"
    sensitivity_lr: float = 3e-3
    trend_widths: tuple[int, ...] = ()  # relu and swiglu tuned and trained at these too
    arms: tuple[str, ...] = ARMS
    sensitivity_arms: tuple[str, ...] = SENSITIVITY_ARMS
    timing: bool = True
    final_eval_fraction: float = 0.0


SIZES = {
    "tiny": Size(d_model=32, n_layers=1, n_heads=2, seq_len=32, batch_size=4, steps=5,
                 lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0, max_extensions=1), tuning_seeds=1,
                 warmup_steps=0, eval_every=0,
                 eval_batches=1, timing_steps=2, timing_rounds=1, arms=GRADED_ARMS,
                 sensitivity_arms=(), timing=False,
                 final_eval_fraction=FINAL_EVAL_FRACTION["tiny"]),
    # Under fan_in every arm tried was best at 1e-2, so the grid is centred there; refined on
    # two tuning seeds (at one seed and ×3 steps GLU's rate put +3% of lr bias into its gap).
    "quick": Size(d_model=64, n_layers=2, n_heads=4, seq_len=64, batch_size=16, steps=300,
                  lr_grid=LrGrid((3e-3, 1e-2, 3e-2), 3.0, refine=True), tuning_seeds=2,
                  warmup_steps=15,
                  eval_every=25,
                  eval_batches=8, timing_steps=10, timing_rounds=3, arms=GRADED_ARMS,
                  sensitivity_arms=(), timing=False,
                  final_eval_fraction=FINAL_EVAL_FRACTION["quick"]),
    "full": Size(d_model=96, n_layers=3, n_heads=4, seq_len=128, batch_size=16, steps=1500,
                 lr_grid=LrGrid((2.5e-3, 5e-3, 1e-2, 2e-2, 4e-2), 2.0), tuning_seeds=2,
                 warmup_steps=75, eval_every=50,
                 eval_batches=16, timing_steps=20, timing_rounds=5, sensitivity_lr=2e-3,
                 trend_widths=(48, 64), final_eval_fraction=FINAL_EVAL_FRACTION["full"]),
}


def rung(name: str, base: Size) -> Size:
    """`base` grown to ladder rung `name` on the ReLU arm's parameters (`ladder.grown`), warmup
    and evaluation keeping their share of the steps, the lr grid moved by the width ratio."""
    head = base.d_model // base.n_heads
    d, b, n = ladder.grown(  # d_ff = 4·d: no gated width to round, so no PyTorch
        name, lambda d: ModelConfig(vocab_size=256, d_model=d, n_layers=base.n_layers,
                                    n_heads=d // head, ffn=BASELINE, d_ff=4 * d,
                                    max_seq_len=base.seq_len),
        base.d_model, base.batch_size, base.steps, head, base.seq_len)
    return replace(base, d_model=d, n_heads=d // head, batch_size=b, steps=n,
                   warmup_steps=ladder.share(base.warmup_steps, n, base.steps),
                   eval_every=ladder.share(base.eval_every, n, base.steps),
                   lr_grid=replace(base.lr_grid, base=ladder.centred(base.lr_grid.base,
                                                                     base.d_model, d)))


# The ladder's rungs: C16's comparison at 2×, 4× and 8× the quick size's training compute.
SIZES.update({name: rung(name, SIZES[ladder.BASE]) for name in ladder.RUNGS})


def ffn_width(arm: str, d_model: int) -> int:
    """d_ff of an arm: 4·d for plain FFNs, `equal_param_gated_width(4·d)` for gated ones."""
    from blocklab.nn.ffn import equal_param_gated_width

    plain = 4 * d_model
    return equal_param_gated_width(plain) if FFNS[arm][0] else plain


def model_config(arm: str, size: Size, d_model: int | None = None) -> ModelConfig:
    """A pre-norm RMSNorm RoPE decoder; only the FFN differs (`d_model`: a trend width)."""
    d = size.d_model if d_model is None else d_model
    return ModelConfig(vocab_size=256, d_model=d, n_layers=size.n_layers,
                       n_heads=size.n_heads, ffn=arm, d_ff=ffn_width(arm, d),
                       max_seq_len=size.seq_len,
                       name=f"ffn-{arm}" if d == size.d_model else f"ffn-{arm}-d{d}")


def train_config(size: Size, options: RunOptions, seed: int, lr: float,
                 init: str | None = None) -> TrainConfig:
    """The same optimisation for every arm but its lr; one thread (bit-reproducible)."""
    from blocklab.experiments.trainer import TrainConfig

    return TrainConfig.for_run(
        options, seed, steps=size.steps, batch_size=size.batch_size, seq_len=size.seq_len,
        lr=lr, warmup_steps=size.warmup_steps, eval_every=size.eval_every,
        eval_batches=size.eval_batches, log_every=50, threads=1, init=init or size.init,
        final_eval_fraction=size.final_eval_fraction)


def param_count(arm: str, size: Size, d_model: int | None = None) -> int:
    return count_params(model_config(arm, size, d_model)).total


def shape(size: str) -> tuple[ModelConfig, int, int]:
    """The baseline (ReLU) arm's model, batch and sequence length at `size`."""
    s = SIZES[size]
    return model_config("relu", s), s.batch_size, s.seq_len


def scale(size: str, claim: str) -> Scale:
    """The scale C16's runs are graded at: the baseline (ReLU) arm's run."""
    s = SIZES[size]
    return Scale.of(model_config("relu", s), s.steps * s.batch_size * s.seq_len)


@dataclass(frozen=True)
class ZeroGradFraction:
    """C17: the fraction of FFN activation inputs with an exactly zero loss gradient."""

    init: float
    final: float

    @classmethod
    def of(cls, result: RunResult, where: str) -> ZeroGradFraction | None:
        if "zero_grad_fraction" not in result.extra:
            return None
        return decode(cls, result.extra["zero_grad_fraction"], f"{where}.zero_grad_fraction")


@dataclass(frozen=True)
class StepTiming:
    """The timing run's record: each arm's median and every timed step, in ms."""

    ms_per_step: dict[str, float]
    samples_ms: dict[str, list[float]]
    threads: int

    @classmethod
    def of(cls, result: RunResult, where: str) -> StepTiming:
        # "ms_per_step" is in `extra`, though a training run's field has the name
        return decode(cls, {name: result.extra[name] for name in ("ms_per_step", "samples_ms",
                                                                    "threads")}, where)


def zero_gradient_fraction(model, batch) -> float:
    """Fraction of FFN activation inputs z (gate_proj's output, or up_proj's in a plain FFN)
    whose loss gradient on `batch` [B, T + 1] is exactly zero: ∂loss/∂z = ∂loss/∂φ(z) · φ'(z)."""
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
        batch = batch.to(next(model.parameters()).device)
        logits = model(batch[:, :-1])  # [B, T, V]
        F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten()).backward()
    finally:
        for handle in handles:
            handle.remove()
        model.zero_grad(set_to_none=True)
    return counts[0] / counts[1]


def train_arm(mc: ModelConfig, tc: TrainConfig, data: str, progress: Any = False,
              label: str | None = None) -> RunResult:
    """A trainer run, with the zero-gradient fractions at init and after training."""
    from blocklab.experiments.data import load_corpus, validation_windows
    from blocklab.experiments.trainer import build_model, train

    batch = validation_windows(load_corpus(data).val, tc.seq_len, tc.batch_size)
    with torch_threads(1):
        initial = zero_gradient_fraction(build_model(mc, tc), batch)
    model, result = train(mc, tc, data, progress=progress, label=label)
    with torch_threads(1):
        final = zero_gradient_fraction(model, batch)
    result.extra["zero_grad_fraction"] = asdict(ZeroGradFraction(initial, final))
    return result


def time_arms(size: Size, options: RunOptions, arms: tuple[str, ...] = ARMS) -> RunResult:
    """Median ms per step of each arm, round-robin on one thread: each round builds every arm
    afresh, takes one untimed step, then times `timing_steps` steps."""
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
                # this CPU's time (perf_counter, no device sync), whatever --device trains
                tc = replace(train_config(size, options, seed=0,
                                          lr=size.lr_grid.base[len(size.lr_grid.base) // 2]),
                             device="cpu")
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


def _train_spec(kind: str, arm: str, size: Size, options: RunOptions, seed: int, lr: float,
                init: str, label: str, d_model: int | None = None) -> RunSpec:
    return training_spec(label, arm, seed, model_config(arm, size, d_model),
                         train_config(size, options, seed, lr, init),
                         {"suite": "ffn", "kind": kind, "arm": arm,
                          "probe": "zero_grad_fraction"}, DATA, train_arm)


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """Every arm at every lr of its grid (grown from `tuned`) on the tuning seeds, at every
    width the size trains."""
    size = SIZES[options.size]
    trials = lr_trials(tuned)
    widths = [(size.d_model, size.arms), *((w, TREND_ARMS) for w in size.trend_widths)]
    return [_train_spec("tune", arm, size, options, seed, lr, size.init,
                        f"ffn tune {arm}" + ("" if d == size.d_model else f" d={d}")
                        + f" lr {lr:g} seed {seed}", d)
            for d, arms in widths for arm in arms
            for lr in tune_arm(size.lr_grid, trials, arm, d).grid
            for seed in tuning_seeds(options, size.tuning_seeds)]


def choose_lrs(size: Size, trials: list[LrTrial], d_model: int | None = None,
               arms: tuple[str, ...] = ARMS) -> dict[str, float]:
    """Each arm's tuned lr at width `d_model` (default: the size's)."""
    d = size.d_model if d_model is None else d_model
    return {arm: t.lr for arm, t in tune_arms(size.lr_grid, trials, arms, d).items()}


def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """Every arm at its tuned lr; where the size has them the sensitivity, trend and timing runs."""
    size = SIZES[options.size]
    trials = lr_trials(tuned)
    return plan_at(options, choose_lrs(size, trials, arms=size.arms),
                   {w: choose_lrs(size, trials, w, TREND_ARMS) for w in size.trend_widths})


def longer(options: RunOptions, tuned: Results, arms: list[str]) -> list[RunSpec]:
    """`arms` trained twice as long: the check of a would-be contradiction of C16."""
    size = SIZES[options.size]
    lrs = choose_lrs(size, lr_trials(tuned), arms=size.arms)
    long = replace(size, steps=2 * size.steps, warmup_steps=2 * size.warmup_steps,
                   eval_every=2 * size.eval_every)
    return [_train_spec("train", arm, long, options, seed, lrs[arm], long.init,
                        f"ffn {arm} ×2 steps seed {seed}")
            for arm in arms if arm in lrs for seed in options.seeds]


def plan_at(options: RunOptions, lrs: dict[str, float],
            trend_lrs: dict[int, dict[str, float]] | None = None) -> list[RunSpec]:
    """`plan` with each arm's lr given (`trend_lrs`: per trend width; default `lrs`)."""
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


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds here: a training run the trainer's plus a build and two steps (its
    probes); the timing run `rounds` builds and timing_steps + 1 steps of every arm."""
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
