"""How long a suite size would take on this machine, before any of it runs.

    calibrate   time, in one thread as every worker runs, a few real `train_step`s of the
                models the planned runs train and no-grad forwards at that shape and at [1, 1]
                (a call's overhead), in rounds over all shapes so a burst of load skews few
                samples; models differing only in depth are interpolated in n_layers, the rest
                past the time budget fitted (step ≈ a + b·n_layers + c·FLOPs). Also a real
                `trainer.train`'s own overhead, a second forked worker's contention, and the
                fixed costs (process start, corpus, a worker's first imports).
    price       a training run costs setup + steps × step + evaluations × evaluation, as
                `trainer.train` does them; every suite prices its own run kinds
                (`Suite.price`). What cannot be timed in seconds (a cold torch.compile, the
                report) is a reference machine's time × `speed`.
    stored      a run stored with this code's provenance costs nothing; one whose twin (the
                same but the seed) is stored costs the twin's wall time.
    schedule    `SizeEstimate.wall_s(workers)` replays `run_suites`' rounds: untimed runs to the
                first free worker in plan order, slowed by the contention, then the timed runs
                one after another, plus the fixed costs.

    plan = estimate_suites(RunRequest(Path("runs"), "quick"), ["ffn", "placement"])
    plan.wall_s(workers=2)
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from blocklab.config import ModelConfig
from blocklab.experiments.ladder import RUNGS
from blocklab.experiments.options import RunRequest

# Seconds of one step of `reference_model()` at REFERENCE_SHAPE, one thread, on the quiet 2-core
# reference machine the reference times here and in the suites' prices were taken on;
# `Calibration.speed` is this machine's over it.
REFERENCE_STEP_S = 0.025
REFERENCE_SHAPE = (16, 64)
# The reference machine's seconds, scaled by `speed`, of what a calibration cannot time: the
# report's rendering (a rung's is quick's), each round's summaries and fork, and what this
# process already did (the compiler stack's imports, the corpus, the start).
REFERENCE_BUILD_S = {"tiny": 11.0, "quick": 14.0, "full": 18.0, **dict.fromkeys(RUNGS, 14.0)}
REFERENCE_ROUND_S = 1.0
REFERENCE_WORKER_START_S = 2.0
# Below this, turning deterministic algorithms on imported nothing (the compiler stack was in).
_IMPORTED_S = 0.05
REFERENCE_STARTUP_S = 3.0
REFERENCE_CORPUS_S = 0.5
# Model-config fields that do not change a step's cost, held at their defaults in a `ShapeKey`.
_COSTLESS_KEYS = ("name", "max_seq_len", "embed_scale", "rope_theta", "rope_scaling")
_COSTLESS = {f.name: f.default for f in dataclasses.fields(ModelConfig)
             if f.name in _COSTLESS_KEYS}


def reference_model() -> ModelConfig:
    return ModelConfig(vocab_size=256, d_model=64, n_layers=2, n_heads=4, ffn="swiglu",
                       d_ff=171, max_seq_len=64)


@dataclass(frozen=True)
class TrainShape:
    """The train settings a price reads from a payload's train config (`TrainConfig.to_dict`,
    `train_identity`); a missing key is priced at its default."""

    batch_size: int
    seq_len: int
    steps: int
    precision: str = "fp32"
    eval_every: int = 50
    eval_batches: int = 4
    eval_lengths: tuple[int, ...] = ()
    final_eval_fraction: float = 0.0

    @classmethod
    def from_payload(cls, train: dict[str, Any]) -> TrainShape:
        kept = {f.name: train[f.name] for f in dataclasses.fields(cls) if f.name in train}
        return cls(**{**kept, "eval_lengths": tuple(kept.get("eval_lengths", ()))})


class ShapeKey(NamedTuple):
    """One shape a calibration times: the model (costless fields at their defaults), the batch
    shape and the precision."""

    model: ModelConfig
    batch: int
    seq: int
    precision: str

    @property
    def family(self) -> tuple[object, ...]:
        """The shape but the depth: models of one family are interpolated in n_layers."""
        cost = tuple(getattr(self.model, f.name) for f in dataclasses.fields(ModelConfig)
                     if f.name != "n_layers")
        return (cost, self.batch, self.seq, self.precision)


def _key(model: ModelConfig, batch: int, seq: int, precision: str) -> ShapeKey:
    return ShapeKey(dataclasses.replace(model, **_COSTLESS), batch, seq, precision)


@dataclass(frozen=True)
class Timing:
    """Seconds of build (construct + initialise), one step, a no-grad forward at the step's
    [batch, seq] and at [1, 1]."""

    build_s: float
    step_s: float
    forward_s: float
    call_s: float


@dataclass(frozen=True)
class Calibration:
    """This machine's measured costs, one thread (`calibrate`); every price is a sum of these
    times counts."""

    seconds: float  # how long the calibration took
    timings: dict[ShapeKey, Timing]  # by `_key`, measured or filled in (see `fitted`)
    measured: int  # shapes timed directly
    fitted: int  # shapes filled in from others (same family, or the least-squares fit)
    speed: float  # this machine's step time on the reference model / the reference machine's
    startup_s: float  # process start and imports of a `blocklab` command
    worker_start_s: float  # a fresh worker's first run: the compiler stack's imports
    corpus_s: float = 0.0  # loading the training corpus, once a process
    run_s: float = 0.0  # a training run beyond build, steps and evaluations (data, entropy)
    # A step's time with a second single-threaded worker stepping beside it over its time alone.
    contention: float = 1.0
    val_tokens: int = 0  # the calibrated corpus's validation split (0: unknown)
    models: dict[ShapeKey, ModelConfig] = field(default_factory=dict)

    def _timing(self, model: ModelConfig, batch: int, seq: int, precision: str) -> Timing:
        key = _key(model, batch, seq, precision)
        if key not in self.timings:
            raise KeyError(f"shape not calibrated: {model.name or key[1:]}")
        return self.timings[key]

    def step_s(self, model: ModelConfig, batch: int, seq: int,
               precision: str = "fp32") -> float:
        """One `train_step` of `model` on [batch, seq + 1] tokens."""
        return self._timing(model, batch, seq, precision).step_s

    def build_s(self, model: ModelConfig, batch: int, seq: int,
                precision: str = "fp32") -> float:
        """`build_model` of `model` (construction and seeded initialisation)."""
        return self._timing(model, batch, seq, precision).build_s

    def forward_s(self, model: ModelConfig, batch: int, seq: int, rows: int, length: int,
                  precision: str = "fp32") -> float:
        """A no-grad forward of [rows, length] tokens, the model calibrated at [batch, seq]: the
        call's overhead plus the rest of the measured forward scaled by FLOPs."""
        from blocklab.budget.flops import prefill_flops

        t = self._timing(model, batch, seq, precision)
        config = dataclasses.replace(model, max_seq_len=max(model.max_seq_len, seq, length))
        ratio = (prefill_flops(config, rows, length).total
                 / prefill_flops(config, batch, seq).total)
        return t.call_s + max(0.0, t.forward_s - t.call_s) * ratio

    def reference_s(self, seconds: float) -> float:
        """A time measured on the reference machine, on this one."""
        return self.speed * seconds


@dataclass(frozen=True)
class _Requests(Calibration):
    """A `Calibration` whose every time is 1 s, recording the shapes a pricing asks for."""

    seconds: float = 0.0
    timings: dict[ShapeKey, Timing] = field(default_factory=dict)
    measured: int = 0
    fitted: int = 0
    speed: float = 1.0
    startup_s: float = 1.0
    worker_start_s: float = 1.0
    run_s: float = 1.0
    shapes: dict[ShapeKey, ModelConfig] = field(default_factory=dict)

    def _timing(self, model: ModelConfig, batch: int, seq: int, precision: str) -> Timing:
        self.shapes.setdefault(_key(model, batch, seq, precision), model)
        return Timing(1.0, 1.0, 1.0, 1.0)


class _Probe:
    """One shape being timed: built (timed), one untimed step, a timed one at each `step()`;
    `timing()` adds the forwards and keeps the median step."""

    def __init__(self, model: ModelConfig, batch: int, seq: int, precision: str,
                 tokens) -> None:
        from blocklab.experiments.trainer import TrainConfig, build_model, make_optimizer

        config = dataclasses.replace(model, max_seq_len=max(model.max_seq_len, seq))
        self.tc = TrainConfig(steps=4, batch_size=batch, seq_len=seq, precision=precision,
                              threads=1)
        self.tokens, self.samples = tokens, []
        tick = time.perf_counter()
        self.net = build_model(config, self.tc).train()
        self.build_s = time.perf_counter() - tick
        self.optimizer, self.params = make_optimizer(self.net, self.tc), list(
            self.net.parameters())
        self._step()  # AdamW's state and the allocator's first buffers: not timed
        self.step()

    def _step(self) -> float:
        from blocklab.experiments.data import sample_batch
        from blocklab.experiments.trainer import train_step

        tick = time.perf_counter()
        self.data = sample_batch(self.tokens, seed=0, step=len(self.samples),
                                 batch_size=self.tc.batch_size, seq_len=self.tc.seq_len)
        train_step(self.net, self.data, self.optimizer, self.params, lr=1e-4,
                   grad_clip=self.tc.grad_clip)
        return time.perf_counter() - tick

    def step(self) -> None:
        self.samples.append(self._step())

    def timing(self) -> Timing:
        import torch

        self.net.eval()
        with torch.no_grad():
            tick = time.perf_counter()
            self.net(self.data[:, :-1])
            forward = time.perf_counter() - tick
            tick = time.perf_counter()
            self.net(self.data[:1, :1])
            call = time.perf_counter() - tick
        samples = sorted(self.samples)
        return Timing(self.build_s, samples[len(samples) // 2], forward, min(call, forward))


def _process_age_s() -> float | None:
    """Seconds since this process started (Linux), or None."""
    try:
        import os

        with open("/proc/self/stat", encoding="ascii") as handle:
            ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as handle:
            uptime = float(handle.read().split()[0])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def calibrate(shapes: dict[ShapeKey, ModelConfig], budget_s: float = 15.0) -> Calibration:
    """Time `shapes` (`_key` -> a model) here in one thread in about `budget_s` seconds (see the
    module docstring)."""
    from blocklab.experiments.data import load_corpus, stdlib_corpus
    from blocklab.experiments.env import deterministic_algorithms, torch_threads

    started = time.perf_counter()
    startup = _process_age_s()
    # A fresh worker's first run turns on deterministic algorithms, which imports the compiler
    # stack; a call this fast found it imported already and cannot tell that cost.
    tick = time.perf_counter()
    with deterministic_algorithms():
        pass
    worker = time.perf_counter() - tick
    cached = stdlib_corpus.cache_info().currsize > 0
    tick = time.perf_counter()
    data = load_corpus("stdlib")
    corpus = time.perf_counter() - tick
    reference = _key(reference_model(), *REFERENCE_SHAPE, "fp32")
    families: dict[tuple[object, ...], list[ShapeKey]] = {}
    for key in shapes:
        families.setdefault(key.family, []).append(key)
    # Each family's deepest model first, then its shallowest: two points fix a line in depth.
    deepest = [max(keys, key=lambda k: k.model.n_layers) for keys in families.values()]
    shallowest = [min(keys, key=lambda k: k.model.n_layers) for keys in families.values()]
    order = [reference] + deepest + [k for k in shallowest if k not in deepest]
    models = {**shapes, reference: reference_model()}
    measuring = time.perf_counter()

    def spent(fraction: float) -> bool:
        return time.perf_counter() - measuring > fraction * budget_s

    probes: dict[ShapeKey, _Probe] = {}
    with torch_threads(1):
        for key in dict.fromkeys(order):
            # The reference model and one asked for always; the rest while 60% of the budget
            # lasts, then more steps of each, round after round, while the rest lasts.
            if len(probes) >= 2 and spent(0.6):
                break
            probes[key] = _Probe(models[key], key.batch, key.seq, key.precision, data.train)
        for _round in range(4):
            for probe in probes.values():
                if not spent(1.0):
                    probe.step()
        timings = {key: probe.timing() for key, probe in probes.items()}
        del probes
        run = _run_overhead(timings[reference])
        contention = _contention(data.train)
    filled = _fill(shapes, timings, models)
    speed = timings[reference].step_s / REFERENCE_STEP_S
    # What this process could not time: the reference machine's time at this one's speed.
    startup = REFERENCE_STARTUP_S * speed if startup is None else startup
    worker = worker if worker > _IMPORTED_S else REFERENCE_WORKER_START_S * speed
    corpus = REFERENCE_CORPUS_S * speed if cached else corpus
    return Calibration(
        seconds=time.perf_counter() - started, timings={**timings, **filled},
        measured=len(timings), fitted=len(filled), speed=speed, startup_s=startup,
        worker_start_s=corpus + worker, corpus_s=corpus, run_s=run, contention=contention,
        val_tokens=int(data.val.size), models=models)


def _contention(tokens, rounds: int = 6, steps: int = 5) -> float:
    """The median reference step with a forked neighbour stepping beside it over the median
    alone, alternating `rounds` times; in [1, 2] (two single-threaded processes cannot slow
    each other more than twofold)."""
    import multiprocessing as mp
    import statistics

    if "fork" not in mp.get_all_start_methods():
        return 1.0
    probe = _Probe(reference_model(), *REFERENCE_SHAPE, "fp32", tokens)
    context = mp.get_context("fork")
    go, stop, ready = context.Event(), context.Event(), context.Event()
    neighbour = context.Process(target=_step_while, args=(tokens, go, stop, ready),
                                daemon=True)
    neighbour.start()
    alone: list[float] = []
    together: list[float] = []
    try:
        ready.wait(10)
        for _ in range(rounds):
            for company, samples in ((False, alone), (True, together)):
                if company:
                    go.set()
                else:
                    go.clear()
                time.sleep(0.01)  # the neighbour finishes or starts its step
                before = len(probe.samples)
                for _ in range(steps):
                    probe.step()
                samples += probe.samples[before:]
    finally:
        stop.set()
        go.set()
        neighbour.join(10)
    return min(2.0, max(1.0, statistics.median(together) / statistics.median(alone)))


def _step_while(tokens, go, stop, ready) -> None:
    """`_contention`'s neighbour: reference steps while `go` is set, until `stop`."""
    import torch

    torch.set_num_threads(1)
    probe = _Probe(reference_model(), *REFERENCE_SHAPE, "fp32", tokens)
    ready.set()
    while not stop.is_set():
        if go.wait(0.05) and not stop.is_set():
            probe.step()


def _run_overhead(reference: Timing) -> float:
    """Seconds a real `trainer.train` of the reference model spends beyond its build, one step
    and one evaluation."""
    from blocklab.experiments.trainer import TrainConfig, train

    config = reference_model()
    batch, seq = REFERENCE_SHAPE
    tc = TrainConfig(steps=1, batch_size=batch, seq_len=seq, eval_every=0, eval_batches=1,
                     log_every=0, threads=1)
    walls = []
    for _ in range(2):
        tick = time.perf_counter()
        train(config, tc)
        walls.append(time.perf_counter() - tick)
    return max(0.0, min(walls) - reference.build_s - reference.step_s - reference.forward_s)


def _fill(shapes: dict[ShapeKey, ModelConfig], timings: dict[ShapeKey, Timing],
          models: dict[ShapeKey, ModelConfig]) -> dict[ShapeKey, Timing]:
    """Timings of the shapes not measured: linear in n_layers within their family, else
    `_fit`."""
    filled = {}
    fit = _fit(timings, models)
    for key in shapes:
        if key in timings:
            continue
        family = sorted((k.model.n_layers, timings[k]) for k in timings
                        if k.family == key.family)
        if len(family) >= 2 and family[0][0] != family[-1][0]:
            (l0, t0), (l1, t1) = family[0], family[-1]
            w = (key.model.n_layers - l0) / (l1 - l0)
            filled[key] = Timing(*(max(1e-6, a + w * (b - a))
                                   for a, b in zip(dataclasses.astuple(t0),
                                                   dataclasses.astuple(t1), strict=True)))
        elif family:
            layers, t = family[0]
            r = (1 + key.model.n_layers) / (1 + layers)
            filled[key] = Timing(t.build_s * r, t.step_s * r, t.forward_s * r, t.call_s * r)
        else:
            filled[key] = fit(key)
    return filled


def _fit(timings: dict[ShapeKey, Timing], models: dict[ShapeKey, ModelConfig]
         ) -> Callable[[ShapeKey], Timing]:
    """Least squares of each measured time on (1, n_layers, training FLOPs)."""
    import numpy as np

    keys = list(timings)

    def features(key: ShapeKey) -> list[float]:
        flops = training_flops(models[key], key.batch, key.seq, 1)
        return [1.0, float(key.model.n_layers), flops]

    if len(keys) < 3:  # too few points for three coefficients: the nearest in FLOPs, scaled
        def nearest(key: ShapeKey) -> Timing:
            flops = features(key)[2]
            near = min(keys, key=lambda k: abs(math.log(features(k)[2] / flops)))
            r = flops / features(near)[2]
            return Timing(*(v * r for v in dataclasses.astuple(timings[near])))
        return nearest

    x = np.array([features(k) for k in keys])
    y = np.array([dataclasses.astuple(timings[k]) for k in keys])
    scale = x.max(axis=0)
    coef, *_ = np.linalg.lstsq(x / scale, y, rcond=None)

    def predict(key: ShapeKey) -> Timing:
        values = (np.array(features(key)) / scale) @ coef
        floor = y.min(axis=0)
        return Timing(*(float(max(v, f)) for v, f in zip(values, floor, strict=True)))
    return predict


# --- pricing ----------------------------------------------------------------------------------
def training_flops(model: ModelConfig, batch_size: int, seq_len: int, steps: int) -> float:
    """Matmul FLOPs of `steps` training steps: 3 forwards a step (backward = 2 forwards)."""
    from blocklab.budget.flops import prefill_flops

    config = dataclasses.replace(model, max_seq_len=max(model.max_seq_len, seq_len))
    return 3.0 * prefill_flops(config, batch_size, seq_len).total * steps


def evaluation_s(model: ModelConfig, train: TrainShape, rows: int, length: int,
                 cal, batch_tokens: int | None = None) -> float:
    """`trainer.evaluate` of `rows` windows of `length` tokens, batch_tokens // length rows a
    forward (default the run's batch_size × seq_len tokens)."""
    batch, seq, precision = train.batch_size, train.seq_len, train.precision
    chunk = max(1, (batch_tokens or batch * seq) // length)
    full, rest = divmod(rows, chunk)
    seconds = full * cal.forward_s(model, batch, seq, chunk, length, precision)
    if rest:
        seconds += cal.forward_s(model, batch, seq, rest, length, precision)
    return seconds


def final_evaluation_s(model: ModelConfig, train: TrainShape, cal) -> float:
    """`trainer.train`'s end-of-run evaluation of the calibrated corpus's validation split."""
    from blocklab.experiments.data import FINAL_EVAL_TOKENS, final_window_count

    fraction = train.final_eval_fraction
    if not fraction:
        return 0.0
    periodic = train.eval_batches * train.batch_size
    batch_tokens = max(train.batch_size * train.seq_len, FINAL_EVAL_TOKENS)
    return sum(evaluation_s(model, train, final_window_count(cal.val_tokens, length, fraction,
                                                             periodic), length, cal, batch_tokens)
               for length in sorted({*train.eval_lengths, train.seq_len}))


def training_s(model: ModelConfig, train: TrainShape, cal) -> float:
    """Seconds of `trainer.train(model, train)`: build, steps, every validation and the
    end-of-run evaluation."""
    batch, seq, steps = train.batch_size, train.seq_len, train.steps
    precision, every = train.precision, train.eval_every
    evaluations = (steps // every if every else 0) + (1 if not every or steps % every else 0)
    rows = train.eval_batches * batch
    lengths = sorted({*train.eval_lengths, seq})
    per_evaluation = sum(evaluation_s(model, train, rows, length, cal) for length in lengths)
    return (cal.run_s + cal.build_s(model, batch, seq, precision)
            + steps * cal.step_s(model, batch, seq, precision)
            + evaluations * per_evaluation + final_evaluation_s(model, train, cal))


def price(suite, spec, cal) -> float | None:
    """A run's seconds: its suite's price, else `training_s` of a payload's model and train
    config, else None (unknown)."""
    own = suite.price(spec, cal) if getattr(suite, "price", None) else None
    if own is not None:
        return own
    model, train = spec.payload.get("model"), spec.payload.get("train")
    if isinstance(model, dict) and isinstance(train, dict) and "steps" in train:
        return training_s(ModelConfig.from_dict(model), TrainShape.from_payload(train), cal)
    return None


# --- the plan -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SuiteEstimate:
    """One suite's planned runs at a size: counts and one-core seconds, untimed and timed."""

    suite: str
    runs: int
    stored: int
    untimed_s: float
    timed_s: float
    unknown: int  # runs no price could be put on
    from_stored: int = 0  # runs priced at a stored twin's wall time


@dataclass(frozen=True)
class Round:
    """One executor call of `run_suites`: untimed prices in plan order, then the timed ones."""

    untimed: list[float]
    timed: list[float]


@dataclass(frozen=True)
class SizeEstimate:
    size: str
    suites: list[SuiteEstimate]
    rounds: list[Round]
    calibration: Calibration | None
    fixed_s: dict[str, float]  # startup, worker_start (each worker of the first round), build

    def wall_s(self, workers: int) -> float:
        """Estimated wall seconds of `blocklab report` with `workers` processes (see the module
        docstring)."""
        wall = sum(v for k, v in self.fixed_s.items() if k != "worker_start")
        slower = self.calibration.contention if self.calibration and workers > 1 else 1.0
        for i, round_ in enumerate(self.rounds):
            start = self.fixed_s.get("worker_start", 0.0) if i == 0 else 0.0
            wall += makespan([s * slower for s in round_.untimed], workers, start) + sum(
                round_.timed)
        return wall

    @property
    def core_s(self) -> float:
        return sum(s.untimed_s + s.timed_s for s in self.suites)


def makespan(seconds: Sequence[float], workers: int, start: float = 0.0) -> float:
    """When the last of `seconds` finishes, each handed in order to the first free worker
    (a FIFO pool); every worker first spends `start`."""
    if not seconds:
        return 0.0
    free = [start] * max(1, min(workers, len(seconds)))  # equal values: already a heap
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free)


_SEED = re.compile(r"\bseed \d+\b")


def _twin_key(suite: str, folder: str, label: str) -> tuple[str, str, str]:
    """Runs of the same suite, size (any seed offset) and label but the seed: the same work."""
    size = folder.split("+")[0] + ("+tuning" if "+tuning" in folder else "")
    return suite, size, _SEED.sub("seed", label)


def estimate_suites(request: RunRequest, names: Sequence[str], *,
                    calibration: Calibration | None = None,
                    calibration_s: float = 15.0) -> SizeEstimate:
    """Estimate the runs `blocklab report` would still do for `names` under `request`,
    calibrating for about `calibration_s` seconds unless given a `calibration`. A tuned
    suite's evaluation runs are planned from the stored tuning, else the registered grid."""
    from blocklab.experiments.suites import get_suite
    from blocklab.experiments.suites.base import (
        ResultStore,
        stale_reasons,
        stored_tuning,
        suite_dir,
    )

    results, size = request.results, request.size
    twins: dict[tuple[str, str, str], list[float]] = {}
    for stored in sorted(p for p in results.glob("*/*") if p.is_dir()):
        for _, result in ResultStore(stored).iter_results():
            run, wall = result.run, result.wall_time_s
            if run is not None and isinstance(wall, int | float) and wall > 0:
                key = _twin_key(stored.parent.name, stored.name, run.label)
                twins.setdefault(key, []).append(float(wall))
    planned = []  # (suite, stage, spec, stored, twin wall times)
    for name in names:
        suite = get_suite(name)
        options = request.options(suite)
        store = ResultStore(suite_dir(results, suite, options))
        folder = store.root.name
        if suite.tune:
            tuning_specs, tuning, _, _, tuned = stored_tuning(suite, options, results)
            groups = [(0, tuning, tuning.root.name, tuning_specs),
                      (1, store, folder, suite.plan(options, tuned))]
        else:
            groups = [(0, store, folder, suite.plan(options, []))]
        for stage, where, folder, specs in groups:
            stale = stale_reasons(specs, where)
            for spec in specs:
                done = where.has(spec.run_id) and spec.run_id not in stale
                same = twins.get(_twin_key(name, folder, spec.label), [])
                # a run that reads nothing the tuning chooses runs beside the tuning runs
                planned.append((suite, stage if spec.reads_tuning else 0, spec, done, same))

    todo = [(suite, spec) for suite, _, spec, done, same in planned if not done and not same]
    # Something to run, even if only stored twins price it: the fixed costs need a calibration.
    if calibration is None and any(not done for *_, done, _ in planned):
        calibration = calibrate(shapes_of(todo), calibration_s)
    by_suite: dict[str, dict[str, float]] = {
        name: {"runs": 0, "stored": 0, "untimed": 0.0, "timed": 0.0, "unknown": 0, "twin": 0}
        for name in names}
    rounds = [Round([], []), Round([], [])]
    for suite, stage, spec, done, same in planned:
        row = by_suite[suite.name]
        row["runs"] += 1
        if done:
            row["stored"] += 1
            continue
        if same:
            seconds = sum(same) / len(same)
            row["twin"] += 1
        else:
            seconds = price(suite, spec, calibration)
        if seconds is None or not math.isfinite(seconds):
            row["unknown"] += 1
            continue
        row["timed" if spec.timed else "untimed"] += seconds
        (rounds[stage].timed if spec.timed else rounds[stage].untimed).append(seconds)
    suites = [SuiteEstimate(name, int(r["runs"]), int(r["stored"]), r["untimed"], r["timed"],
                            int(r["unknown"]), int(r["twin"])) for name, r in by_suite.items()]
    rounds = [r for r in rounds if r.untimed or r.timed]
    fixed: dict[str, float] = {}
    if calibration is not None:
        # The first round's workers load the compiler stack and the corpus; the timed runs
        # load the corpus here, and the next round's workers inherit it.
        fixed = {"startup": calibration.startup_s,
                 "worker_start": calibration.worker_start_s if rounds and rounds[0].untimed
                 else 0.0,
                 "timed_start": calibration.corpus_s if any(r.timed for r in rounds) else 0.0,
                 "rounds": len(rounds) * calibration.reference_s(REFERENCE_ROUND_S),
                 "build": calibration.reference_s(REFERENCE_BUILD_S[size])}
    return SizeEstimate(size, suites, rounds, calibration, fixed)


def shapes_of(specs: Iterable[tuple[Any, Any]]) -> dict[ShapeKey, ModelConfig]:
    """The shapes (`ShapeKey` -> model) `calibrate` must time to price `specs`."""
    requests = _Requests()
    price_specs(specs, requests)
    return requests.shapes


def price_specs(specs: Iterable[tuple[Any, Any]], cal: Calibration) -> list[float | None]:
    return [price(suite, spec, cal) for suite, spec in specs]


def hours(seconds: float) -> str:
    """'2.4 h', '35 min' or '40 s'."""
    if not math.isfinite(seconds):
        return "—"
    if seconds >= 5400:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 90:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
