"""RunResult: a training run's result and a timing's round-trip through their stored JSON; what
`from_dict` refuses, naming where; files stored before the type existed read the same."""

import dataclasses
import json

import pytest

from blocklab.errors import ResultsError
from blocklab.experiments import trainer
from blocklab.experiments.results import ResultStore
from blocklab.experiments.run_result import (
    Curves,
    FinalMetrics,
    LayerGradNorms,
    ResidualRms,
    RunLabel,
    RunResult,
)

from .suites.conftest import stored

# The keys a training run's result is stored with, in the order the trainer writes them.
TRAINER_KEYS = ["run_id", "status", "reason", "model_config", "train_config", "data",
                "environment", "curves", "final", "steps_done", "wall_time_s", "train_time_s",
                "compile_s", "final_eval_s", "backends", "ms_per_step", "tokens_per_s"]
STAMPS = ["provenance", "run", "machine_load"]


@pytest.fixture(scope="module")
def trained(tiny_model, tiny_train) -> RunResult:
    return trainer.run(tiny_model, tiny_train.replace(steps=4, eval_every=2))


def _stamped(result: RunResult) -> RunResult:
    return dataclasses.replace(result, provenance={"torch": "2.x", "source_sha256": "0" * 64},
                               run=RunLabel("relu/0", "relu", 0),
                               machine_load={"others_cpu_share": 0.1, "loadavg_1min": 0.5,
                                             "cores": 2})


# --- round trips --------------------------------------------------------------------------------
def test_a_training_result_round_trips_with_the_trainers_keys_in_order(trained):
    assert trained.status == "ok" and trained.trained and trained.extra == {}
    assert isinstance(trained.final, FinalMetrics) and isinstance(trained.curves, Curves)
    assert isinstance(trained.curves.layer_grad_norms, LayerGradNorms)
    assert isinstance(trained.curves.residual_rms, ResidualRms)
    assert list(trained.to_dict()) == TRAINER_KEYS
    assert stored(trained) == trained
    # a suite's keys follow the trainer's, the stamps every stored run carries come last
    stamped = _stamped(dataclasses.replace(trained, extra={"zero_grad_fraction": 0.25}))
    assert list(stamped.to_dict()) == [*TRAINER_KEYS, "zero_grad_fraction", *STAMPS]
    back = stored(stamped)
    assert back == stamped and back.extra == {"zero_grad_fraction": 0.25}
    assert back.run == RunLabel("relu/0", "relu", 0)
    # evaluation errors are stored only when there are some
    assert trained.final.eval_errors is None
    assert "eval_errors" not in trained.to_dict()["final"]
    errors = {"64": "position 64 is past max_seq_len 32"}
    failed = dataclasses.replace(trained, final=dataclasses.replace(trained.final,
                                                                    eval_errors=errors))
    assert failed.to_dict()["final"]["eval_errors"] == errors
    assert stored(failed).final.eval_errors == errors


def test_a_timing_round_trips_with_its_keys_after_status():
    timing = _stamped(RunResult("ok", wall_time_s=0.5,
                                extra={"impls": {"rmsnorm:eager": {"fwd_s": [0.1, 0.2]}},
                                       "threads": 2}))
    assert not timing.trained and timing.final is None and timing.curves is None
    assert list(timing.to_dict()) == ["status", "wall_time_s", "impls", "threads", *STAMPS]
    assert stored(timing) == timing
    bare = RunResult("ok", extra={"value": 1.0})
    assert bare.to_dict() == {"status": "ok", "value": 1.0}
    assert stored(bare) == bare
    # a suite key named like a field but not of its type stays the suite's
    doc = {"status": "ok", "ms_per_step": {"rmsnorm": 1.5, "layernorm": 1.75},
           "steps_done": True}
    timing = RunResult.from_dict(doc)
    assert timing.ms_per_step is None and timing.steps_done is None
    assert timing.extra == {"ms_per_step": {"rmsnorm": 1.5, "layernorm": 1.75},
                            "steps_done": True}
    assert timing.to_dict() == doc and stored(timing) == timing


@pytest.mark.parametrize(("result", "key"), [
    *[("trained", key) for key in ("steps_done", "final", "status", "run_id")],
    (RunResult("ok"), "status"), (RunResult("ok", wall_time_s=1.0), "wall_time_s"),
    *[(_stamped(RunResult("ok")), key) for key in STAMPS],
])
def test_an_extra_key_that_shadows_a_field_or_a_stamp_raises(trained, result, key):
    result = trained if result == "trained" else result
    with pytest.raises(ValueError, match=rf"extra keys \['{key}'\] shadow its own fields"):
        dataclasses.replace(result, extra={key: 1}).to_dict()


# --- what from_dict refuses ---------------------------------------------------------------------
@pytest.mark.parametrize("data", [[], "ok", None, 3, {"final": {}}, {"status": None},
                                  {"status": 1}])
def test_not_an_object_with_a_status_is_a_results_error_naming_the_file(data):
    with pytest.raises(ResultsError, match=r"^runs/ffn/tiny/abc\.json: a run result is an "
                                           r"object with a 'status'$"):
        RunResult.from_dict(data, "runs/ffn/tiny/abc.json")
    with pytest.raises(ResultsError, match=r"^result: "):  # the default name
        RunResult.from_dict(data)


def test_an_unknown_missing_or_mistyped_field_is_a_results_error_naming_its_path(trained):
    good = trained.to_dict()
    cases = [
        ({**good, "final": {**good["final"], "val_lossx": 1.0}},
         r"^f\.json\.final: unknown field\(s\) \['val_lossx'\]$"),
        ({**good, "final": {k: v for k, v in good["final"].items() if k != "params"}},
         r"^f\.json\.final: .*params"),
        ({**good, "curves": {**good["curves"], "loss": []}},
         r"^f\.json\.curves: unknown field\(s\) \['loss'\]$"),
        ({**good, "curves": {**good["curves"], "layer_grad_norms": {"steps": []}}},
         r"^f\.json\.curves\.layer_grad_norms: unknown field\(s\) \['steps'\]$"),
        ({**good, "curves": {**good["curves"], "residual_rms": {"layers": []}}},
         r"^f\.json\.curves\.residual_rms: unknown field\(s\) \['layers'\]$"),
        ({**good, "run": {"arm": "relu"}}, r"^f\.json\.run: .*'label'"),
        ({**good, "run": {"label": "a", "arm": "a", "seed": 0, "size": "tiny"}},
         r"^f\.json\.run: unknown field\(s\) \['size'\]$"),
        # every field is checked against its annotation, as a summary's are (test_summaries.py)
        ({**good, "curves": {**good["curves"], "val": {"32": ["4.2"]}}},
         r"^f\.json\.curves\.val\.32\[0\]: expected float \| None, found '4\.2'$"),
        *[({"status": "ok", "run": run}, r"^f\.json\.run: expected an object")
          for run in ("x", 3, ["label", "arm", 0])],
    ]
    for data, message in cases:
        with pytest.raises(ResultsError, match=message):
            RunResult.from_dict(data, "f.json")


# --- files stored before RunResult existed ------------------------------------------------------
def _old_file() -> dict:
    """A training result as the store wrote it before RunResult: the trainer's keys (curves
    without the per-layer records older trainers did not log), a suite's own key, then the
    provenance and run record `run_suite` stamped on it."""
    return {
        "run_id": "0123456789ab", "status": "ok", "reason": None,
        "model_config": {"d_model": 32, "n_layers": 2}, "train_config": {"steps": 2, "seed": 0},
        "data": {"name": "stdlib", "sha256": "0" * 64}, "environment": {"threads": 1},
        "curves": {"step": [0, 1], "train_loss": [5.6, 5.4], "lr": [0.001, 0.002],
                   "grad_norm": [1.5, 1.2], "val_step": [2], "val": {"32": [5.3]}},
        "final": {"val_loss": 5.3, "val_loss_se": 0.05, "val_windows": 4, "val_tokens": 128,
                  "val_loss_tail": 5.3, "val_loss_tail_n": 1, "val_bpb": 7.65,
                  "val_loss_by_length": {"32": 5.3}, "per_position_loss": {"32": None},
                  "train_loss": 5.5, "unigram_entropy": 4.9, "unigram_entropy_bpb": 7.07,
                  "params": 30000},
        "steps_done": 2, "wall_time_s": 0.4, "train_time_s": 0.3, "compile_s": None,
        "final_eval_s": None, "backends": {"rms_norm": "F.rms_norm"}, "ms_per_step": 150.0,
        "tokens_per_s": 850.0,
        "zero_grad_fraction": 0.125,
        "provenance": {"torch": "2.5.1", "source_sha256": "f" * 64},
        "run": {"label": "relu/0", "arm": "relu", "seed": 0},
    }


def test_a_file_stored_before_run_result_reads_with_its_run_label(tmp_path):
    old = _old_file()
    store = ResultStore(tmp_path)
    store.path_for("0123456789ab").write_text(json.dumps(old, indent=1))
    result = store.load("0123456789ab")
    assert result.run == RunLabel(label="relu/0", arm="relu", seed=0)
    assert result.provenance == old["provenance"] and result.machine_load is None
    assert result.extra == {"zero_grad_fraction": 0.125}
    assert result.status == "ok" and result.final.val_loss == 5.3
    assert result.final.eval_errors is None and result.curves.val == {"32": [5.3]}
    # the records older trainers did not write read as empty
    assert result.curves.layer_grad_norms == LayerGradNorms()
    assert result.curves.residual_rms == ResidualRms()
    # written back: the same keys in the same order, the empty records added
    again = result.to_dict()
    assert list(again) == list(old)
    assert again["curves"] == {**old["curves"],
                               "layer_grad_norms": {"step": [], "layer": [], "down_proj": []},
                               "residual_rms": {"step": [], "layer": []}}
    assert {k: v for k, v in again.items() if k != "curves"} == {
        k: v for k, v in old.items() if k != "curves"}
    assert stored(result) == result
