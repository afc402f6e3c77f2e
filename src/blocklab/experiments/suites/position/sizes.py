"""What each size of the position suite runs: the model every arm shares, the training length L
and the multiples of L read, the training, fine-tune, passkey, order-probe and cost settings
(`SIZES`); the arms a size trains and each arm's model and training run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from blocklab.config import ModelConfig
from blocklab.experiments import ladder
from blocklab.experiments.options import RunOptions
from blocklab.experiments.scale import Scale
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION, graded_only
from blocklab.experiments.suites.tuning import LrGrid

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig

UNAVAILABLE = "unavailable (table)"
THETA = 10000.0


@dataclass(frozen=True)
class ModelShape:
    """What every arm's model shares: width, depth and heads."""

    d_model: int
    n_layers: int
    n_heads: int


@dataclass(frozen=True)
class TrainSetting:
    """Each arm's training run at L: `steps` of `batch_size` windows, warmup over the first
    `warmup_steps`, peak lr tuned on `lr_grid` with `tuning_seeds` seeds (0: no tuning, every
    arm at the grid's middle lr)."""

    steps: int
    batch_size: int
    warmup_steps: int
    lr_grid: LrGrid
    tuning_seeds: int


@dataclass(frozen=True)
class FineTuneSetting:
    """`steps` of AdamW at `factor`·L tokens per window (constant `lr` after a 10% warmup), for
    the RoPE model with each scaling of `kinds` (None: plain RoPE, the control that gets the
    same extra training), the scaling's factor being the longest multiple read."""

    factor: int
    steps: int
    lr: float
    kinds: tuple[str | None, ...]


@dataclass(frozen=True)
class PasskeySetting:
    """The passkey models: `steps` of `batch_size` passkey examples at peak `lr`, scored on `n`
    examples per (length, needle depth) at every depth of `depths`."""

    steps: int
    batch_size: int
    lr: float
    n: int
    depths: tuple[float, ...]


@dataclass(frozen=True)
class OrderSetting:
    """C29's order probe: `prefixes` validation prefixes of `prefix_len` tokens per seed."""

    prefix_len: int
    prefixes: int


@dataclass(frozen=True)
class CostSetting:
    """C31's timed run: `repeats` interleaved repeats after `warmup` unrecorded ones; decode
    timed over `decode_tokens` tokens after a prompt of L − decode_tokens."""

    warmup: int
    repeats: int
    decode_tokens: int


@dataclass(frozen=True)
class PositionSize:
    """One suite size: the model, the training length L, the multiples of L read
    (`eval_windows` validation windows each), the training, the RoPE fine-tune, the passkey
    models (None: not run at this size), the order probe and the timed cost run."""

    model: ModelShape
    L: int
    mults: tuple[int, ...]
    train: TrainSetting
    eval_windows: int
    finetune: FineTuneSetting | None
    passkey: PasskeySetting | None
    order: OrderSetting
    cost: CostSetting | None  # None: no timed cost run (the ladder's rungs: C31 is not on it)

    def payload(self) -> dict[str, Any]:
        """The size as a training run's payload holds it ("size_config", plain JSON values):
        its run id hashes this, so a change to any setting re-plans the run. A grid without
        refinement leaves `refine` out, so ids made before grids could refine stay."""
        out = dataclasses.asdict(self)
        grid = out["train"].get("lr_grid")
        if isinstance(grid, dict) and not grid.get("refine"):
            grid.pop("refine", None)
        return out


SIZES: dict[str, PositionSize] = {
    "tiny": PositionSize(
        model=ModelShape(d_model=32, n_layers=2, n_heads=2), L=128, mults=(1, 2, 4),
        train=TrainSetting(steps=4, batch_size=2, warmup_steps=1,
                           lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0, max_extensions=1),
                           tuning_seeds=0),
        eval_windows=2,
        finetune=FineTuneSetting(factor=2, steps=2, lr=1e-3, kinds=(None, "ntk", "yarn")),
        passkey=None,  # no registered rule grades it: full only
        order=OrderSetting(prefix_len=32, prefixes=4),
        cost=CostSetting(warmup=1, repeats=3, decode_tokens=4)),
    "quick": PositionSize(
        model=ModelShape(d_model=64, n_layers=2, n_heads=2), L=128, mults=(1, 2, 4, 8, 16),
        # Every arm at the grid's middle lr (tuning_seeds 0): each graded part compares an arm
        # with itself (loss past L against the same model's sliding windows; order without
        # positions), not arms with one another, and tuning five arms would cost about 5
        # core-minutes of the quick budget. --size full tunes every arm.
        train=TrainSetting(steps=300, batch_size=16, warmup_steps=20,
                           lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0), tuning_seeds=0),
        eval_windows=16,
        finetune=FineTuneSetting(factor=4, steps=40, lr=1e-3, kinds=(None, "ntk", "yarn")),
        passkey=None,
        order=OrderSetting(prefix_len=64, prefixes=64),
        cost=CostSetting(warmup=2, repeats=20, decode_tokens=32)),
    "full": PositionSize(
        model=ModelShape(d_model=128, n_layers=4, n_heads=4), L=256, mults=(1, 2, 4, 8, 16),
        train=TrainSetting(steps=2000, batch_size=32, warmup_steps=100,
                           lr_grid=LrGrid((5e-4, 1e-3, 2e-3, 4e-3, 8e-3), 2.0),
                           tuning_seeds=2),
        eval_windows=32,
        finetune=FineTuneSetting(factor=4, steps=200, lr=5e-4,
                                 kinds=(None, "linear", "ntk", "yarn", "yarn-rescaled")),
        passkey=PasskeySetting(steps=2000, batch_size=32, lr=3e-3, n=32,
                               depths=(0.1, 0.3, 0.5, 0.7, 0.9)),
        order=OrderSetting(prefix_len=128, prefixes=128),
        cost=CostSetting(warmup=3, repeats=30, decode_tokens=64)),
}
def _rope_params(base: PositionSize, d_model: int) -> int:
    """The RoPE arm's exact parameters at `d_model`, `base`'s depth and heads' width."""
    from blocklab.budget.params import count_params

    head = base.model.d_model // base.model.n_heads
    return count_params(ModelConfig(vocab_size=256, d_model=d_model, n_layers=base.model.n_layers,
                                    n_heads=d_model // head, position="rope",
                                    max_seq_len=base.L, rope_theta=THETA)).total


def rung(name: str, base: PositionSize) -> PositionSize:
    """`base` (the quick size) grown to ladder rung `name` by `blocklab.experiments.ladder`'s
    rule: width and batch × √2 a rung at the same depth, heads' width and L, steps filling
    `ladder.multiple(name)` × the base's 6 · parameters · tokens (the RoPE arm's), warmup
    keeping its share. Every arm keeps the base's lr (the quick design does not tune: each
    part compares an arm with itself); the RoPE fine-tunes keep their steps (so C30's parts
    keep their names), each step a rung's larger batch; the multiples read, the windows
    scored and C29's order probe are the base's; no timed cost run (C31 is not on the
    ladder)."""
    head = base.model.d_model // base.model.n_heads
    t = base.train
    d, b, n = ladder.grown(name, base.model.d_model, t.batch_size, t.steps, head,
                           lambda width: _rope_params(base, width), base.L)
    return dataclasses.replace(
        base, model=ModelShape(d_model=d, n_layers=base.model.n_layers, n_heads=d // head),
        train=dataclasses.replace(t, steps=n, batch_size=b,
                                  warmup_steps=max(1, round(n * t.warmup_steps / t.steps))),
        cost=None)


# The ladder's rungs (C21 and C30): the quick size at 4×, 16× and 64× its training compute.
SIZES.update({name: rung(name, SIZES[ladder.BASE]) for name in ladder.RUNGS})

# C31's timed run compares these schemes; "none" is the baseline of every ratio.
COST_SCHEMES = ("none", "rope", "alibi")
# C31's parameter count also covers the absolute schemes (no timing: they add to the input
# embedding only).
PARAM_SCHEMES = ("none", "learned", "sinusoidal", "rope", "alibi")


# The schemes no registered rule grades: C21 reads a learned table long enough to be read past
# L and sinusoidal with the embedding scale instead. Trained at full only.
REPORTED_ONLY = ("learned", "sinusoidal")


def schemes(size: str) -> tuple[str, ...]:
    """Every position arm of the suite's design at `size` (what the full size trains)."""
    return ("none", "learned", f"learned-{max(SIZES[size].mults)}L", "sinusoidal",
            "sinusoidal+scale", "rope", "alibi")


def arms(size: str) -> tuple[str, ...]:
    """The arms `size` trains: every scheme at full; at tiny and quick those a registered
    rule grades (`evaluation.graded_only`)."""
    return tuple(a for a in schemes(size)
                 if not (graded_only(size) and a in REPORTED_ONLY))


def arm_config(size: str, arm: str) -> ModelConfig:
    """The model of `arm`: only `position` differs, and with it the learned table's length or
    the embedding scale of sinusoidal+scale."""
    config = SIZES[size]
    L, shape = config.L, config.model
    position = arm.split("-")[0].split("+")[0]
    max_seq_len = max(config.mults) * L if arm.startswith("learned-") else L
    return ModelConfig(vocab_size=256, d_model=shape.d_model, n_layers=shape.n_layers,
                       n_heads=shape.n_heads, position=position, max_seq_len=max_seq_len,
                       rope_theta=THETA, embed_scale=arm == "sinusoidal+scale",
                       name=f"position-{arm}")


def train_config(options: RunOptions, seed: int, lr: float | None = None) -> TrainConfig:
    """The training run of an arm at `lr` (its tuned peak lr; None: the middle of the
    registered grid, for the runs no arm's tuning applies to, such as the timed cost run), in
    `options`' precision and on its backend."""
    size = options.size
    t = SIZES[size].train
    base = t.lr_grid.base
    return suite_train_config(options, seed, steps=t.steps, batch_size=t.batch_size,
                         seq_len=SIZES[size].L, lr=base[len(base) // 2] if lr is None else lr,
                         warmup_steps=t.warmup_steps, eval_every=0, log_every=0,
                         eval_batches=1, threads=1,
                         final_eval_fraction=FINAL_EVAL_FRACTION[size])


def suite_train_config(options: RunOptions, seed: int, **settings: Any) -> TrainConfig:
    """Every TrainConfig this suite builds (its training runs, the passkey models, the RoPE
    fine-tunes, the cost run's models): `settings` in `options`' precision and backend."""
    from blocklab.experiments.trainer import TrainConfig

    return TrainConfig.for_run(options, seed, **settings)


def shape(size: str) -> tuple[ModelConfig, int, int]:
    """The RoPE arm's model, batch and training length L at `size` (`--precision auto`)."""
    return arm_config(size, "rope"), SIZES[size].train.batch_size, SIZES[size].L


def scale(size: str, claim: str) -> Scale | None:
    """The scale C21's, C29's and C30's runs are graded at: the RoPE arm's model trained at L
    and one run's training tokens at `size`; None for C31 (parameter counts and timings)."""
    if claim == "C31":
        return None
    config = SIZES[size]
    return Scale.of(arm_config(size, "rope"),
                    config.train.steps * config.train.batch_size * config.L,
                    f"d {config.model.d_model} × {config.model.n_layers} layers, trained at "
                    f"L = {config.L}",
                    f"d {config.model.d_model} × {config.model.n_layers} 层，"
                    f"训练长度 L = {config.L}")
