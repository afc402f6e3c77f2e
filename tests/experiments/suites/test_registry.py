"""The registered suites (`blocklab.experiments.suites`): each reads its stored summary back as
its own data type, plans runs whose ids follow what they compute, and imports without torch
(a suite that is not registered: tests/experiments/test_summaries.py)."""

import json
import subprocess
import sys

import pytest

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites import SUITE_MODULES, get_suite, load_summary
from blocklab.jsonio import json_safe


@pytest.mark.parametrize("name", list(SUITE_MODULES))
def test_every_registered_suite_reads_its_tiny_summary_back_as_its_data_type(name, tiny_runs):
    suite = get_suite(name)
    back = load_summary(tiny_runs, name, "tiny")
    assert type(back.data) is suite.data_type
    # field for field what the suite wrote
    written = json.loads((tiny_runs / name / "tiny" / "summary.json").read_text("utf-8"))
    assert json_safe(back.to_dict()) == written


@pytest.mark.parametrize("name", list(SUITE_MODULES))
def test_run_ids_are_stable_and_follow_the_seeds_and_precision_but_not_the_backend(name):
    """The same options plan the same distinct runs; the backend changes speed, not values;
    other seeds are other runs (a timed run has no seed to vary); bf16 is another run each,
    its precision in the payload (float32 payloads name none: ids from before precision)."""
    suite = get_suite(name)

    def specs(**kwargs):
        options = RunOptions.for_suite(suite, "full", 2, **kwargs)
        return [*(suite.tune(options, []) if suite.tune else []), *suite.plan(options, [])]

    first = [s.run_id for s in specs()]
    assert first == [s.run_id for s in specs()] and len(set(first)) == len(first)
    assert [s.run_id for s in specs(backend="reference")] == first
    far = specs(seed_offset=1000)
    assert all(s.run_id in first for s in far if s.seed < 1000)
    assert not {s.run_id for s in far if s.seed >= 1000} & set(first)
    assert all("precision" not in s.payload.get("train", s.payload) for s in specs())
    if "bf16" in suite.precisions:
        # (position's relative-error run computes in every dtype, whatever the precision)
        bf16 = [s for s in specs(precision="bf16") if s.payload["kind"] != "relative_error"]
        assert {s.payload.get("train", s.payload)["precision"] for s in bf16} == {"bf16"}
        assert not {s.run_id for s in bf16} & set(first)


def test_a_suite_package_and_its_data_types_import_without_torch():
    code = ("import sys; from blocklab.experiments.suites import SUITE_MODULES, get_suite; "
            "suites = [get_suite(name) for name in SUITE_MODULES]; "
            "assert 'torch' not in sys.modules, 'torch was imported'; "
            "print(' '.join(s.data_type.__module__ for s in suites))")
    out = subprocess.run([sys.executable, "-c", code], check=True, timeout=60,
                         capture_output=True, text=True).stdout
    assert out.split() == [f"blocklab.experiments.suites.{module}.summary"
                           for module in SUITE_MODULES.values()]
