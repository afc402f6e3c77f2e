"""position.summary: the tiny grid runs end to end into the typed `PositionData`, the tuning
path trains each arm at its own lr, and the runs only the full size makes summarise as
before."""

import dataclasses
import math

import pytest

from blocklab.errors import ResultsError
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites import load_summary
from blocklab.experiments.suites.position import SUITE, runs
from blocklab.experiments.suites.position.summary import summarise
from blocklab.experiments.suites.position.timing import COST_SCHEMES
from blocklab.experiments.suites.tuning import LrGrid

from ..conftest import bare_spec, final_metrics


def test_tiny_suite_end_to_end(tiny_runs):
    options = RunOptions.for_suite(SUITE, "tiny")
    summary = load_summary(tiny_runs, "position", "tiny")
    L, mults = runs.SIZES["tiny"].L, runs.SIZES["tiny"].mults
    first = summary.tables[0]
    assert first.title == f"Loss (nats/token) on positions ≥ L, trained at L={L}"
    assert first.columns == ["arm", "1× (all positions)", "2× (p ≥ L)", "4× (p ≥ L)",
                             "sliding 4× (p ≥ L)"]
    titles = [t.title for t in summary.tables]
    assert not any("(C20)" in t for t in titles) and any("(C26)" in t for t in titles)
    # the arms and runs no registered rule grades are named as full only
    note = next(n for n in summary.notes if n.startswith("Run at --size full only"))
    assert "the learned and sinusoidal arms" in note and "relative-position error" in note
    assert not any("cannot run past L" in n for n in summary.notes)  # no learned arm here

    data = summary.data
    assert data.L == L and data.eval_lengths == [m * L for m in mults]
    expected = set(runs.arms("tiny")) | {f"rope+{k}" for k in runs.SCALINGS}
    assert expected <= set(data.arms)
    assert not set(runs.REPORTED_ONLY) & set(data.arms)
    for name, arm in data.arms.items():
        assert set(arm.loss_beyond_L) == {"2", "4"}, name
        assert arm.passkey is None, name  # passkey models: full only
    assert data.arms["rope"].loss_beyond_L["4"].n == 1
    assert len(data.arms["rope"].per_position["4"].loss) == 4 * 8  # buckets of L/8
    assert data.relative_error == {} and data.relative_error_blocklab == {}
    assert data.finite_past_max_seq_len["rope"][0].float32 is True
    assert data.finite_past_max_seq_len["rope"][0].bfloat16 is True
    # C29: every trained arm has its order probe; C30: fine-tuned arms by scaling kind; C31:
    # the timed cost run with parameters from blocklab.budget and kernels per scheme.
    assert set(data.order) == set(runs.arms("tiny"))
    probe = data.order["none"]
    assert probe.prefix_len == runs.SIZES["tiny"].order.prefix_len and probe.tv.n == 1
    assert 0 <= probe.tv.mean <= 1 and probe.kl.mean >= 0
    run = data.train["none"][0]
    assert probe.loss_minus_unigram.mean == pytest.approx(run.val_loss - run.unigram_entropy)
    assert data.finetune.arms == {"none": "rope+ft2x", "ntk": "rope+ntk+ft2x",
                                  "yarn": "rope+yarn+ft2x"}
    assert data.finetune.scale == max(mults) and set(data.finetune.arms.values()) <= set(data.arms)
    cost = data.cost
    assert set(cost.schemes) == set(COST_SCHEMES) and cost.repeats == 3
    assert set(cost.params) == set(runs.PARAM_SCHEMES)  # the learned table is counted, not trained
    assert cost.params["rope"] == cost.params["none"] == cost.params["alibi"]
    assert cost.params["learned"] - cost.params["none"] == L * 32  # table rows × d_model
    for name, scheme in cost.schemes.items():
        assert scheme.params == scheme.params_module, name  # budget vs the built module
        assert scheme.kernels_train and scheme.kernels_decode
    assert cost.schemes["rope"].masks_train == ["is_causal"]
    assert cost.schemes["alibi"].masks_train[0].startswith("float32 mask")
    assert cost.schemes["none"].train_vs_none.ratio == 1.0
    assert "not a realistic timing" in cost.realistic.label  # tiny: the code path only
    assert any("(C29)" in t for t in titles) and any("(C31)" in t for t in titles)
    # tiny and quick do not tune (each graded part compares an arm with itself): every arm at
    # the grid's middle lr, said in a note
    assert data.lr_tuning == [] and runs.tune(options) == runs.tune(RunOptions("quick")) == []
    middle = runs.SIZES["tiny"].train.lr_grid.base[1]
    assert any(n.startswith(f"Every arm trains at peak lr {middle:g}") for n in summary.notes)


def test_full_tunes_every_arm_and_trains_each_at_its_own_lr(monkeypatch):
    """The tuning path, at tiny's shape with tuning switched on and each arm's tuning runs
    scored by hand: each arm's evaluation runs at its own best lr, shown in a tuning table."""
    assert runs.SIZES["full"].train.tuning_seeds == 2
    assert len(runs.SIZES["full"].train.lr_grid.base) == 5
    tiny = runs.SIZES["tiny"]
    monkeypatch.setitem(runs.SIZES, "tiny", dataclasses.replace(tiny, train=dataclasses.replace(
        tiny.train, tuning_seeds=1, lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0, 1))))
    options = RunOptions("tiny", range(1))
    specs = runs.tune(options)
    assert {s.arm for s in specs} == {f"tune/{a}" for a in runs.arms("tiny")} and len(specs) == 15
    best = {arm: (1e-3, 3e-3, 1e-2)[i % 3] for i, arm in enumerate(runs.arms("tiny"))}
    tuned = [(s, RunResult("ok", final=final_metrics(
        2.0 + abs(math.log(s.payload["train"]["lr"] / best[s.payload["arm"]])))))
        for s in specs]
    trained = [s for s in runs.plan(options, tuned) if s.payload["kind"] == "train"]
    assert trained and all(s.payload["train"]["lr"] == best[s.arm] for s in trained)
    summary = summarise(options, tuned)
    assert [(t.arm, t.lr) for t in summary.data.lr_tuning] == list(best.items())
    assert any(t.title.startswith("Each arm's peak lr") for t in summary.tables)


def test_full_only_runs_summarise_from_their_runs(monkeypatch):
    """The runs the full size adds (the learned table of L, passkey models, the relative-error
    run) read as before: a learned table cannot run past L, recorded, not a loss; the passkey
    grid marks it unavailable there; the relative error fills the C20 table."""
    # (what the full size plans: test_graded_only)
    monkeypatch.setitem(runs.SIZES, "tiny", dataclasses.replace(
        runs.SIZES["tiny"], passkey=runs.PasskeySetting(steps=3, batch_size=2, lr=3e-3, n=2,
                                                         depths=(0.1, 0.9))))
    options = RunOptions("tiny", range(1))
    results = [(bare_spec("learned", "learned seed 0"),
                runs.train_and_read(options, "learned", 0, False)),
               (bare_spec("passkey:learned", "passkey learned seed 0"),
                runs.passkey_run(options, "learned", 0, False)),
               (bare_spec("relative_error", "rope relative-position error"),
                runs.relative_error_run())]
    # Each run returns a RunResult that stores as before: a training run wraps the trainer's.
    trained, passkey, relative = (result for _, result in results)
    assert trained.status == "ok" and trained.extra["kind"] == "train"
    assert RunResult.from_dict(trained.extra["train"]).final.val_loss is not None
    assert set(trained.extra) == {"kind", "arm", "seed", "L", "train", "eval", "finite", "order"}
    assert passkey.extra["accuracy"]["learned"]["2"] == {"0.1": runs.UNAVAILABLE,
                                                        "0.9": runs.UNAVAILABLE}
    assert relative.extra["shifts"] == list(runs.RELATIVE_ERROR_SHIFTS)
    for _, result in results:
        assert RunResult.from_dict(result.to_dict()) == result and result.wall_time_s > 0
    decoded = runs.decode_runs(results)
    assert [r.arm for r in decoded.arms] == ["learned"] and decoded.cost is None
    assert decoded.arms[0].finite.error and decoded.passkey[0].final_train_loss is not None
    with pytest.raises(ResultsError, match=r"unknown \['evals'\]"):  # decoded, not guessed
        runs.decode_runs([(results[0][0], RunResult("ok", extra={**trained.extra, "evals": {}}))])
    summary = summarise(options, results)
    learned = summary.data.arms["learned"]
    assert learned.loss_beyond_L["2"] == runs.UNAVAILABLE
    assert learned.passkey.by_length["2"] == runs.UNAVAILABLE
    assert set(summary.data.relative_error) == set(runs.RELATIVE_ERROR_DTYPES)
    assert summary.data.relative_error["float64"][0] == [0, 0.0]
    assert any("(C20)" in t.title for t in summary.tables)
    assert any("cannot run past L" in n for n in summary.notes)
    note = next(n for n in summary.notes if n.startswith("Run at --size full only"))
    assert "the sinusoidal arm (" in note and "the learned" not in note  # read: not named
    assert "relative-position error" not in note
