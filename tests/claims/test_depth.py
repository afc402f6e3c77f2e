"""C36 (deep stacks): verdicts from fabricated placement summaries, one scenario per outcome of
each registered rule, worked out by hand from the intervals below."""

import dataclasses
import json
from pathlib import Path

import pytest

import blocklab.claims.depth as depth  # registers C36 (the ledger imports it too)
from blocklab.claims import Context, run_claims
from blocklab.claims.rules import Estimate, decide
from blocklab.experiments.summaries import (
    DeepEffect,
    GradientProbe,
    Interval,
    LayerProfile,
    PlacementCell,
    PlacementData,
    PlacementEffect,
    SlopePrediction,
    Summary,
)

DEPTH = 50


def _ci(mean, low, high, n=10) -> Interval:
    return Interval(n, mean, low, high)


def _effect(pre_warmup, pre_ratio, post_minus_pre, pre_vs_post, depth=DEPTH) -> DeepEffect:
    return DeepEffect(depth=depth, lr=3e-3, warmup=50, pre_warmup_effect=pre_warmup,
                      pre_vs_post_cold=pre_vs_post, pre_grad_first_over_last_log2=pre_ratio,
                      post_minus_pre_grad_log2=post_minus_pre)


def _data(effects: list[DeepEffect], pre_failures: int = 0) -> PlacementData:
    cells, profiles = [], []
    for p in ("pre", "post"):
        for w in (0, 50):
            failures = pre_failures if (p, w) == ("pre", 0) else 0
            cells.append(PlacementCell(
                placement=p, depth=DEPTH, warmup=w, lr=3e-3, failures=failures, runs=4,
                status={"ok": 4 - failures, "diverged": failures}, val_loss=_ci(2.5, 2.4, 2.6),
                delta_vs_pre=None if p == "pre" else _ci(0.3, 0.2, 0.4), steps_done=150.0,
                val_auc=_ci(2.8, 2.7, 2.9), grad_first_over_last_log2=_ci(0.5, 0.0, 1.0)))
            profiles.append(LayerProfile(placement=p, depth=DEPTH, warmup=w, lr=3e-3,
                                         grad_log2_vs_last=[0.5] * (DEPTH - 1) + [0.0],
                                         spread_log2=_ci(1.5, 1.0, 2.0)))
    return PlacementData(
        init_gradients={}, predictions=SlopePrediction({}, "xavier", "test"), training=[],
        effects=[], interaction_trend=Interval(0), unigram_entropy=None, seeds=4, steps=300,
        size={}, deep=cells if effects else [], deep_profiles=profiles if effects else [],
        deep_effects=effects, deep_steps=150)


def _write(root: Path, data: PlacementData) -> None:
    """Stored as `run_suite` stores a summary, so the check reads it back through
    `load_summary`, which checks every field."""
    folder = root / "placement" / "quick"
    folder.mkdir(parents=True, exist_ok=True)
    summary = Summary("placement", "quick", 4, [], [], data, runs=1, wall_time_s=1.0)
    (folder / "summary.json").write_text(json.dumps(summary.to_dict()))


def _c36(root: Path):
    (row,) = run_claims(["C36"], Context(root, "quick"))
    assert row.error is None, row.error
    return row


CONFIRMED, NOT_REPRODUCED, INCONCLUSIVE = ("confirmed", "not-reproduced-at-this-scale",
                                           "inconclusive")
# (a) upper bound -0.05 < +0.05; (b) [-0.2, 0.9] inside ±1; (c) [-10, -6] below 0, the claimed
# side; (d) [-0.4, -0.2] below 0, the claimed side.
HOLDS = _effect(_ci(-0.10, -0.15, -0.05), _ci(0.5, -0.2, 0.9), _ci(-8.0, -10.0, -6.0),
                _ci(-0.3, -0.4, -0.2))
# (a) upper bound 0.3 ≥ 0.05; (b) [2.5, 3.5] outside ±1; (c) [1, 3] on the opposite side, with
# one lr and one run length: not reproduced, never contradicted; (d) [-0.1, 0.1] holds both its
# claimed −0.05 and no effect: inconclusive, and deciding it could make the claim conditional.
FAILS = _effect(_ci(0.2, 0.1, 0.3), _ci(3.0, 2.5, 3.5), _ci(2.0, 1.0, 3.0),
                _ci(0.01, -0.1, 0.1))
FEW = _effect(*[_ci(0.0, -0.01, 0.01, n=3)] * 4)  # three seeds; the rules need four


@pytest.mark.parametrize(("effect", "pre_failures", "verdict", "parts"), [
    (HOLDS, 0, "confirmed", [CONFIRMED] * 4),
    # One pre-norm run failed: (a) is not shown, whatever the losses of the others say.
    (HOLDS, 1, "conditional", [NOT_REPRODUCED, *[CONFIRMED] * 3]),
    (FAILS, 0, INCONCLUSIVE, [NOT_REPRODUCED] * 3 + [INCONCLUSIVE]),
    (FEW, 0, INCONCLUSIVE, [INCONCLUSIVE] * 4),
])
def test_c36_verdicts(tmp_path, effect, pre_failures, verdict, parts):
    _write(tmp_path, _data([effect], pre_failures))
    row = _c36(tmp_path)
    assert row.verdict == verdict
    assert [p.verdict for p in row.parts] == parts
    assert [p.name for p in row.parts] == list(depth.C36_RULES)
    assert all(p.rule.min_seeds == 4 for p in row.parts)
    assert row.combines == depth.C36_COMBINES
    assert row.figure == "placement_deep"
    assert row.command == f"blocklab suite placement --size quick --results {tmp_path}"
    assert row.estimate.value == effect.pre_warmup_effect.mean
    assert f"Depth {DEPTH}" in row.summary and f"深度 {DEPTH}" in row.summary_zh
    assert f"pre-norm {pre_failures}/8" in row.summary
    table = row.evidence["table"]
    assert len(table["rows"]) == 4 and len(table["columns"]) == len(table["rows"][0])


def test_pre_norm_without_warmup_may_end_lower_but_not_higher():
    # One-sided: 0.2 nats better without warmup confirms (a); an equivalence test would not.
    rule = depth.C36_RULES["pre-norm trains without warmup at depth"]
    def decided(stats: Interval) -> str:
        return decide(rule, Estimate.of(stats)).verdict

    assert decided(_ci(-0.2, -0.3, -0.1)) == CONFIRMED
    # Upper bound exactly at the margin is not below it, and not beyond it either.
    assert decided(_ci(0.0, -0.05, 0.05)) == INCONCLUSIVE
    assert decided(_ci(0.2, 0.1, 0.3)) == NOT_REPRODUCED  # wholly worse than +0.05
    assert decided(_ci(0.0, -0.01, 0.01, n=3)) == INCONCLUSIVE
    assert decided(Interval(4, 0.0)) == INCONCLUSIVE  # no CI
    # A failed run keeps (a) from holding, decided by the count, not by a test.
    part = depth.failed_runs_part("a", rule, _ci(-0.2, -0.3, -0.1), failures=1)
    assert part.verdict == NOT_REPRODUCED and "1 pre-norm run(s) failed" in part.reason


def test_gradient_ratio_equivalence_bounds():
    rule = depth.C36_RULES["pre-norm gradient reaches the bottom layer (≈ 1)"]
    def decided(stats: Interval) -> str:
        return decide(rule, Estimate.of(stats)).verdict

    assert decided(_ci(0.0, -0.99, 0.99)) == CONFIRMED
    # Two one-sided tests read the 90% interval: [0, 1] at 95% is [0.13, 0.87] at 90%.
    assert decided(_ci(0.5, 0.0, 1.0)) == CONFIRMED
    assert decided(_ci(0.5, -0.5, 1.5)) == INCONCLUSIVE
    assert decided(_ci(2.0, 1.5, 2.5)) == NOT_REPRODUCED  # wholly beyond a factor 2


def test_c36_grades_the_deepest_depth(tmp_path):
    # Full size has two deep depths: the deeper one is graded.
    shallow = _effect(*[_ci(0.0, -0.01, 0.01, n=3)] * 4, depth=32)
    _write(tmp_path, _data([HOLDS, shallow]))
    row = _c36(tmp_path)
    assert row.verdict == "confirmed" and row.evidence["effect"]["depth"] == DEPTH


def test_c36_without_results_or_without_a_deep_grid(tmp_path):
    assert _c36(tmp_path).verdict == "missing-results"
    _write(tmp_path, _data([]))
    row = _c36(tmp_path)
    assert row.verdict == "untestable-here" and row.figure == "placement_deep"
    # No part is graded; each registered part is shown with its rule, undecided.
    assert [p.name for p in row.parts] == list(depth.C36_RULES)
    assert all(p.verdict == "untestable-here" and p.estimate.n == 0 for p in row.parts)


def test_the_deep_grid_does_not_move_c13_or_c19(tmp_path):
    # C13 and C19 read the main grid only: a deep grid full of failures changes nothing there.
    probe = GradientProbe(depths=[2, 4], last_layer_grad=[1.0, 0.7], first_layer_grad=[1.0, 1.0],
                          slope_last=-0.5, slope_first=0.0, slope_last_ci=Interval(0),
                          slope_first_ci=_ci(0.0, -0.1, 0.1), residual_rms_last=[1.0, 1.0],
                          per_layer_grad={"4": [1.0] * 4}, layer_spread_log2={"4": Interval(0)})
    main = PlacementEffect(depth=12, lr=3e-3, warmup=100, warmup_interaction=_ci(0.3, 0.1, 0.5),
                           pre_warmup_effect=_ci(0.0, -0.02, 0.02),
                           post_vs_pre_warm=_ci(-0.05, -0.08, -0.03),
                           post_grad_first_over_last_log2=_ci(-2.0, -3.0, -1.5),
                           pre_grad_first_over_last_log2=_ci(0.5, 0.0, 1.0))
    cells = [dataclasses.replace(c, depth=12) for c in _data([HOLDS]).deep]
    with_deep = dataclasses.replace(
        _data([FAILS], pre_failures=3), training=cells, effects=[main],
        init_gradients={p: {"xavier": probe} for p in ("pre", "post")})
    without = dataclasses.replace(with_deep, deep=[], deep_profiles=[], deep_effects=[])
    found = []
    for data in (with_deep, without):
        _write(tmp_path, data)
        found.append({r.id: r for r in run_claims(["C13", "C19"], Context(tmp_path, "quick"))})
    for cid in ("C13", "C19"):
        a, b = found[0][cid], found[1][cid]
        assert a.error is None and (a.verdict, a.summary, a.parts) == (b.verdict, b.summary,
                                                                      b.parts)
    assert found[0]["C19"].verdict == "confirmed"


def test_a_seed_added_to_other_arms_only_is_no_run_of_this_cell():
    from blocklab.claims.checks import runs_made

    cell = PlacementCell(placement="pre", depth=DEPTH, warmup=0, lr=3e-3, failures=0, runs=6,
                         status={"ok": 4, "missing": 2}, val_loss=_ci(2.0, 1.9, 2.1),
                         delta_vs_pre=None, steps_done=100.0, val_auc=_ci(2.0, 1.9, 2.1),
                         grad_first_over_last_log2=_ci(0.0, -0.1, 0.1))
    assert runs_made(cell) == 4
    assert depth._failed([cell], "pre", DEPTH) == (0, 4)
