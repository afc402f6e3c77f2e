"""At --size tiny and --size quick every suite plans exactly the runs the registered rules grade
(and what those parts need: baselines, the tuning of the trained arms, the timed runs a graded
part reads); at --size full it plans every arm of its design.

The expected runs are read off the registered parts (`blocklab.claims.registry.registered`):
their names and metrics say which arms they compare, never the suite's plan."""

import re
from collections import Counter

import pytest

from blocklab.claims.registry import registered
from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites import get_suite
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION
from blocklab.experiments.suites.ffn import runs as ffn
from blocklab.experiments.suites.norm_cost import runs as norm_cost
from blocklab.experiments.suites.placement import runs as placement
from blocklab.experiments.suites.position import runs as position

GRADED_ONLY = ("tiny", "quick")


def _options(name: str, size: str) -> RunOptions:
    return RunOptions.for_suite(get_suite(name), size)


def _plan(name: str, size: str):
    return get_suite(name).plan(_options(name, size), [])


def _arm_at(metric: str) -> str:
    """The arm a band part of C21/C30 reads: its metric ends ': <arm> at <m>×'."""
    return re.search(r": (\S+) at \d+×$", metric).group(1)


def _each_seed_once(specs, arms, seeds):
    assert Counter((s.arm, s.seed) for s in specs) == Counter(
        (arm, seed) for arm in arms for seed in seeds)


# --- ffn: C16 -------------------------------------------------------------------------------------
def _c16_arms(size: str) -> set[str]:
    """C16's parts are arms, each compared with the baseline its metric names."""
    arms = set()
    for name, rule in registered("C16", size).items():
        baseline = re.search(r"\(val loss (\S+) − (\S+)\)/", rule.metric)
        assert baseline.group(1) == name
        arms |= {name, baseline.group(2)}
    return arms


@pytest.mark.parametrize("size", GRADED_ONLY)
def test_ffn_tunes_and_trains_c16s_arms_and_their_baseline_only(size):
    expected = _c16_arms(size)
    assert expected == {"relu", "glu", "geglu", "swiglu"}
    d = ffn.SIZES[size].d_model
    tuning = ffn.tune(_options("ffn", size))
    assert {(s.arm, s.payload["model"]["d_model"]) for s in tuning} == {(a, d) for a in expected}
    specs = _plan("ffn", size)
    assert {s.payload["kind"] for s in specs} == {"train"}  # no sensitivity, trend nor timing
    assert {s.payload["model"]["d_model"] for s in specs} == {d}
    _each_seed_once(specs, expected, _options("ffn", size).seeds)


# --- norm-cost: C18 -------------------------------------------------------------------------------
def _c18_arms(size: str) -> set[str]:
    """The analytic parts (exact counts) read no run; the quality part the two norms' runs."""
    arms = set()
    for rule in registered("C18", size).values():
        if "analytic" not in rule.metric:
            arms |= {norm.lower() for norm in re.findall(r"RMSNorm|LayerNorm", rule.metric)}
    return arms


# Timed and reported beside C18 at every size (the report draws the step; the like-for-like
# kernels say what equally fused kernels time), graded by no rule.
NORM_COST_REPORTED = {"step", "like-for-like"}


@pytest.mark.parametrize("size", GRADED_ONLY)
def test_norm_cost_plans_the_quality_runs_and_the_reported_timings_only(size):
    expected = _c18_arms(size)
    assert expected == {"rmsnorm", "layernorm"}
    specs = _plan("norm-cost", size)
    assert {s.arm for s in specs} == expected | NORM_COST_REPORTED
    for arm in NORM_COST_REPORTED:
        assert [s.timed for s in specs if s.arm == arm] == [True] * len(
            norm_cost.SIZES[size].threads)
    _each_seed_once([s for s in specs if s.arm not in NORM_COST_REPORTED], expected,
                    _options("norm-cost", size).seeds)


# --- placement: C12, C13, C19, C36 ----------------------------------------------------------------
def _contrast(grid: str, depths: tuple[int, ...], warmups: tuple[int, ...],
              claims: tuple[str, ...], size: str) -> set[str]:
    """The arms the deepest-depth contrast of `claims` reads: their parts name pre-norm and
    post-norm (and warmup), at the deepest depth, each arm at its own lr."""
    names = " ".join(name for c in claims for name in registered(c, size))
    placements = [p for p in ("pre", "post", "sandwich") if f"{p}-norm" in names]
    assert placements == ["pre", "post"] and ("warmup" in names or "stable" in names)
    return {f"{grid}/{p}/{max(depths)}/{w}" for p in placements for w in warmups}


@pytest.mark.parametrize("size", GRADED_ONLY)
def test_placement_trains_the_graded_contrasts_only(size):
    grids = placement.SIZES[size]
    specs = _plan("placement", size)
    arms = {prefix: {s.arm for s in specs if s.arm.startswith(prefix + "/")}
            for prefix in ("train", "sweep", "deep")}
    training, sweep, deep = grids.training, grids.sweep, grids.deep
    assert arms["train"] == _contrast("train", training.depths, training.warmups,
                                      ("C13", "C19"), size)
    assert arms["sweep"] == _contrast("sweep", sweep.depths,
                                      tuple(sweep.warmup if w else 0 for w in sweep.warm),
                                      ("C13", "C19"), size)
    assert arms["deep"] == _contrast("deep", deep.depths,
                                     tuple(deep.warmup if w else 0 for w in deep.warm),
                                     ("C36",), size)
    assert size == "tiny" or min(deep.depths) >= 50  # C36's page: stacks of 50+ layers
    # C12 grades the pre-norm probes; every placement's probes stay beside them (the
    # comparison C12's and C19's texts read, one forward and backward each)
    inits = [re.search(r"pre-norm, (\S+) init", n).group(1) for n in registered("C12", size)]
    probes = {s.arm for s in specs if s.arm.startswith("init/")}
    assert {f"init/pre/{i}/{d}" for i in inits for d in grids.probe.depths} <= probes
    assert probes == {f"init/{p}/{i}/{d}" for p in grids.probe.placements
                      for i in grids.probe.inits for d in grids.probe.depths}
    assert {s.arm.split("/")[0] for s in specs} == {"init", "train", "sweep", "deep"}


# --- position: C21, C29, C30, C31 -----------------------------------------------------------------
def _position_arms(size: str) -> set[str]:
    """C21's and C30's statements name the arm they read (a scaling or a fine-tune is read off
    or extends the run of the longest scheme its name starts with); C29 reads the decoder
    without positions ("none"); C31 the timed cost run."""
    design = position.schemes(size)
    arms = set()
    for claim in ("C21", "C30"):
        for rule in registered(claim, size).values():
            read = _arm_at(rule.metric)
            arms.add(max((a for a in design if read == a or read.startswith(a + "+")), key=len))
    if registered("C29", size):
        arms.add("none")
    if registered("C31", size):
        arms.add("cost")
    return arms


@pytest.mark.parametrize("size", GRADED_ONLY)
def test_position_trains_the_graded_arms_and_times_the_cost_run_only(size):
    expected = _position_arms(size)
    L = max(position.SIZES[size].mults)
    assert expected == {"none", f"learned-{L}L", "sinusoidal+scale", "rope", "alibi", "cost"}
    specs = _plan("position", size)
    assert {s.arm for s in specs} == expected  # no passkey, no relative-error run
    assert [s.timed for s in specs if s.arm == "cost"] == [True]
    _each_seed_once([s for s in specs if s.arm != "cost"], expected - {"cost"},
                    _options("position", size).seeds)


# --- quantize: C32, C33 (unchanged: all of it is graded) ------------------------------------------
@pytest.mark.parametrize("size", GRADED_ONLY)
def test_quantize_plans_the_timing_and_quality_runs(size):
    assert registered("C32", size) and registered("C33", size)
    assert {s.arm for s in _plan("quantize", size)} == {"timing", "quality"}


# --- at --size full: every arm of the design ------------------------------------------------------
def test_full_plans_every_arm_of_the_design():
    # ffn: every arm, the sensitivity arms, the trend and the timing
    specs = _plan("ffn", "full")
    kinds = {kind: {s.arm for s in specs if s.payload["kind"] == kind}
             for kind in ("train", "sensitivity", "trend", "timing")}
    assert kinds == {"train": set(ffn.ARMS), "sensitivity": set(ffn.SENSITIVITY_ARMS),
                     "trend": set(ffn.TREND_ARMS), "timing": {"timing"}}
    assert {s.payload["model"]["d_model"] for s in specs if s.payload["kind"] == "trend"} == set(
        ffn.SIZES["full"].trend_widths)  # (its tuning: ffn/test_runs.py)
    # norm-cost: the kernel runs too
    assert {s.arm for s in _plan("norm-cost", "full")} == {"kernels", "rmsnorm", "layernorm",
                                                          *NORM_COST_REPORTED}
    # position: every scheme, its passkey models and the relative error
    arms = {s.arm for s in _plan("position", "full")}
    schemes = set(position.schemes("full"))
    assert arms == {*schemes, *(f"passkey:{a}" for a in schemes), "cost", "relative_error"}


# --- the end-of-run evaluation --------------------------------------------------------------------
@pytest.mark.parametrize("size", ["tiny", "quick", "full"])
@pytest.mark.parametrize("name", ["ffn", "placement", "norm-cost", "position"])
def test_every_training_run_scores_its_sizes_fraction_of_the_validation_split(name, size):
    suite = get_suite(name)
    specs = [*(suite.tune(_options(name, size)) if suite.tune else []), *_plan(name, size)]
    trained = [s for s in specs if "train" in s.payload and s.payload["kind"] != "cost"]
    assert trained
    for spec in trained:  # left out of the run's identity at 0.0, as before the field existed
        assert spec.payload["train"].get("final_eval_fraction", 0.0) == \
            FINAL_EVAL_FRACTION[size], spec.label
