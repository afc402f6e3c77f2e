"""The `width` suite's arms and sizes: the SwiGLU decoder trained three ways, the widths it is
read at, and each size's model and training budget."""

from __future__ import annotations

from dataclasses import dataclass

from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION
from blocklab.experiments.suites.tuning import LrGrid

DATA = "stdlib"
# (a) trained at its whole width m and read at every prefix width by slicing; (b) trained with
# nested widths (each step's loss the mean over m, m/2 and m/4) and read at each of them;
# (c) trained at m/2 alone, the reference a nested model's m/2 should approach.
ARMS = ("ordinary", "nested", "narrow")
# The one learning rate of every arm is tuned on this arm: the three share the architecture, and
# nested-width methods train with their baseline's hyperparameters.
TUNED_ARM = "ordinary"
# The prefix widths, as divisors of m: m, m/2, m/4.
DIVISORS = (1, 2, 4)


@dataclass(frozen=True)
class Size:
    """Model and training budget of one suite size; `d_ff` is m, the ordinary model's width."""

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
        """m, m/2, m/4: the widths nested training trains and every model is read at."""
        return tuple(self.d_ff // k for k in DIVISORS)

    @property
    def narrow(self) -> int:
        """The width (c) trains at: m/2."""
        return self.d_ff // 2

    def width_of(self, arm: str) -> int:
        """The intermediate width arm `arm` is built with."""
        return self.narrow if arm == "narrow" else self.d_ff


SIZES = {
    "tiny": Size(d_model=32, n_layers=1, n_heads=2, seq_len=32, batch_size=4, steps=5,
                 d_ff=64, lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0, max_extensions=1),
                 tuning_seeds=1, warmup_steps=0, eval_every=0, eval_batches=1,
                 final_eval_fraction=FINAL_EVAL_FRACTION["tiny"]),
    # The ffn suite's quick model and budget (d 64 × 2 layers, 300 steps of 1,024 tokens) with
    # m = 192: Llama's 8d/3 rounded up to a multiple of 64, so m/2 and m/4 are whole. The
    # ×3 grid's interior optimum is refined at ×√3 either side (`LrGrid.refine`), on two
    # tuning seeds.
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
