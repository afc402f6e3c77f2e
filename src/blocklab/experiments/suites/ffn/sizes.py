"""The `ffn` suite's arms and sizes: which FFNs it compares, the page's gains it checks, and
each size's model and training budget."""

from __future__ import annotations

from dataclasses import dataclass, replace

from blocklab.experiments import ladder
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION
from blocklab.experiments.suites.tuning import LrGrid, rounded

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
# Paired seeds a ladder rung above quick trains per arm: C16's rungs read one fixed look at this
# many seeds, the design that decided the most parts per CPU-hour in a simulation of four rungs
# at the quick size's spreads before any data of these rungs (`benchmarks/rung_seeds.py`,
# docs/rung_seeds.md: fixed 12 and 16 tied within Monte Carlo error; 12 is the cheaper, and
# fits the C16 ladder's hour on the 2-core reference machine).
RUNG_SEEDS = 12


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
    # the grid is centred there. The ×3 grid grows at an edge until the optimum is interior,
    # then is refined at ×√3 either side of that optimum (`LrGrid.refine`), on two tuning
    # seeds: at one seed and ×3 steps, GLU's tuned rate put +3% of lr bias into its gap to
    # ReLU (C16's δ is 0.5%).
    "quick": Size(d_model=64, n_layers=2, n_heads=4, seq_len=64, batch_size=16, steps=300,
                  lr_grid=LrGrid((3e-3, 1e-2, 3e-2), 3.0, refine=True), tuning_seeds=2,
                  warmup_steps=15,
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


def _baseline_params(size: Size, d_model: int) -> int:
    """The ReLU arm's parameters at `d_model` (d_ff = 4·d: no gated width to round, so no
    PyTorch import), as `configs.param_count` counts them."""
    from blocklab.budget.params import count_params
    from blocklab.config import ModelConfig

    return count_params(ModelConfig(vocab_size=256, d_model=d_model, n_layers=size.n_layers,
                                    n_heads=d_model // (size.d_model // size.n_heads),
                                    ffn=BASELINE, d_ff=4 * d_model,
                                    max_seq_len=size.seq_len)).total


def rung(name: str, base: Size) -> Size:
    """`base` (the quick size) grown to ladder rung `name` by `blocklab.experiments.ladder`'s
    rule: width × √2 and batch × √2 a rung at the same depth and heads' width, steps so that
    6 · parameters · tokens is `ladder.multiple(name)` × the base's; warmup and the evaluation
    interval keep their share of the steps, and the lr grid is the base's moved by the width
    ratio (`ladder.centred`; it grows at an edge, so each rung finds its own optimum), refined
    around the optimum on the base's two tuning seeds, as at quick: every rung's arms as fair
    as the quick size's."""
    head = base.d_model // base.n_heads
    d, b, n = ladder.grown(name, base.d_model, base.batch_size, base.steps, head,
                           lambda width: _baseline_params(base, width), base.seq_len)
    return replace(base, d_model=d, n_heads=d // head, batch_size=b, steps=n,
                   warmup_steps=max(1, round(n * base.warmup_steps / base.steps)),
                   eval_every=max(1, round(n * base.eval_every / base.steps)),
                   lr_grid=replace(base.lr_grid, base=tuple(
                       map(rounded, ladder.centred(base.lr_grid.base, base.d_model, d)))))


# The ladder's rungs: C16's comparison (tiny and quick's arms) at 2×, 4× and 8× the quick
# size's training compute.
SIZES.update({name: rung(name, SIZES[ladder.BASE]) for name in ladder.RUNGS})
