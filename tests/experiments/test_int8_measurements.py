"""The bound and the estimate of `blocklab quantize`, derived by hand and checked against
measurements.

Amdahl: a scheme changes only the linear layers it quantizes, a share f of the float model's
time, and runs them S× faster, so the whole runs 1 / ((1 − f) + f/S)× faster. With S → ∞ (the
layers free) that is 1 / (1 − f), a bound no scheme can beat; with S = k (the GEMMs timed alone)
or S = the weight bytes ratio (decode), S is not an upper bound of the layers' speed-up, so the
result is an estimate.
"""

import math

import pytest
import torch

from blocklab.config import ModelConfig
from blocklab.errors import InputError, ResultsError
from blocklab.experiments.int8_measurements import (
    FreeLinear,
    amdahl_parts,
    measure_schemes,
    part_bytes_ratio,
    without_part,
)
from blocklab.experiments.int8_records import SchemeTimes
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.quantize.timing import TimedShape, TimingRecord, scheme_rows
from blocklab.nn import DecoderLM

# Measured speed-ups may exceed the measured bound by this factor before the test fails: on a
# shared 2-core machine a millisecond-long prefill moves by tens of percent between calls.
TOLERANCE = 1.5


def amdahl(share: float, k: float) -> float:
    return amdahl_parts([(share, k)])


def test_amdahl_by_hand():
    assert amdahl(0.5, 2.0) == 1 / (0.5 + 0.25)
    assert amdahl(1.0, 3.0) == 3.0 and amdahl(0.0, 10.0) == 1.0
    assert amdahl(0.5, math.inf) == 2.0  # the layers free: 1 / (1 − f)
    assert amdahl(0.4, 0.5) == 1 / (0.6 + 0.8)  # slower layers, slower whole
    assert amdahl_parts([(0.3, 2.0), (0.2, 4.0)]) == pytest.approx(1 / (0.5 + 0.15 + 0.05))
    assert amdahl_parts([(0.3, math.inf), (0.2, math.inf)]) == pytest.approx(2.0)
    assert amdahl(1.0, math.inf) == math.inf
    for k in (0.5, 1.0, 2.0, 100.0):  # every finite S stays below the bound
        assert amdahl(0.4, k) < amdahl(0.4, math.inf)
    with pytest.raises(InputError):
        amdahl_parts([(0.7, 2.0), (0.5, 2.0)])  # shares summing past 1


def _cfg():
    return ModelConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2, d_ff=32,
                       ffn="swiglu", max_seq_len=16)


def _times(free=True):
    """Timings in seconds chosen by hand (two repeats, T = 8)."""
    return SchemeTimes(
        prefill_s={"none": {"8": [10.0, 12.0]}, "ffn/dynamic": {"8": [8.0, 9.6]},
                   "all/dynamic": {"8": [7.0, 8.4]}},
        decode_s={"none": [1.0, 1.0], "ffn/dynamic": [0.8, 0.8], "all/dynamic": [0.9, 0.9]},
        # ffn free: 10 → 6 (f = 0.4); attention free: 10 → 8 (f = 0.2); both: 10 → 4 (f = 0.6)
        free_prefill_s={"ffn": {"8": [6.0, 7.2]}, "attention": {"8": [8.0, 9.6]},
                        "all": {"8": [4.0, 4.8]}} if free else None,
        free_decode_s={"ffn": [0.5, 0.5], "attention": [0.9, 0.9],
                       "all": [0.4, 0.4]} if free else None,
        gemm_s={"none/ffn": {"8": [2.0]}, "ffn/dynamic": {"8": [1.0]},
                "none/attention": {"8": [1.0]}, "attention/dynamic": {"8": [0.5]}},
        logits_error={}, compile_s={}, threads=1)


def _rows(times):
    return scheme_rows(_cfg(), [8], False, times)


def test_bound_and_estimate_from_timings_by_hand():
    rows = {r.scheme: r for r in _rows(_times())}
    ffn = rows["ffn/dynamic"]
    assert ffn.time_share["8"] == pytest.approx(0.4)
    assert ffn.prefill_bound["8"] == pytest.approx(1 / (1 - 0.4))  # 10/6
    assert ffn.gemm_speedup["8"] == 2.0
    assert ffn.prefill_estimate["8"] == pytest.approx(1 / (0.6 + 0.4 / 2))  # 1.25
    # 10/8 and 12/9.6: both repeats 1.25, so the geometric mean and its interval are 1.25
    speed = ffn.prefill_speedup["8"]
    assert (speed.ratio, speed.ci_low, speed.ci_high) == pytest.approx((1.25, 1.25, 1.25))
    assert ffn.prefill_s["8"] == [8.0, 9.6] and speed.repeats == 2
    assert ffn.flop_share["8"] != ffn.time_share["8"]  # FLOPs are not time
    # decode: f = 0.5, S = float32 bytes / (int8 bytes + a float32 scale per row)
    d, m = 16, 32
    weights, rows_ = 3 * d * m, 2 * m + d
    s = 4 * weights / (weights + 4 * rows_)
    assert part_bytes_ratio(_cfg(), "ffn") == pytest.approx(s)
    assert ffn.decode_time_share == pytest.approx(0.5) and ffn.decode_bound == pytest.approx(2)
    assert ffn.decode_estimate == pytest.approx(1 / (0.5 + 0.5 / s))
    both = rows["all/dynamic"]  # f_ffn = 0.4 at k = 2, f_attention = 0.2 at k = 2
    assert both.prefill_bound["8"] == pytest.approx(2.5)
    assert both.prefill_estimate["8"] == pytest.approx(1 / (0.4 + 0.4 / 2 + 0.2 / 2))
    none = rows["none"]
    assert (none.prefill_bound["8"], none.prefill_estimate["8"], none.decode_bound) == (1, 1, 1)
    # noise below one keeps the estimate under the bound; old results have none
    times = _times()
    times.free_prefill_s["ffn"]["8"] = [11.0, 13.2]  # the free model a little slower: noise
    ffn = next(r for r in _rows(times) if r.scheme == "ffn/dynamic")
    assert ffn.time_share["8"] == 0.0
    assert ffn.prefill_bound["8"] == 1.0 and ffn.prefill_estimate["8"] == 1.0
    old = next(r for r in _rows(_times(free=False)) if r.scheme == "ffn/dynamic")
    assert old.prefill_bound == {"8": None} and old.decode_estimate is None


def test_the_json_form_reads_back_as_the_same_timings():
    """A stored timing record reads back as the same timings; a record made before the
    free-layers timings lacks their keys; a wrong value is named."""
    shape = TimedShape(16, 1, 2, 32, (8,), decode_steps=1, repeats=2, compile=False)
    doc = TimingRecord(_cfg().to_dict(), shape, {}, _times()).extra()

    def read(extra):
        return TimingRecord.of(RunResult("ok", extra=extra), "timing").times

    assert read(doc) == _times()
    old = {k: v for k, v in doc.items() if not k.startswith("free_")}
    assert read(old) == _times(free=False)
    with pytest.raises(ResultsError, match=r"decode_s\.none"):
        read({**doc, "decode_s": {"none": "fast"}})


def test_without_part_frees_only_that_part():
    torch.manual_seed(0)
    model = DecoderLM(_cfg()).eval()
    free = without_part(model, "ffn")
    layer = free.layers[0]
    assert all(isinstance(getattr(layer.ffn, n), FreeLinear)
               for n in ("gate_proj", "up_proj", "down_proj"))
    assert not isinstance(layer.attention.q_proj, FreeLinear)
    assert not isinstance(model.layers[0].ffn.gate_proj, FreeLinear)  # a copy
    ids = torch.randint(0, 32, (1, 8))
    with torch.no_grad():
        assert free(ids).shape == model(ids).shape


def test_measured_speedups_respect_the_bound(d_model=256, seq_len=64):
    """Every scheme's speed-up, from the fastest of its timings (noise only adds time), stays
    under the free-layers bound times TOLERANCE; the estimate is reported as such and, by
    construction, never above the bound."""
    cfg = ModelConfig(vocab_size=256, d_model=d_model, n_layers=1, n_heads=d_model // 32,
                      ffn="swiglu", max_seq_len=seq_len + 8)
    measured = measure_schemes(cfg, seq_lens=[seq_len], repeats=5, threads=1)
    t = str(seq_len)
    fastest = {name: min(times[t]) for name, times in measured.prefill_s.items()}
    free = {part: min(times[t]) for part, times in measured.free_prefill_s.items()}
    fastest_decode = {name: min(times) for name, times in measured.decode_s.items()}
    free_decode = {part: min(times) for part, times in measured.free_decode_s.items()}
    for name in fastest:
        if name == "none":
            continue
        part = name.split("/")[0]
        speedup, bound = fastest["none"] / fastest[name], fastest["none"] / free[part]
        assert speedup <= TOLERANCE * bound, (name, speedup, bound)
        speedup = fastest_decode["none"] / fastest_decode[name]
        bound = fastest_decode["none"] / free_decode[part]
        assert speedup <= TOLERANCE * bound, (name, "decode", speedup, bound)
    rows = scheme_rows(cfg, [seq_len], False, measured)
    for row in rows:
        assert row.prefill_estimate[t] <= row.prefill_bound[t] and row.prefill_bound[t] >= 1.0
        assert row.decode_estimate <= row.decode_bound and row.decode_bound >= 1.0
        assert 0.0 <= row.time_share[t] <= 1.0
