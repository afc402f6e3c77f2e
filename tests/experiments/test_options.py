"""RunOptions: checked once where they are built (each bad value an InputError naming it and
what is allowed), a suite's defaults, the one folder name and the one command renderer; a
RunRequest: checked the same way, and the options and commands it gives each suite. Each rule
is tested once, at one door: the seed offset at RunRequest, the device at RunOptions, the
precision in tests/test_precision.py."""

import ast
from pathlib import Path

import pytest

import blocklab.experiments.suites as suites_package
from blocklab.errors import InputError
from blocklab.experiments import options as opts
from blocklab.experiments.options import MAX_SEED_OFFSET, MAX_SEEDS, RunOptions, RunRequest
from blocklab.experiments.results import run_id, train_identity
from blocklab.experiments.suites.base import Suite
from blocklab.experiments.trainer import TrainConfig

from .conftest import plain_suite

SIZES = r"\['tiny', 'quick', 'full', 'rung1', 'rung2', 'rung3'\]"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"size": "huge"}, rf"^suite size 'huge' is not allowed; expected one of {SIZES}$"),
    ({"size": "Quick"}, rf"^suite size 'Quick' is not allowed; expected one of {SIZES}$"),
    ({"seeds": range(0)}, rf"^seeds=0 is not allowed; expected an integer in \[1, {MAX_SEEDS}\]$"),
    ({"seeds": range(MAX_SEEDS + 1)},
     rf"^seeds={MAX_SEEDS + 1} is not allowed; expected an integer in \[1, {MAX_SEEDS}\]$"),
    ({"seeds": [0, 1]},
     r"^seeds=\[0, 1\] is not allowed; expected a range of consecutive seeds$"),
    ({"seeds": 3}, r"^seeds=3 is not allowed; expected a range of consecutive seeds$"),
    ({"seeds": range(0, 6, 2)},
     r"^seeds=range\(0, 6, 2\) is not allowed; expected a range of consecutive seeds$"),
    ({"backend": "fused"},
     r"^backend='fused' is not allowed; expected one of \['reference', 'fast', 'compiled'\]$"),
    ({"device": "tpu"}, r"^device 'tpu' is not allowed; expected cpu, cuda or cuda:<index>$"),
    ({"device": "cuda:x"}, r"^device 'cuda:x' is not allowed; expected cpu, cuda or "),
    ({"device": "cuda:"}, r"^device 'cuda:' is not allowed"),
    ({"device": "cpu:0"}, r"^device 'cpu:0' is not allowed"),
    ({"device": None}, r"^device None is not allowed"),
])
def test_a_bad_option_is_an_input_error_naming_it_and_what_is_allowed(kwargs, message):
    assert issubclass(InputError, ValueError)
    with pytest.raises(InputError, match=message):
        RunOptions(**kwargs)


def test_the_defaults_and_the_edges_of_options_and_a_request_are_allowed():
    default = RunOptions()
    assert (default.size, default.seeds, default.precision, default.backend) == (
        "quick", range(1), "fp32", "fast")
    assert len(RunOptions("full", range(MAX_SEEDS)).seeds) == MAX_SEEDS
    last = RunOptions("tiny", range(MAX_SEED_OFFSET, MAX_SEED_OFFSET + MAX_SEEDS))
    assert last.seed_offset == MAX_SEED_OFFSET
    assert RunOptions("tiny", range(2), "bf16", "compiled").backend == "compiled"
    assert default.notes() == []  # bf16 alone is noted
    (note,) = RunOptions(precision="bf16").notes()
    assert "bf16" in note
    request = RunRequest("runs", "quick")  # a str names the same folder: Path("runs")
    assert request == RunRequest(Path("runs"), "quick", 0, "fp32", 0.0)  # the planned seeds only
    assert RunRequest(Path("runs"), "full", budget_s=None).budget_s is None  # no limit


# --- a suite's options ----------------------------------------------------------------------------
def _suite(precisions=("fp32",)) -> Suite:
    return plain_suite("toy", lambda options, tuned: [],
                       default_seeds={"tiny": 1, "quick": 3, "full": 7}, precisions=precisions)


def test_for_suite_takes_the_suites_default_seeds_from_the_offset():
    suite = _suite()
    assert RunOptions.for_suite(suite, "quick") == RunOptions("quick", range(3))
    assert RunOptions.for_suite(suite, "full").seeds == range(7)
    assert RunOptions.for_suite(suite, "tiny", None).seeds == range(1)
    assert RunOptions.for_suite(suite, "quick", seed_offset=1000).seeds == range(1000, 1003)
    assert RunOptions.for_suite(suite, "quick", 2, seed_offset=5).seeds == range(5, 7)
    assert RunOptions.for_suite(suite, "quick", backend="reference").backend == "reference"
    bf16 = RunOptions.for_suite(_suite(("fp32", "bf16")), "tiny", precision="bf16")
    assert bf16 == RunOptions("tiny", range(1), "bf16")


def test_for_suite_refuses_what_the_suite_lacks_in_one_line():
    suite = _suite()  # (a precision it lacks: tests/experiments/test_executors.py)
    with pytest.raises(InputError, match=r"^suite toy has no size 'rung1' \(a ladder rung\); "
                                         r"its sizes are \['tiny', 'quick', 'full'\]$"):
        RunOptions.for_suite(suite, "rung1")
    with pytest.raises(InputError, match=r"^seeds=True is not allowed"):  # range() takes it
        RunOptions.for_suite(suite, "quick", True)


# --- the folder and the command -------------------------------------------------------------------
@pytest.mark.parametrize(("options", "kwargs", "folder"), [
    (RunOptions("quick", range(2)), {}, "quick"),
    (RunOptions("quick", range(1000, 1002)), {}, "quick+seeds1000"),
    (RunOptions("quick", range(2), "bf16"), {}, "quick+bf16"),
    (RunOptions("quick", range(1000, 1002), "bf16"), {}, "quick+seeds1000+bf16"),
    (RunOptions("quick", range(2)), {"longer": True}, "quick+x2"),
    (RunOptions("quick", range(2)), {"tuning": True}, "quick+tuning"),
    (RunOptions("quick", range(2), "bf16"), {"tuning": True}, "quick+tuning+bf16"),
    # a replication re-tunes on seeds of its own, in a folder of its own
    (RunOptions("quick", range(1000, 1002)), {"tuning": True}, "quick+tuning+seeds1000"),
    (RunOptions("quick", range(1000, 1002), "bf16"), {"tuning": True},
     "quick+tuning+seeds1000+bf16"),
    (RunOptions("tiny", range(1), backend="compiled"), {}, "tiny"),  # speed only
])
def test_folder_names(options, kwargs, folder):
    assert options.folder(**kwargs) == folder


# --- the torch-free copies ------------------------------------------------------------------------
def test_backends_and_precisions_equal_the_models():
    from blocklab import precision
    from blocklab.nn import backends, model

    assert opts.BACKENDS == backends.BACKENDS
    # nn maps every precision (and nothing else) to a dtype
    assert tuple(model._DTYPES) == precision.PRECISIONS


# --- a run request --------------------------------------------------------------------------------
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"size": "huge"}, rf"^size 'huge' is not allowed; expected one of {SIZES}$"),
    ({"seed_offset": -1},
     rf"^seed offset -1 is not allowed; expected an integer in \[0, {MAX_SEED_OFFSET}\]$"),
    ({"seed_offset": MAX_SEED_OFFSET + 1},
     rf"^seed offset {MAX_SEED_OFFSET + 1} is not allowed; expected an integer in "
     rf"\[0, {MAX_SEED_OFFSET}\]$"),
    ({"seed_offset": True}, r"^seed offset True is not allowed"),
    ({"seed_offset": 1.5}, r"^seed offset 1.5 is not allowed"),
    ({"budget_s": -1.0}, r"^budget_s=-1.0 is not allowed; expected seconds, a finite number "
                         r">= 0, or None \(no limit\)$"),
    ({"budget_s": float("inf")}, r"^budget_s=inf is not allowed"),
    ({"budget_s": float("nan")}, r"^budget_s=nan is not allowed"),
    ({"budget_s": "600"}, r"^budget_s='600' is not allowed"),
    ({"budget_s": True}, r"^budget_s=True is not allowed"),
    ({"budget_s": 10**400}, r"^budget_s=1000.* is not allowed"),  # beyond float range
])
def test_a_bad_request_is_one_input_error_line_naming_it_and_what_is_allowed(kwargs, message):
    with pytest.raises(InputError, match=message) as err:
        RunRequest(**{"results": Path("runs"), "size": "quick", **kwargs})
    assert "\n" not in str(err.value)


def test_a_request_gives_each_suite_its_options_and_its_commands():
    bf16 = RunRequest(Path("runs"), "quick", 1000, "bf16")
    trains, measures = _suite(("fp32", "bf16")), _suite()
    assert bf16.options(trains) == RunOptions("quick", range(1000, 1003), "bf16")
    # a suite that measures float32 only runs (and is read) at fp32, not refused
    assert bf16.precision_of(measures) == "fp32"
    assert bf16.options(measures) == RunOptions("quick", range(1000, 1003), "fp32")
    assert RunRequest(Path("runs"), "full").options(trains) == RunOptions("full", range(7))
    assert bf16.flags() == "--size quick --seed-offset 1000 --precision bf16"
    assert RunRequest(Path("runs"), "tiny").flags() == "--size tiny"
    assert bf16.suite_command(trains) == (
        "blocklab suite toy --size quick --seed-offset 1000 --precision bf16 --results runs")
    assert bf16.suite_command(measures) == (
        "blocklab suite toy --size quick --seed-offset 1000 --results runs")
    assert RunOptions("full", range(5), backend="reference").command("norm-cost", "out") == (
        "blocklab suite norm-cost --size full --results out")  # the backend: speed only
    assert bf16.claims_command() == (
        "blocklab claims --size quick --seed-offset 1000 --precision bf16 --results runs")
    assert bf16.report_command("out") == ("blocklab report --size quick --seed-offset 1000 "
                                          "--precision bf16 --out out --results runs")


def test_the_device_reaches_every_suites_options_and_each_trainconfig_but_no_folder():
    """A request's device is its suites' options' device, and `TrainConfig.for_run` (where
    every suite builds its training) carries it; a run's identity and folder ignore it."""
    trains = _suite(("fp32", "bf16"))
    gpu = RunRequest(Path("runs"), "quick", device="cuda:1")
    options = gpu.options(trains)
    assert options == RunOptions("quick", range(3), device="cuda:1")
    assert options.folder() == RunRequest(Path("runs"), "quick").options(trains).folder()
    tc = TrainConfig.for_run(options, 4, steps=10)
    assert (tc.device, tc.seed, tc.steps) == ("cuda:1", 4, 10)
    cpu = TrainConfig.for_run(RunOptions("quick", range(3)), 4, steps=10)
    assert train_identity(tc) == train_identity(cpu)
    assert run_id({"d": 1}, tc, "x") == run_id({"d": 1}, cpu, "x")
    # a suite that measures this CPU's float32 kernels (norm-cost, quantize) stays on it
    assert gpu.device_of(_suite()) == "cpu" and gpu.options(_suite()).device == "cpu"


def test_every_suite_builds_its_trainconfigs_through_for_run():
    """No suite trains from a TrainConfig it constructs itself, so the device (and every other
    run option) cannot miss one of its runs. Two build one for what is not a training run:
    norm-cost's timed steps (a measurement of this CPU, in float32 on the fast backend, as its
    payload says) and placement's lr schedule sums (arithmetic)."""
    not_training = {"norm_cost/timing.py": "time_training_steps",
                    "placement/runs.py": "lr_area"}
    root = Path(suites_package.__file__).parent
    direct = []
    for path in sorted(root.rglob("*.py")):
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                called = getattr(node, "func", None)
                name = getattr(called, "id", getattr(called, "attr", None))
                if isinstance(node, ast.Call) and name == "TrainConfig":
                    direct.append((path.relative_to(root).as_posix(), function.name))
    assert sorted(set(direct)) == sorted(not_training.items())
    uses = [p for p in root.rglob("*.py") if "TrainConfig.for_run(" in p.read_text("utf-8")]
    assert len(uses) >= 6  # ffn, width, placement, position, norm-cost, quantize
