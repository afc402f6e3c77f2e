"""Suite machinery: resumable execution and the paired statistics, against hand values."""

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from blocklab.claims.sequential import recorded_rules
from blocklab.errors import Interrupted
from blocklab.experiments import suites
from blocklab.experiments.executors import ParallelExecutor
from blocklab.experiments.options import MAX_SEED_OFFSET, MAX_SEEDS, RunOptions, RunRequest
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites import base
from blocklab.experiments.summaries import Interval, Summary, load_summary

from ..conftest import ToyData, toy_suite


def test_mean_ci_by_hand_and_as_a_table_shows_it():
    stats = base.mean_ci([1.0, 2.0, 3.0])
    # mean 2, sd 1, half width t(2)·1/√3
    assert stats.mean == 2.0 and stats.sd == 1.0 and stats.n == 3
    # t_{0.975, 2} = 4.303 in printed tables (4.302653 to seven figures)
    assert stats.ci_high - 2.0 == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert base.mean_ci([]) == Interval(0)
    assert base.mean_ci([5.0]) == Interval(1, 5.0)
    # and as a table shows it
    assert base.format_ci(Interval(0)) == "—"
    assert base.format_ci(Interval(1, 0.5)) == "+0.500 (n=1)"
    assert base.format_ci(stats, 2).startswith("+2.00 [")
    assert base.format_level(stats, 2).startswith("2.00 [")


def test_paired_difference_drops_non_finite_pairs():
    stats = base.paired_difference([1.0, 2.0, float("nan"), 4.0], [0.5, 1.0, 1.0, None])
    assert stats.n == 2 and stats.mean == pytest.approx(0.75)
    with pytest.raises(ValueError, match="equal lengths"):
        base.paired_difference([1.0], [1.0, 2.0])


def _toy_suite(calls, fail_at=None):
    def before(arm, seed):
        if fail_at == (arm, seed):
            raise KeyboardInterrupt
        calls.append((arm, seed))

    return toy_suite(before)


def test_run_suite_resumes_after_interrupt(tmp_path):
    calls = []
    with pytest.raises(KeyboardInterrupt):
        base.run_suite(_toy_suite(calls, fail_at=("b", 1)), RunOptions("tiny", range(3)), tmp_path,
                       progress=False)
    done_before = list(calls)
    assert done_before == [("a", 0), ("a", 1), ("a", 2), ("b", 0)]
    calls.clear()
    summary = base.run_suite(_toy_suite(calls), RunOptions("tiny", range(3)), tmp_path,
                             progress=False)
    assert calls == [("b", 1), ("b", 2)]  # nothing finished is recomputed
    assert summary.data.diff.mean == 1.0 and summary.runs == 6
    stored = json.loads((tmp_path / "toy" / "tiny" / "summary.json").read_text())
    assert stored["tables"][0]["rows"][0][0].startswith("+1.000")
    assert load_summary(tmp_path, "toy", "tiny", ToyData) == summary


def _tuned_suite(calls, fail_tuning=False, grow=False):
    """A toy suite with a tuning stage: two candidate scales, picked on a tuning seed; the
    evaluation runs record the scale they were planned with. `grow`: a best scale at the
    grid's top edge (2.0) adds 3.0, once 1.0 and 2.0 are tuned."""
    def tune(options, tuned=()):
        scales = [1.0, 2.0]
        best = min(tuned, key=lambda p: p[1].extra["loss"])[0] if tuned else None
        if grow and best is not None and best.payload["scale"] == 2.0:
            scales.append(3.0)
        specs = []
        for scale in scales:
            def execute(progress, scale=scale):
                if fail_tuning and scale == 2.0:
                    raise RuntimeError("tuning run broke")
                calls.append(("tune", scale))
                return RunResult("ok", extra={"loss": abs(scale - 2.0)})  # 2.0 is best
            (seed,) = base.tuning_seeds(options, 1)
            specs.append(base.RunSpec(f"tune/{scale}", "tune", seed,
                                      {"scale": scale, "size": options.size, "seed": seed},
                                      execute))
        return specs

    def plan(options, tuned):
        # before tuning (the runs that read none of it are planned from this), scale 1.0
        best = (min(tuned, key=lambda pair: pair[1].extra["loss"])[0].payload["scale"] if tuned
                else 1.0)
        specs = []
        for seed in options.seeds:
            def execute(progress, seed=seed):
                calls.append(("eval", seed))
                return RunResult("ok", extra={"value": best * (seed + 1)})
            specs.append(base.RunSpec(f"eval/{seed}", "eval", seed,
                                      {"seed": seed, "scale": best}, execute))
        return specs

    def summarise(options, results):
        size, seeds = options.size, options.seeds
        kinds = [spec.arm for spec, _ in results if spec.arm != "probe"]
        tuning = kinds.count("tune")  # tuning results first
        assert tuning >= 2 and kinds == ["tune"] * tuning + ["eval"] * len(seeds)
        values = [r.extra["value"] for spec, r in results if spec.arm == "eval"]
        return Summary("tuned", size, len(seeds), [], data=ToyData(base.mean_ci(values)))

    return base.Suite("tuned", "tunes first", plan, summarise, ToyData, tune=tune)


def test_a_tuned_suite_plans_its_evaluation_from_stored_tuning_results(tmp_path):
    calls = []
    summary = base.run_suite(_tuned_suite(calls), RunOptions("tiny", range(2)), tmp_path,
                             progress=False)
    assert calls == [("tune", 1.0), ("tune", 2.0), ("eval", 0), ("eval", 1)]
    assert summary.data.diff.mean == 3.0  # values 2 and 4: planned at the best scale, 2.0
    assert (tmp_path / "tuned" / "tiny+tuning").is_dir()
    # A replication at another seed offset re-tunes on seeds of its own (the choice of rate is
    # part of what must replicate), in a folder of its own; the first offset's stay as stored.
    calls.clear()
    far = base.run_suite(_tuned_suite(calls), RunOptions("tiny", range(1000, 1000 + 2)),
                         tmp_path, progress=False)
    assert calls == [("tune", 1.0), ("tune", 2.0), ("eval", 1000), ("eval", 1001)]
    assert (tmp_path / "tuned" / "tiny+tuning+seeds1000").is_dir()
    assert far.first_seed == 1000 and far.seeds == 2
    assert load_summary(tmp_path, "tuned", "tiny", ToyData, seed_offset=1000) == far
    assert load_summary(tmp_path, "tuned", "tiny", ToyData) == summary
    assert base.tuning_seeds(RunOptions("tiny", range(2)), 2) == range(
        base.TUNING_SEEDS, base.TUNING_SEEDS + 2)
    assert base.tuning_seeds(RunOptions("tiny", range(1000, 1002)), 2) == range(
        base.TUNING_SEEDS + 1000, base.TUNING_SEEDS + 1002)
    assert base.TUNING_SEEDS > MAX_SEED_OFFSET + MAX_SEEDS  # beyond any evaluation seed


def test_the_tuning_and_evaluation_folders_record_the_rules_they_were_planned_under(tmp_path):
    """Both folders of a tuned suite record the rule hashes when first planned (the tuning
    chooses the lrs the rules' arms train at); a later plan never re-records them."""
    rules = {"C99 a part": "0123456789ab"}
    for seeds, planned_under in ((2, rules), (3, {"C99 a part": "ffffffffffff"})):
        base.run_suite(_tuned_suite([]), RunOptions("tiny", range(seeds)), tmp_path,
                       progress=False, rules=planned_under)
        for folder in ("tiny+tuning", "tiny"):
            path = tmp_path / "tuned" / folder / base.PLANNED_RULES
            assert json.loads(path.read_text()) == rules, (seeds, folder)


def test_a_bf16_request_records_the_rules_like_any_other():
    fp32 = recorded_rules(RunRequest(Path("r"), "quick"))
    assert fp32 and recorded_rules(RunRequest(Path("r"), "quick", precision="bf16")) == fp32


def test_a_grid_grown_at_an_edge_is_tuned_before_anything_is_evaluated(tmp_path):
    calls = []
    suite = _tuned_suite(calls, grow=True)
    summary = base.run_suite(suite, RunOptions.for_suite(suite, "tiny", 1), tmp_path,
                             progress=False)
    assert calls == [("tune", 1.0), ("tune", 2.0), ("tune", 3.0), ("eval", 0)]
    assert summary.data.diff.mean == 2.0  # 3.0's loss is 1.0: 2.0 stays best, now interior
    # a second process finds every tuning run, the grown one included, stored
    calls.clear()
    planned = base.plan_suite(suite, RunOptions.for_suite(suite, "tiny", 1), tmp_path)
    assert planned.stage == "evaluate" and not planned.missing and calls == []
    assert [spec.payload["scale"] for spec, _ in planned.tuned] == [1.0, 2.0, 3.0]


def test_bf16_runs_a_suite_that_takes_it_in_folders_of_its_own(tmp_path):
    calls, seen = [], []
    tuned = _tuned_suite(calls)
    suite_tune = tuned.tune

    def tune(options, tuned=()):
        seen.append(("tune", options.precision))
        return suite_tune(options, tuned)

    def plan(options, results):
        seen.append(("plan", options.precision))
        return tuned.plan(options, results)

    suite = dataclasses.replace(tuned, tune=tune, plan=plan, precisions=("fp32", "bf16"))
    summary = base.run_suite(suite, RunOptions.for_suite(suite, "tiny", 1, precision="bf16"),
                             tmp_path, progress=False)
    # tuning planned (with the evaluation runs that read no tuning), then asked again with the
    # results (nothing grows), then evaluated; every call in bf16
    assert seen[0] == ("tune", "bf16") and seen[-1] == ("plan", "bf16")
    assert set(seen) == {("tune", "bf16"), ("plan", "bf16")}
    assert (tmp_path / "tuned" / "tiny+tuning+bf16").is_dir()
    assert (tmp_path / "tuned" / "tiny+bf16" / "summary.json").is_file()
    assert any("every model trained in bf16" in note for note in summary.notes)
    assert load_summary(tmp_path, "tuned", "tiny", ToyData, precision="bf16") == summary
    assert load_summary(tmp_path, "tuned", "tiny", ToyData) is None  # float32 never ran


def test_a_failed_tuning_run_names_itself_and_nothing_is_evaluated(tmp_path):
    calls = []
    with pytest.raises(base.SuiteIncomplete, match=r"tune/2.0 \(RuntimeError: tuning run broke"):
        base.run_suite(_tuned_suite(calls, fail_tuning=True), RunOptions("tiny", range(2)),
                       tmp_path, progress=False, executor=ParallelExecutor(2))
    assert ("eval", 0) not in calls


def test_run_suites_evaluates_a_tuned_suite_in_a_second_round(tmp_path, monkeypatch):
    calls = []
    toy = {"tuned": _tuned_suite(calls), "toy": _toy_suite(calls)}
    monkeypatch.setattr(suites, "get_suite", toy.__getitem__)
    rounds = []

    def executor(specs, store, progress):
        rounds.append(sorted(spec.label for spec in specs))
        return base.execute_in_process(specs, store, progress)

    errors = suites.run_suites(RunRequest(tmp_path, "tiny"), ["tuned", "toy"],
                               executor=executor, progress=False, echo=lambda line: None)
    assert errors == {}
    assert rounds == [["a/0", "b/0", "tune/1.0", "tune/2.0"], ["eval/0"]]  # one default seed
    assert load_summary(tmp_path, "tuned", "tiny", ToyData).data.diff.mean == 2.0


@dataclass(frozen=True)
class OtherData:
    diff: Interval


def test_run_suite_refuses_a_summary_whose_data_is_not_the_suites_data_type(tmp_path):
    """A summary of another type is a bug in the suite: nothing is written that readers, who
    decode the stored data as `Suite.data_type`, could not read back."""
    suite = dataclasses.replace(_toy_suite([]), data_type=OtherData)
    with pytest.raises(RuntimeError, match=r"suite toy: summarise returned data of type "
                                           r"ToyData, not its data_type OtherData"):
        base.run_suite(suite, RunOptions("tiny", range(1)), tmp_path, progress=False)
    assert not (tmp_path / "toy" / "tiny" / "summary.json").exists()


def test_a_suite_is_checked_where_it_is_defined_and_names_its_place_in_the_report():
    toy = _toy_suite([])
    # one that names no section gets a section of its own, headed by its name
    assert (toy.section, toy.heading, toy.figures) == ("toy", ("toy", "toy"), ())
    with pytest.raises(TypeError, match=r"suite toy: data_type must be a dataclass, got "
                                        r"<class 'dict'>"):
        dataclasses.replace(toy, data_type=dict)
    with pytest.raises(ValueError, match=r"suite toy: section 'Toy results' is not a page "
                                         r"anchor"):
        dataclasses.replace(toy, section="Toy results")


def test_a_run_file_overwritten_with_another_runs_result_is_run_again(tmp_path, capsys):
    """The bug: a/0's file holding b/0's result was reused as a/0, silently."""
    options = RunOptions("tiny", range(2))
    base.run_suite(_toy_suite([]), options, tmp_path, progress=False)
    ids = {spec.label: spec.run_id for spec in _toy_suite([]).plan(options, [])}
    folder = tmp_path / "toy" / "tiny"
    target = folder / f"{ids['a/0']}.json"
    target.write_bytes((folder / f"{ids['b/0']}.json").read_bytes())
    capsys.readouterr()
    calls = []
    summary = base.run_suite(_toy_suite(calls), options, tmp_path, progress=False)
    assert calls == [("a", 0)]
    assert summary.data.diff.mean == 1.0  # b/0's value read as a/0's would make it 0.5
    why = f"{target} did not match its name: it holds the result of run {ids['b/0']}"
    assert capsys.readouterr().err.splitlines() == [f"{why}; it is run again"]
    assert f"1 stored run file(s) were damaged and were run again: {why}" in summary.notes
    assert "3 of 4 runs were already stored" in summary.notes[0]


def _tuned_suite_with_a_probe(calls, stop_at_eval=False):
    """`_tuned_suite` with a probe that reads no tuning (it runs beside the tuning runs)."""
    suite = _tuned_suite(calls)

    def plan(options, tuned):
        def probe(progress):
            calls.append(("probe", 0))
            return RunResult("ok", extra={"value": 0.0})

        evals = suite.plan(options, tuned)
        if stop_at_eval:
            evals = [dataclasses.replace(spec, execute=_interrupt) for spec in evals]
        return [*evals, base.RunSpec("probe", "probe", 0, {"probe": 1}, probe,
                                     reads_tuning=False)]

    return dataclasses.replace(suite, plan=plan)


def _interrupt(progress):
    raise KeyboardInterrupt


def test_runs_that_read_no_tuning_run_beside_the_tuning_runs_are_counted_stored_once(tmp_path):
    """The bug: a run made beside the tuning runs was counted "already stored" once the
    evaluation was planned after them ("24 of 28 runs were already stored" from a command
    that had run all 28)."""
    calls = []
    suite = _tuned_suite_with_a_probe(calls)
    options = RunOptions("tiny", range(1))
    first = base.plan_suite(suite, options, tmp_path)
    assert first.stage == "tune" and [s.label for s in first.early] == ["probe"]
    assert first.early_store.root == tmp_path / "tuned" / "tiny"

    def stored_note(summary: Summary) -> str:
        return summary.notes[0].split(";")[0]

    ran = base.run_suite(suite, options, tmp_path, progress=False)
    # the probe ran in the first round, with the tuning runs, and was not run again
    assert calls == [("tune", 1.0), ("tune", 2.0), ("probe", 0), ("eval", 0)]
    assert stored_note(ran) == "0 of 2 runs were already stored"
    assert base.plan_suite(suite, options, tmp_path).missing == []
    again = base.run_suite(_tuned_suite_with_a_probe([]), options, tmp_path, progress=False)
    assert stored_note(again) == "2 of 2 runs were already stored"

    # killed after the tuning round: the probe stored, the evaluation run not
    other = tmp_path / "killed"
    with pytest.raises(Interrupted):
        base.run_suite(_tuned_suite_with_a_probe([], stop_at_eval=True), options, other,
                       progress=False)
    calls = []
    rerun = base.run_suite(_tuned_suite_with_a_probe(calls), options, other, progress=False)
    assert calls == [("eval", 0)]
    assert stored_note(rerun) == "1 of 2 runs were already stored"
