"""Typed summaries: every field is checked when a summary is read, and a bad one fails loudly."""

import dataclasses
import json
import re

import pytest

from blocklab.errors import InputError, ResultsError
from blocklab.experiments import summaries
from blocklab.experiments.options import ALL_SIZES
from blocklab.experiments.suites import SUITE_MODULES, load_summary
from blocklab.experiments.suites.ffn.summary import FfnArm, FfnData, FfnSensitivity, FfnTrendPoint
from blocklab.experiments.suites.position.summary import PositionArm
from blocklab.experiments.summaries import SUMMARY_SCHEMA, Interval, LrTrial, Summary, Table
from blocklab.jsonio import decode
from blocklab.precision import PRECISIONS

from .conftest import ToyData


def _arm(**changes) -> FfnArm:
    ci = Interval(2, 3.0, 2.9, 3.1, 0.01)
    arm = FfnArm(gated=True, activation="silu", d_ff=171, params=1000, val_loss=ci,
                 val_bpb=Interval(0), delta_vs_relu=ci, rel_delta_pct=Interval(1, -1.0),
                 ms_per_step=None, ms_per_step_train=2.0, val_loss_equal_time=ci,
                 delta_vs_relu_equal_time=ci, equal_time_step=12.5, status={"ok": 2},
                 counted=2, zero_grad_fraction={"init": 0.0, "final": None}, lr=3e-3)
    return dataclasses.replace(arm, **changes)


def _ffn_summary() -> Summary:
    data = FfnData(arms={"swiglu": _arm()}, seeds=2, steps=10, init="fan_in",
                   lr_grid=[1e-3, 3e-3], lr_trials=[LrTrial("swiglu", 1e-3, 7, "ok", 3.2, 64)],
                   lr_at_edge=["swiglu"], sensitivity=FfnSensitivity(
                       "gpt2", 3e-3, {"swiglu": Interval(0)}, {"swiglu": Interval(1, 2.0)}),
                   trend=[FfnTrendPoint(32, 1000, Interval(0), {"relu": 1e-2})],
                   trend_change=Interval(0), warmup_steps=2,
                   unigram_entropy=4.0, baseline="relu", page={"swiglu": (1.0, 2.0)},
                   equal_time_ms=None, size={"d_model": 64})
    return Summary("ffn", "quick", 2, [Table("t", ["a"], [[1, None, "x"]], "c")], ["n"], data,
                   runs=4, wall_time_s=1.5)


def _write(tmp_path, doc) -> None:
    folder = tmp_path / "ffn" / "quick"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(doc))


def test_save_summary_writes_what_load_summary_reads_back_equal_and_typed(tmp_path):
    summary = _ffn_summary()
    path = summaries.save_summary(tmp_path / "ffn" / "quick", summary)
    assert path == tmp_path / "ffn" / "quick" / "summary.json"
    back = load_summary(tmp_path, "ffn", "quick")
    assert back == summary  # typed: an Interval is no dict, a tuple (page) no list
    assert not [p for p in path.parent.iterdir() if p.name != "summary.json"]  # no temp left
    broken = dataclasses.replace(summary, data=dataclasses.replace(
        summary.data, arms={"swiglu": _arm(lr=float("nan"))}))  # NaN is written as null
    with pytest.raises(RuntimeError, match=r"suite ffn wrote a summary that does not read "
                                           r"back: .*lr: expected float, found None"):
        summaries.save_summary(tmp_path / "ffn" / "quick", broken)
    assert load_summary(tmp_path, "ffn", "quick") == summary  # the good one is kept
    # machines and kernels came after SUMMARY_SCHEMA 11: a summary stored before them reads
    # as one whose runs were not mixed
    doc = summary.to_dict()
    del doc["machines"], doc["kernels"]
    _write(tmp_path, doc)
    assert load_summary(tmp_path, "ffn", "quick") == summary


@pytest.mark.parametrize("change, message", [
    (lambda d: d["data"]["arms"]["swiglu"].pop("delta_vs_relu"), r"missing \['delta_vs_relu'\]"),
    (lambda d: d["data"]["arms"]["swiglu"].update(delta_vs_ReLU=1), r"unknown \['delta_vs_ReLU'\]"),
    (lambda d: d["data"]["arms"]["swiglu"]["val_loss"].update(mean="3.0"),
     r"data\.arms\.swiglu\.val_loss\.mean: expected float \| None, found '3\.0'"),
    (lambda d: d["data"].update(seeds=2.0), r"data\.seeds: expected int, found 2\.0"),
    (lambda d: d["data"].update(seeds=True), r"data\.seeds: expected int, found True"),
    (lambda d: d["data"]["arms"]["swiglu"].update(gated=1), r"gated: expected bool, found 1"),
    (lambda d: d.update(schema=SUMMARY_SCHEMA - 1), rf"summary schema {SUMMARY_SCHEMA - 1}"),
    (lambda d: d.update(suite="ffn2"), r"holds suite 'ffn2' at size 'quick'"),
    (lambda d: d.update(size="full"), r"at size 'full' from seed 0, not 'ffn' at 'quick'"),
    (lambda d: d["data"].update(page={"swiglu": [1.0]}), r"data\.page\.swiglu: expected"),
])
def test_a_field_that_does_not_match_fails_naming_it(tmp_path, change, message):
    doc = _ffn_summary().to_dict()
    change(doc)
    _write(tmp_path, doc)
    with pytest.raises(ResultsError, match=message) as err:
        load_summary(tmp_path, "ffn", "quick")
    assert "blocklab suite ffn --size quick" in str(err.value)  # and says how to rewrite it
    assert "\n" not in str(err.value)


def test_unions_take_the_member_that_fits():
    arm = {"loss_at_L": {"n": 0, "mean": None, "ci_low": None, "ci_high": None, "sd": None},
           "loss_beyond_L": {"2": "unavailable (table)",
                             "4": {"n": 1, "mean": 2.0, "ci_low": None, "ci_high": None,
                                   "sd": None}},
           "sliding": {"2": None}, "extrapolated_minus_sliding": {},
           "extrapolated_vs_sliding_pct": {}, "per_position": {"1": None,
                                                               "2": {"bucket": 4, "loss": [1]}},
           "passkey": None}
    read = decode(PositionArm, arm)
    assert read.loss_beyond_L["2"] == "unavailable (table)"
    assert read.loss_beyond_L["4"] == Interval(1, 2.0)
    assert read.per_position["2"].loss == [1.0]
    with pytest.raises(ResultsError, match=r"loss_beyond_L\.2: expected"):
        decode(PositionArm, {**arm, "loss_beyond_L": {"2": 7}})


def test_summary_from_dict_with_an_explicit_type_and_a_valid_key_not_run_is_none(tmp_path):
    doc = Summary("toy", "tiny", 1, [], data=ToyData(Interval(1, 0.5))).to_dict()
    assert summaries.summary_from_dict(doc, "summary", ToyData).data.diff.mean == 0.5
    with pytest.raises(ResultsError, match=r"summary\.data: FfnData fields differ \(missing "
                                           r"\['arms', .*unknown \['diff'\]\)"):
        summaries.summary_from_dict(doc, "summary", FfnData)  # the type asked for decides
    assert load_summary(tmp_path, "ffn", "tiny", precision="bf16") is None
    assert load_summary(tmp_path / "no-such-folder", "quantize", "full") is None
    assert summaries.load_summary(tmp_path, "toy", "tiny", FfnData) is None


@pytest.mark.parametrize("suite, size, precision, needle", [
    ("attention", "quick", "fp32", "unknown suite 'attention'; allowed: "),
    ("FFN", "quick", "fp32", "unknown suite 'FFN'; allowed: "),
    ("ffn", "bogus", "fp32", "size 'bogus'"),
    ("ffn", "quick+tuning", "fp32", "size 'quick+tuning'"),
    ("ffn", "quick", "fp16", "precision='fp16'"),
])
def test_load_summary_refuses_what_no_summary_can_have(tmp_path, suite, size, precision,
                                                       needle):
    """An unknown suite, size or precision is the caller's mistake, not "not run yet"."""
    allowed = {"suite": list(SUITE_MODULES), "size": list(ALL_SIZES),
               "precision": list(PRECISIONS)}[re.search("suite|size|precision", needle)[0]]
    with pytest.raises(InputError) as err:
        load_summary(tmp_path, suite, size, precision=precision)
    assert needle in str(err.value) and str(allowed) in str(err.value)
    assert not isinstance(err.value, ResultsError)
    # an explicit data type takes any plain suite name, but no path
    with pytest.raises(InputError, match=r"suite '\.\./ffn' is not allowed"):
        summaries.load_summary(tmp_path, "../ffn", "tiny", FfnData)


def test_a_summary_whose_runs_are_gone_is_incomplete(tmp_path):
    """`incomplete`: the one rule by which the ledger and the report refuse a summary whose
    stored runs are missing or unreadable."""
    summary = dataclasses.replace(_ffn_summary(), run_ids=["aaa", "bbb"])
    _write(tmp_path, summary.to_dict())
    folder = tmp_path / "ffn" / "quick"
    for run_id in summary.run_ids:
        (folder / f"{run_id}.json").write_text(json.dumps({"status": "ok"}))
    back = load_summary(tmp_path, "ffn", "quick")
    assert summaries.incomplete(tmp_path, back) is None
    (folder / "bbb.json").write_text("{truncated")
    reason = summaries.incomplete(tmp_path, back)
    assert ("a run of the stored summary is missing or unreadable (1 of 2, first bbb.json, "
            "damaged: malformed JSON: ") in reason
    assert f"`blocklab suite ffn --size quick --results {tmp_path}`" in reason
    assert summaries.incomplete(tmp_path, dataclasses.replace(back, run_ids=[])) is None
    with pytest.raises(ResultsError, match="not a plain file name"):
        summaries.incomplete(tmp_path, dataclasses.replace(back, run_ids=["../x"]))


def test_only_tiny_has_a_size_note():
    note = summaries.size_note("tiny")
    assert "smoke test" in note and "decide nothing" in note
    assert "冒烟测试" in summaries.size_note("tiny", "zh")
    assert summaries.size_note("quick") is None and summaries.size_note("full") is None
