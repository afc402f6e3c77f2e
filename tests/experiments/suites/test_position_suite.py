"""position suite: every arm is a real ablation, the loss slicing and sliding windows pick the
right tokens, RoPE's relative-position error behaves as float64/bfloat16 must, and the tiny
grid runs end to end."""

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from blocklab.errors import ResultsError
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites import get_suite, run_suite
from blocklab.experiments.suites import position as ps
from blocklab.experiments.suites.position.passkey import passkey_run
from blocklab.experiments.suites.position.relative_error import relative_error_run
from blocklab.experiments.suites.position.runs import train_and_read
from blocklab.experiments.trainer import build_model, evaluate


def _model(arm, size="tiny", seed=0):
    return build_model(ps.arm_config(size, arm), ps.train_config(RunOptions(size), seed)).eval()


def _logits(model, ids):
    with torch.no_grad():
        return model(ids)


def test_every_position_arm_changes_the_forward_output():
    ids = torch.randint(0, 256, (2, 64), generator=torch.Generator().manual_seed(0))
    logits = {arm: _logits(_model(arm), ids) for arm in ps.schemes("tiny")}
    large = ps.schemes("tiny")[2]  # learned with the larger table
    for a in logits:
        for b in logits:
            if a < b and {a, b} != {"learned", large}:
                assert not torch.allclose(logits[a], logits[b]), (a, b)
    # The two learned tables start from the same (seed, name) stream, so within L they agree:
    # the arms differ only in the rows past L.
    torch.testing.assert_close(logits["learned"], logits[large], rtol=0, atol=0)


def test_rope_scalings_change_the_output_past_L():
    L = ps.SIZES["tiny"].L
    model = _model("rope")
    ids = torch.randint(0, 256, (1, 2 * L), generator=torch.Generator().manual_seed(1))
    plain = _logits(model, ids)
    for kind in ps.SCALINGS:
        scaled = ps.with_rope_scaling(model, ps.scaling_config(kind, 2, L))
        assert not torch.allclose(_logits(scaled, ids), plain), kind
    # Same weights: with no scaling the copy is the model.
    torch.testing.assert_close(_logits(ps.with_rope_scaling(model, None), ids), plain)


def test_learned_table_past_L_is_recorded_not_raised():
    L = ps.SIZES["tiny"].L
    val = np.arange(4 * L + 10, dtype=np.uint8)
    read = ps.extrapolation(_model("learned"), val, L, (1, 2), n_windows=2)
    assert read.loss_beyond_L == {"2": ps.UNAVAILABLE}
    assert "learned table" in read.errors["2"]
    assert read.loss_at_L is not None and read.sliding["2"] is not None
    assert read.per_position["1"] is not None and read.per_position["2"] is None
    large = ps.extrapolation(_model(ps.schemes("tiny")[2]), val, L, (2,), n_windows=2)
    assert isinstance(large.loss_beyond_L["2"], float) and large.errors == {}
    far = ps.finite_far_out(_model("learned"))
    assert far["float32"] is None and "exceeds learned table" in far["error"]


def test_loss_beyond_picks_exactly_the_positions_at_or_past_L():
    L = 8
    per_position = [100.0] * L + [1.0, 2.0, 3.0, 6.0]
    assert ps.loss_beyond(per_position, L) == 3.0
    assert ps.loss_beyond(list(range(3 * L)), L) == float(np.mean(range(L, 3 * L)))
    with pytest.raises(ValueError, match="none at or past L=8"):
        ps.loss_beyond([1.0] * L, L)
    # Through the evaluation: the reported number is the mean of the curve's entries >= L.
    model = _model("alibi")
    val = np.random.default_rng(0).integers(0, 256, 5000).astype(np.uint8)
    L = ps.SIZES["tiny"].L
    read = ps.extrapolation(model, val, L, (2,), n_windows=2, sliding=False)
    curve = read.per_position["2"]
    assert len(curve) == 2 * L and read.sliding == {}
    assert read.loss_beyond_L["2"] == pytest.approx(float(np.mean(curve[L:])), rel=1e-12)


def test_sliding_windows_score_every_token_once_below_the_window():
    L = ps.SIZES["tiny"].L
    model = _model("learned")  # any position >= L would raise
    rows = torch.randint(0, 256, (3, 4 * L + 1), generator=torch.Generator().manual_seed(2))
    curve = ps.sliding_window_loss(model, rows, L, L // 2)
    assert len(curve) == 4 * L and all(math.isfinite(v) for v in curve)
    # One window: the same numbers as a plain evaluation of that window.
    single = ps.sliding_window_loss(model, rows[:, :L + 1], L, L // 2)
    reference = evaluate(model, {L: rows[:, :L + 1]}, batch_tokens=4096)[L]["per_position"]
    np.testing.assert_allclose(single, reference, rtol=1e-6)
    # The first L targets of the long read come from the first window alone.
    np.testing.assert_allclose(curve[:L], reference, rtol=1e-6)
    with pytest.raises(ValueError, match="do not tile"):
        ps.sliding_window_loss(model, rows[:, :L + 11], L, L // 2)


def test_rope_relative_error_is_zero_in_float64_and_grows_in_bfloat16():
    shifts = (0, 10, 100, 10_000, 100_000)
    exact = dict(ps.rope_relative_error("float64", shifts))
    assert max(exact.values()) < 1e-9
    low = dict(ps.rope_relative_error("bfloat16", shifts))
    assert low[0] == 0.0
    assert low[10] < low[10_000] < low[100_000]
    assert low[100_000] > 0.5  # position 10^5 in bfloat16 is rounded to a multiple of 512
    # float16 cannot hold position 10^5 at all: reported as None (NaN/inf), not as a number.
    assert dict(ps.rope_relative_error("float16", shifts))[100_000] is None
    # blocklab's pipeline keeps float32 angles: bfloat16 only adds a constant rounding floor.
    ours = dict(ps.rope_relative_error_blocklab("bfloat16", shifts))
    assert ours[100_000] < 0.1


def test_yarn_betas_keep_the_paper_split_of_the_spectrum():
    assert ps.yarn_betas(4096) == (32.0, 1.0)
    assert ps.yarn_betas(128) == (1.0, 1 / 32)
    # Llama 2 (L 4096, 64 pairs): ramp over pairs 20..46; at L=128 with 16 pairs the rescaled
    # β give 5..12, the same fractions (to the rounding of floor/ceil).
    assert ps.yarn_ramp_pairs(4096, 128, 32.0, 1.0) == (20, 46)
    assert ps.yarn_ramp_pairs(128, 32, *ps.yarn_betas(128)) == (5, 12)


def test_tiny_suite_end_to_end(tmp_path):
    suite = get_suite("position")
    assert suite is ps.SUITE
    options = RunOptions.for_suite(suite, "tiny", 1)
    summary = run_suite(suite, options, tmp_path, progress=False)
    L, mults = ps.SIZES["tiny"].L, ps.SIZES["tiny"].mults
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
    assert ps.arms("tiny") == ("none", "learned-4L", "sinusoidal+scale", "rope", "alibi")
    expected = set(ps.arms("tiny")) | {f"rope+{k}" for k in ps.SCALINGS}
    assert expected <= set(data.arms)
    assert not set(ps.REPORTED_ONLY) & set(data.arms)
    assert any(name.endswith("+ft2x") for name in data.arms)  # tiny fine-tunes too
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
    assert set(data.order) == set(ps.arms("tiny"))
    probe = data.order["none"]
    assert probe.prefix_len == ps.SIZES["tiny"].order.prefix_len and probe.tv.n == 1
    assert 0 <= probe.tv.mean <= 1 and probe.kl.mean >= 0
    run = data.train["none"][0]
    assert probe.loss_minus_unigram.mean == pytest.approx(run.val_loss - run.unigram_entropy)
    assert data.finetune.arms == {"none": "rope+ft2x", "ntk": "rope+ntk+ft2x",
                                  "yarn": "rope+yarn+ft2x"}
    assert data.finetune.scale == max(mults) and set(data.finetune.arms.values()) <= set(data.arms)
    cost = data.cost
    assert set(cost.schemes) == set(ps.COST_SCHEMES) and cost.repeats == 3
    assert set(cost.params) == set(ps.PARAM_SCHEMES)  # the learned table is counted, not trained
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
    assert data.lr_tuning == [] and ps.tune(options) == ps.tune(RunOptions("quick")) == []
    middle = ps.SIZES["tiny"].train.lr_grid.base[1]
    assert any(n.startswith(f"Every arm trains at peak lr {middle:g}") for n in summary.notes)


def test_full_tunes_every_arm_and_trains_each_at_its_own_lr(tmp_path, monkeypatch):
    """The tuning path, at tiny's shape with tuning switched on: nothing trains in 4 steps,
    so each best is the grid's smallest lr, where the grid grew once (tiny's cap) before
    evaluation, and each arm's evaluation runs at it."""
    from blocklab.experiments.suites.tuning import LrGrid

    assert ps.SIZES["full"].train.tuning_seeds == 2
    assert len(ps.SIZES["full"].train.lr_grid.base) == 5
    tiny = ps.SIZES["tiny"]
    monkeypatch.setitem(ps.SIZES, "tiny", dataclasses.replace(tiny, train=dataclasses.replace(
        tiny.train, tuning_seeds=1, lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0, 1))))
    suite = get_suite("position")
    summary = run_suite(suite, RunOptions.for_suite(suite, "tiny", 1), tmp_path, progress=False)
    data = summary.data
    assert [t.arm for t in data.lr_tuning] == list(ps.arms("tiny"))
    assert all(t.extended == 1 and not t.interior for t in data.lr_tuning)
    assert len(data.lr_trials) == 4 * len(ps.arms("tiny"))
    runs = [json.loads(p.read_text()) for p in (tmp_path / "position" / "tiny").glob("*.json")
            if p.name not in ("summary.json", "planned_rules.json")]
    lrs = {t.arm: t.lr for t in data.lr_tuning}
    trained = [r for r in runs if r.get("kind") == "train"]
    assert trained and all(r["train"]["train_config"]["lr"] == lrs[r["arm"]] for r in trained)
    assert any(t.title.startswith("Each arm's peak lr") for t in summary.tables)


def test_quick_reads_to_16x_and_fine_tunes_ntk_and_yarn():
    quick = ps.SIZES["quick"]
    assert quick.mults == (1, 2, 4, 8, 16)
    assert quick.finetune is not None and quick.finetune.kinds == (None, "ntk", "yarn")
    assert "learned-16L" in ps.arms("quick")
    cost = [s for s in ps.plan(RunOptions("quick", range(1)), []) if s.arm == "cost"]
    assert len(cost) == 1 and cost[0].timed


def test_full_only_runs_summarise_from_their_runs(monkeypatch):
    """The runs the full size adds (the learned table of L, passkey models, the relative-error
    run) read as before: a learned table cannot run past L, recorded, not a loss; the passkey
    grid marks it unavailable there; the relative error fills the C20 table."""
    from blocklab.experiments.suites.base import RunSpec

    assert set(ps.REPORTED_ONLY) <= set(ps.arms("full")) == set(ps.schemes("full"))
    full = ps.plan(RunOptions("full", range(1)), [])
    assert {s.arm for s in full} >= {*ps.schemes("full"), "relative_error", "cost"}
    assert {s.arm for s in full if s.payload["kind"] == "passkey"} == {
        f"passkey:{a}" for a in ps.schemes("full")}
    monkeypatch.setitem(ps.SIZES, "tiny", dataclasses.replace(
        ps.SIZES["tiny"], passkey=ps.PasskeySetting(steps=3, batch_size=2, lr=3e-3, n=2,
                                                    depths=(0.1, 0.9))))
    options = RunOptions("tiny", range(1))

    def spec(label, arm):
        return RunSpec(label, arm, 0, {}, lambda progress: RunResult("ok"))

    results = [(spec("learned seed 0", "learned"),
                train_and_read(options, "learned", 0, False)),
               (spec("passkey learned seed 0", "passkey:learned"),
                passkey_run(options, "learned", 0, False)),
               (spec("rope relative-position error", "relative_error"), relative_error_run())]
    # Each run returns a RunResult that stores as before: a training run wraps the trainer's.
    trained, passkey, relative = (result for _, result in results)
    assert trained.status == "ok" and trained.extra["kind"] == "train"
    assert RunResult.from_dict(trained.extra["train"]).final.val_loss is not None
    assert set(trained.extra) == {"kind", "arm", "seed", "L", "train", "eval", "finite", "order"}
    assert passkey.extra["accuracy"]["learned"]["2"] == {"0.1": ps.UNAVAILABLE,
                                                        "0.9": ps.UNAVAILABLE}
    assert relative.extra["shifts"] == list(ps.RELATIVE_ERROR_SHIFTS)
    for _, result in results:
        assert RunResult.from_dict(result.to_dict()) == result and result.wall_time_s > 0
    runs = ps.decode_runs(results)
    assert [r.arm for r in runs.arms] == ["learned"] and runs.cost is None
    assert runs.arms[0].finite.error and runs.passkey[0].final_train_loss is not None
    with pytest.raises(ResultsError, match=r"unknown \['evals'\]"):  # decoded, not guessed
        ps.decode_runs([(results[0][0], RunResult("ok", extra={**trained.extra, "evals": {}}))])
    summary = ps.summarise(options, results)
    learned = summary.data.arms["learned"]
    assert learned.loss_beyond_L["2"] == ps.UNAVAILABLE
    assert learned.passkey.by_length["2"] == ps.UNAVAILABLE
    assert set(summary.data.relative_error) == set(ps.RELATIVE_ERROR_DTYPES)
    assert summary.data.relative_error["float64"][0] == [0, 0.0]
    assert any("(C20)" in t.title for t in summary.tables)
    assert any("cannot run past L" in n for n in summary.notes)
    note = next(n for n in summary.notes if n.startswith("Run at --size full only"))
    assert "the sinusoidal arm (" in note and "the learned" not in note  # read: not named
    assert "relative-position error" not in note


def test_run_ids_are_pinned_and_options_reach_every_train_config():
    """The sizes' settings are hashed into the run ids (a change re-plans the runs): ids made
    before `SIZES` held dataclasses stay the same, and the backend, which changes speed only,
    leaves them alone. Precision and backend reach the TrainConfig every model is built with."""
    def ids(options):
        return {s.label: s.run_id for s in ps.plan(options, [])}

    # (the training runs' ids moved once, when every size but tiny registered a learn margin)
    quick = ids(RunOptions("quick", range(2, 3)))
    assert quick["none seed 2"] == "087feebd7a7a"
    assert quick["position cost (timed)"] == "022751fae15b"
    full = ids(RunOptions("full", range(2, 3), precision="bf16"))
    assert full["passkey none seed 2"] == "b8e164f9ce1b" and full["none seed 2"] == "2f38444fabbb"
    assert ids(RunOptions("full", range(2, 3), "bf16", backend="reference")) == full
    (size_config,) = {json.dumps(s.payload["size_config"], sort_keys=True)
                      for s in ps.plan(RunOptions("quick", range(2)), [])
                      if s.payload["kind"] == "train"}
    assert json.loads(size_config)["train"]["lr_grid"] == {"base": [1e-3, 3e-3, 1e-2],
                                                           "factor": 3.0, "max_extensions": 3}
    tc = ps.train_config(RunOptions("tiny", precision="bf16", backend="reference"), 0, lr=0.5)
    assert (tc.precision, tc.backend, tc.lr, tc.seq_len) == ("bf16", "reference", 0.5, 128)
    plain = ps.train_config(RunOptions("tiny"), 3)  # float32, the default backend
    assert (plain.precision, plain.backend, plain.seed, plain.lr) == ("fp32", "fast", 3, 3e-3)
