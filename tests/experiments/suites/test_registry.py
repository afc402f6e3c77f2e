"""The registered suites (`blocklab.experiments.suites`): each reads its stored summary back as
its own data type, and the loader by name refuses a suite that is not registered."""

import json
import subprocess
import sys

import pytest

from blocklab.errors import InputError
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


def test_the_loader_by_name_refuses_a_suite_that_is_not_registered(tmp_path):
    with pytest.raises(InputError, match=r"unknown suite 'attention'; allowed: \['ffn', "
                                         r"'norm-cost', 'placement', 'position', 'quantize', "
                                         r"'width'\]"):
        load_summary(tmp_path, "attention", "tiny")
    assert load_summary(tmp_path, "position", "tiny") is None  # registered, not run yet


def test_a_suite_package_and_its_data_types_import_without_torch():
    code = ("import sys; from blocklab.experiments.suites import registered_suites; "
            "suites = registered_suites(); "
            "assert 'torch' not in sys.modules, 'torch was imported'; "
            "print(' '.join(s.data_type.__module__ for s in suites))")
    out = subprocess.run([sys.executable, "-c", code], check=True, timeout=60,
                         capture_output=True, text=True).stdout
    assert out.split() == [f"blocklab.experiments.suites.{module}.summary"
                           for module in SUITE_MODULES.values()]
