"""The `quantize` suite's sizes: the shapes each size times (one run per shape) and the model
it trains (one run per seed)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class TimedShape:
    """One timed model: its shape (a SwiGLU DecoderLM with a byte vocabulary), the prefill
    lengths, the decode steps on the first one's KV cache, the repeats, and whether it runs
    compiled."""

    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    seq_lens: tuple[int, ...]
    decode_steps: int
    repeats: int
    compile: bool

    def to_dict(self) -> dict[str, int | bool | list[int]]:
        """Its JSON form (as a run's payload and its result's "spec" hold it)."""
        return {**dataclasses.asdict(self), "seq_lens": list(self.seq_lens)}


@dataclass(frozen=True)
class QualityShape:
    """The trained model (a SwiGLU DecoderLM on stdlib) and how it trains; `eval_windows`:
    the validation windows every scheme is scored on."""

    d_model: int
    n_layers: int
    n_heads: int
    seq_len: int
    batch_size: int
    steps: int
    lr: float
    warmup_steps: int
    eval_windows: int


@dataclass(frozen=True)
class Size:
    """What one suite size times (one run per shape) and trains (one run per seed)."""

    timing: tuple[TimedShape, ...]
    quality: QualityShape


# Each size: the timed shapes and the trained model. Dynamic int8 on a CPU without VNNI/AMX runs
# int8 GEMMs on a slow path (seconds per call at d = 1024, T = 512), which bounds what quick can
# afford. Quick times 6 repeats: C32's parts read them as their sample (a Student t interval
# on the log ratios, 5 degrees of freedom); 3 left 2, whose 95% interval is 2.4× as wide at
# the same spread (t 4.30 / √3 against 2.57 / √6) and 2.8× at Holm's 97.5%. Measured on a
# 2-core AVX-512 machine: the timing run 10.9 s at 3 repeats, 14.7 s at 6, +3.8 s on the quick
# suite's priced 86 CPU-seconds (+4.4%).
SIZES: dict[str, Size] = {
    "tiny": Size(
        timing=(TimedShape(d_model=64, n_layers=1, n_heads=2, d_ff=176, seq_lens=(32,),
                           decode_steps=2, repeats=3, compile=False),),
        quality=QualityShape(d_model=32, n_layers=1, n_heads=2, seq_len=32, batch_size=4,
                             steps=8, lr=3e-3, warmup_steps=2, eval_windows=4)),
    "quick": Size(
        timing=(TimedShape(d_model=1024, n_layers=2, n_heads=8, d_ff=2816, seq_lens=(512,),
                           decode_steps=4, repeats=6, compile=False),),
        quality=QualityShape(d_model=128, n_layers=2, n_heads=4, seq_len=128, batch_size=16,
                             steps=300, lr=3e-3, warmup_steps=20, eval_windows=32)),
    "full": Size(
        timing=(TimedShape(d_model=1024, n_layers=4, n_heads=8, d_ff=2816,
                           seq_lens=(512, 1024, 2048), decode_steps=8, repeats=5, compile=False),
                TimedShape(d_model=2048, n_layers=2, n_heads=16, d_ff=5632,
                           seq_lens=(512, 1024), decode_steps=8, repeats=5, compile=False),
                TimedShape(d_model=1024, n_layers=2, n_heads=8, d_ff=2816, seq_lens=(512,),
                           decode_steps=8, repeats=5, compile=True)),
        quality=QualityShape(d_model=256, n_layers=4, n_heads=4, seq_len=128, batch_size=32,
                             steps=1000, lr=2e-3, warmup_steps=50, eval_windows=64)),
}
THREADS = 1  # timings on one thread: on a shared 2-core machine two threads contend
