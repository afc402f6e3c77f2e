"""The `width` suite's arms, sizes, models, runs (`train_arm`: its loss at each prefix width),
plan and prices."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from blocklab.config import ModelConfig
from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.scale import Scale
from blocklab.experiments.suites.base import Results, RunSpec, training_spec, tuning_seeds
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION
from blocklab.experiments.suites.tuning import LrGrid, lr_trials, tune_arm
from blocklab.experiments.summaries import ArmTuning, LrTrial

if TYPE_CHECKING:
    from torch import nn

    from blocklab.experiments.trainer import TrainConfig


DATA = "stdlib"
ARMS = ("ordinary", "nested", "narrow")  # (a), (b), (c) of the package's docstring
# Every arm trains at the lr tuned on this one (nested methods reuse their baseline's).
TUNED_ARM = "ordinary"
# The prefix widths, as divisors of m: m, m/2, m/4.
DIVISORS = (1, 2, 4)


@dataclass(frozen=True)
class Size:
    """One suite size; `d_ff` is m, the ordinary model's width."""

    d_model: int
    n_layers: int
    n_heads: int
    seq_len: int
    batch_size: int
    steps: int
    d_ff: int
    lr_grid: LrGrid
    tuning_seeds: int
    warmup_steps: int
    eval_every: int
    eval_batches: int
    final_eval_fraction: float
    init: str = "fan_in"

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(self.d_ff // k for k in DIVISORS)

    @property
    def narrow(self) -> int:
        return self.d_ff // 2

    def width_of(self, arm: str) -> int:
        return self.narrow if arm == "narrow" else self.d_ff


SIZES = {
    "tiny": Size(d_model=32, n_layers=1, n_heads=2, seq_len=32, batch_size=4, steps=5,
                 d_ff=64, lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0, max_extensions=1),
                 tuning_seeds=1, warmup_steps=0, eval_every=0, eval_batches=1,
                 final_eval_fraction=FINAL_EVAL_FRACTION["tiny"]),
    # The ffn suite's quick model and budget with m = 192: Llama's 8d/3 rounded up to a
    # multiple of 64, so m/2 and m/4 are whole.
    "quick": Size(d_model=64, n_layers=2, n_heads=4, seq_len=64, batch_size=16, steps=300,
                  d_ff=192, lr_grid=LrGrid((3e-3, 1e-2, 3e-2), 3.0, refine=True),
                  tuning_seeds=2,
                  warmup_steps=15, eval_every=25, eval_batches=8,
                  final_eval_fraction=FINAL_EVAL_FRACTION["quick"]),
    "full": Size(d_model=96, n_layers=3, n_heads=4, seq_len=128, batch_size=16, steps=1500,
                 d_ff=256, lr_grid=LrGrid((2.5e-3, 5e-3, 1e-2, 2e-2, 4e-2), 2.0),
                 tuning_seeds=2, warmup_steps=75, eval_every=50, eval_batches=16,
                 final_eval_fraction=FINAL_EVAL_FRACTION["full"]),
}


def model_config(arm: str, size: Size, d_ff: int | None = None) -> ModelConfig:
    """The ffn suite's SwiGLU decoder at the arm's width (`d_ff`: another)."""
    width = size.width_of(arm) if d_ff is None else d_ff
    return ModelConfig(vocab_size=256, d_model=size.d_model, n_layers=size.n_layers,
                       n_heads=size.n_heads, ffn="swiglu", d_ff=width,
                       max_seq_len=size.seq_len, name=f"width-{arm}")


def train_config(arm: str, size: Size, options: RunOptions, seed: int, lr: float
                 ) -> TrainConfig:
    """The same optimisation for every arm; the nested arm's loss is the mean over widths."""
    from blocklab.experiments.trainer import TrainConfig

    return TrainConfig.for_run(
        options, seed, steps=size.steps, batch_size=size.batch_size, seq_len=size.seq_len,
        lr=lr, warmup_steps=size.warmup_steps, eval_every=size.eval_every,
        eval_batches=size.eval_batches, log_every=0, threads=1, init=size.init,
        final_eval_fraction=size.final_eval_fraction,
        nested_widths=size.widths if arm == "nested" else ())


def shape(size: str) -> tuple[ModelConfig, int, int]:
    """The ordinary arm's model, batch and sequence length at `size`."""
    s = SIZES[size]
    return model_config("ordinary", s), s.batch_size, s.seq_len


def scale(size: str, claim: str) -> Scale:
    """The scale C37's runs are graded at: the ordinary model and one run's training tokens."""
    s = SIZES[size]
    return Scale.of(model_config("ordinary", s), s.steps * s.batch_size * s.seq_len)


def width_losses(model: nn.Module, tc: TrainConfig, widths: tuple[int, ...]) -> dict[str, float]:
    """{str(k): val loss with every FFN at its first k channels} on the trainer's final windows."""
    from blocklab.experiments.data import load_corpus
    from blocklab.experiments.trainer import evaluate, final_batch_tokens, final_windows
    from blocklab.nn.ffn import narrowed

    windows = {tc.seq_len: final_windows(load_corpus(DATA).val, tc)[tc.seq_len]}
    out = {}
    with torch_threads(1):
        for k in widths:
            with narrowed(model, k):
                out[str(k)] = evaluate(model, windows, final_batch_tokens(tc))[tc.seq_len]["loss"]
    return out


def train_arm(mc: ModelConfig, tc: TrainConfig, data: str, progress: Any = False,
              label: str | None = None, *, widths: tuple[int, ...] = ()) -> RunResult:
    """A trainer run, then its loss at each of `widths` in `extra["width_loss"]` (if it trained)."""
    from blocklab.experiments.trainer import train

    model, result = train(mc, tc, data, progress=progress, label=label)
    if result.status == "ok":
        result.extra["width_loss"] = width_losses(model, tc, widths)
    return result


def read_widths(arm: str, size: Size) -> tuple[int, ...]:
    return tuple(k for k in size.widths if k <= size.width_of(arm))


def _spec(kind: str, arm: str, size: Size, options: RunOptions, seed: int, lr: float,
          label: str) -> RunSpec:
    widths = read_widths(arm, size)
    return training_spec(label, arm, seed, model_config(arm, size),
                         train_config(arm, size, options, seed, lr),
                         {"suite": "width", "kind": kind, "arm": arm,
                          "read_widths": list(widths)}, DATA,
                         functools.partial(train_arm, widths=widths))


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The ordinary arm at every lr of its grid (grown from `tuned`) on the tuning seeds."""
    size = SIZES[options.size]
    grid = tune_arm(size.lr_grid, lr_trials(tuned), TUNED_ARM, size.d_model).grid
    return [_spec("tune", TUNED_ARM, size, options, seed, lr,
                  f"width tune {TUNED_ARM} lr {lr:g} seed {seed}")
            for lr in grid for seed in tuning_seeds(options, size.tuning_seeds)]


def tuning(size: Size, trials: list[LrTrial]) -> ArmTuning:
    """The ordinary arm's tuning: the lr every arm trains at."""
    return tune_arm(size.lr_grid, trials, TUNED_ARM, size.d_model)


def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """Every arm at the ordinary arm's tuned lr on the options' seeds."""
    size = SIZES[options.size]
    lr = tuning(size, lr_trials(tuned)).lr
    return [_spec("train", arm, size, options, seed, lr, f"width {arm} seed {seed}")
            for arm in ARMS for seed in options.seeds]


def price(spec: RunSpec, cal) -> float | None:
    """The trainer's (nested: one per width), then one step per width read."""
    from blocklab.experiments.estimate import TrainShape, training_s

    payload = spec.payload
    model = ModelConfig.from_dict(payload["model"])
    train = TrainShape.from_payload(payload["train"])
    widths = payload["train"].get("nested_widths") or [model.d_ff]
    b, t, precision = train.batch_size, train.seq_len, train.precision
    seconds = sum(training_s(model.replace(d_ff=k), train, cal) for k in widths)
    return seconds + len(payload["read_widths"]) * cal.step_s(model, b, t, precision)
