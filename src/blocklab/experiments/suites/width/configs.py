"""The `width` suite's models and training: an arm's ModelConfig, the TrainConfig every run of
the suite uses (nested-width training for the nested arm), and the scale C37 is graded at."""

from __future__ import annotations

from typing import TYPE_CHECKING

from blocklab.config import ModelConfig
from blocklab.experiments.options import RunOptions
from blocklab.experiments.scale import Scale
from blocklab.experiments.suites.width.sizes import SIZES, Size

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig


def model_config(arm: str, size: Size, d_ff: int | None = None) -> ModelConfig:
    """The arm's model: the pre-norm RMSNorm RoPE SwiGLU decoder of the ffn suite, at the arm's
    width (`d_ff`: another width, as budgets read a slice)."""
    width = size.width_of(arm) if d_ff is None else d_ff
    return ModelConfig(vocab_size=256, d_model=size.d_model, n_layers=size.n_layers,
                       n_heads=size.n_heads, ffn="swiglu", d_ff=width,
                       max_seq_len=size.seq_len, name=f"width-{arm}")


def train_config(arm: str, size: Size, options: RunOptions, seed: int, lr: float
                 ) -> TrainConfig:
    """The same optimisation for every arm; the nested arm's loss is the mean over the
    size's widths (`TrainConfig.nested_widths`). One thread, as every suite run."""
    from blocklab.experiments.trainer import TrainConfig

    return TrainConfig.for_run(
        options, seed, steps=size.steps, batch_size=size.batch_size, seq_len=size.seq_len,
        lr=lr, warmup_steps=size.warmup_steps, eval_every=size.eval_every,
        eval_batches=size.eval_batches, log_every=0, threads=1, init=size.init,
        final_eval_fraction=size.final_eval_fraction,
        nested_widths=size.widths if arm == "nested" else ())


def shape(size: str) -> tuple[ModelConfig, int, int]:
    """The ordinary arm's model, batch and sequence length at `size` (`--precision auto`)."""
    from blocklab.experiments.suites.width.sizes import SIZES

    s = SIZES[size]
    return model_config("ordinary", s), s.batch_size, s.seq_len


def scale(size: str, claim: str) -> Scale:
    """The scale C37's runs are graded at: the ordinary model and one run's training tokens."""
    s = SIZES[size]
    return Scale.of(model_config("ordinary", s), s.steps * s.batch_size * s.seq_len)
