"""What each size of the norm-cost suite runs (`SIZES`), the names its runs are keyed by
(`KINDS`, `PASSES`, `NORM_NAMES`), the quality equivalence margin, and the models its step and
quality runs build (`model_config`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from blocklab.config import ModelConfig
from blocklab.experiments import ladder
from blocklab.experiments.scale import Scale
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION

KINDS = ("blocklab", "torch", "plain", "compiled")
PASSES = ("fwd", "fwdbwd")  # forward (no grad), forward+backward
NORM_NAMES = ("rmsnorm", "layernorm")
# Δ val loss (nats/token) inside which RMSNorm and LayerNorm count as equivalent in quality.
EQUIVALENCE_MARGIN = 0.02


@dataclass(frozen=True)
class KernelGrid:
    """The kernel runs of a size: one per (d, rows) shape and thread count, `repeats` timed
    blocks of about `block_s` each, the torch.compile'd implementations included or not (a
    cold compile takes ~3 s per implementation and shape on the 2-core reference machine)."""

    shapes: tuple[tuple[int, int], ...]
    repeats: int
    compile: bool
    block_s: float


@dataclass(frozen=True)
class StepShape:
    """The step-time run's models (d_model, n_layers, a [batch_size, seq_len] batch) and its
    timed repeats after `warmup` untimed ones."""

    d_model: int
    n_layers: int
    seq_len: int
    batch_size: int
    repeats: int
    warmup: int


@dataclass(frozen=True)
class LikeShape:
    """The like-for-like kernel timing (at the step model's shape): timed repeats and the
    length of one timed block."""

    repeats: int
    block_s: float


@dataclass(frozen=True)
class QualityShape:
    """The quality runs' model and training (stdlib, one run per norm and seed)."""

    d_model: int
    n_layers: int
    seq_len: int
    batch_size: int
    steps: int
    lr: float
    warmup_steps: int
    eval_batches: int
    final_eval_fraction: float  # `evaluation.FINAL_EVAL_FRACTION` of the size


@dataclass(frozen=True)
class Size:
    """What one suite size runs: the CPU threads of every timing run, the kernel runs (None:
    not at this size, see the package's docstring), the step-time and like-for-like timings and
    the quality runs."""

    threads: tuple[int, ...]
    kernels: KernelGrid | None
    step: StepShape
    like_for_like: LikeShape
    quality: QualityShape


SIZES: dict[str, Size] = {
    "tiny": Size(
        threads=(1,), kernels=None,
        step=StepShape(d_model=32, n_layers=2, seq_len=32, batch_size=4, repeats=3, warmup=1),
        like_for_like=LikeShape(repeats=3, block_s=0.005),
        quality=QualityShape(d_model=32, n_layers=2, seq_len=32, batch_size=4, steps=8,
                             lr=3e-3, warmup_steps=2, eval_batches=1,
                             final_eval_fraction=FINAL_EVAL_FRACTION["tiny"])),
    "quick": Size(
        threads=(1,), kernels=None,
        step=StepShape(d_model=128, n_layers=4, seq_len=128, batch_size=8, repeats=12,
                       warmup=2),
        like_for_like=LikeShape(repeats=15, block_s=0.01),
        quality=QualityShape(d_model=64, n_layers=2, seq_len=128, batch_size=16, steps=400,
                             lr=3e-3, warmup_steps=20, eval_batches=16,
                             final_eval_fraction=FINAL_EVAL_FRACTION["quick"])),
    "full": Size(
        threads=(1, 2),
        kernels=KernelGrid(shapes=tuple((d, rows) for rows in (1024, 8192)
                                        for d in (64, 256, 1024, 4096)),
                           repeats=30, compile=True, block_s=0.02),
        step=StepShape(d_model=256, n_layers=6, seq_len=256, batch_size=16, repeats=30,
                       warmup=3),
        like_for_like=LikeShape(repeats=30, block_s=0.02),
        quality=QualityShape(d_model=128, n_layers=4, seq_len=128, batch_size=32, steps=1500,
                             lr=2e-3, warmup_steps=100, eval_batches=16,
                             final_eval_fraction=FINAL_EVAL_FRACTION["full"])),
}


def model_config(norm: str, d_model: int, n_layers: int, seq_len: int) -> ModelConfig:
    """The model of a step or quality run: `norm` in the suite's one block shape."""
    # The project's default block (pre-norm, SwiGLU, RoPE), head_dim 32; only the norm differs.
    return ModelConfig(vocab_size=256, d_model=d_model, n_layers=n_layers,
                       n_heads=max(1, d_model // 32), max_seq_len=seq_len, norm=norm,
                       position="rope", name=f"norm-cost-{norm}")


def rung(name: str, base: Size) -> Size:
    """`base` (the quick size) grown to ladder rung `name` by `blocklab.experiments.ladder`'s
    rule, on its quality runs (C18's part on the ladder): width and batch × √2 a rung at the
    same depth and heads of 32, steps filling `ladder.multiple(name)` × the base's
    6 · parameters · tokens (the RMSNorm model's), warmup keeping its share, both norms at
    the base's one lr (the registered comparison: one lr for both). The timings are the
    base's (reported beside C18, not on the ladder)."""
    q = base.quality

    def params(d_model: int) -> int:
        from blocklab.budget.params import count_params

        return count_params(model_config("rmsnorm", d_model, q.n_layers, q.seq_len)).total

    d, b, n = ladder.grown(name, q.d_model, q.batch_size, q.steps, 32, params, q.seq_len)
    return replace(base, quality=replace(q, d_model=d, batch_size=b, steps=n,
                                         warmup_steps=max(1, round(n * q.warmup_steps
                                                                   / q.steps))))


# The ladder's rungs (C18's quality): the quick size at 4×, 16× and 64× its training compute.
SIZES.update({name: rung(name, SIZES[ladder.BASE]) for name in ladder.RUNGS})


def scale(size: str, claim: str) -> Scale:
    """The scale C18's quality runs are graded at: the RMSNorm model of the quality shape and
    one run's training tokens at `size`."""
    q = SIZES[size].quality
    return Scale.of(model_config("rmsnorm", q.d_model, q.n_layers, q.seq_len),
                    q.steps * q.batch_size * q.seq_len)
