"""Runs know how they used their machine (threads, device, precision, the kernels their model
ran), and a suite folder whose runs come from more than one machine, or whose bf16 training
runs ran other attention kernels, says so in its summary, the ledger and the report."""

import dataclasses
import json
from pathlib import Path

import torch
from jinja2.utils import Namespace

from blocklab.claims import ledger
from blocklab.claims.catalogue import SUITE_OF
from blocklab.experiments import provenance
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunLabel, RunResult
from blocklab.experiments.suites import base, run_suite
from blocklab.experiments.summaries import RunCount, Summary, load_summary, mixed_notes
from blocklab.experiments.trainer import train
from blocklab.report import html

from .conftest import Nothing, plain_suite

OTHER = {"cpu": "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", "cores": 8,
         "flags": {name: True for name in provenance.MACHINE_FLAGS}}


def _suite() -> base.Suite:
    return plain_suite("machines", lambda options, tuned=(): [
        base.RunSpec(f"run {s}", "run", s, {"machines": s},
                     lambda progress: RunResult("ok", extra={"value": 1.0}))
        for s in options.seeds])


def _store(root: Path) -> list[Path]:
    return sorted(p for p in (root / "machines" / "tiny").glob("*.json")
                  if p.name not in ("summary.json", "planned_rules.json"))


# --- what a run records --------------------------------------------------------------------------
def test_a_run_records_the_threads_it_ran_with_and_an_older_provenance_is_reused():
    label = RunLabel("run", "run", 0, "0" * 12)
    result = base.execute_spec(lambda progress: RunResult("ok", extra={"value": 1.0}), label,
                               False)
    stored = result.provenance
    assert stored["threads"] == torch.get_num_threads()
    # a run that trains no model knows no device, precision or kernels of one
    assert (stored["device"], stored["precision"], stored["backends"]) == (None, None, None)
    assert stored == provenance.current().to_dict()
    old = {key: stored[key] for key in provenance.RESULT_KEYS}  # the oldest block: no machine
    assert provenance.differences(old, provenance.current()) == []
    # a block from the versions with C kernels also says whether they built: read no more
    assert provenance.differences({**old, "kernels": "built"}, provenance.current()) == []


def test_a_training_run_records_its_device_precision_and_its_models_kernels(tiny_model,
                                                                            tiny_train):
    model, result = train(tiny_model, dataclasses.replace(tiny_train, threads=None))
    recorded = provenance.current().of_run(result)
    assert recorded.backends == model.backends() and "attention" in recorded.backends
    assert recorded.threads == torch.get_num_threads()
    assert (recorded.device, recorded.precision, recorded.backend) == ("cpu", "fp32", "fast")
    # a run at a thread count of its own records that one; so does one a suite run keeps
    # inside its own (the position suite's "train")
    _, one = train(tiny_model, dataclasses.replace(tiny_train, threads=1))
    wrapped = RunResult("ok", extra={"train": one.to_dict()})
    assert provenance.current().of_run(wrapped).threads == 1
    assert provenance.current().of_run(wrapped).backends == one.backends


def test_what_a_run_used_is_in_no_run_id_and_decides_no_reuse(tmp_path):
    run_suite(_suite(), RunOptions("tiny", range(2)), tmp_path, progress=False)
    ids = sorted(p.stem for p in _store(tmp_path))
    for path in _store(tmp_path):
        data = json.loads(path.read_text())
        data["provenance"].update(threads=64, device="cuda:0", precision="bf16",
                                  backends={"attention": "math"})
        path.write_text(json.dumps(data))
    plan = base.plan_suite(_suite(), RunOptions("tiny", range(2)), tmp_path)
    assert plan.missing == [] and sorted(s.run_id for s in plan.specs) == ids


# --- what a folder says --------------------------------------------------------------------------
def test_a_folder_made_on_two_machines_names_both_with_their_runs(tmp_path):
    options = RunOptions("tiny", range(3))
    one = run_suite(_suite(), options, tmp_path, progress=False)
    # made on one machine: nothing new said
    assert one.machines == [] and one.kernels == []
    assert not any("machine" in note or "kernel" in note for note in one.notes)
    path = _store(tmp_path)[0]
    data = json.loads(path.read_text())
    data["provenance"]["machine"] = OTHER
    path.write_text(json.dumps(data))
    summary = run_suite(_suite(), options, tmp_path, progress=False)  # reused: not timed
    here = provenance.machine_name(provenance.Machine.here())
    other = ("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz [avx2 avx512f avx512_bf16 "
             "avx512_vnni amx_bf16 amx_tile]")
    assert summary.machines == [RunCount(here, 2), RunCount(other, 1)]
    sentence = ("These 3 runs were made on 2 different machines (CPU model or instruction "
                f"sets), whose timings and bf16 kernels may differ: {here} (2 runs); "
                f"{other} (1 run).")
    assert sentence in summary.notes
    # stored, and read back typed
    assert load_summary(tmp_path, "machines", "tiny", Nothing).machines == summary.machines
    assert "2 台不同的机器" in mixed_notes(summary.machines, [], "zh")[0]


def _bf16(attention: str | None, precision: str = "bf16", device: str = "cpu") -> RunResult:
    machine = provenance.Machine.here()
    backends = {"rms_norm": "F.rms_norm"} if attention is None else {"attention": attention}
    return RunResult("ok", train_config={"precision": precision, "device": device},
                     backends=backends,
                     provenance={"machine": dataclasses.asdict(machine)})


def test_bf16_runs_that_ran_other_attention_kernels_say_which_and_how_many():
    machines, kernels = base.mixed_runs([_bf16("sdpa"), _bf16("math"), _bf16("math"),
                                         _bf16(None), _bf16("sdpa", "fp32")])
    assert machines == []
    # nor do runs that record no machine at all (stored before they did)
    results = [RunResult("ok", provenance={"torch": "2.5"}) for _ in range(2)]
    assert base.mixed_runs(results) == ([], [])
    assert kernels == [RunCount("math", 2), RunCount("sdpa", 1), RunCount("unrecorded", 1)]
    assert mixed_notes(machines, kernels) == [
        "Its 4 bf16 training runs ran different attention kernels, whose bfloat16 numbers "
        "differ, compared together here: math (2 runs); sdpa (1 run); unrecorded (1 run)."]
    # one kernel (float32 runs never counted), or one on a suite run's inner training run
    inner = RunResult("ok", extra={"train": _bf16("math").to_dict()},
                      provenance=_bf16("math").provenance)
    assert base.mixed_runs([_bf16("math"), inner, _bf16("sdpa", "fp32")]) == ([], [])
    gpu = _bf16("sdpa", device="cuda:0")
    assert base.mixed_runs([_bf16("sdpa"), gpu])[1] == [RunCount("sdpa", 1),
                                                        RunCount("sdpa on cuda:0", 1)]


# --- where it is said ----------------------------------------------------------------------------
def test_the_report_and_the_ledger_say_it(tmp_path):
    machines = [RunCount("CPU A [avx2]", 4), RunCount("CPU B [avx2 avx512f]", 2)]
    (sentence,) = mixed_notes(machines, [])
    summary = {"size": "quick", "runs": 6, "seeds": 3, "wall_time_s": 1.0, "tables": [],
               "notes": ["a note", sentence], "machines": [dataclasses.asdict(m)
                                                          for m in machines], "kernels": []}
    doc = {"suites": {"ffn": {"summary": summary, "command": "blocklab suite ffn",
                              "error": None}}, "generated": {"size": "quick"}}
    for lang in ("en", "zh"):
        body = str(html._macros(doc, {}, lang).suite_body("ffn", [], Namespace(n=0)))
        (notice,) = mixed_notes(machines, [], lang)
        assert f'<div class="notice">{notice}</div>' in body
        assert body.count("CPU B [avx2 avx512f]") == 1  # a notice, not a note as well
        assert "<li>a note</li>" in body
    unmixed = {**summary, "notes": ["a note"], "machines": []}
    doc["suites"]["ffn"]["summary"] = unmixed
    assert "CPU" not in str(html._macros(doc, {}, "en").suite_body("ffn", [], Namespace(n=0)))

    claim = next(cid for cid, suite in SUITE_OF.items() if suite == "ffn")
    row = ledger.ClaimResult(claim, "", "", "", "", "supported", "Evidence.", "证据。", {}, "",
                             None)

    class Ctx:
        def __init__(self, mixed):
            self.mixed = mixed

        def summary(self, suite):
            return Summary(suite, "quick", 3, [], machines=self.mixed)

    said = ledger._mixed(row, Ctx(machines))
    assert said.summary == f"Evidence. {sentence}"
    assert said.summary_zh == "证据。" + mixed_notes(machines, [], "zh")[0]
    assert ledger._mixed(row, Ctx([])) == row
