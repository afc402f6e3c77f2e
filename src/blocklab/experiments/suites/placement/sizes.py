"""The placement suite's grids at each size: part (a)'s gradient probe, part (b)'s training
grid, and the largest-stable-lr sweeps (at part (b)'s depth, and part (c)'s deep stacks), with
the constants every part shares."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from blocklab.experiments import ladder
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION
from blocklab.experiments.suites.tuning import LrGrid, rounded

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
    runs on the ladder `lr_min · step^k` (k < rungs), bisected. With rungs = 2^j − 1, j runs a
    seed find the rung between "none stable" and "the top one stable"; with 2^(j−1) < rungs + 1
    ≤ 2^j, j runs. Outcomes are read in doublings (`doublings`): a rung is log2(step) of one."""

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
    # Depth 6, pre and post, with and without warmup, each arm at its own tuned lr: the
    # contrast C13 and C19 grade, and nothing else (the depth trend and sandwich norm run at
    # full). Every run to the end (no stuck test: outcomes are losses, not counts), 4 seeds so
    # the warmup interaction has an interval. Every run must close a quarter of the way from
    # the unigram to the bigram reference (`options.LEARN_MARGIN`) to count as trained.
    "quick": Size(
        Probe(d_model=64, n_heads=4, depths=(2, 4, 8, 16, 32, 64), seq_len=64, batch_size=8),
        # Chosen by a pilot (seed 0, final val loss; unigram reference 3.21, bigram 2.45). At
        # depth 12 and 150 steps post-norm learned at no lr from 0.003 to 0.09, warmup or not
        # (3.20-3.22: the unigram's loss), and in 300 steps only at 1e-3 with warmup (2.86).
        # At depth 6 and 300 steps every arm learns at an interior optimum of (1e-3, 3e-3,
        # 1e-2): post warm 3.38 / 2.56 / 2.16 / 2.61 at 3e-4 … 1e-2, post cold 2.56 / 2.29 at
        # 1e-3 / 3e-3, pre cold 2.61 / 2.32 / 2.14 at 1e-3 … 1e-2. 300 steps of 6 layers cost
        # what 150 of 12 did (about 15 s a run on one core of the 2-core reference machine).
        # Each arm's interior optimum on the ×3 grid is refined at ×√3 either side of it
        # (`LrGrid.refine`), on two tuning seeds, so a half-step miss does not bias a contrast.
        Training(d_model=32, n_heads=2, depths=(6,), warmups=(0, 100),
                 lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0, refine=True), tuning_seeds=2,
                 placements=("pre", "post"), seq_len=64, batch_size=16, steps=300,
                 stuck_patience=None, eval_every=50, eval_batches=4,
                 final_eval_fraction=FINAL_EVAL_FRACTION["quick"]),
        # Largest lr at which a run still learns, at the training depth: 150 steps (warmup
        # over the first third), ladder 0.001 … 16.4 in doublings (15 rungs: 4 bisected runs
        # a seed and arm, about 5 s each, as 10 rungs took; at 0.001 … 0.512 pre-norm was
        # still stable at the top on most seeds, a censored reading that left its pair out).
        # Pilot at depth 6, 150 steps: pre-norm learned at every lr from
        # 0.01 to 0.3, cold or warm (2.49 … 2.94); post-norm at none of them (3.21 … 3.25).
        # "Stable" is "learned": a rate at which a run only avoids diverging is not stable.
        Sweep(d_model=32, n_heads=2, depths=(6,), warmup=50, placements=("pre", "post"),
              warm=(False, True), seq_len=64, batch_size=16, steps=150, lr_min=0.001,
              rungs=15, final_eval_fraction=FINAL_EVAL_FRACTION["quick"]),
        # C36: 50 layers (the page's "50+"), pre and post, both with warmup (post-norm's best
        # schedule). A 50-layer d = 32 step at seq_len 32 takes about 0.23 s on one core, so
        # 100 steps cost about 25 s a run, 3 runs a seed and arm. Pilot (100 steps, warmup
        # 30): pre-norm learned at 0.003, 0.01 and 0.03 (2.88, 2.82, 2.87); post-norm not at
        # 0.003 (3.23). Ladder 0.001 … 0.064 in doublings.
        Sweep(d_model=32, n_heads=2, depths=(50,), warmup=30, placements=("pre", "post"),
              warm=(True,), seq_len=32, batch_size=16, steps=100, lr_min=0.001,
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


def arm_name(placement: str, depth: int, warmup: int) -> str:
    """A training arm's tuning name: "<placement>/<depth>/<warmup>"."""
    return f"{placement}/{depth}/{warmup}"


def _pre_params(training: Training, d_model: int) -> int:
    """The pre-norm model's exact parameters at `d_model`, part (b)'s depth and heads' width."""
    from blocklab.budget.params import count_params
    from blocklab.config import ModelConfig

    head = training.d_model // training.n_heads
    return count_params(ModelConfig(vocab_size=256, d_model=d_model,
                                    n_layers=max(training.depths), n_heads=d_model // head,
                                    placement="pre", max_seq_len=training.seq_len)).total


def rung(name: str, base: Size) -> Size:
    """`base` (the quick size) grown to ladder rung `name` by `blocklab.experiments.ladder`'s
    rule, on what C19 reads (part (b)'s training grid and its largest-stable-lr sweep): width
    and batch × √2 a rung at the base's depth and heads of 16, the training steps filling
    `ladder.multiple(name)` × the base's 6 · parameters · tokens (the pre-norm model's), and
    every length in steps (warmups, evaluation interval, the sweep's runs) keeping its share.
    Each training arm is tuned at every rung as at quick (the base's grid moved by the width
    ratio, `ladder.centred`, grown at an edge and refined around its optimum, on the base's
    two tuning seeds); the sweep's lr ladder is the base's moved down by the same ratio,
    base d / d (Adam's largest stable lr for hidden weights ∝ 1 / width, Yang
    et al. 2022, "Tensor Programs V", Table 3), so the answers stay on it. No probe (part (a))
    and no deep stacks (C36): not on the ladder."""
    t, sweep = base.training, base.sweep
    head = t.d_model // t.n_heads
    d, b, n = ladder.grown(name, t.d_model, t.batch_size, t.steps, head,
                           lambda width: _pre_params(t, width), t.seq_len)

    def share(k: int) -> int:
        return max(1, round(k * n / t.steps)) if k else 0

    training = replace(t, d_model=d, n_heads=d // head, batch_size=b, steps=n,
                       warmups=tuple(share(w) for w in t.warmups),
                       eval_every=share(t.eval_every),
                       lr_grid=replace(t.lr_grid, base=tuple(
                           map(rounded, ladder.centred(t.lr_grid.base, t.d_model, d)))))
    swept = replace(sweep, d_model=d, n_heads=d // head, batch_size=b, steps=share(sweep.steps),
                    warmup=share(sweep.warmup), lr_min=rounded(sweep.lr_min * t.d_model / d))
    return replace(base, probe=replace(base.probe, placements=()), training=training,
                   sweep=swept, deep=replace(base.deep, placements=()))


# The ladder's rungs (C19): the quick size at 4×, 16× and 64× its training compute.
SIZES.update({name: rung(name, SIZES[ladder.BASE]) for name in ladder.RUNGS})
