"""The `ffn` suite's models and training: an arm's FFN width, its ModelConfig, the one
TrainConfig every run of the suite uses, and its parameter count."""

from __future__ import annotations

from typing import TYPE_CHECKING

from blocklab.config import FFNS, ModelConfig
from blocklab.experiments.options import RunOptions
from blocklab.experiments.scale import Scale
from blocklab.experiments.suites.ffn.sizes import Size

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig


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

    return TrainConfig.for_run(
        options, seed, steps=size.steps, batch_size=size.batch_size, seq_len=size.seq_len,
        lr=lr, warmup_steps=size.warmup_steps, eval_every=size.eval_every,
        eval_batches=size.eval_batches, log_every=50, threads=1, init=init or size.init,
        final_eval_fraction=size.final_eval_fraction)


def param_count(arm: str, size: Size, d_model: int | None = None) -> int:
    from blocklab.budget.params import count_params

    return count_params(model_config(arm, size, d_model)).total


def shape(size: str) -> tuple[ModelConfig, int, int]:
    """The baseline (ReLU) arm's model, batch and sequence length at `size`: the shape whose
    step `--precision auto` times."""
    from blocklab.experiments.suites.ffn.sizes import SIZES

    s = SIZES[size]
    return model_config("relu", s), s.batch_size, s.seq_len


def scale(size: str, claim: str) -> Scale:
    """The scale C16's runs are graded at: the baseline (ReLU) arm's model and one run's
    training tokens at `size`."""
    from blocklab.experiments.suites.ffn.sizes import SIZES

    s = SIZES[size]
    return Scale.of(model_config("relu", s), s.steps * s.batch_size * s.seq_len)
