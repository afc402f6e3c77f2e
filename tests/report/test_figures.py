"""Which command a report figure names (`blocklab.report.figures.figure_command`): the suite's
for a figure a suite draws beside its tables, its own for any other."""

import pytest

from blocklab.experiments.suites import SUITE_MODULES, get_suite
from blocklab.report.figures import FIGURES, figure_command


def _doc() -> dict:
    return {"suites": {name: {"command": f"blocklab suite {name}", "summary": None}
                       for name in SUITE_MODULES},
            "rope": {"command": "blocklab verify --group rope"}}


def test_a_figure_a_suite_lists_names_that_suites_command():
    doc = _doc()
    for name in SUITE_MODULES:
        for key in get_suite(name).figures:
            _, command = FIGURES[key]
            expected = (command(doc) if command is not None  # one of its own (scale_trend)
                        else f"blocklab suite {name}")
            assert figure_command(doc, key, command) == expected
    assert figure_command(doc, "ffn_variants", None) == "blocklab suite ffn"
    assert figure_command(doc, "scale_trend", FIGURES["scale_trend"][1]) == (
        "blocklab suite ffn; blocklab suite placement")


def test_a_figure_without_a_command_that_no_suite_lists_is_a_bug():
    assert figure_command(_doc(), "kv_cache", FIGURES["kv_cache"][1]).startswith(
        "blocklab budget")
    with pytest.raises(RuntimeError, match=r"figure kv_cache has no command of its own and "
                                           r"is listed by 0 suites \(none\), not one"):
        figure_command(_doc(), "kv_cache", None)
