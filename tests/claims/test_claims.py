"""The claims ledger: every claim has a check, analytic verdicts, and experimental checks read
stored suite summaries (fabricated here as typed summaries written the way `run_suite` writes
them, so the verdict logic is tested without training)."""

import json
import re
from pathlib import Path

import pytest

from blocklab.claims import CHECKS, CLAIM_TEXT, Context, run_claims
from blocklab.claims.text import claim_sources, claims_markdown, parse_claims
from blocklab.experiments.summaries import (
    SUMMARY_SCHEMA,
    ArmTuning,
    FfnArm,
    FfnData,
    FfnSensitivity,
    GradientProbe,
    Interval,
    KernelRatio,
    NormCostData,
    NormQuality,
    PlacementCell,
    PlacementData,
    PlacementEffect,
    PositionArm,
    PositionData,
    SlopePrediction,
    StabilityArm,
    StabilityEffect,
    StepTime,
    Summary,
    TimeRatio,
    YarnBetas,
    YarnRamp,
)

SHARED = Path(__file__).resolve().parents[3] / "shared" / "CLAIMS.md"


def _ids(text: str) -> set[str]:
    return set(re.findall(r"^- (C\d\d) ", text, flags=re.M))


def test_every_claim_id_has_a_check_and_text():
    from blocklab.claims.ledger import register_checks

    register_checks()

    ids = _ids(claims_markdown())
    assert len(ids) == 36
    assert ids == set(CHECKS) == set(CLAIM_TEXT) == set(claim_sources())


def test_bundled_claims_match_the_project_list_when_present():
    # The package ships CLAIMS.md; beside a checkout the project's own list must agree with it
    # on every claim the ledger covers. Claims the project added later (ids past the ledger's
    # last) may wait for their checks; a changed text or source of a covered claim may not.
    if SHARED.exists():
        project, bundled = parse_claims(SHARED.read_text(encoding="utf-8")), claim_sources()
        assert {k: project.get(k) for k in bundled} == bundled
        assert all(k > max(bundled) for k in set(project) - set(bundled))
    else:
        assert claim_sources()["C01"]["page"] == "000_4f34db7e0f1b54c8.txt"


def test_sources_cite_page_and_section():
    sources = claim_sources()
    assert sources["C01"]["section"] == "知识点一：SwiGLU 的门控计算与等参数宽度"
    assert sources["C23"] == {**sources["C23"], "page": "001_3354982bf5d64f93.txt",
                              "section": "FFN 计算对部署的影响"}
    assert all(s["page"].endswith(".txt") and s["section"] for s in sources.values())


def test_claims_citing_inline_or_with_notes_after_the_section_are_parsed():
    # C30 cites two sections inline, `(§ heading: "quoted words")`; C34 has notes on how to
    # grade it after its `[§ …]`; a `##` heading that names no page keeps the page above it.
    sources = claim_sources()
    assert sources["C30"]["section"] == "为什么 RoPE 成为主流？ / 避坑指南"
    assert "Grade both readings of the warning" in sources["C30"]["text"]
    assert sources["C34"]["section"] == "Transformer Block 内部结构 / 主流方案对比 / FFN 变体对比"
    assert "GPT-3 use pre-norm" in sources["C34"]["text"]
    assert sources["C34"]["text"].endswith("(the evidence lists the ones that hold).")
    assert sources["C29"]["page"] == sources["C36"]["page"] == "001_3354982bf5d64f93.txt"
    text = ("## Page 000 — x\n- C01 One. [§ A]\n- C02 Two (§ B) and\n  three (§ C: \"q\").\n"
            "\nProse after a blank line [§ D]\n## Later\n- C03 Four [§ E] note.\n")
    assert parse_claims(text) == {
        "C01": {"page": "000_4f34db7e0f1b54c8.txt", "section": "A", "text": "One."},
        "C02": {"page": "000_4f34db7e0f1b54c8.txt", "section": "B / C",
                "text": 'Two (§ B) and three (§ C: "q").'},
        "C03": {"page": "000_4f34db7e0f1b54c8.txt", "section": "E", "text": "Four note."}}


ANALYTIC = {
    "C01": "confirmed", "C02": "confirmed", "C03": "confirmed", "C04": "confirmed",
    "C05": "confirmed", "C06": "confirmed", "C07": "confirmed", "C08": "confirmed",
    "C09": "confirmed", "C10": "confirmed", "C11": "confirmed", "C14": "confirmed",
    "C15": "refuted", "C17": "confirmed", "C20": "confirmed", "C22": "untestable-here",
    "C23": "refuted", "C24": "confirmed", "C25": "refuted", "C26": "conditional",
    "C27": "conditional", "C28": "confirmed", "C34": "refuted", "C35": "conditional",
}


@pytest.fixture(scope="module")
def analytic(tmp_path_factory):
    ctx = Context(tmp_path_factory.mktemp("empty"), "quick")
    return {r.id: r for r in run_claims(sorted(ANALYTIC), ctx)}


@pytest.mark.parametrize("claim_id", sorted(ANALYTIC))
def test_analytic_verdicts(analytic, claim_id):
    row = analytic[claim_id]
    assert row.error is None, row.evidence.get("traceback")
    assert row.verdict == ANALYTIC[claim_id]
    assert row.summary and row.summary_zh and row.command


def test_corrected_figures(analytic):
    c23 = analytic["C23"].evidence
    assert c23["ffn_share"] == pytest.approx(0.7010, abs=5e-4)
    c15 = analytic["C15"].evidence
    assert c15["page_example"]["matrices"] == 177_209_344
    assert c15["meta_llama_3_8b"]["ffn"] == 3 * 4096 * 14336


def test_missing_results_name_the_command(tmp_path):
    rows = run_claims(["C12", "C13", "C16", "C18", "C19", "C21"], Context(tmp_path, "quick"))
    for row in rows:
        assert row.verdict == "missing-results" and row.error is None
        assert row.command.startswith("blocklab suite ") and str(tmp_path) in row.command


def test_unknown_id():
    with pytest.raises(ValueError, match=r"unknown claim id\(s\) \['C99'\]"):
        run_claims(["C99"])


def _ci(mean, low, high, n=10) -> Interval:
    return Interval(n, mean, low, high)


def _write(root: Path, suite: str, data) -> None:
    """Store `data` as the summary of `suite` (quick) exactly as `run_suite` writes one, so the
    checks read it back through `load_summary` (which checks every field)."""
    folder = root / suite / "quick"
    folder.mkdir(parents=True, exist_ok=True)
    summary = Summary(suite, "quick", 3, [], [], data, runs=1, wall_time_s=1.0)
    (folder / "summary.json").write_text(json.dumps(summary.to_dict()))


SENSITIVITY = FfnSensitivity("gpt2", 3e-3, {}, {})


def _ffn_arm(rel: Interval) -> FfnArm:
    loss = _ci(2.0, 1.9, 2.1)
    return FfnArm(gated=True, activation="silu", d_ff=171, params=1000, val_loss=loss,
                  val_bpb=loss, delta_vs_relu=rel, rel_delta_pct=rel, ms_per_step=None,
                  ms_per_step_train=None, val_loss_equal_time=loss,
                  delta_vs_relu_equal_time=rel, equal_time_step=None, status={"ok": 3},
                  counted=3, zero_grad_fraction={"init": 0.0, "final": None}, lr=3e-3)


def _ffn_data(swiglu, geglu, glu, lr_at_edge=(), tuned=("relu", "swiglu", "geglu", "glu")
              ) -> FfnData:
    arms = {name: _ffn_arm(rel)
            for name, rel in (("swiglu", swiglu), ("geglu", geglu), ("glu", glu))}
    grid = (3e-3, 1e-2, 3e-2)
    tuning = [ArmTuning(arm, grid, 1e-2 if arm not in lr_at_edge else 3e-2,
                        arm not in lr_at_edge, 0) for arm in tuned]
    return FfnData(arms=arms, seeds=10, steps=100, init="fan_in", lr_grid=list(grid),
                   lr_trials=[], lr_at_edge=list(lr_at_edge), sensitivity=SENSITIVITY, trend=[],
                   trend_change=Interval(0), warmup_steps=10, unigram_entropy=None,
                   baseline="relu", page={}, equal_time_ms=None, size={"d_model": 64},
                   lr_tuning=tuning)


@pytest.mark.parametrize(("longer", "verdict"), [
    (None, "would be contradicted"),  # no longer run yet
    (_ci(1.4, 1.1, 1.7), "contradicted-at-this-scale"),  # twice as long agrees
    (_ci(0.3, -0.2, 0.8), "would be contradicted"),  # twice as long does not
])
def test_c16_is_contradicted_only_when_a_run_twice_as_long_agrees(tmp_path, longer, verdict):
    worse, fine = _ci(1.5, 1.2, 1.8), _ci(-1.5, -2.0, -1.0)
    _write(tmp_path, "ffn", _ffn_data(worse, fine, fine))
    if longer is not None:
        folder = tmp_path / "ffn" / "quick+x2"
        folder.mkdir(parents=True)
        summary = Summary("ffn", "quick", 10, [], [], _ffn_data(longer, fine, fine), runs=1)
        (folder / "summary.json").write_text(json.dumps(summary.to_dict()))
    (row,) = run_claims(["C16"], Context(tmp_path, "quick"))
    swiglu = row.parts[0]
    if verdict == "contradicted-at-this-scale":
        assert swiglu.verdict == verdict and row.verdict == verdict
    else:
        assert swiglu.verdict == "not-reproduced-at-this-scale"
        assert swiglu.reason.startswith(verdict) and swiglu.decision.would_contradict
    # unfair arms (not tuned, or SwiGLU's or ReLU's best lr still at the grid's edge, where a
    # better one may lie beyond it): never contradicted, whatever the longer run says, and no
    # longer run is due
    for unfair in ({"tuned": ()}, {"lr_at_edge": ("swiglu",)}, {"lr_at_edge": ("relu",)}):
        _write(tmp_path, "ffn", _ffn_data(worse, fine, fine, **unfair))
        (row,) = run_claims(["C16"], Context(tmp_path, "quick"))
        assert row.parts[0].verdict == "not-reproduced-at-this-scale"
        assert not row.parts[0].decision.would_contradict
        assert "each arm at its own best learning rate" in row.parts[0].reason


@pytest.mark.parametrize(("swiglu", "geglu", "glu", "verdict", "parts"), [
    # Every gain wholly beyond δ = 0.5% even at Holm's levels: confirmed.
    (_ci(-1.5, -2.0, -1.0, 10), _ci(-1.2, -1.5, -0.9, 10), _ci(-0.9, -1.1, -0.7, 10), "confirmed",
     ["confirmed"] * 3),
    # GeGLU's and GLU's intervals reach δ = 0.5%: they are undecided, and so is the claim
    # (deciding them could make it confirmed or conditional).
    (_ci(-1.5, -2.0, -1.0, 10), _ci(-1.0, -1.5, -0.5, 10), _ci(-0.5, -1.0, -0.1, 10),
     "inconclusive", ["confirmed", "inconclusive", "inconclusive"]),
    # Worse than ReLU with every arm at one lr: not reproduced, never refuted; GeGLU's interval
    # holds both its claim and no effect (inconclusive), but SwiGLU settles the claim.
    (_ci(1.5, 1.0, 2.0, 10), _ci(0.2, -1.0, 1.0, 10), _ci(0.1, -0.2, 0.2, 10),
     "not-reproduced-at-this-scale",
     ["not-reproduced-at-this-scale", "inconclusive", "not-reproduced-at-this-scale"]),
    (_ci(-1.5, -2.0, -1.0, 10), _ci(0.2, 0.1, 0.3, 10), _ci(-0.9, -1.1, -0.7, 10), "conditional",
     ["confirmed", "not-reproduced-at-this-scale", "confirmed"]),
    # An undecided part is never dropped: SwiGLU confirmed, GeGLU unclear, GLU confirmed.
    (_ci(-1.5, -2.0, -1.0, 10), _ci(0.2, -1.0, 1.0, 10), _ci(-0.9, -1.1, -0.7, 10), "inconclusive",
     ["confirmed", "inconclusive", "confirmed"]),
    # Two seeds, however narrow the interval: the rule needs five.
    (_ci(1.67, 1.61, 1.72, 2), _ci(-1.0, -1.5, -0.5, 2), _ci(-0.5, -1.0, -0.1, 2),
     "inconclusive", ["inconclusive"] * 3),
])
def test_ffn_verdict_logic(tmp_path, swiglu, geglu, glu, verdict, parts):
    arms = {name: _ffn_arm(rel)
            for name, rel in (("swiglu", swiglu), ("geglu", geglu), ("glu", glu))}
    _write(tmp_path, "ffn", FfnData(arms=arms, seeds=3, steps=100, init="fan_in", lr_grid=[3e-3],
                                    lr_trials=[], lr_at_edge=[], sensitivity=SENSITIVITY,
                                    trend=[], trend_change=Interval(0), warmup_steps=10,
                                    unigram_entropy=None, baseline="relu", page={},
                                    equal_time_ms=None, size={"d_model": 64}))
    (row,) = run_claims(["C16"], Context(tmp_path, "quick"))
    assert row.verdict == verdict and row.error is None
    assert [p.verdict for p in row.parts] == parts
    assert [p.name for p in row.parts] == ["swiglu", "geglu", "glu"]
    shown = row.to_dict()
    assert shown["rule"] == {"metric": row.parts[0].rule.metric, "smallest_effect": 0.5,
                             "margin": 0.25, "min_seeds": 5, "claimed": -1.5,
                             "decides": row.parts[0].rule.decides, "threshold": 0.0,
                             "test": "effect", "max_seeds": 10}
    assert shown["estimate"] == {"value": swiglu.mean, "ci_low": swiglu.ci_low,
                                 "ci_high": swiglu.ci_high, "n": swiglu.n, "sd": None}
    assert shown["combines"] and len(shown["parts"]) == 3
    for part, found in zip(shown["parts"], row.parts, strict=True):
        assert part["decision"] == found.verdict
        assert part["looks"] == ([5, 8, 10] if found.estimate.n == 10 else [found.estimate.n])
        assert part["rule_hash"] == found.rule.hash and len(part["rule_hash"]) == 12
        assert set(part["estimate"]) == {"value", "ci_low", "ci_high", "n", "sd"}
        if found.verdict == "inconclusive":
            assert "detectable_effect" in part and "seeds_needed" in part
    if verdict in ("confirmed", "conditional", "not-reproduced-at-this-scale"):
        assert "Reached at this scale: d_model 64" in row.summary
    # Intervals reach the ledger's JSON as plain objects with the same keys as always.
    assert row.evidence["arms"]["swiglu"]["rel_delta_pct"] == {
        "n": swiglu.n, "mean": swiglu.mean, "ci_low": swiglu.ci_low, "ci_high": swiglu.ci_high,
        "sd": None}
    assert row.evidence["seeds"] == 3 and "d=64" in row.summary


def _placement(pre_failures: int, effect: PlacementEffect,
               spread: dict[str, Interval], stable: StabilityEffect | None = None,
               interior: bool = True) -> PlacementData:
    grads = {p: {init: GradientProbe(
        depths=[2, 4, 8], last_layer_grad=[1.0, 0.7, 0.5], first_layer_grad=[1.0, 1.0, 1.0],
        slope_last=-0.5, slope_first=0.1, slope_last_ci=Interval(0),
        slope_first_ci=_ci(0.1, -0.1, 0.3, 4), residual_rms_last=[None, None, None],
        per_layer_grad={"8": [1.0] * 8},
        # ‖∇W_down‖'s spread: context only, never graded (as large as xavier's at quick)
        layer_spread_log2={"8": _ci(3.7, 3.2, 4.2, 4)},
        sensitivity_spread_log2={"8": spread[init]},
        per_layer_sensitivity={"8": [4.0, *[1.0] * 6, 0.5, 1.0]})
        for init in spread} for p in ("pre", "post")}
    cells = []
    for p in ("pre", "post"):
        for w in (0, 100):
            failures = pre_failures if p == "pre" and w == 0 else 0
            cells.append(PlacementCell(
                placement=p, depth=12, warmup=w, lr=3e-3, failures=failures, runs=4,
                status={"ok": 4 - failures, "diverged": failures},
                val_loss=_ci(2.0, 1.9, 2.1),
                delta_vs_pre=None if p == "pre" else _ci(0.1, -0.5, 0.7), steps_done=300.0,
                val_auc=_ci(2.5, 2.4, 2.6), grad_first_over_last_log2=_ci(-1.0, -2.0, 0.0)))
    stable = stable or STABLE_HOLDS
    ladder = [4e-3 * 2 ** k for k in range(7)]
    stability = [StabilityArm(grid="sweep", placement=p, depth=12, warmup=w, steps=100,
                              ladder=ladder, rungs=[3, 3, 3, 3], log2_max_stable=_ci(3.0, 3.0,
                                                                                   3.0, 4),
                              max_stable_lr=ladder[3], censored_low=0, censored_high=0,
                              loss_at_lr={"0.032": [2.5] * 4})
                 for p in ("pre", "post") for w in (0, 100)]
    tuning = [ArmTuning(f"{p}/12/{w}", (3e-3, 1e-2, 3e-2), 1e-2, interior, 0)
              for p in ("pre", "post") for w in (0, 100)]
    return PlacementData(
        init_gradients=grads,
        predictions=SlopePrediction(slope_last={"post": 0.0, "pre": -0.5}, init="xavier",
                                    source="test"),
        training=cells, effects=[effect], interaction_trend=_ci(0.2, 0.1, 0.3, 4),
        unigram_entropy=None, seeds=4, steps=300, size={}, lr_tuning=tuning,
        stability=stability, stability_effects=[stable])


def _effect(pre, interaction, post_ratio, post_vs_pre) -> PlacementEffect:
    return PlacementEffect(depth=12, lrs={"pre cold": 1e-2, "pre warm": 1e-2,
                                          "post cold": 1e-2, "post warm": 1e-2},
                           warmup=100, warmup_interaction=interaction,
                           pre_warmup_effect=pre, post_vs_pre_warm=post_vs_pre,
                           post_grad_first_over_last_log2=post_ratio,
                           pre_grad_first_over_last_log2=_ci(0.5, 0.0, 1.0, 8))


def _stable(pre_cold_vs_warm, interaction) -> StabilityEffect:
    return StabilityEffect(grid="sweep", depth=12, warmup=33, pre_cold_vs_warm=pre_cold_vs_warm,
                           post_warm_vs_cold=interaction, warmup_interaction=interaction,
                           pre_vs_post_warm=_ci(1.0, 0.5, 1.5, 8),
                           pre_vs_post_cold=_ci(2.0, 1.5, 2.5, 8))


HOLDS = _effect(_ci(0.0, -0.02, 0.02, 8), _ci(0.3, 0.1, 0.5, 8), _ci(-2.0, -3.0, -1.5, 8),
                _ci(-0.05, -0.08, -0.03, 8))
FAILS = _effect(_ci(0.2, 0.1, 0.3, 8), _ci(0.01, -0.1, 0.1, 8), _ci(1.0, 0.5, 1.5, 8),
                _ci(0.05, 0.03, 0.08, 8))
FEW = _effect(*[_ci(0.0, -0.01, 0.01, 2)] * 4)
# the largest stable lr: pre-norm loses under half a doubling without warmup, and warmup
# raises post-norm's by two doublings more than pre-norm's
STABLE_HOLDS = _stable(_ci(0.0, -0.5, 0.5, 8), _ci(2.0, 1.5, 2.5, 8))
STABLE_FAILS = _stable(_ci(-3.0, -3.5, -2.5, 8), _ci(0.0, -0.3, 0.3, 8))
STABLE_FEW = _stable(*[_ci(0.0, -0.01, 0.01, 2)] * 2)
UNTESTABLE = "untestable-here"


@pytest.mark.parametrize(("pre_failures", "effect", "stable", "c19", "parts"), [
    # every testable part holds; "more expressive" is untestable, so conditional at best
    (0, HOLDS, STABLE_HOLDS, "conditional", ["confirmed"] * 5 + [UNTESTABLE]),
    # One pre-norm failure: "trains without warmup" is not shown, whatever the losses say.
    (1, HOLDS, STABLE_HOLDS, "conditional",
     ["not-reproduced-at-this-scale", *["confirmed"] * 4, UNTESTABLE]),
    # The warmup interaction's interval (+0.01 [−0.1, +0.1]) holds both its claimed +0.05 and
    # no effect: undecided, and deciding it could make the claim conditional.
    (0, FAILS, STABLE_FAILS, "inconclusive",
     ["not-reproduced-at-this-scale", "not-reproduced-at-this-scale", "inconclusive",
      "not-reproduced-at-this-scale", "not-reproduced-at-this-scale", UNTESTABLE]),
    (0, FEW, STABLE_FEW, "inconclusive", ["inconclusive"] * 5 + [UNTESTABLE]),
])
def test_placement_verdict_logic(tmp_path, pre_failures, effect, stable, c19, parts):
    spread = {"gpt2": _ci(0.5, 0.3, 0.7, 8), "xavier": _ci(3.0, 2.5, 3.5, 8),
              "depth": _ci(0.2, 0.1, 0.3, 8)}
    _write(tmp_path, "placement", _placement(pre_failures, effect, spread, stable))
    rows = {r.id: r for r in run_claims(["C12", "C13", "C19"], Context(tmp_path, "quick"))}
    assert rows["C13"].verdict == "run"
    assert rows["C13"].to_dict()["rule"]["min_seeds"] == 4
    assert rows["C13"].estimate.value == effect.warmup_interaction.mean
    assert [p.estimate.value for p in rows["C13"].parts] == [
        effect.warmup_interaction.mean, stable.warmup_interaction.mean]  # the stable-lr finding
    assert rows["C19"].verdict == c19 and rows["C19"].error is None
    assert [p.verdict for p in rows["C19"].parts] == parts
    assert rows["C19"].to_dict()["rule"]["min_seeds"] == 4
    # C12 on pre-norm only: xavier's 8× sensitivity spread holds, gpt2's 1.4× and depth's 1.1×
    # do not: it holds under one init of three.
    assert [p.verdict for p in rows["C12"].parts] == [
        "not-reproduced-at-this-scale", "confirmed", "not-reproduced-at-this-scale"]
    assert rows["C12"].verdict == "conditional"
    cell = rows["C13"].evidence["training"][1]
    assert cell["placement"] == "pre" and cell["delta_vs_pre"] is None
    assert set(cell["val_loss"]) == {"n", "mean", "ci_low", "ci_high", "sd"}


def test_c12_is_not_confirmed_by_a_parameter_gradient_spread(tmp_path):
    # Every init's sensitivity within 2× (log2 < 1): not reproduced, though ‖∇W_down‖ spreads
    # 13× (log2 3.7 [3.2, 4.2]) in the same stacks: that spread is reported, never graded.
    spread = {"gpt2": _ci(0.5, 0.3, 0.7, 4), "xavier": _ci(0.4, 0.2, 0.6, 4),
              "depth": _ci(0.1, 0.0, 0.2, 4)}
    _write(tmp_path, "placement", _placement(0, HOLDS, spread))
    (row,) = run_claims(["C12"], Context(tmp_path, "quick"))
    assert row.verdict == "not-reproduced-at-this-scale"
    assert row.evidence["spread_log2"]["xavier"]["mean"] == 3.7
    assert "log2 of ‖∇W_down‖" not in row.summary  # named as context, in its own sentence
    assert "Context, not graded" in row.summary and "+3.70" in row.summary
    # The sensitivity profile says where: the most sensitive input is layer 0's (4.0), the
    # least layer 7's (0.5); the final norm's input (the ninth value) is not a layer's.
    assert "largest entering layer 0, smallest entering layer 7" in row.summary


@pytest.mark.parametrize(("means", "verdict"), [
    ((3.0, 3.0, 3.0), "confirmed"),  # every init: no artefact of one
    ((3.0, 0.2, 3.0), "conditional"),
    ((0.2, 0.2, 0.2), "not-reproduced-at-this-scale"),
])
def test_c12_needs_the_spread_under_every_init(tmp_path, means, verdict):
    spread = {init: _ci(m, m - 0.2, m + 0.2, 4)
              for init, m in zip(("gpt2", "xavier", "depth"), means, strict=True)}
    _write(tmp_path, "placement", _placement(0, HOLDS, spread))
    (row,) = run_claims(["C12"], Context(tmp_path, "quick"))
    assert row.verdict == verdict
    assert [p.name for p in row.parts] == [
        "pre-norm, gpt2 init", "pre-norm, xavier init", "pre-norm, depth init"]


def test_c12_counts_an_init_the_probes_lack_as_undecided(tmp_path):
    # Two inits hold; the third was not probed: it may or may not hold, so the claim is
    # undecided between confirmed and conditional, never confirmed on the other two.
    spread = {"gpt2": _ci(3.0, 2.8, 3.2, 4), "xavier": _ci(3.0, 2.8, 3.2, 4)}
    _write(tmp_path, "placement", _placement(0, HOLDS, spread))
    (row,) = run_claims(["C12"], Context(tmp_path, "quick"))
    assert [p.verdict for p in row.parts] == ["confirmed", "confirmed", "inconclusive"]
    assert row.verdict == "inconclusive"


def _ratio(impl, ratio, low, high, d=1024, pass_name="fwdbwd") -> KernelRatio:
    return KernelRatio(d=d, rows=1024, threads=1, impl=f"rmsnorm:{impl}",
                       layernorm_impl=f"layernorm:{impl}", pass_name=pass_name,
                       time=TimeRatio(ratio=ratio, ci_low=low, ci_high=high, repeats=5))


def _step_time(path: str, ratio: float, low: float, high: float) -> StepTime:
    return StepTime(threads=1, model={"d_model": 64}, params={"rmsnorm": 10}, rmsnorm_ms=2.0,
                    layernorm_ms=2.0, path=path,
                    time=TimeRatio(ratio=ratio, ci_low=low, ci_high=high, repeats=30))


def _norm_cost(step, equivalent: bool, like_ratio: float = 0.84) -> NormCostData:
    from blocklab.experiments.summaries import FusedTiming

    loss = _ci(2.0, 1.9, 2.1)
    like = FusedTiming(
        d=128, rows=1024, threads=1, method="torch.compile",
        kernels={"rmsnorm": "torch.compile of …", "layernorm": "torch.compile of …"},
        torch_fused={"rmsnorm": False, "layernorm": True},
        rmsnorm_ms={"fwd": None, "fwdbwd": 0.8}, layernorm_ms={"fwd": None, "fwdbwd": 1.0},
        ratios={"fwdbwd": TimeRatio(ratio=like_ratio, ci_low=like_ratio - 0.05,
                                    ci_high=like_ratio + 0.05, repeats=15)},
        compile_s={"rmsnorm": 5.0, "layernorm": 4.0}, error=None)
    return NormCostData(
        kernels=[], compile=[],
        # a forward-only ratio is not shown: the claim is about training (forward+backward)
        ratios=[_ratio("plain", 0.85, 0.80, 0.90), _ratio("blocklab", 3.0, 2.5, 3.5),
                _ratio("plain", 2.0, 1.9, 2.1, pass_name="fwd")],
        step_time={"like-for-like/1": _step_time("like-for-like", *step),
                   # blocklab's own fused path is reported beside, never graded
                   "blocklab/1": _step_time("blocklab", 0.5, 0.4, 0.6)},
        # Quality is decided from the interval by the part's rule (two one-sided tests), not
        # from the suite's flag: equivalent or wholly outside ±0.02.
        quality=NormQuality(rmsnorm=loss, layernorm=loss,
                            delta=_ci(0.0, -0.01, 0.01) if equivalent else _ci(0.03, 0.025, 0.035),
                            margin=0.02, equivalent=equivalent, verdict="equivalent",
                            seeds=[0, 1, 2], statuses={}, unigram_entropy=None),
        like_for_like=[like])


NR = "not-reproduced-at-this-scale"


@pytest.mark.parametrize(("equivalent", "quality"), [(True, "confirmed"), (False, NR)])
def test_norm_cost_compute_is_decided_by_the_counts_not_by_timings(tmp_path, equivalent,
                                                                   quality):
    # Whatever the timings say (a step 10% cheaper or 5% dearer, kernels 0.5× or 1.5×), the
    # counts decide "compute": 35% fewer FLOPs per row (far more than about 7%), 0.02% fewer
    # bytes and 0.004% of a Llama-3-8B step (far less): compute does not hold, so the claim is
    # not reproduced, equivalent quality or not.
    found = set()
    for step, like in (((0.90, 0.88, 0.92), 0.5), ((1.05, 1.03, 1.07), 1.5)):
        _write(tmp_path, "norm-cost", _norm_cost(step, equivalent, like))
        (row,) = run_claims(["C18"], Context(tmp_path, "quick"))
        assert row.error is None
        assert [p.verdict for p in row.parts] == [NR, NR, NR, quality]
        found.add((row.verdict, tuple(p.estimate.value for p in row.parts[:3])))
        assert "equally fused kernels (both through torch.compile" in row.summary
        assert f"{like:.3f}" in row.summary  # reported
    ((verdict, values),) = found  # the same verdict and counts for both timings
    assert verdict == NR
    flops, bytes_, step_pct = values
    assert flops == pytest.approx(35.0)
    assert bytes_ == pytest.approx(100 * 8 / (5 * 4096 * 2 + 16))
    assert 0 < step_pct < 0.01
    assert [p.name for p in row.parts] == [
        "the norm needs about 7% fewer FLOPs", "the norm moves about 7% fewer bytes",
        "a training step needs about 7% fewer FLOPs", "nearly the same quality"]
    assert "above [5, 9]%" in row.parts[0].reason and "below [5, 9]%" in row.parts[1].reason
    assert row.rule.claimed == 7.0 and row.rule.test == "equivalence"
    assert "reports no general speed-up" in row.summary
    assert row.evidence["ratio_ranges"] == {"blocklab": [3.0, 3.0], "plain": [0.85, 0.85]}
    # The evidence keeps the flat rows the ledger has always shown.
    assert row.evidence["ratios"][0] == {
        "d": 1024, "rows": 1024, "threads": 1, "impl": "rmsnorm:plain",
        "layernorm_impl": "layernorm:plain", "pass": "fwdbwd", "ratio_vs_layernorm": 0.85,
        "ci_low": 0.80, "ci_high": 0.90, "repeats": 5}
    assert row.evidence["step_time"]["like-for-like/1"]["ratio"] == 1.05
    assert row.evidence["compute"]["flops_saving_pct"] == pytest.approx(35.0)
    assert row.evidence["like_for_like"][0]["method"] == "torch.compile"
    assert "fused add+RMSNorm kernel instead, 0.500" in row.summary
    assert row.evidence["quality"]["delta"]["ci_high"] == (0.01 if equivalent else 0.035)
    assert "over 3 seeds" in row.summary and "±0.02" in row.summary
    from blocklab.claims.registry import CHANGED_AFTER_DATA

    assert any("C18" in c.claims and "decided by exact counts" in c.what
               for c in CHANGED_AFTER_DATA)


@pytest.mark.parametrize(("readings", "quality", "verdict"), [
    ([NR, NR, NR], "confirmed", NR),
    (["confirmed", NR, NR], "confirmed", "confirmed"),
    ([NR, NR, "confirmed"], NR, "conditional"),
    ([NR, "confirmed", NR], "inconclusive", "inconclusive"),  # confirmed or conditional
    ([NR, NR, NR], "inconclusive", NR),  # compute alone decides it
])
def test_c18_combine_rule(readings, quality, verdict):
    from blocklab.claims.checks import combine_c18
    from blocklab.claims.ledger import Part
    from blocklab.claims.registry import registered
    from blocklab.claims.rules import Estimate

    rule = registered("C18", "quick")["nearly the same quality"]
    part = lambda v: Part("p", rule, Estimate(None, None, None, 0), v, "")  # noqa: E731
    assert combine_c18([part(v) for v in readings], part(quality)) == verdict


def _arm(pcts) -> PositionArm:
    reads = {m: (p if isinstance(p, str) else _ci(p, p, p)) for m, p in pcts.items()}
    return PositionArm(loss_at_L=_ci(2.0, 1.9, 2.1), loss_beyond_L=reads,
                       sliding={m: None for m in pcts}, extrapolated_minus_sliding=reads,
                       extrapolated_vs_sliding_pct=reads, per_position={}, passkey=None)


def _position(arms: dict[str, PositionArm]) -> PositionData:
    ramp = YarnRamp(beta_fast=32.0, beta_slow=1.0, ramp_pairs=[0, 1])
    return PositionData(L=128, mults=[1, 2, 4, 8], eval_lengths=[128, 256, 512, 1024],
                        arms=arms, relative_error={}, relative_error_blocklab={},
                        finite_past_max_seq_len={},
                        yarn=YarnBetas(paper=ramp, rescaled=ramp, rotary_pairs=8,
                                       reference_length=128),
                        train={}, order={}, cost=None, finetune=None)


def test_extrapolation_grades_against_the_page(tmp_path):
    unusable = "unavailable (table)"
    arms = {
        "learned": _arm({"2": unusable, "4": unusable, "8": unusable}),
        # The quick plan's long table (16·L rows, `position.arms`): a learned-8L arm is no
        # arm of that plan, and no rule is registered for it.
        "learned-16L": _arm({"2": 40.0, "4": 60.0, "8": 80.0}),
        "sinusoidal": _arm({"2": 30.0, "4": 40.0, "8": 60.0}),  # handicapped: not graded
        "sinusoidal+scale": _arm({"2": 3.0, "4": 12.0, "8": 40.0}),
        "alibi": _arm({"2": 0.1, "4": 0.2, "8": 0.3}),
        "rope": _arm({"2": 2.0, "4": 4.0, "8": 30.0}),
        "rope+ntk": _arm({"2": 1.0, "4": 2.0, "8": 4.0}),
        "rope+yarn": _arm({"2": 1.0, "4": 2.0, "8": 4.5}),
        "rope+linear": _arm({"2": 30.0, "4": 30.0, "8": 30.0}),  # not named by the page
    }
    _write(tmp_path, "position", _position(arms))
    (row,) = run_claims(["C21"], Context(tmp_path, "quick"))
    assert row.verdict == "confirmed", row.summary
    assert "L = 128 (3 seed(s))" in row.summary
    names = [p.name for p in row.parts]
    assert names[0] == "learned absolute (learned-16L) collapses at 2×"
    assert "sinusoidal (sinusoidal+scale) works at 2×" in names
    assert names[-2:] == ["RoPE works at 8× with ntk scaling", "RoPE works at 8× with yarn scaling"]
    assert row.to_dict()["rule"]["min_seeds"] == 3

    arms["rope"] = _arm({"2": 2.0, "4": 9.0, "8": 30.0})  # RoPE degrades at 4×
    arms["rope+yarn"] = _arm({"2": 1.0, "4": 2.0, "8": 9.0})  # YaRN degrades at 8×: no rescue
    arms["alibi"] = PositionArm(**{**arms["alibi"].__dict__, "extrapolated_vs_sliding_pct": {
        "2": _ci(0.1, 0.0, 0.2), "4": _ci(4.0, 2.0, 6.0), "8": _ci(0.3, 0.2, 0.4)}})
    _write(tmp_path, "position", _position(arms))
    rows = {r.id: r for r in run_claims(["C21", "C22"], Context(tmp_path, "quick"))}
    row = rows["C21"]
    assert row.verdict == "conditional"
    by_name = {p.name: p for p in row.parts}
    failed = [p.name for p in row.parts if p.verdict == "not-reproduced-at-this-scale"]
    assert failed == ["RoPE works at 4×", "RoPE works at 8× with yarn scaling"]
    assert by_name["ALiBi works at 4×"].verdict == "inconclusive"  # CI across 5%
    # Undecided, it cannot change the verdict: 2 or 3 of 9 statements fail either way.
    # C22 shows the scaled arms' reads: intervals as plain objects, unmade reads as strings.
    assert rows["C22"].error is None
    scaled = rows["C22"].evidence["scaled_arms"]
    assert set(scaled) == {"rope+ntk", "rope+yarn"} and scaled["rope+yarn"]["8"]["mean"] == 9.0


def test_extrapolation_needs_three_seeds(tmp_path):
    two_seeds = {m: _ci(0.1, 0.0, 0.2, n=2) for m in ("2", "4", "8")}
    arms = {"alibi": PositionArm(**{**_arm({"2": 0.1}).__dict__,
                                    "extrapolated_vs_sliding_pct": two_seeds})}
    _write(tmp_path, "position", _position(arms))
    (row,) = run_claims(["C21"], Context(tmp_path, "quick"))
    assert row.verdict == "inconclusive"
    assert [p.estimate.n for p in row.parts] == [2, 2, 2]
    assert all("needs at least 3" in p.reason for p in row.parts)


def test_a_check_that_raises_is_an_error_not_a_verdict(monkeypatch, capsys):
    """A renamed summary key (a KeyError inside a check) must never read as a finding."""
    from blocklab.claims import ledger
    from blocklab.cli import main

    def broken(ctx):
        raise KeyError("arms")

    monkeypatch.setitem(ledger.CHECKS, "C16", broken)
    (row,) = run_claims(["C16"])
    assert row.verdict == "error" and row.error == "KeyError: 'arms'"
    assert row.verdict not in ("confirmed", "refuted", "conditional", "untestable-here",
                               "missing-results")
    assert "KeyError" in row.evidence["traceback"]
    assert main(["claims", "C16", "--json"]) == 1
    printed = json.loads(capsys.readouterr().out)
    rows = printed["claims"] if isinstance(printed, dict) else printed
    assert [r["verdict"] for r in rows] == ["error"]


def _ffn_without_arms() -> dict:
    """A current-schema ffn summary whose data lacks a field the checks read."""
    doc = Summary("ffn", "quick", 3, [], [], None).to_dict()
    doc["data"] = {"seeds": 3, "steps": 100}
    return doc


@pytest.mark.parametrize("content", [{"schema": 1}, {"schema": SUMMARY_SCHEMA - 1},
                                     {"no": "schema"}, "{not json",
                                     _ffn_without_arms()])
def test_a_summary_of_another_schema_fails_loudly(tmp_path, content):
    from blocklab.errors import ResultsError
    from blocklab.experiments.summaries import load_summary

    folder = tmp_path / "ffn" / "quick"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(content if isinstance(content, str)
                                         else json.dumps(content))
    with pytest.raises(ResultsError, match=r"summary\.json.*blocklab suite ffn --size quick"):
        load_summary(tmp_path, "ffn", "quick")
    (row,) = run_claims(["C16"], Context(tmp_path, "quick"))
    assert row.verdict == "error" and "ResultsError" in row.error
    assert load_summary(tmp_path, "placement", "quick") is None  # not run: no error


def test_a_scale_dependent_claim_refuted_by_its_check_is_an_error(monkeypatch):
    from blocklab.claims import ledger

    monkeypatch.setitem(ledger.CHECKS, "C16", lambda ctx: ledger.Finding("refuted", "x", "x"))
    (row,) = run_claims(["C16"])
    assert row.verdict == "error" and "depends on scale" in row.error


def test_the_quick_ffn_suite_runs_the_seeds_c16s_rule_needs():
    from blocklab.claims.checks import C16_MIN_SEEDS
    from blocklab.experiments.suites import get_suite

    seeds = get_suite("ffn").default_seeds
    assert seeds["quick"] >= C16_MIN_SEEDS and seeds["full"] >= C16_MIN_SEEDS


@pytest.mark.parametrize(("change", "word"), [
    (_ci(-2.0, -3.0, -1.0, 5), "grows"), (_ci(2.0, 1.0, 3.0, 5), "shrinks"),
    (_ci(0.5, -1.0, 2.0, 5), "shows no resolved trend"), (Interval(0), "shows no resolved trend"),
])
def test_c16_says_whether_swiglus_effect_grows_with_model_size(tmp_path, change, word):
    from blocklab.experiments.summaries import FfnTrendPoint

    arms = {name: _ffn_arm(_ci(-1.0, -2.0, 0.5, 5)) for name in ("relu", "swiglu", "geglu", "glu")}
    trend = [FfnTrendPoint(d, 1000 * d, _ci(-1.0, -2.0, 0.0, 5), {"relu": 1e-2, "swiglu": 1e-2})
             for d in (32, 64)]
    _write(tmp_path, "ffn", FfnData(arms=arms, seeds=5, steps=100, init="fan_in",
                                    lr_grid=[3e-3, 1e-2, 3e-2], lr_trials=[], lr_at_edge=[],
                                    sensitivity=SENSITIVITY, trend=trend, trend_change=change,
                                    warmup_steps=10, unigram_entropy=None, baseline="relu",
                                    page={}, equal_time_ms=None, size={"d_model": 64}))
    (row,) = run_claims(["C16"], Context(tmp_path, "quick"))
    assert f"the advantage {word} with size here" in row.summary
    assert [p["d_model"] for p in row.evidence["trend"]] == [32, 64]


def test_claims_precision_reads_bf16_results_and_float32_only_suites_at_fp32(tmp_path, capsys):
    from blocklab.cli import main

    spread = {"xavier": _ci(3.0, 2.5, 3.5, 8), "gpt2": _ci(0.5, 0.3, 0.7, 8),
              "depth": _ci(0.2, 0.1, 0.3, 8)}
    # bf16 placement results hold, float32 ones fail: `--precision bf16` grades the former
    _write(tmp_path, "placement", _placement(0, FAILS, spread, STABLE_FAILS))
    bf16 = tmp_path / "placement" / "quick+bf16"
    bf16.mkdir()
    summary = Summary("placement", "quick", 3, [], [],
                      _placement(0, HOLDS, spread, STABLE_HOLDS), runs=1, wall_time_s=1.0)
    (bf16 / "summary.json").write_text(json.dumps(summary.to_dict()))
    ctx = Context(tmp_path, "quick", precision="bf16")
    (row,) = run_claims(["C19"], ctx)
    assert row.verdict == "conditional" and row.parts[1].verdict == "confirmed"
    assert "--precision bf16" in row.command
    (fp32,) = run_claims(["C19"], Context(tmp_path, "quick"))
    assert fp32.verdict == "inconclusive" and "--precision" not in fp32.command
    # norm-cost measures float32 only: read at fp32 whatever is asked, and said so
    assert ctx.precision_of("norm-cost") == "fp32" and ctx.fp32_only == {"norm-cost"}
    assert main(["claims", "C19", "C18", "--precision", "bf16", "--results",
                 str(tmp_path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "norm-cost measure float32 only and were read at fp32" in out
    assert main(["claims", "--precision", "fp16"]) == 2
    err = capsys.readouterr()
    assert "--precision 'fp16' is not allowed; expected one of ['fp32', 'bf16']" in (
        err.out + err.err) and "Traceback" not in err.err
