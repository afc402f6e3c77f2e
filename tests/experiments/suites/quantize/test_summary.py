"""The quantize suite at tiny size end to end: its summary, the stored records read back, and C33
graded on it."""

from blocklab.claims import Context, run_claims
from blocklab.experiments.options import RunOptions, RunRequest
from blocklab.experiments.results import ResultStore
from blocklab.experiments.suites import run_suite
from blocklab.experiments.suites.quantize import SUITE
from blocklab.experiments.suites.quantize.runs import SIZES, QualityRecord
from blocklab.experiments.suites.quantize.summary import QuantizeData
from blocklab.experiments.suites.quantize.timing import TimingRecord
from blocklab.jsonio import decode


def test_tiny_suite_runs_and_summarises(tmp_path):
    options = RunOptions.for_suite(SUITE, "tiny")
    summary = run_suite(SUITE, options, tmp_path, progress=True)  # as `blocklab suite` runs it
    assert isinstance(summary.data, QuantizeData)
    schemes = {t.scheme for t in summary.data.timings}
    assert schemes == {"none", "ffn/weight-only", "attention/weight-only", "all/weight-only",
                       "ffn/dynamic", "attention/dynamic", "all/dynamic"}
    data = summary.data
    # C33 from the trained weights: every layer of every seed compared, per row exactly equal
    layers = data.quality_model["n_layers"] * summary.seeds
    assert len(data.gate_up_scale_ratio) == layers and all(r >= 1.0 for r in
                                                           data.gate_up_scale_ratio)
    assert data.merged_per_row_max_diff == 0.0
    assert all(r == 1.0 for r in data.merged_scale_over_max)
    assert data.merged_tensor_loss_penalty.n == summary.seeds
    assert any(t.title.startswith("C33: gate's and up's") for t in summary.tables)
    # the stored runs read back as their records: the timing's per-scheme compile times (a
    # trainer field's name) included, the quality run's training and C33 layers
    store = ResultStore(tmp_path / "quantize" / "tiny")
    (timing, quality) = (spec for spec in SUITE.plan(options, []))
    record = TimingRecord.of(store.load(timing.run_id), timing.label)
    assert record.spec == SIZES["tiny"].timing[0] and record.times.threads == 1
    assert set(record.times.compile_s) == schemes | {"free/ffn", "free/attention", "free/all"}
    assert all(s is None for s in record.times.compile_s.values())  # eager: nothing compiled
    trained = decode(QualityRecord, store.load(quality.run_id).extra, quality.label)
    assert trained.train.steps_done == SIZES["tiny"].quality.steps
    assert len(trained.layers) == data.quality_model["n_layers"]
    assert trained.quality["none"].delta == 0.0
    (c33,) = run_claims(["C33"], Context(RunRequest(tmp_path, "tiny")))
    assert c33.error is None
    exact = c33.parts[0]
    assert exact.verdict == "confirmed" and exact.estimate.n == layers
