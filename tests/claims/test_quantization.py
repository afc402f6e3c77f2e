"""C32 and C33 verdicts from synthetic quantize summaries."""

import dataclasses

from blocklab.claims.quantization import c32_parts, combine_c32, swiglu_exactness
from blocklab.experiments.summaries import (
    Interval,
    QuantizeData,
    QuantTiming,
)


def _timing(scheme, speedup, n=5):
    part, mode = ("none", "none") if scheme == "none" else scheme.split("/")
    iv = Interval(n, speedup, speedup - 0.05, speedup + 0.05, 0.05)
    return QuantTiming(scheme=scheme, part=part, mode=mode, compiled=False,
                       prefill_ms={"512": 100 / speedup}, prefill_speedup={"512": iv},
                       decode_ms=1.0, decode_speedup=iv, logits_error=0.01,
                       flop_share={"512": 0.6}, time_share={"512": 0.5},
                       gemm_speedup={"512": 2.0}, prefill_estimate={"512": 1 / (0.5 + 0.25)},
                       prefill_bound={"512": 2.0}, decode_time_share=0.5,
                       decode_estimate=1.6, decode_bound=2.0, compile_s=None)


def _data(ffn, attn, n=5, int8=True):
    return QuantizeData(model={"d_model": 1024, "n_layers": 2}, seq_lens=[512],
                        decode_context=512, repeats=n, threads=1, cpu_flags={"amx_int8": int8},
                        timings=[_timing("none", 1.0, n), _timing("ffn/dynamic", ffn, n),
                                 _timing("attention/dynamic", attn, n)],
                        quality_model={}, quality=[], swiglu=[], merged_per_row_max_diff=0.0,
                        merged_per_tensor_max_diff=0.01, merged_scale_over_max=[1.0])


def test_c32_confirmed_when_ffn_is_faster_and_fastest():
    parts, numbers = c32_parts(_data(1.8, 1.2))
    assert [p.verdict for p in parts] == ["confirmed", "confirmed"]
    assert combine_c32(*parts) == "confirmed"
    assert numbers["ffn_flop_share"] == 0.6 and numbers["ffn_time_share"] == 0.5
    assert numbers["bound_ffn"] == 2.0 and numbers["estimate_ffn"] == 1 / (0.5 + 0.25)


def test_c32_slower_is_never_refuted():
    parts, _ = c32_parts(_data(0.3, 0.4))
    assert combine_c32(*parts) == "not-reproduced-at-this-scale"  # one T: no contradiction
    assert all(p.verdict != "refuted" for p in parts)


def test_c32_without_int8_instructions_is_untestable_and_never_contradicted(tmp_path):
    import json

    from blocklab.claims import Context, run_claims
    from blocklab.experiments.summaries import Summary

    data = _data(0.3, 0.4, int8=False)
    parts, _ = c32_parts(data)
    assert all(p.verdict == "not-reproduced-at-this-scale" for p in parts)
    folder = tmp_path / "quantize" / "quick"
    folder.mkdir(parents=True)
    summary = Summary("quantize", "quick", 5, [], data=data)
    (folder / "summary.json").write_text(json.dumps(summary.to_dict()), encoding="utf-8")
    row = run_claims(["C32"], Context(tmp_path, "quick"))[0]
    assert row.error is None and row.verdict == "untestable-here"
    assert "no VNNI/AMX int8" in row.summary
    # the text says which figure is a bound and which an estimate
    assert "the bound no FFN-only scheme can beat" in row.summary
    assert "estimates FFN-only at ×1.33" in row.summary


def test_c32_too_few_repeats_inconclusive():
    parts, _ = c32_parts(_data(1.8, 1.2, n=2))
    assert parts[0].verdict == "inconclusive" and "needs at least 3" in parts[0].reason


def test_c33_probe():
    probe = swiglu_exactness()
    assert probe["per_row_identical"]
    assert probe["merged_scale"] == probe["max_of_scales"]
    assert probe["per_tensor_up_error_merged"] > probe["per_tensor_up_error_separate"]
    assert dataclasses.is_dataclass(_data(1, 1))
