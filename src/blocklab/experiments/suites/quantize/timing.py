"""What the `quantize` suite times (`run_timing`, its `TimingRecord`), each scheme's speed-ups,
bound and Amdahl estimate (`scheme_rows`, `blocklab quantize` uses it too) and their table."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from blocklab.config import ModelConfig
from blocklab.errors import ResultsError
from blocklab.experiments.int8_records import SchemeTimes
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import Results, format_ratio, median_ms
from blocklab.experiments.summaries import RATIO_METHOD, Table, TimeRatio
from blocklab.jsonio import decode


@dataclass(frozen=True)
class TimedShape:
    """One timed SwiGLU DecoderLM: its shape, prefill lengths, decode steps on the first one's
    KV cache, repeats, and whether it runs compiled."""

    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    seq_lens: tuple[int, ...]
    decode_steps: int
    repeats: int
    compile: bool

    def to_dict(self) -> dict[str, int | bool | list[int]]:
        return {**dataclasses.asdict(self), "seq_lens": list(self.seq_lens)}


THREADS = 1  # timings on one thread: on a shared 2-core machine two threads contend


def cpu_flags() -> dict[str, bool]:
    """The x86 features torch's int8 GEMMs depend on (from /proc/cpuinfo; all False elsewhere)."""
    from blocklab.experiments.env import cpu_flags as listed

    return listed(("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile", "amx_int8"))


def timing_config(t: TimedShape) -> ModelConfig:
    from blocklab.experiments.int8_measurements import TIMING_VOCAB

    return ModelConfig(vocab_size=TIMING_VOCAB, d_model=t.d_model, n_layers=t.n_layers,
                       n_heads=t.n_heads, d_ff=t.d_ff, ffn="swiglu",
                       max_seq_len=max(t.seq_lens) + t.decode_steps)


def timing_payload(t: TimedShape) -> dict[str, Any]:
    """A timing run's payload ("bounds": it times the free-layers models too)."""
    return {"suite": "quantize", "kind": "timing", "threads": THREADS, "bounds": "time-share",
            **t.to_dict()}


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


@dataclass(frozen=True)
class TimingRecord:
    """A timing run's record: the timed model, its shape, the CPU's int8 flags and what
    `measure_schemes` measured (its fields stored beside them)."""

    model: dict[str, Any]
    spec: TimedShape
    cpu_flags: dict[str, bool]
    times: SchemeTimes

    @property
    def config(self) -> ModelConfig:
        return ModelConfig.from_dict(self.model)

    def extra(self) -> dict[str, object]:
        return {"kind": "timing", "model": self.model, "spec": self.spec.to_dict(),
                "cpu_flags": self.cpu_flags, **dataclasses.asdict(self.times)}

    @classmethod
    def of(cls, result: RunResult, where: str) -> TimingRecord:
        """The record of a stored timing run (its "compile_s" is in `extra`, though a
        training run's field has the name); ResultsError names what does not fit."""
        fields = dict(result.extra)
        if fields.pop("kind", None) != "timing":
            raise ResultsError(f"{where}: not a timing record")
        times = {f.name: fields.pop(f.name, None) for f in dataclasses.fields(SchemeTimes)}
        return decode(cls, {**fields, "times": times}, where)


@dataclass(frozen=True)
class QuantTiming:
    """One int8 scheme's prefill and decode speed-up over the float model (`TimeRatio.paired`
    of the same repeats; > 1 faster), with the bound it cannot beat and an Amdahl estimate
    (`blocklab.experiments.int8_measurements`)."""

    scheme: str  # "none", or "<part>/<mode>": ffn|attention|all / weight-only|dynamic
    part: str
    mode: str
    compiled: bool
    prefill_ms: dict[str, float]  # seq_len -> median ms
    # seq_len -> seconds per repeat (repeat i of every scheme interleaved with the others': the
    # pairs a comparison of two schemes reads, as C32's FFN-only against attention-only)
    prefill_s: dict[str, list[float]]
    prefill_speedup: dict[str, TimeRatio]  # seq_len -> float / scheme time, paired repeats
    decode_ms: float
    decode_speedup: TimeRatio
    logits_error: float | None  # ‖ŷ − y‖ / ‖y‖ of the prefill logits (random weights)
    flop_share: dict[str, float]  # seq_len -> FLOP share of the quantized layers (not time)
    time_share: dict[str, float | None]  # seq_len -> f, their share of the float prefill's time
    gemm_speedup: dict[str, float | None]  # seq_len -> k of the part's own GEMMs (eager)
    prefill_estimate: dict[str, float | None]  # seq_len -> Amdahl 1 / (1 − f + f/k)
    prefill_bound: dict[str, float | None]  # seq_len -> 1 / (1 − f): the layers made free
    decode_time_share: float | None  # f of a decode step
    decode_estimate: float | None  # 1 / (1 − f + f/S), S = the layers' bytes, float / int8
    decode_bound: float | None  # 1 / (1 − f) of a decode step
    compile_s: float | None


def scheme_rows(cfg: ModelConfig, seq_lens: Sequence[int], compiled: bool,
                times: SchemeTimes) -> list[QuantTiming]:
    """One QuantTiming per scheme `measure_schemes` timed on `cfg`: speed-ups, the bound
    1 / (1 − f) measured by the free-layers models and the Amdahl estimate. Noise can time the
    free-layers model behind the float one: f is then 0, the bound 1, and the estimate is kept
    at most the bound. None for timings without the free-layers models."""
    import math
    import statistics

    from blocklab.experiments.int8_measurements import (
        amdahl_parts,
        free_speedup,
        part_bytes_ratio,
        part_flop_share,
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

    def bounded(part: str, base: list[float], free: dict[str, list[float]] | None,
                speed: dict[str, float]) -> tuple[float | None, float | None, float | None]:
        """(f, the Amdahl estimate at the parts' `speed`, the bound 1 / (1 − f))."""
        if part == "none":
            return 0.0, 1.0, 1.0
        if free is None:
            return None, None, None
        bounds = {p: free_speedup(base, free[p]) for p in free}
        f = time_share(bounds[part])
        bound = 1.0 / (1.0 - f) if f < 1.0 else math.inf
        return f, min(bound, amdahl_parts([(x, speed[p]) for p, x in shares(part, bounds)])), bound

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
            free = None if free_prefill is None else {p: v[t] for p, v in free_prefill.items()}
            share[t], estimate[t], bound[t] = bounded(part, base_prefill[t], free, ks)
        d_share, d_estimate, d_bound = bounded(part, base_decode, free_decode, bytes_ratio)
        out.append(QuantTiming(
            scheme=scheme, part=part, mode=mode, compiled=compiled,
            prefill_ms={t: median_ms(prefill[t]) for t in lens},
            prefill_s={t: list(prefill[t]) for t in lens},
            prefill_speedup={t: TimeRatio.paired(base_prefill[t], prefill[t]) for t in lens},
            decode_ms=median_ms(times.decode_s[scheme]),
            decode_speedup=TimeRatio.paired(base_decode, times.decode_s[scheme]),
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
    """The timing runs of `results`, each decoded once with its `scheme_rows`."""
    out = []
    for spec, result in results:
        if spec.arm == "timing":
            record = TimingRecord.of(result, spec.label)
            out.append(TimedRun(record, scheme_rows(record.config, record.spec.seq_lens,
                                                    record.spec.compile, record.times)))
    return out


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def timing_table(run: TimedRun) -> Table:
    m, spec = run.record.model, run.record.spec
    lens = [str(t) for t in spec.seq_lens]
    return Table(
        f"Speed-up vs float32, d={m['d_model']} L={m['n_layers']} d_ff={m['d_ff']}"
        f"{' (torch.compile)' if spec.compile else ' (eager)'}, {run.record.times.threads} "
        "thread(s), random weights",
        ["scheme", *[f"prefill T={t} ×" for t in lens],
         *[f"estimate T={t}" for t in lens], *[f"bound T={t}" for t in lens],
         "decode ×", "decode estimate", "decode bound", "logits rel. error"],
        [[row.scheme, *[format_ratio(row.prefill_speedup[t], 2) for t in lens],
          *[_round(row.prefill_estimate[t]) for t in lens],
          *[_round(row.prefill_bound[t]) for t in lens], format_ratio(row.decode_speedup, 2),
          _round(row.decode_estimate), _round(row.decode_bound), row.logits_error]
         for row in run.rows],
        f"Speed-up = float time / scheme time per repeat ({RATIO_METHOD}, "
        f"{spec.repeats} repeats: ratio [95% CI]). bound = 1/(1 − f), "
        "f the quantized layers' share of the float model's time, measured as the speed-up "
        "of the model with those layers free (zeros out): no scheme beats it, up to timing "
        "noise. estimate = Amdahl 1/(1 − f + f/S), an estimate, not a bound: prefill S = k, "
        "the part's own GEMMs timed alone; decode S = its weight bytes, float32 / int8 with "
        f"scales. Decode continues the T={lens[0]} prefill on its KV cache.")
