"""`quantize`: real int8 quantization of a DecoderLM, prefill and decode speed per scheme (C32), and
how SwiGLU's three matrices may be quantized (C33).

Two kinds of run:

    timing    (timed, alone) one random-weight DecoderLM of the size's shape, quantized by torchao
              in every scheme of `blocklab.experiments.int8_measurements.SCHEMES` (ffn /
              attention / all linear layers × weight-only / dynamic int8); prefill at each T
              and one-token decode on the KV cache, repeats interleaved (`measure_schemes`),
              with the float model whose quantized layers are free: its speed-up is the bound
              1 / (1 − f) no scheme can beat, f the layers' share of the time; the parts' own
              GEMMs timed alone give the k of the Amdahl estimate 1 / (1 − f + f/k) (decode:
              S = the layers' bytes, float / int8, in place of k). Eager always;
              torch.compile'd too where the size says so.
    quality   one per seed: a small SwiGLU model trained by the one training loop
              (`blocklab.experiments.trainer.train`), then its validation loss and logits error
              under every scheme (torchao), and the C33 comparison: gate/up/down quantized
              separately, or gate|up merged with one per-tensor scale or per-row scales
              (fake quantization written in `blocklab.nn.int8`): the FFN output error
              and validation loss of each, and per layer (`merge_comparison`) the merged
              against the separate weights and how far apart gate's and up's scales are.

Each run's result is a `RunResult` whose `extra` holds its record (`TimingRecord`,
`QualityRecord`), read back once by the record's `of`. `Summary.data` is a
`blocklab.experiments.summaries.QuantizeData`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from blocklab.config import ModelConfig
from blocklab.errors import ResultsError
from blocklab.experiments.int8_records import SchemeLoss, SchemeTimes, SwigluError
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import train_identity
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import (
    Results,
    RunSpec,
    Suite,
    format_ci,
    format_level,
    mean_ci,
    paired_difference,
)
from blocklab.experiments.summaries import (
    Interval,
    QuantizeData,
    QuantQuality,
    QuantTiming,
    Summary,
    SwigluQuant,
    Table,
    decode,
)

if TYPE_CHECKING:
    from torch import Tensor

    from blocklab.experiments.trainer import TrainConfig


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
# afford.
SIZES: dict[str, Size] = {
    "tiny": Size(
        timing=(TimedShape(d_model=64, n_layers=1, n_heads=2, d_ff=176, seq_lens=(32,),
                           decode_steps=2, repeats=3, compile=False),),
        quality=QualityShape(d_model=32, n_layers=1, n_heads=2, seq_len=32, batch_size=4,
                             steps=8, lr=3e-3, warmup_steps=2, eval_windows=4)),
    "quick": Size(
        timing=(TimedShape(d_model=1024, n_layers=2, n_heads=8, d_ff=2816, seq_lens=(512,),
                           decode_steps=4, repeats=3, compile=False),),
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


# --- what a run records (`RunResult.extra`) ------------------------------------------------------
@dataclass(frozen=True)
class TimingRecord:
    """What a timing run adds to its RunResult (`run_timing`): the timed model
    (`ModelConfig.to_dict()`), its shape, the CPU's int8 flags (`cpu_flags`) and what
    `measure_schemes` measured, whose fields are stored beside them."""

    model: dict[str, Any]
    spec: TimedShape
    cpu_flags: dict[str, bool]
    times: SchemeTimes

    @property
    def config(self) -> ModelConfig:
        return ModelConfig.from_dict(self.model)

    def extra(self) -> dict[str, object]:
        """The keys it adds to its run's stored JSON."""
        return {"kind": "timing", "model": self.model, "spec": self.spec.to_dict(),
                "cpu_flags": self.cpu_flags, **dataclasses.asdict(self.times)}

    @classmethod
    def of(cls, result: RunResult, where: str) -> TimingRecord:
        """The record of a stored timing run; ResultsError names what does not fit. (Its
        per-scheme "compile_s" is the suite's own, in `extra`, though a training run's field
        has the name: `RunResult.from_dict` keeps a key of another type there.)"""
        fields = dict(result.extra)
        expected = {"kind", "model", "spec", "cpu_flags", *_TIMES}
        missing = sorted(expected - set(fields) - set(_FREE))
        unknown = sorted(set(fields) - expected)
        if missing or unknown or fields["kind"] != "timing":
            raise ResultsError(f"{where}: {fields.get('kind')!r} is not a timing record "
                               f"(missing {missing}, unknown {unknown})")
        return decode(cls, {"model": fields["model"], "spec": fields["spec"],
                            "cpu_flags": fields["cpu_flags"],
                            "times": {name: fields.get(name) for name in _TIMES}}, where)


_TIMES = tuple(f.name for f in dataclasses.fields(SchemeTimes))
_FREE = ("free_prefill_s", "free_decode_s")  # absent from records made before the bounds


def scheme_times(doc: dict[str, Any], where: str = "timings") -> SchemeTimes:
    """`SchemeTimes` from the keys of its JSON form in `doc` (`dataclasses.asdict` of one, with
    other keys beside; free-layers timings absent from before they were timed read as None);
    ResultsError names what does not fit."""
    return decode(SchemeTimes, {name: doc.get(name) for name in _TIMES}, where)


@dataclass(frozen=True)
class TrainedModel:
    """The training run under a quality run: its validation loss, steps and data
    (`Corpus.info()`)."""

    val_loss: float | None
    steps_done: int
    data: dict[str, Any]


@dataclass(frozen=True)
class LayerMerge:
    """One layer's C33 numbers (`merge_comparison`)."""

    per_row_diff: float
    per_tensor_diff: float
    gate_scale: float
    up_scale: float
    scale_ratio: float
    merged_over_max: float


@dataclass(frozen=True)
class QualityRecord:
    """What a quality run adds to its RunResult (`run_quality`): the trained model
    (`ModelConfig.to_dict()`) and its training, its losses under every scheme
    (`quality_of_schemes`) and every SwiGLU quantization (`swiglu_errors`), each layer's C33
    comparison (`merge_comparison`) and their maxima."""

    kind: str
    model: dict[str, Any]
    train: TrainedModel
    quality: dict[str, SchemeLoss]
    swiglu: dict[str, SwigluError]
    layers: list[LayerMerge]
    merged_per_row_max_diff: float
    merged_per_tensor_max_diff: float
    merged_scale_over_max: list[float]

    @classmethod
    def of(cls, result: RunResult, where: str) -> QualityRecord:
        """The record of a stored quality run; ResultsError names what does not fit."""
        return decode(cls, result.extra, where)


def cpu_flags() -> dict[str, bool]:
    """The x86 features torch's int8 GEMMs depend on (from /proc/cpuinfo; all False elsewhere)."""
    from blocklab.experiments.env import cpu_flags as listed

    return listed(("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile", "amx_int8"))


def timing_config(t: TimedShape) -> ModelConfig:
    from blocklab.experiments.int8_measurements import TIMING_VOCAB

    return ModelConfig(vocab_size=TIMING_VOCAB, d_model=t.d_model, n_layers=t.n_layers,
                       n_heads=t.n_heads, d_ff=t.d_ff, ffn="swiglu",
                       max_seq_len=max(t.seq_lens) + t.decode_steps)


def run_timing(t: TimedShape) -> RunResult:
    import time

    from blocklab.experiments.int8_measurements import measure_schemes

    started = time.perf_counter()
    cfg = timing_config(t)
    times = measure_schemes(cfg, seq_lens=list(t.seq_lens), decode_steps=t.decode_steps,
                            repeats=t.repeats, compile=t.compile, threads=THREADS)
    record = TimingRecord(model=cfg.to_dict(), spec=t, cpu_flags=cpu_flags(), times=times)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=record.extra())


def quality_configs(options: RunOptions, seed: int) -> tuple[ModelConfig, TrainConfig]:
    """The quality run's model and training at `options`' size: the one place the suite builds
    a TrainConfig (in `options`' precision and backend)."""
    from blocklab.experiments.trainer import TrainConfig

    q = SIZES[options.size].quality
    mc = ModelConfig(vocab_size=256, d_model=q.d_model, n_layers=q.n_layers,
                     n_heads=q.n_heads, ffn="swiglu", max_seq_len=q.seq_len)
    tc = TrainConfig(steps=q.steps, batch_size=q.batch_size, seq_len=q.seq_len, lr=q.lr,
                     warmup_steps=q.warmup_steps, eval_every=0, log_every=0, eval_batches=1,
                     seed=seed, threads=1, precision=options.precision, backend=options.backend)
    return mc, tc


def merge_comparison(gate: Tensor, up: Tensor, down: Tensor,
                     row_scale: Tensor | None = None) -> dict[str, float]:
    """One layer's C33 numbers from its float weights gate, up [m, d] and down [d, m]:

        per_row_diff     max |ŵ_merged − ŵ_separate| over gate, up and down, gate|up merged
                         as one [2m, d] matrix with one scale per row against each quantized
                         alone (`quantize_swiglu` "merged-per-row" / "separate-per-row"): 0
                         exactly, as each row keeps its own scale.
                         `row_scale` [2m, 1] replaces the merged matrix's per-row scales (a test
                         perturbs one to show the comparison can fail)
        per_tensor_diff  the same under one per-tensor scale for gate|up
        gate_scale, up_scale   each matrix's own per-tensor scale
        scale_ratio      max / min of the two: merged under one per-tensor scale, the matrix
                         with the smaller scale is quantized on a grid this many times coarser
        merged_over_max  the merged per-tensor scale / the larger of the two (1.0)
    """
    import torch

    from blocklab.nn.int8 import fake_quantize, int8_scale, quantize_swiglu

    def largest(a, b):
        return max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))

    if row_scale is None:
        merged_row = quantize_swiglu(gate, up, down, "merged-per-row")
    else:
        merged_row = (*fake_quantize(torch.cat((gate, up)), "per-row", row_scale)
                      .split(gate.shape[0]), fake_quantize(down, "per-row"))
    per_tensor = largest(quantize_swiglu(gate, up, down, "merged-per-tensor"),
                         quantize_swiglu(gate, up, down, "separate-per-tensor"))
    s_gate, s_up = (float(int8_scale(w, "per-tensor")) for w in (gate, up))
    merged_scale = float(int8_scale(torch.cat((gate, up)), "per-tensor"))
    return {"per_row_diff": largest(merged_row,
                                    quantize_swiglu(gate, up, down, "separate-per-row")),
            "per_tensor_diff": per_tensor, "gate_scale": s_gate, "up_scale": s_up,
            "scale_ratio": max(s_gate, s_up) / min(s_gate, s_up),
            "merged_over_max": merged_scale / max(s_gate, s_up)}


def run_quality(options: RunOptions, seed: int, progress: Any = False) -> RunResult:
    """Train the quality model of `options`' size on `seed`, then score it under every scheme
    and SwiGLU quantization and compare its layers' merged and separate scales
    (`QualityRecord`); the status is the training run's."""
    import time

    from blocklab.experiments.data import load_corpus, validation_windows
    from blocklab.experiments.env import torch_threads
    from blocklab.experiments.int8_measurements import quality_of_schemes, swiglu_errors
    from blocklab.experiments.trainer import train
    from blocklab.nn.int8 import gated_ffn_weights

    started = time.perf_counter()
    mc, tc = quality_configs(options, seed)
    model, trained = train(mc, tc, "stdlib", progress=progress, label=f"quantize seed {seed}")
    windows = validation_windows(load_corpus("stdlib").val, tc.seq_len,
                                 SIZES[options.size].quality.eval_windows)
    with torch_threads(1):
        quality = quality_of_schemes(model, windows)
        swiglu = swiglu_errors(model, windows)
        layers = [LayerMerge(**merge_comparison(*(w.detach()
                                                  for w in gated_ffn_weights(layer.ffn))))
                  for layer in model.layers]
    record = QualityRecord(
        kind="quality", model=mc.to_dict(),
        train=TrainedModel(val_loss=trained.final.val_loss, steps_done=trained.steps_done,
                           data=trained.data),
        quality=quality, swiglu=swiglu, layers=layers,
        merged_per_row_max_diff=max(x.per_row_diff for x in layers),
        merged_per_tensor_max_diff=max(x.per_tensor_diff for x in layers),
        merged_scale_over_max=[x.merged_over_max for x in layers])
    return RunResult(status=trained.status, wall_time_s=time.perf_counter() - started,
                     extra=dataclasses.asdict(record))


def plan(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The timed runs (one per timed shape), then one quality run per seed."""
    size = SIZES[options.size]
    specs = [RunSpec(f"timing d={t.d_model} L={t.n_layers} T={list(t.seq_lens)}"
                     f"{' compiled' if t.compile else ''}", "timing", 0, timing_payload(t),
                     lambda progress, t=t: run_timing(t), timed=True)
             for t in size.timing]
    for seed in options.seeds:
        mc, tc = quality_configs(options, seed)
        payload = {"suite": "quantize", "kind": "quality", "model": mc.to_dict(),
                   "train": train_identity(tc), "data": "stdlib",
                   "eval_windows": size.quality.eval_windows,
                   # "layers": the runs record each layer's gate and up scales (C33); runs
                   # stored before lack them.
                   "layers": "scales"}
        specs.append(RunSpec(f"quality seed {seed}", "quality", seed, payload,
                             lambda progress, seed=seed: run_quality(options, seed, progress)))
    return specs


def timing_payload(t: TimedShape) -> dict[str, Any]:
    """A timing run's payload. "bounds": the runs time the free-layers models too; runs stored
    before lack them."""
    return {"suite": "quantize", "kind": "timing", "threads": THREADS, "bounds": "time-share",
            **t.to_dict()}


# Reference-machine seconds (`blocklab.experiments.estimate`) of what a calibration does not time:
# a timing run per size (torchao's int8 kernels: dynamic int8 without VNNI runs a slow path),
# and a quality run's quantizing (torchao's imports and quantize_ of every scheme) beside its
# forwards, which are priced from the calibration.
_TIMING_REFERENCE_S = {"tiny": 1.1, "quick": 15.5, "full": 200.0}  # full: a guess
_QUALITY_REFERENCE_S = 0.6


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run on this machine from a calibration (`blocklab.experiments.
    estimate`): a timing run its size's reference time; a quality run the trainer's run, then
    a forward and a validation pass of the windows for every scheme of `quality_of_schemes`
    and `swiglu_errors`, and the quantizing."""
    from blocklab.experiments.estimate import TrainShape, training_s
    from blocklab.experiments.int8_measurements import SCHEMES, SWIGLU_SCHEMES

    payload = spec.payload
    if payload["kind"] == "timing":
        size = next((name for name, config in SIZES.items()
                     if any(timing_payload(t) == payload for t in config.timing)), "full")
        return cal.reference_s(_TIMING_REFERENCE_S[size])
    model = ModelConfig.from_dict(payload["model"])
    train = TrainShape.from_payload(payload["train"])
    b, t = train.batch_size, train.seq_len
    forward = cal.forward_s(model, b, t, payload["eval_windows"], t)
    return (training_s(model, train, cal) + 2 * (len(SCHEMES) + len(SWIGLU_SCHEMES) + 1)
            * forward + cal.reference_s(_QUALITY_REFERENCE_S))


# --- summarise ---
def scheme_rows(cfg: ModelConfig, seq_lens: Sequence[int], compiled: bool,
                times: SchemeTimes) -> list[QuantTiming]:
    """One QuantTiming per scheme timed on the model `cfg` (`measure_schemes`' `times` at
    `seq_lens`, compiled or not): speed-ups, the bound 1 / (1 − f) measured by the free-layers
    models and the Amdahl estimate (see `blocklab.experiments.int8_measurements`). Noise can time
    the
    free-layers model a little behind the float one: f is then 0 and the bound 1, the least it
    can be, and the estimate is kept at most the bound. Bounds and estimates are None for
    timings without the free-layers models."""
    import math
    import statistics

    from blocklab.experiments.int8_measurements import (
        amdahl_parts,
        free_speedup,
        part_bytes_ratio,
        part_flop_share,
        speedups,
        time_share,
    )

    lens = [str(t) for t in seq_lens]
    base_prefill, base_decode = times.prefill_s["none"], times.decode_s["none"]
    free_prefill, free_decode = times.free_prefill_s, times.free_decode_s

    def shares(part: str, bounds: dict[str, float]) -> list[tuple[str, float]]:
        """(part, f) of the layers `part` quantizes: "all" has two, at their own S, their f
        scaled to sum to what the free "all" model measures (noise can make f_ffn + f_attention
        differ from it)."""
        if part != "all":
            return [(part, time_share(bounds[part]))]
        f = {p: time_share(bounds[p]) for p in ("ffn", "attention")}
        total, whole = sum(f.values()), time_share(bounds["all"])
        return [(p, 0.0 if total == 0 else whole * x / total) for p, x in f.items()]

    bytes_ratio = {p: part_bytes_ratio(cfg, p) for p in ("ffn", "attention")}
    out = []
    for scheme, prefill in times.prefill_s.items():
        part, mode = ("none", "none") if scheme == "none" else scheme.split("/")
        flop: dict[str, float] = {}
        share: dict[str, float | None] = {}
        k: dict[str, float | None] = {}
        estimate: dict[str, float | None] = {}
        bound: dict[str, float | None] = {}
        for t in lens:
            flop[t] = part_flop_share(cfg, part, int(t))
            ks = {}
            for p in (("ffn", "attention") if part == "all" else (part,)):
                if p != "none":
                    fp, q = times.gemm_s[f"none/{p}"][t], times.gemm_s[f"{p}/{mode}"][t]
                    ks[p] = statistics.median(fp) / statistics.median(q)
            k[t] = None if part == "all" else ks.get(part, 1.0)
            if part == "none":
                share[t], estimate[t], bound[t] = 0.0, 1.0, 1.0
            elif free_prefill is None:
                share[t] = estimate[t] = bound[t] = None
            else:
                bounds = {p: free_speedup(base_prefill[t], free_prefill[p][t])
                          for p in free_prefill}
                f_t = time_share(bounds[part])
                b_t = 1.0 / (1.0 - f_t) if f_t < 1.0 else math.inf
                share[t], bound[t] = f_t, b_t
                estimate[t] = min(b_t, amdahl_parts([(f, ks[p])
                                                     for p, f in shares(part, bounds)]))
        d_share: float | None
        d_estimate: float | None
        d_bound: float | None
        if part == "none":
            d_share, d_estimate, d_bound = 0.0, 1.0, 1.0
        elif free_decode is None:
            d_share = d_estimate = d_bound = None
        else:
            bounds = {p: free_speedup(base_decode, free_decode[p]) for p in free_decode}
            d_share = time_share(bounds[part])
            d_bound = 1.0 / (1.0 - d_share) if d_share < 1.0 else math.inf
            d_estimate = min(d_bound, amdahl_parts([(f, bytes_ratio[p])
                                                    for p, f in shares(part, bounds)]))
        out.append(QuantTiming(
            scheme=scheme, part=part, mode=mode, compiled=compiled,
            prefill_ms={t: 1000 * statistics.median(prefill[t]) for t in lens},
            prefill_speedup={t: mean_ci(speedups(prefill[t], base_prefill[t])) for t in lens},
            decode_ms=1000 * statistics.median(times.decode_s[scheme]),
            decode_speedup=mean_ci(speedups(times.decode_s[scheme], base_decode)),
            logits_error=times.logits_error.get(scheme),
            flop_share=flop, time_share=share, gemm_speedup=k, prefill_estimate=estimate,
            prefill_bound=bound, decode_time_share=d_share, decode_estimate=d_estimate,
            decode_bound=d_bound, compile_s=times.compile_s.get(scheme)))
    return out


@dataclass(frozen=True)
class TimedRun:
    """One timing run read back: its record and one QuantTiming per scheme."""

    record: TimingRecord
    rows: list[QuantTiming]


def timed_runs(results: Results) -> list[TimedRun]:
    """The timing runs of `results`, each decoded once and its schemes' speed-ups, bounds and
    estimates derived (`scheme_rows`)."""
    out = []
    for spec, result in results:
        if spec.arm == "timing":
            record = TimingRecord.of(result, spec.label)
            out.append(TimedRun(record, scheme_rows(record.config, record.spec.seq_lens,
                                                    record.spec.compile, record.times)))
    return out


@dataclass(frozen=True)
class MergeStats:
    """C33 over every layer of every seed's trained model (`merge_comparison`): the largest
    |merged − separate| per row and per tensor, gate's and up's scale ratios and the merged
    per-tensor scale over the larger one, layer by layer."""

    layers: int
    per_row_max_diff: float
    per_tensor_max_diff: float
    scale_ratios: list[float]
    merged_over_max: list[float]


def merge_stats(records: Sequence[QualityRecord]) -> MergeStats:
    layers = [x for r in records for x in r.layers]
    return MergeStats(layers=len(layers),
                      per_row_max_diff=max((x.per_row_diff for x in layers), default=0.0),
                      per_tensor_max_diff=max((x.per_tensor_diff for x in layers), default=0.0),
                      scale_ratios=[x.scale_ratio for x in layers],
                      merged_over_max=[x.merged_over_max for x in layers])


def _x(stats: Interval) -> str:
    return "—" if stats.mean is None else format_level(stats, 2)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def _timing_table(run: TimedRun) -> Table:
    m, spec = run.record.model, run.record.spec
    lens = [str(t) for t in spec.seq_lens]
    return Table(
        f"Speed-up vs float32, d={m['d_model']} L={m['n_layers']} d_ff={m['d_ff']}"
        f"{' (torch.compile)' if spec.compile else ' (eager)'}, {run.record.times.threads} "
        "thread(s), random weights",
        ["scheme", *[f"prefill T={t} ×" for t in lens],
         *[f"estimate T={t}" for t in lens], *[f"bound T={t}" for t in lens],
         "decode ×", "decode estimate", "decode bound", "logits rel. error"],
        [[row.scheme, *[_x(row.prefill_speedup[t]) for t in lens],
          *[_round(row.prefill_estimate[t]) for t in lens],
          *[_round(row.prefill_bound[t]) for t in lens], _x(row.decode_speedup),
          _round(row.decode_estimate), _round(row.decode_bound), row.logits_error]
         for row in run.rows],
        "Speed-up = float time / scheme time per repeat (mean [95% CI]). bound = 1/(1 − f), "
        "f the quantized layers' share of the float model's time, measured as the speed-up "
        "of the model with those layers free (zeros out): no scheme beats it, up to timing "
        "noise. estimate = Amdahl 1/(1 − f + f/S), an estimate, not a bound: prefill S = k, "
        "the part's own GEMMs timed alone; decode S = its weight bytes, float32 / int8 with "
        f"scales. Decode continues the T={lens[0]} prefill on its KV cache.")


def summarise(options: RunOptions, results: Results) -> Summary:
    size, seeds = options.size, options.seeds
    timed = timed_runs(results)
    trained = [(spec, QualityRecord.of(r, spec.label)) for spec, r in results
               if spec.arm == "quality" and r.status == "ok"]
    records = [record for _, record in trained]
    quality = _quality(records)
    swiglu = swiglu_summary([r.swiglu for r in records])
    penalty = merged_tensor_loss_penalty([r.swiglu for r in records])
    merged = merge_stats(records)

    tables, notes = [], []
    for run in timed:
        tables.append(_timing_table(run))
        flags = run.record.cpu_flags
        if not (flags.get("avx512_vnni") or flags.get("avx_vnni") or flags.get("amx_int8")):
            notes.append("This CPU has no VNNI or AMX int8 instructions (flags: "
                         + ", ".join(f"{k}={v}" for k, v in flags.items())
                         + "): torch's int8 GEMM runs a slow path, so dynamic int8 is slower "
                         "here, not faster.")
    if quality:
        tables.append(Table(
            "Trained model (SwiGLU, stdlib): validation loss under each scheme (torchao, eager)",
            ["scheme", "val loss", "Δ vs float", "logits rel. error"],
            [[q.scheme, format_level(q.val_loss), format_ci(q.delta, 4),
              format_level(q.logits_error, 4)] for q in quality],
            "Δ paired by seed, nats/token."))
        tables.append(Table(
            "C33: SwiGLU's gate, up, down quantized separately or gate|up merged",
            ["scheme", "FFN rel. error", "vs separate, %", "Δ val loss", "logits rel. error"],
            [[s.scheme, format_level(s.ffn_error, 4),
              format_ci(s.error_vs_separate_pct, 2), format_ci(s.delta, 4),
              format_level(s.logits_error, 4)] for s in swiglu],
            "down reads the hidden (width d_ff), not x: it is never concatenated with gate and "
            "up. merged-per-row equals separate-per-row exactly (each row keeps its scale). "
            "vs separate: the FFN output error against the same granularity's separate scheme, "
            "paired by seed."))
    if merged.layers:
        tables.append(Table(
            "C33: gate's and up's per-tensor int8 scales, per layer",
            ["seed", "layer", "gate scale", "up scale", "ratio (max / min)",
             "max |merged − separate| per row", "per tensor"],
            [[spec.seed, i, f"{x.gate_scale:.4g}", f"{x.up_scale:.4g}",
              round(x.scale_ratio, 3), f"{x.per_row_diff:.3g}", f"{x.per_tensor_diff:.3g}"]
             for spec, record in trained for i, x in enumerate(record.layers)],
            "One per-tensor scale for gate|up is the larger of the two: the other matrix is "
            "quantized on a grid (max / min) times coarser than its own. Near 1, merging costs "
            "nothing even per tensor."))
        ratios = merged.scale_ratios
        notes.append(f"Max |merged − separate| over the trained weights of {merged.layers} "
                     f"layers: per-row {merged.per_row_max_diff:.3g}, per-tensor "
                     f"{merged.per_tensor_max_diff:.3g}; gate's and up's per-tensor scales "
                     f"{min(ratios):.3g}× to {max(ratios):.3g}× apart; merging gate|up under "
                     "one per-tensor scale changes the validation loss by "
                     f"{format_ci(penalty, 5)} nats/token against each at its own.")
    first = timed[0].record if timed else None
    data = QuantizeData(
        model=first.model if first else {},
        seq_lens=list(first.spec.seq_lens) if first else [],
        decode_context=first.spec.seq_lens[0] if first else 0,
        repeats=first.spec.repeats if first else 0,
        threads=first.times.threads if first else 0,
        cpu_flags=first.cpu_flags if first else {},
        timings=[row for run in timed for row in run.rows],
        quality_model=records[0].model if records else {}, quality=quality, swiglu=swiglu,
        merged_per_row_max_diff=merged.per_row_max_diff,
        merged_per_tensor_max_diff=merged.per_tensor_max_diff,
        merged_scale_over_max=merged.merged_over_max,
        gate_up_scale_ratio=merged.scale_ratios, merged_tensor_loss_penalty=penalty)
    return Summary("quantize", size, len(seeds), tables, notes, data, first_seed=seeds.start)


def _quality(records: Sequence[QualityRecord]) -> list[QuantQuality]:
    """One QuantQuality per scheme over the trained models (`quality_of_schemes`)."""
    if not records:
        return []
    quality = []
    for scheme in records[0].quality:
        rows = [r.quality[scheme] for r in records]
        quality.append(QuantQuality(scheme, mean_ci([x.val_loss for x in rows]),
                                    mean_ci([x.delta for x in rows]),
                                    mean_ci([x.logits_error for x in rows])))
    return quality


def swiglu_summary(per_seed: Sequence[dict[str, SwigluError]]) -> list[SwigluQuant]:
    """One SwigluQuant per scheme from `swiglu_errors`' output of each seed: the FFN output
    error, logits error and Δ val loss over seeds, and the FFN output error against the same
    granularity's separate scheme, 100·(error / separate's − 1) %, paired by seed."""
    if not per_seed:
        return []
    out = []
    for scheme in per_seed[0]:
        rows = [r[scheme] for r in per_seed]
        base = [r[f"separate-{scheme.split('-', 1)[1]}"].ffn_error for r in per_seed]
        pct = paired_difference([100 * x.ffn_error / b for x, b in zip(rows, base,
                                                                       strict=True)],
                                [100.0] * len(rows))
        out.append(SwigluQuant(scheme, mean_ci([x.ffn_error for x in rows]),
                               mean_ci([x.logits_error for x in rows]),
                               mean_ci([x.delta for x in rows]), pct))
    return out


def merged_tensor_loss_penalty(per_seed: Sequence[dict[str, SwigluError]]) -> Interval:
    """Val loss with gate|up merged under one per-tensor scale − with each at its own, nats/token,
    paired by seed (`swiglu_errors`' output of each seed)."""
    return paired_difference([r["merged-per-tensor"].val_loss for r in per_seed],
                             [r["separate-per-tensor"].val_loss for r in per_seed])


SUITE = Suite(
    name="quantize",
    description="int8 quantization (torchao): prefill/decode speed-up per scheme against the "
                "roofline (C32); SwiGLU's matrices quantized separately vs merged (C33)",
    plan=plan,
    summarise=summarise,
    default_seeds={"tiny": 1, "quick": 3, "full": 5},
    price=price,
)
