"""The ladder's rule: each rung 2× the training compute of the one below, checked by hand and
on the models each laddered suite builds; what each rung grows and what it holds."""

from dataclasses import replace

import pytest

from blocklab.claims.finding import Context
from blocklab.claims.ledger import run_claims
from blocklab.errors import InputError
from blocklab.experiments import ladder
from blocklab.experiments.options import ALL_SIZES, SIZES, RunOptions, RunRequest
from blocklab.experiments.suites import get_suite, load_summary, run_suite
from blocklab.experiments.suites.ffn.runs import SIZES as FFN_SIZES
from blocklab.experiments.suites.norm_cost import runs as norm_cost
from blocklab.experiments.suites.placement import runs as placement
from blocklab.experiments.suites.position import runs as position
from blocklab.experiments.suites.tuning import rounded
from blocklab.nn import DecoderLM


def test_multiples_and_widths_by_hand():
    assert [ladder.multiple(s) for s in ("quick", *ladder.RUNGS)] == [1, 2, 4, 8]
    # 64 · 4^(1/4) = 90.5 → 96 (6 heads of 16); 64 · 16^(1/4) = 128; 64 · 64^(1/4) = 181 → 176
    # × m^(1/4): 64, 76.1, 90.5, 107.6 to whole 16-wide heads; 16, 19.0, 22.6, 26.9
    assert [ladder.width(64, m, 16) for m in (1, 2, 4, 8)] == [64, 80, 96, 112]
    assert [ladder.batch(16, m) for m in (1, 2, 4, 8)] == [16, 19, 23, 27]
    assert ladder.rungs_above(8 * 2.4e11, 2.4e11) == pytest.approx(3.0)
    with pytest.raises(InputError, match="'rung4' is not allowed"):
        ladder.multiple("rung4")


def _numel(config) -> int:
    """Parameters of the model the runs build, counted on the module (independent of
    `budget.count_params`, which the sizes use)."""
    return sum(p.numel() for p in DecoderLM(config).parameters())


@pytest.mark.parametrize("rung", ladder.RUNGS)
@pytest.mark.parametrize("name", ["ffn", "norm-cost", "placement", "position"])
def test_each_rung_trains_its_multiple_of_the_quick_compute(name, rung):
    """6 · params · tokens of the graded runs (`Suite.scale`), within the rounding of the steps
    to a whole step; the parameters those of the model the runs build."""
    suite = get_suite(name)
    quick, size = suite.scale("quick", ""), suite.scale(rung, "")
    assert size.flops / quick.flops == pytest.approx(ladder.multiple(rung), rel=4e-3)
    if suite.shape is not None:
        assert _numel(suite.shape(rung)[0]) == size.params
    # the parameters grow at most about ×√2 a rung (width × 2^(1/4), rounded to whole heads)
    assert quick.params <= size.params < 1.7 ** (ladder.RUNGS.index(rung) + 1) * quick.params


@pytest.mark.parametrize("rung", ladder.RUNGS)
def test_each_ffn_rung_keeps_the_depth_heads_and_tuning_of_quick(rung):
    quick, size = FFN_SIZES["quick"], FFN_SIZES[rung]
    assert size.n_layers == quick.n_layers and size.seq_len == quick.seq_len
    assert size.d_model // size.n_heads == quick.d_model // quick.n_heads  # heads of 16
    # tuned as at quick: its grid moved by the width ratio, refined, on two tuning seeds
    assert size.arms == quick.arms and size.lr_grid == replace(
        quick.lr_grid, base=tuple(rounded(lr * quick.d_model / size.d_model)
                                  for lr in quick.lr_grid.base))
    assert size.lr_grid.refine and size.tuning_seeds == quick.tuning_seeds == 2
    assert size.warmup_steps == round(size.steps * quick.warmup_steps / quick.steps)
    ffn = get_suite("ffn")  # 16-wide heads: the width grows at every rung
    assert ffn.scale(rung, "").params > 1.2 ** (ladder.RUNGS.index(rung) + 1) * ffn.scale(
        "quick", "").params


def test_only_suites_with_a_ladder_have_the_rungs_and_what_a_rung_plans():
    assert ALL_SIZES == (*SIZES, *ladder.RUNGS)
    ffn = get_suite("ffn")
    assert RunOptions.for_suite(ffn, "rung2").folder() == "rung2"
    assert RunOptions.for_suite(ffn, "rung2", precision="bf16").folder() == "rung2+bf16"
    with pytest.raises(InputError, match="suite width has no size 'rung1'"):
        RunOptions.for_suite(get_suite("width"), "rung1")
    # position: its arms and no timed run, at quick's seeds
    suite = get_suite("position")
    specs = position.plan(RunOptions.for_suite(suite, "rung1", 1), [])
    quick = position.plan(RunOptions.for_suite(suite, "quick", 1), [])
    assert [s.arm for s in specs] == [s.arm for s in quick if s.arm != "cost"]
    assert not any(s.timed for s in specs)
    assert RunOptions.for_suite(suite, "rung3").seeds == range(4)
    # placement: no probe and no deep stacks (quick's: test_graded_only)
    specs = placement.plan(RunOptions.for_suite(get_suite("placement"), "rung1", 1), [])
    assert {spec.arm.split("/")[0] for spec in specs} == {"train", "sweep"}


@pytest.mark.parametrize("rung", ladder.RUNGS)
def test_each_position_rung_keeps_the_reads(rung):
    quick, size = position.SIZES["quick"], position.SIZES[rung]
    assert size.model.d_model == ladder.width(64, ladder.multiple(rung), 32)
    assert size.model.d_model // size.model.n_heads == 32 and size.model.n_layers == 2
    assert size.train.batch_size == ladder.batch(16, ladder.multiple(rung))
    # what each part reads is the quick size's: L, the multiples, the windows, the lr, the
    # fine-tunes' steps (so C30's parts keep their names); no timed cost run
    assert (size.L, size.mults, size.eval_windows) == (quick.L, quick.mults, quick.eval_windows)
    assert size.train.lr_grid == quick.train.lr_grid and size.train.tuning_seeds == 0
    assert size.finetune == quick.finetune and size.order == quick.order
    assert size.cost is None and quick.cost is not None


@pytest.mark.parametrize("rung", ladder.RUNGS)
def test_each_norm_cost_rung_grows_the_quality_runs_alone(rung):
    quick, size = norm_cost.SIZES["quick"], norm_cost.SIZES[rung]
    q0, q = quick.quality, size.quality
    assert q.lr == q0.lr and q.n_layers == q0.n_layers and q.seq_len == q0.seq_len
    assert q.warmup_steps == round(q.steps * q0.warmup_steps / q0.steps)
    # the timings are the quick size's (reported beside C18, not on the ladder)
    assert (size.step, size.like_for_like, size.kernels) == (quick.step, quick.like_for_like,
                                                              quick.kernels)


@pytest.mark.parametrize("rung", ladder.RUNGS)
def test_each_placement_rung_grows_what_c19_reads(rung):
    quick, size = placement.SIZES["quick"], placement.SIZES[rung]
    t0, t = quick.training, size.training
    assert t.depths == t0.depths == (6,) and t.d_model // t.n_heads == 16
    assert t.warmups == (0, round(100 * t.steps / 300))
    assert t.lr_grid == replace(t0.lr_grid, base=tuple(rounded(lr * t0.d_model / t.d_model)
                                                       for lr in t0.lr_grid.base))
    assert t.lr_grid.refine and t.tuning_seeds == t0.tuning_seeds == 2
    # the sweep at the rung's width and batch, its runs and warmup keeping their share, its
    # lr ladder moved down by the width ratio (same doublings, same 10 rungs)
    s0, s = quick.sweep, size.sweep
    assert (s.d_model, s.batch_size) == (t.d_model, t.batch_size)
    assert s.steps == round(150 * t.steps / 300) and s.warmup == round(50 * t.steps / 300)
    assert s.lr_min == float(f"{0.001 * 32 / t.d_model:.3g}")  # to 3 digits, as grids are
    assert s.rungs == s0.rungs and s.step == s0.step


def test_a_rung_without_probe_or_deep_stacks_summarises_and_grades_c19(tmp_path, monkeypatch):
    """A placement rung shaped as the tiny size (so it runs in seconds) with the rung's
    omissions: it runs, summarises with no probe or deep-stack rows, and C19 is graded on it
    (no error), while C36 is not registered there."""
    tiny = placement.SIZES["tiny"]
    monkeypatch.setitem(placement.SIZES, "rung1", replace(
        tiny, probe=replace(tiny.probe, placements=()), deep=replace(tiny.deep, placements=())))
    suite = get_suite("placement")
    run_suite(suite, RunOptions.for_suite(suite, "rung1", 1), tmp_path, progress=False)
    data = load_summary(tmp_path, "placement", "rung1").data
    assert data.init_gradients == {} and {a.grid for a in data.stability} == {"sweep"}
    c19, c36 = run_claims(["C19", "C36"], Context(RunRequest(tmp_path, "rung1", 0, "fp32")))
    assert c19.error is None and len(c19.parts) == 6
    assert all(p.estimate.n <= 1 for p in c19.parts)  # one seed: graded, never decided
    assert c36.parts == [] or c36.verdict == "missing-results"
