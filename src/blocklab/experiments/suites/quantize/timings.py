"""The `quantize` timing runs read back: per scheme its speed-ups, the bound no scheme can beat
and the Amdahl estimate (`scheme_rows`), for every stored timing run (`timed_runs`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from blocklab.config import ModelConfig
from blocklab.experiments.int8_records import SchemeTimes
from blocklab.experiments.suites.base import Results
from blocklab.experiments.suites.quantize.data import QuantTiming
from blocklab.experiments.suites.quantize.records import TimingRecord
from blocklab.experiments.summaries import TimeRatio


def scheme_rows(cfg: ModelConfig, seq_lens: Sequence[int], compiled: bool,
                times: SchemeTimes) -> list[QuantTiming]:
    """One QuantTiming per scheme timed on the model `cfg` (`measure_schemes`' `times` at
    `seq_lens`, compiled or not): speed-ups (`TimeRatio.paired`: the geometric mean of the
    per-repeat float / scheme ratios, Student t on their logs), the bound 1 / (1 − f)
    measured by the free-layers models and the Amdahl estimate (see
    `blocklab.experiments.int8_measurements`). Noise can time the free-layers model a little
    behind the float one: f is then 0 and the bound 1, the least it can be, and the estimate
    is kept at most the bound. Bounds and estimates are None for
    timings without the free-layers models."""
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
            prefill_s={t: list(prefill[t]) for t in lens},
            prefill_speedup={t: TimeRatio.paired(base_prefill[t], prefill[t]) for t in lens},
            decode_ms=1000 * statistics.median(times.decode_s[scheme]),
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
    """The timing runs of `results`, each decoded once and its schemes' speed-ups, bounds and
    estimates derived (`scheme_rows`)."""
    out = []
    for spec, result in results:
        if spec.arm == "timing":
            record = TimingRecord.of(result, spec.label)
            out.append(TimedRun(record, scheme_rows(record.config, record.spec.seq_lens,
                                                    record.spec.compile, record.times)))
    return out
