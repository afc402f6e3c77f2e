"""Which compute precision trains a shape faster on this machine: float32 or bfloat16.

bfloat16 pays where matmuls dominate a step and the CPU has bfloat16 dot products (on the
reference AVX-512 BF16 EPYC, 1.61× at d 256 × 4 layers, 1.88× at d 512 × 8); at the quick
suites' d 32–64 float32 is faster. `faster_precision` times one `train_step` in each, through
`blocklab.nn.calibration` (kept per machine and shape; $BLOCKLAB_CALIBRATION=static: "fp32").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from blocklab.config import ModelConfig
from blocklab.experiments.trainer import TrainConfig, build_model, make_optimizer, train_step
from blocklab.nn import calibration
from blocklab.precision import Precision


@dataclass(frozen=True)
class Choice:
    """What `--precision auto` chose for a suite: the precision and why."""

    precision: Precision
    step_ms: dict[str, float]  # median step per precision as measured ({} under "static")
    shape: str  # the timed shape in words

    def text(self) -> str:
        if not self.step_ms:
            return (f"--precision auto: {self.precision} (calibration pinned by "
                    f"BLOCKLAB_CALIBRATION=static; {self.shape})")
        times = ", ".join(f"{name} {ms:.1f} ms" for name, ms in sorted(self.step_ms.items()))
        return (f"--precision auto: {self.precision}, the faster training step on this CPU at "
                f"{self.shape} ({times} a step)")


def suite_precision(shape: tuple[ModelConfig, int, int], backend: str = "fast") -> Choice:
    """`--precision auto` for a suite: `faster_precision` at its main training shape, timed at
    one thread as every suite run trains."""
    from blocklab.experiments.env import torch_threads

    config, batch, seq_len = shape
    with torch_threads(1):
        chosen = faster_precision(config, batch, seq_len, backend)
        key = calibration_key(config, batch, seq_len, backend)
        stored = calibration.kept("step_precision", key) or {}
    seconds = stored.get("median_s") or {}
    words = (f"d {config.d_model} × {config.n_layers} layers, {batch} × {seq_len} tokens, "
             "1 thread")
    return Choice(chosen, {name: 1e3 * s for name, s in seconds.items()}, words)


def calibration_key(config: ModelConfig, batch: int, seq_len: int, backend: str) -> dict:
    return {"config": dataclasses.asdict(config), "batch": batch, "seq_len": seq_len,
            "backend": backend, "threads": torch.get_num_threads()}


def faster_precision(config: ModelConfig, batch: int, seq_len: int,
                     backend: str = "fast") -> Precision:
    """The precision whose training step at [batch, seq_len] ran faster here, at the caller's
    thread count (which, with the shape and backend, keys the kept answer)."""
    key = calibration_key(config, batch, seq_len, backend)

    def candidate(precision: Precision):
        built: list = []

        def step() -> None:  # built on its first (warm-up) call: nothing when the answer is kept
            if not built:
                tc = TrainConfig(seed=0, precision=precision, backend=backend, lr=1e-3)
                model = build_model(config, tc)
                generator = torch.Generator().manual_seed(0)
                built.extend([model, make_optimizer(model, tc), list(model.parameters()),
                              torch.randint(0, config.vocab_size, (batch, seq_len + 1),
                                            generator=generator)])
            model, optimizer, params, ids = built
            train_step(model, ids, optimizer, params, lr=1e-3, grad_clip=1.0)
        return step

    steps = {precision: candidate(precision) for precision in ("fp32", "bf16")}
    return calibration.fastest("step_precision", key, steps, default="fp32")  # type: ignore
