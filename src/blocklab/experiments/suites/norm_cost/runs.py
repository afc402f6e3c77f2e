"""The norm-cost suite's sizes (`SIZES`), plan and prices; the timings are `timing`'s."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from blocklab.experiments import ladder
from blocklab.experiments.options import RunOptions
from blocklab.experiments.scale import Scale
from blocklab.experiments.suites.base import Results, RunSpec, training_spec
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION
from blocklab.experiments.suites.norm_cost.timing import (
    KINDS,
    NORM_NAMES,
    STEP_PATHS,
    StepShape,
    model_config,
    time_kernels,
    time_like_for_like,
    time_training_steps,
    timed_run,
)

if TYPE_CHECKING:
    from blocklab.experiments.estimate import Calibration


@dataclass(frozen=True)
class KernelGrid:
    """One kernel run per (d, rows) shape and thread count: `repeats` blocks of about `block_s`,
    torch.compile'd implementations or not (~3 s a cold compile)."""

    shapes: tuple[tuple[int, int], ...]
    repeats: int
    compile: bool
    block_s: float


@dataclass(frozen=True)
class LikeShape:
    """The like-for-like run (at the step's shape): `repeats` blocks of about `block_s`."""

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
    final_eval_fraction: float


@dataclass(frozen=True)
class Size:
    """One suite size: the timings' CPU threads, each kind of run (None: not at this size)."""

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


def rung(name: str, base: Size) -> Size:
    """`base` grown to ladder rung `name` on its quality runs (`ladder.grown`), warmup keeping
    its share; the timings are the base's (not on the ladder)."""
    q = base.quality
    d, b, n = ladder.grown(name, lambda d: model_config("rmsnorm", d, q.n_layers, q.seq_len),
                           q.d_model, q.batch_size, q.steps, 32, q.seq_len)
    return replace(base, quality=replace(q, d_model=d, batch_size=b, steps=n,
                                         warmup_steps=ladder.share(q.warmup_steps, n, q.steps)))


# The ladder's rungs (C18's quality): the quick size at 4×, 16× and 64× its training compute.
SIZES.update({name: rung(name, SIZES[ladder.BASE]) for name in ladder.RUNGS})


def scale(size: str, claim: str) -> Scale:
    """The scale C18's quality runs are graded at: the RMSNorm model's run."""
    q = SIZES[size].quality
    return Scale.of(model_config("rmsnorm", q.d_model, q.n_layers, q.seq_len),
                    q.steps * q.batch_size * q.seq_len)


def plan(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """Per thread count the kernel runs, a step-time and a like-for-like run (at the step's
    shape); then the quality runs."""
    from blocklab.experiments.trainer import TrainConfig

    size = SIZES[options.size]
    grid, step, like, q = size.kernels, size.step, size.like_for_like, size.quality
    specs = []
    for threads in size.threads:
        for d, rows in grid.shapes if grid is not None else ():
            payload = {"suite": "norm-cost", "kind": "kernels", "d": d, "rows": rows,
                       "repeats": grid.repeats, "compile": grid.compile,
                       "compile_cache": "fresh" if grid.compile else None,
                       "threads": threads, "block_s": grid.block_s}
            specs.append(RunSpec(
                f"kernels d={d} rows={rows} threads={threads}", "kernels", 0, payload,
                lambda progress, d=d, rows=rows, threads=threads: timed_run(
                    lambda: time_kernels(d, rows, repeats=grid.repeats, compile=grid.compile,
                                         threads=threads, block_s=grid.block_s)),
                timed=True))
        payload = {"suite": "norm-cost", "kind": "step", "threads": threads,
                   **dataclasses.asdict(step)}
        specs.append(RunSpec(f"step time threads={threads}", "step", 0, payload,
                             lambda progress, threads=threads: timed_run(
                                 lambda: time_training_steps(step, threads=threads)),
                             timed=True))
        d, rows = step.d_model, step.batch_size * step.seq_len
        payload = {"suite": "norm-cost", "kind": "like-for-like", "d": d, "rows": rows,
                   "threads": threads, **dataclasses.asdict(like)}
        specs.append(RunSpec(
            f"like-for-like kernels d={d} rows={rows} threads={threads}", "like-for-like", 0,
            payload, lambda progress, threads=threads: timed_run(lambda: time_like_for_like(
                step.d_model, step.batch_size * step.seq_len, repeats=like.repeats,
                threads=threads, block_s=like.block_s)),
            timed=True))
    for seed in options.seeds:
        for norm in NORM_NAMES:
            tc = TrainConfig.for_run(options, seed, steps=q.steps, batch_size=q.batch_size,
                                     seq_len=q.seq_len, lr=q.lr, warmup_steps=q.warmup_steps,
                                     eval_batches=q.eval_batches, eval_every=0, log_every=0,
                                     threads=1, final_eval_fraction=q.final_eval_fraction)
            specs.append(training_spec(f"quality {norm} seed {seed}", norm, seed,
                                       model_config(norm, q.d_model, q.n_layers, q.seq_len), tc,
                                       {"suite": "norm-cost", "kind": "quality"}))
    return specs


# Reference-machine seconds: the first torch.compile, one cold compile, and per element of a
# [rows, d] input one call of blocklab's kernels (the other kinds a multiple of it).
_INDUCTOR_WARM_REFERENCE_S = 5.0
_COLD_COMPILE_REFERENCE_S = 4.2
_ELEMENT_REFERENCE_S = {"fwd_s": 3.0e-9, "fwdbwd_s": 6.6e-9}  # blocklab's kernels
_KIND_FACTOR = {"blocklab": 1.0, "torch": 2.5, "plain": 4.5, "compiled": 1.2}


def price(spec: RunSpec, cal: Calibration) -> float | None:
    """Estimated seconds here (`experiments.estimate`); None (the trainer's) for quality runs."""
    payload = spec.payload
    if payload["kind"] == "kernels":
        elements = payload["d"] * payload["rows"]
        kinds = KINDS if payload["compile"] else tuple(k for k in KINDS if k != "compiled")
        seconds = 0.0
        for kind in kinds:
            for per_element in _ELEMENT_REFERENCE_S.values():
                seconds += _blocks_s(cal.reference_s(per_element * elements
                                                     * _KIND_FACTOR[kind]), payload, cal)
        if payload["compile"]:
            seconds += len(NORM_NAMES) * cal.reference_s(_COLD_COMPILE_REFERENCE_S)
            # the process's first compile, paid by a size's first kernels run
            firsts = {(c.kernels.shapes[0], c.threads[0])
                      for c in SIZES.values() if c.kernels is not None}
            if ((payload["d"], payload["rows"]), payload["threads"]) in firsts:
                seconds += cal.reference_s(_INDUCTOR_WARM_REFERENCE_S)
        return seconds
    if payload["kind"] == "like-for-like":
        return _like_for_like_price(payload, cal)
    if payload["kind"] == "step":
        b, t = payload["batch_size"], payload["seq_len"]
        seconds = 0.0
        for norm in NORM_NAMES:
            model = model_config(norm, payload["d_model"], payload["n_layers"], t)
            seconds += len(STEP_PATHS) * (cal.build_s(model, b, t) + (
                payload["warmup"] + payload["repeats"]) * cal.step_s(model, b, t))
        return seconds
    return None


def _blocks_s(call: float, payload: dict[str, Any], cal: Calibration) -> float:
    """Both norms' 2 warm-up, 1 sizing and 1 saved-bytes calls, and `repeats` blocks."""
    return len(NORM_NAMES) * (4 * call + payload["repeats"]
                              * max(call, payload["block_s"]))


def _like_for_like_price(payload: dict[str, Any], cal: Calibration) -> float:
    """As on a CPU (F.rms_norm unfused): compiled, forward+backward only, two cold compiles, and
    the process's first compile at a size without kernel runs."""
    seconds = _blocks_s(cal.reference_s(_ELEMENT_REFERENCE_S["fwdbwd_s"] * payload["d"]
                                        * payload["rows"] * _KIND_FACTOR["compiled"]),
                        payload, cal)
    seconds += len(NORM_NAMES) * cal.reference_s(_COLD_COMPILE_REFERENCE_S)
    alone = any(c.kernels is None and c.step.d_model == payload["d"]
                and c.step.batch_size * c.step.seq_len == payload["rows"]
                for c in SIZES.values())
    return seconds + (cal.reference_s(_INDUCTOR_WARM_REFERENCE_S) if alone else 0.0)
