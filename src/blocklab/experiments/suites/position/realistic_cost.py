"""C31's step times at a realistic shape, part of the position suite's timed cost run.

Reported, never graded: C31 is decided by parameter counts, FLOP shares and how SDPA is
called (`blocklab.claims.positions`). The cost run's own timings use the suite's toy model
(d_model 32–128), where a few small elementwise ops are a large share of a step, so they
measure per-op overhead; this run times the same schemes where the matmuls dominate, as they
do in a real model:

    quick, full   d_model 1024, 16 heads (head_dim 64), 2 layers, batch 1: a no-grad prefill of
                  1,024 tokens into a fresh KV cache, then 32 single-token decode steps that
                  read it, per scheme (none, rope, alibi), the order rotating every repeat
    tiny          d_model 64, 2 heads, 1 layer, 32 + 4 tokens: it only exercises the code

fp32, one thread (the caller's `torch_threads(1)`). At quick it costs about 26 s of one core
(`REFERENCE_S`: 26 s measured on a 2-core machine under light load, 45 s with both cores
busy with other work).

    times = time_shapes("quick")      # ShapeTimes: the run's "realistic" entry
    timing = shape_timing(times)      # ShapeTiming, ratios against "none"
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from blocklab.config import ModelConfig
from blocklab.experiments.suites.position.data import ShapeTiming

SCHEMES = ("none", "rope", "alibi")  # "none" first: the baseline of every ratio
VOCAB = 256  # the suite's byte vocabulary: the head is a negligible share at d_model 1024
THETA = 10000.0

@dataclass(frozen=True)
class Shape:
    """The timed shape of one size: every scheme's model (`shape_config`) and what is timed on
    it: a prefill of `prompt_tokens`, then `decode_tokens` single-token steps, `repeats` times
    after `warmup` unrecorded repeats. `label` says what the shape stands for."""

    label: str
    d_model: int
    n_layers: int
    n_heads: int
    prompt_tokens: int
    decode_tokens: int
    warmup: int
    repeats: int


SHAPES: dict[str, Shape] = {
    "tiny": Shape(label="tiny shape (exercises the code only; not a realistic timing)",
                  d_model=64, n_layers=1, n_heads=2, prompt_tokens=32, decode_tokens=4,
                  warmup=0, repeats=2),
    "quick": Shape(label="realistic shape", d_model=1024, n_layers=2, n_heads=16,
                   prompt_tokens=1024, decode_tokens=32, warmup=1, repeats=6),
    "full": Shape(label="realistic shape", d_model=1024, n_layers=2, n_heads=16,
                  prompt_tokens=1024, decode_tokens=32, warmup=1, repeats=10),
}
# Wall seconds of `time_shapes` per size on the 2-core reference machine, one thread (for
# `Calibration.reference_s`): builds, warmup and repeats together.
REFERENCE_S = {"tiny": 0.1, "quick": 26.0, "full": 41.0}


def shape_config(size: str, scheme: str) -> ModelConfig:
    """The timed model of `scheme` at `size`: only `position` differs between schemes."""
    s = SHAPES[size]
    return ModelConfig(vocab_size=VOCAB, d_model=s.d_model, n_layers=s.n_layers,
                       n_heads=s.n_heads, position=scheme,
                       max_seq_len=s.prompt_tokens + s.decode_tokens, rope_theta=THETA,
                       name=f"position-cost-{scheme}")


@dataclass(frozen=True)
class ShapeTimes:
    """What `time_shapes` measured (stored as the cost run's "realistic" entry): per scheme, the
    prefill seconds and the decode seconds per token of every recorded repeat, with the shape
    and thread count they were timed at."""

    label: str
    d_model: int
    n_layers: int
    n_heads: int
    batch_size: int
    prompt_tokens: int
    decode_tokens: int
    repeats: int
    threads: int
    prefill_s: dict[str, list[float]]
    decode_s: dict[str, list[float]]
    wall_time_s: float


def _prefill_then_decode(model, tokens, prompt: int) -> tuple[float, float]:
    """(prefill seconds, decode seconds per token): tokens [1, prompt + n] → a no-grad
    prefill of the first `prompt` into a fresh KV cache, then the other n one at a time."""
    import torch

    from blocklab.nn import KVCache

    n = tokens.shape[1] - prompt
    cache = KVCache(model.config.n_layers, max_len=tokens.shape[1])
    with torch.no_grad():
        tick = time.perf_counter()
        model(tokens[:, :prompt], cache=cache)
        prefill_s = time.perf_counter() - tick
        tick = time.perf_counter()
        for i in range(prompt, prompt + n):
            model(tokens[:, i:i + 1], cache=cache)
        decode_s = (time.perf_counter() - tick) / n
    return prefill_s, decode_s


def time_shapes(size: str, seed: int = 0) -> ShapeTimes:
    """Prefill and decode times of `SCHEMES` at the size's shape (`SHAPES`): each repeat runs
    every scheme once, the order rotating by one per repeat so that drift in the machine's
    speed falls on all alike; the first `warmup` repeats are not recorded. The caller sets
    the thread count."""
    import torch

    from blocklab.nn import DecoderLM

    started = time.perf_counter()
    s = SHAPES[size]
    prompt, n = s.prompt_tokens, s.decode_tokens
    models = {}
    for scheme in SCHEMES:
        torch.manual_seed(seed)  # the same weights for every scheme (none has no extra ones)
        models[scheme] = DecoderLM(shape_config(size, scheme)).eval()
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (1, prompt + n), generator=generator)  # [1, prompt + n]
    prefill: dict[str, list[float]] = {k: [] for k in SCHEMES}
    decode: dict[str, list[float]] = {k: [] for k in SCHEMES}
    for i in range(s.warmup + s.repeats):
        for scheme in SCHEMES[i % len(SCHEMES):] + SCHEMES[:i % len(SCHEMES)]:
            prefill_s, decode_s = _prefill_then_decode(models[scheme], tokens, prompt)
            if i >= s.warmup:
                prefill[scheme].append(prefill_s)
                decode[scheme].append(decode_s)
    return ShapeTimes(label=s.label, d_model=s.d_model, n_layers=s.n_layers,
                      n_heads=s.n_heads, batch_size=1, prompt_tokens=prompt, decode_tokens=n,
                      repeats=s.repeats, threads=torch.get_num_threads(), prefill_s=prefill,
                      decode_s=decode, wall_time_s=time.perf_counter() - started)


def shape_timing(times: ShapeTimes | None) -> ShapeTiming | None:
    """`time_shapes`' measurements as a `ShapeTiming`: medians in ms and each scheme's ratio
    to "none" by `TimeRatio.paired` (geometric mean of paired ratios, Student t on log ratios,
    95%); None for a run from before it was timed."""
    from blocklab.experiments.summaries import TimeRatio

    if times is None:
        return None
    prefill, decode = times.prefill_s, times.decode_s
    return ShapeTiming(
        label=times.label, d_model=times.d_model, n_layers=times.n_layers,
        n_heads=times.n_heads, batch_size=times.batch_size,
        prompt_tokens=times.prompt_tokens, decode_tokens=times.decode_tokens,
        repeats=times.repeats, threads=times.threads,
        prefill_ms={k: 1000 * float(np.median(v)) for k, v in prefill.items()},
        decode_ms={k: 1000 * float(np.median(v)) for k, v in decode.items()},
        prefill_vs_none={k: TimeRatio.paired(v, prefill["none"]) for k, v in prefill.items()},
        decode_vs_none={k: TimeRatio.paired(v, decode["none"]) for k, v in decode.items()},
        wall_time_s=float(times.wall_time_s))


def price(size: str, cal) -> float:
    """Estimated seconds of `time_shapes` at `size` on this machine (`blocklab.experiments.
    estimate`): a reference time, since the calibration does not build models this wide."""
    return cal.reference_s(REFERENCE_S[size])
