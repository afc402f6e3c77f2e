"""The width suite's runs (C37): the widths each arm trains and is read at, the nested arm's
training, the tuning stage, and the price."""

import pytest

from blocklab.experiments import estimate
from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites import get_suite
from blocklab.experiments.suites.width import runs as width


def test_widths_are_m_half_and_quarter_and_each_arm_is_read_at_the_widths_it_has():
    for size in width.SIZES.values():
        m = size.d_ff
        assert size.widths == (m, m // 2, m // 4) and m % 4 == 0
        assert width.read_widths("ordinary", size) == size.widths
        assert width.read_widths("nested", size) == size.widths
        assert width.read_widths("narrow", size) == (m // 2, m // 4)


def test_only_the_nested_arm_trains_with_nested_widths_and_all_share_one_lr():
    options = RunOptions("quick", range(2))
    specs = width.plan(options, [])
    assert {s.arm for s in specs} == set(width.ARMS) and len(specs) == 6
    for s in specs:
        nested = s.payload["train"].get("nested_widths", [])
        assert nested == ([192, 96, 48] if s.arm == "nested" else [])
        assert s.payload["model"]["d_ff"] == (96 if s.arm == "narrow" else 192)
        assert s.payload["model"]["ffn"] == "swiglu"
    assert len({s.payload["train"]["lr"] for s in specs}) == 1
    assert len({s.run_id for s in specs}) == 6


def test_the_tuning_stage_tunes_the_ordinary_arm_alone():
    # (on two tuning seeds of its own: test_tuning's rounds, test_base's tuning_seeds)
    specs = width.tune(RunOptions("quick", range(4)), [])
    assert {s.arm for s in specs} == {"ordinary"}
    assert sorted(s.payload["train"]["lr"] for s in specs) == [3e-3, 3e-3, 1e-2, 1e-2, 3e-2, 3e-2]


def test_the_nested_run_is_priced_as_one_run_per_width():
    """Each shape priced at a step time proportional to its FFN width plus a fixed part: the
    nested run costs the three widths' runs, the narrow one less than the ordinary one."""
    suite = get_suite("width")
    specs = {s.arm: s for s in width.plan(RunOptions("quick", range(1)), [])}
    requests = estimate._Requests()
    estimate.price_specs([(suite, s) for s in specs.values()], requests)
    assert {model.d_ff for model in requests.shapes.values()} == {192, 96, 48}
    timings = {key: estimate.Timing(build_s=0.01, step_s=0.01 + model.d_ff / 1e4,
                                    forward_s=0.004, call_s=0.001)
               for key, model in requests.shapes.items()}
    cal = estimate.Calibration(seconds=0.0, timings=timings, measured=len(timings), fitted=0,
                               speed=1.0, startup_s=0.0, worker_start_s=0.0)
    price = {arm: width.price(spec, cal) for arm, spec in specs.items()}
    steps = width.SIZES["quick"].steps
    assert price["nested"] - price["ordinary"] == pytest.approx(
        sum(estimate.training_s(width.model_config("ordinary", width.SIZES["quick"], d_ff=k),
                                estimate.TrainShape.from_payload(specs["ordinary"].payload["train"]),
                                cal) for k in (96, 48)), rel=1e-9)
    assert price["nested"] > 2 * price["ordinary"] > price["ordinary"] > price["narrow"] > 0
    assert price["ordinary"] > steps * (0.01 + 192 / 1e4)
