"""The registered suites (`blocklab.experiments.suites`): each reads its stored summary back as
its own data type, and the loader by name refuses a suite that is not registered."""

import subprocess
import sys

import pytest

from blocklab.errors import InputError
from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites import SUITE_MODULES, get_suite, load_summary, run_suite
from blocklab.jsonio import json_safe


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SUITE_MODULES))
def test_every_registered_suite_reads_its_tiny_summary_back_as_its_data_type(name, tmp_path):
    suite = get_suite(name)
    summary = run_suite(suite, RunOptions.for_suite(suite, "tiny"), tmp_path, progress=False)
    back = load_summary(tmp_path, name, "tiny")
    assert type(back.data) is suite.data_type
    # equal to what was written, but for tuples under `Any` (a suite size's settings), which
    # come back as JSON's lists
    assert json_safe(back.to_dict()) == json_safe(summary.to_dict())


def test_the_loader_by_name_refuses_a_suite_that_is_not_registered(tmp_path):
    with pytest.raises(InputError, match=r"unknown suite 'attention'; allowed: \['ffn', "
                                         r"'norm-cost', 'placement', 'position', 'quantize'\]"):
        load_summary(tmp_path, "attention", "tiny")
    assert load_summary(tmp_path, "position", "tiny") is None  # registered, not run yet


def test_a_suite_package_and_its_data_types_import_without_torch():
    code = ("import sys; from blocklab.experiments.suites import registered_suites; "
            "suites = registered_suites(); "
            "assert 'torch' not in sys.modules, 'torch was imported'; "
            "print(' '.join(s.data_type.__module__ for s in suites))")
    out = subprocess.run([sys.executable, "-c", code], check=True, timeout=60,
                         capture_output=True, text=True).stdout
    assert out.split() == [f"blocklab.experiments.suites.{module}.data"
                           for module in SUITE_MODULES.values()]
