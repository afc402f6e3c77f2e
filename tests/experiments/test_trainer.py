"""The trainer: config validation, schedule, bit-for-bit determinism, shared init and batches,
divergence and stuck detection, evaluation and the result it writes."""

import copy
import json
import math
import re
import socket
import statistics

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from rich.console import Console
from rich.progress import Progress

from blocklab.config import ModelConfig
from blocklab.errors import ConfigError, InputError
from blocklab.experiments import trainer as tr
from blocklab.experiments.data import final_window_count, load_corpus
from blocklab.experiments.init import INITS
from blocklab.experiments.results import run_id
from blocklab.experiments.trainer import TrainConfig, learning_rate
from blocklab.nn import DecoderLM


# --- TrainConfig --------------------------------------------------------------------------------
@pytest.mark.parametrize(("field", "value", "message"), [
    *[(field, value, "") for field, value in [
        ("steps", 0), ("lr", 0.0), ("warmup_steps", -1), ("schedule", "linear"),
        ("min_lr_ratio", 1.5), ("betas", (0.9, 1.0)), ("grad_clip", 0.0), ("init", "he"),
        ("eval_lengths", (0,)), ("stuck_patience", 0), ("threads", 0), ("device", "tpu"),
        ("batch_size", True), ("learn_margin", 1.5)]],
    *[("lr", value, r" is not allowed; expected a finite")
      for value in (float("nan"), float("inf"), 10**400, -(10**400))],
    *[("final_eval_fraction", value, r" is not allowed; expected a finite number >= 0\.0 and "
                                     r"<= 1\.0") for value in (-0.1, 1.5, "x", float("nan"),
                                                               None, True)],
    *[("nested_widths", value, "") for value in [(0,), (4, 4), "8", (2.5,), 3]],
    ("stepz", 3, ""),  # not a field: from_dict names it
])
def test_a_bad_value_is_one_input_error_line_naming_the_field(field, value, message):
    name = re.escape(f"TrainConfig.{field}=") if field != "stepz" else (
        r"unknown TrainConfig key\(s\) \['stepz'\]")
    with pytest.raises(InputError, match=name + (".*" + message if message else "")) as err:
        TrainConfig.from_dict({field: value})
    assert "\n" not in str(err.value)


def test_config_round_trips_and_adds_seq_len_to_eval_lengths():
    cfg = TrainConfig(seq_len=64, eval_lengths=(256, 128, 256), grad_clip=None, betas=[0.9, 0.99])
    assert cfg.eval_lengths == (64, 128, 256) and cfg.betas == (0.9, 0.99)
    assert TrainConfig(final_eval_fraction=1).final_eval_fraction == 1.0  # kept as a float
    data = json.loads(json.dumps(cfg.to_dict()))
    assert TrainConfig.from_dict(data) == cfg


@pytest.mark.parametrize(("field", "off", "on", "stored"), [
    ("final_eval_fraction", 0.0, 0.125, 0.125),
    ("nested_widths", [], [16, 64, 32], [64, 32, 16]),  # widest first
    ("learn_margin", None, 0.5, 0.5),
])
def test_a_field_added_later_is_left_out_of_ids_when_off(tiny_model, tiny_train, field, off,
                                                         on, stored):
    # The id this config had before the field existed (the same dict, so the same sha256).
    assert run_id(tiny_model, tiny_train, "stdlib") == "55628090f39f"
    unset = tiny_train.replace(**{field: off})
    assert unset.to_dict() == tiny_train.to_dict() and field not in unset.to_dict()
    assert run_id(tiny_model, unset, "stdlib") == "55628090f39f"
    config = tiny_train.replace(**{field: on})
    assert config.to_dict()[field] == stored
    assert TrainConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    assert run_id(tiny_model, config, "stdlib") != "55628090f39f"


# --- schedule ------------------------------------------------------------------------------------
def test_warmup_then_cosine_or_constant_by_hand():
    cfg = TrainConfig(steps=110, lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    assert learning_rate(0, cfg) == pytest.approx(0.1)
    assert learning_rate(4, cfg) == pytest.approx(0.5)
    assert learning_rate(9, cfg) == pytest.approx(1.0)
    assert learning_rate(10, cfg) == pytest.approx(1.0)  # cos(0): the peak
    assert learning_rate(60, cfg) == pytest.approx(0.1 + 0.9 * 0.5)  # halfway: cos(π/2) = 0
    assert learning_rate(35, cfg) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi / 4)))
    assert learning_rate(109, cfg) == pytest.approx(0.1 + 0.45 * (1 + math.cos(math.pi * 0.99)))
    assert learning_rate(500, cfg) == pytest.approx(0.1)
    assert learning_rate(0, TrainConfig(steps=10, lr=0.5)) == 0.5  # no warmup: the peak
    cfg = TrainConfig(steps=100, lr=0.5, warmup_steps=4, schedule="constant")
    assert [learning_rate(s, cfg) for s in (0, 3, 4, 99)] == [0.125, 0.5, 0.5, 0.5]


# --- initialisation ------------------------------------------------------------------------------
def test_arms_share_initial_weights_for_shared_shapes_and_batches(monkeypatch, tiny_model,
                                                                 tiny_train):
    swiglu = tr.build_model(tiny_model, tiny_train)
    relu = tr.build_model(tiny_model.replace(ffn="relu", d_ff=None), tiny_train)
    other_seed = tr.build_model(tiny_model, tiny_train.replace(seed=1))
    a, b, c = swiglu.state_dict(), relu.state_dict(), other_seed.state_dict()
    shared = [k for k in a if k in b and a[k].shape == b[k].shape]
    assert "embed_tokens.weight" in shared and "lm_head.weight" in shared
    assert any("q_proj" in k for k in shared) and any("o_proj" in k for k in shared)
    for key in shared:
        assert a[key].equal(b[key]), key
    assert not a["embed_tokens.weight"].equal(c["embed_tokens.weight"])
    seen = []  # ... and see the same batches

    def recording(*args, **kwargs):
        batch = sample(*args, **kwargs)
        seen.append(batch)
        return batch

    sample = tr.sample_batch
    monkeypatch.setattr(tr, "sample_batch", recording)
    short = tiny_train.replace(steps=3, eval_every=0)
    tr.run(tiny_model, short)
    first, seen[:] = list(seen), []
    tr.run(tiny_model.replace(ffn="gelu", d_ff=None, placement="post"), short)
    assert len(first) == len(seen) == 3
    assert all(x.equal(y) for x, y in zip(first, seen, strict=True))


RESIDUAL = 1 / math.sqrt(2 * 8)  # residual outputs (o_proj, down_proj): 1 / √(2 · n_layers)


@pytest.mark.parametrize(("scheme", "changes", "stds", "gain"), [
    # GPT-2 §2.3: N(0, 0.02²), residual outputs scaled down; a (1 + γ) gain starts at zero
    ("gpt2", {"norm_unit_offset": True},
     {"layers.3.attention.q_proj": 0.02, "layers.3.attention.o_proj": 0.02 * RESIDUAL,
      "layers.3.ffn.down_proj": 0.02 * RESIDUAL, "embed_tokens": 0.02}, 0.0),
    # torchtitan's depth_init: 0.02 / √(2(i + 1)) for every Linear of layer i
    ("depth", {}, {**{f"layers.{i}.{name}": 0.02 / math.sqrt(2 * (i + 1)) for i in range(8)
                      for name in ("attention.q_proj", "attention.o_proj", "ffn.gate_proj",
                                   "ffn.down_proj")},
                   "embed_tokens": 0.02, "lm_head": 0.02}, 1.0),
    # N(0, 1 / fan_in), residual outputs scaled down; o_proj: fan-in n_heads · head_dim (16)
    ("fan_in", {}, {"layers.3.ffn.gate_proj": 1 / math.sqrt(128),
                    "layers.3.ffn.down_proj": RESIDUAL / math.sqrt(512),
                    "layers.3.attention.o_proj": RESIDUAL / math.sqrt(4 * 16),
                    "embed_tokens": 1.0, "lm_head": 1 / math.sqrt(128)}, 1.0),
    ("fan_in", {"tie_embeddings": True}, {"embed_tokens": 1 / math.sqrt(128)}, 1.0),
])
def test_init_stds_by_hand(tiny_model, scheme, changes, stds, gain):
    cfg = tiny_model.replace(d_model=128, n_layers=8, n_heads=4, d_ff=512, **changes)
    model = DecoderLM(cfg)
    INITS[scheme](model, 0, 8)
    weights = {name.removesuffix(".weight"): p for name, p in model.named_parameters()}
    # Each matrix has at least 128² = 16,384 draws, so its sample std is within 0.6% (one sd)
    # of the true one: 3% is five sds.
    for name, std in stds.items():
        assert weights[name].std().item() == pytest.approx(std, rel=0.03), name
        assert abs(weights[name].mean().item()) < 0.05 * std, name
    assert torch.all(model.layers[0].attn_norm.weight == gain)
    assert (model.lm_head.weight is model.embed_tokens.weight) == cfg.tie_embeddings
    if scheme == "fan_in":  # Var(Wx)_i = |x|² / fan_in = 1 for a unit-RMS input x
        x = torch.randn(4096, 128)
        x = x / x.pow(2).mean(-1, keepdim=True).sqrt()  # what a norm hands the sublayer
        assert model.layers[3].ffn.gate_proj(x).std().item() == pytest.approx(1.0, rel=0.03)


def test_xavier_init_bounds_and_norm_gains_and_the_default_init_seeded_per_module(tiny_model):
    model = DecoderLM(tiny_model.replace(norm="layernorm"))
    INITS["xavier"](model, 0, 2)
    w = model.layers[0].ffn.up_proj.weight
    bound = math.sqrt(6 / (w.shape[0] + w.shape[1]))
    assert w.abs().max().item() <= bound and w.abs().max().item() > 0.9 * bound
    assert torch.all(model.layers[0].attn_norm.weight == 1)
    assert torch.all(model.layers[0].attn_norm.bias == 0)
    models = [DecoderLM(tiny_model) for _ in range(2)]
    for m in models:
        INITS["default"](m, 4, 2)
    assert models[0].layers[1].attention.k_proj.weight.equal(
        models[1].layers[1].attention.k_proj.weight)
    assert models[0].embed_tokens.weight.std().item() > 0.5  # PyTorch's N(0, 1) embedding


# --- watchdogs -----------------------------------------------------------------------------------
def test_huge_learning_rate_is_recorded_as_diverged(tiny_model, tiny_train):
    result = tr.run(tiny_model, tiny_train.replace(lr=1e3, steps=30, grad_clip=None))
    assert result.status == "diverged" and "step" in result.reason
    curve = result.curves.train_loss
    assert len(curve) == result.steps_done + 1 < 30
    assert all(math.isfinite(x) for x in curve[:-1])
    json.dumps(result.to_dict(), allow_nan=False)  # strict JSON: non-finite numbers became null


def test_injected_nan_loss_is_recorded_not_raised(monkeypatch, tiny_model, tiny_train):
    real = tr._lm_loss
    calls = []

    def sometimes_nan(logits, targets):
        calls.append(1)
        loss = real(logits, targets)
        return loss * float("nan") if len(calls) == 4 else loss

    monkeypatch.setattr(tr, "_lm_loss", sometimes_nan)
    result = tr.run(tiny_model, tiny_train)
    assert result.status == "diverged" and result.steps_done == 3
    assert result.curves.train_loss[3] is None
    assert all(isinstance(x, float) for x in result.curves.train_loss[:3])
    assert result.curves.step == [0, 1, 2, 3]
    assert result.final.val_loss is not None  # evaluated on the last good weights


def test_stuck_run_ends_early_and_keeps_its_curve(tiny_model, tiny_train):
    cfg = tiny_train.replace(lr=1e-7, warmup_steps=2, stuck_patience=4, steps=50)
    result = tr.run(tiny_model, cfg)
    assert result.status == "stuck" and result.steps_done == 6
    assert len(result.curves.train_loss) == 6
    assert "unigram entropy" in result.reason
    assert result.final.train_loss > result.final.unigram_entropy


# --- evaluation and the result -------------------------------------------------------------------
def test_result_keys_and_shapes_and_the_same_seed_bit_for_bit(tiny_model, tiny_train, tmp_path):
    cfg = tiny_train.replace(eval_lengths=(64,))
    out = tmp_path / "r" / "result.json"
    result = tr.run(tiny_model, cfg, "stdlib", out)
    stored = json.loads(out.read_text())
    assert stored == result.to_dict()
    again, other_seed = (tr.run(tiny_model, cfg.replace(seed=seed)) for seed in (0, 1))
    assert result.status == again.status == "ok"
    assert again.curves == result.curves and again.final == result.final
    assert other_seed.curves.train_loss != result.curves.train_loss
    assert set(result.data) >= {"name", "sha256", "train_bytes", "val_bytes", "files"}
    env = result.environment
    assert {"python", "torch", "numpy", "platform", "cpu_count", "threads",
            "cpu_capability"} <= set(env)
    assert env["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert result.backends["rms_norm"] == "F.rms_norm"  # "fast"
    assert (result.train_config["precision"], result.train_config["backend"]) == (
        "fp32", "fast")
    assert env["threads"] == 1 and socket.gethostname() not in json.dumps(env)
    curves, final = result.curves, result.final
    assert curves.step == list(range(8)) and len(curves.lr) == 8
    assert curves.val_step == [4, 8] and set(curves.val) == {"32", "64"}
    assert curves.layer_grad_norms.step == [0, 2, 4, 6]
    assert all(len(row) == 2 for row in curves.layer_grad_norms.down_proj)
    assert all(len(row) == 2 for row in curves.residual_rms.layer)
    assert final.val_loss == final.val_loss_by_length["32"] == curves.val["32"][-1]
    assert final.val_bpb == pytest.approx(final.val_loss / math.log(2))
    assert len(final.per_position_loss["64"]) == 64
    # final_eval_fraction 0.0: the numbers are the last periodic evaluation's, its standard
    # error from its eval_batches × batch_size windows
    assert final.val_windows == 4 and final.val_tokens == 4 * 32
    assert final.val_loss_se > 0 and result.final_eval_s is None
    assert final.val_loss_tail_n == 2
    assert final.val_loss_tail == pytest.approx(sum(curves.val["32"]) / 2)
    assert final.params == sum(p.numel() for p in tr.build_model(tiny_model, cfg).parameters())


def test_seq_len_past_a_learned_table_is_refused_before_any_data_is_read(
        monkeypatch, tiny_model, tiny_train):
    def no_data(*args, **kwargs):
        raise AssertionError("the corpus was read before the check")

    monkeypatch.setattr(tr, "load_corpus", no_data)
    model = tiny_model.replace(position="learned", max_seq_len=16)
    with pytest.raises(ConfigError, match=r"^TrainConfig\.seq_len=32 is not allowed with learned "
                                          r"positions of ModelConfig\.max_seq_len=16 "
                                          r"\(max_position_embeddings\)") as info:
        tr.train(model, tiny_train)
    assert type(info.value) is ConfigError and "\n" not in str(info.value)
    assert "expected seq_len <= 16" in str(info.value)
    tr.check_seq_len(model, tiny_train.replace(seq_len=16))  # a table exactly as long: fine
    # Positions that extrapolate (or extend their cache) have no such limit.
    for position in ("rope", "alibi", "sinusoidal", "none"):
        tr.check_seq_len(tiny_model.replace(position=position, max_seq_len=16), tiny_train)


def test_progress_on_a_callers_bar_and_threads_and_determinism_flags_restored(tiny_model,
                                                                             tiny_train):
    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    console = Console(file=None, force_terminal=False, width=100, record=True)
    with Progress(console=console) as bar:
        tr.run(tiny_model, tiny_train.replace(steps=2), progress=bar, label="arm A")
        assert [t.description for t in bar.tasks] == ["arm A"] and bar.tasks[0].completed == 2
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == before


def test_compiled_run_reports_its_warm_up_apart_and_matches_eager(tiny_model, tiny_train,
                                                                  monkeypatch):
    from torch._dynamo.utils import counters
    # an evaluation inside the loop, one after it (3 % 2), and the end-of-run evaluation
    cfg = tiny_train.replace(steps=3, eval_every=2, log_every=2, eval_lengths=(32, 48),
                             final_eval_fraction=0.003)
    eager = tr.train(tiny_model, cfg, "stdlib")[1]
    graphs_at_step = []
    schedule = tr.learning_rate

    def spy(step, config):
        graphs_at_step.append(counters["stats"]["unique_graphs"])
        return schedule(step, config)

    monkeypatch.setattr(tr, "learning_rate", spy)
    compiled = tr.train(tiny_model, cfg.replace(backend="compiled"), "stdlib")[1]
    # the warm-up built every graph: none is compiled once the steps (and evaluations) run
    assert graphs_at_step[0] == counters["stats"]["unique_graphs"]
    assert eager.compile_s is None
    assert compiled.compile_s > 0
    # wall_time_s leaves the warm-up out: three tiny steps take far less than compiling them
    assert 0 < compiled.wall_time_s < compiled.compile_s
    # the warm-up is not a training step: same steps, same curve up to float32 rounding
    assert compiled.steps_done == eager.steps_done == 3
    losses = compiled.curves.train_loss
    assert losses == pytest.approx(eager.curves.train_loss, rel=1e-4)
    assert compiled.final.val_windows == eager.final.val_windows > 4
    assert compiled.final.val_loss == pytest.approx(eager.final.val_loss, rel=1e-4)


# --- the end-of-run evaluation --------------------------------------------------------------------
def test_final_val_loss_and_its_standard_error_by_hand(tiny_model, tiny_train):
    # at least a periodic evaluation, all of validation at most
    assert final_window_count(1000, 10, 0.001, minimum=16) == 16  # never fewer than periodic
    assert final_window_count(1000, 10, 1.0, minimum=4) == 99  # (1000 - 1) // 10 fit apart
    assert final_window_count(1000, 10, 0.5, minimum=4) == 50
    val = load_corpus("stdlib").val
    cfg = tiny_train.replace(eval_every=1, final_eval_fraction=0.002)  # 8 periodic evals
    model, result = tr.train(tiny_model, cfg)
    final, curve = result.final, result.curves.val["32"]
    # the windows, independently: ceil(0.002 · n_val / 32), starts evenly spread in integers
    # from the first byte to the last window's (`final_windows`)
    n = math.ceil(0.002 * val.size / 32)
    last = val.size - 33
    starts = [i * last // (n - 1) for i in range(n)]
    rows = torch.tensor(np.stack([val[s:s + 33] for s in starts]).astype(np.int64))
    model.eval()
    with torch.no_grad():
        logits = model(rows[:, :-1]).double()
    losses = [float(F.cross_entropy(logits[i], rows[i, 1:])) for i in range(n)]
    assert final.val_windows == n and final.val_tokens == 32 * n and result.final_eval_s > 0
    assert final.val_loss == pytest.approx(statistics.fmean(losses), abs=1e-6)
    assert final.val_loss_se == pytest.approx(statistics.stdev(losses) / math.sqrt(n),
                                              abs=1e-6)
    # the curve keeps the periodic evaluations; the tail averages its last TAIL_EVALS
    assert len(curve) == 8 and final.val_loss_tail_n == tr.TAIL_EVALS == 4
    assert final.val_loss_tail == pytest.approx(statistics.fmean(curve[-4:]))
    assert tr.standard_error([]) is None and tr.standard_error([1.0]) is None  # needs two


def test_an_evaluation_crash_propagates_and_only_a_short_table_reads_as_unavailable(tiny_model,
                                                                                   tiny_train):
    """A length a learned table has no row for is recorded as unavailable (a reading the
    position suite reports); any other error inside the evaluation (a shape bug, out of
    memory) ends the run as an error, never as a missing reading that a rule could grade."""
    torch.manual_seed(0)
    learned = DecoderLM(tiny_model.replace(position="learned", max_seq_len=16))
    windows = {8: torch.randint(0, 256, (2, 9)), 32: torch.randint(0, 256, (2, 33))}
    scores = tr.evaluate(learned, windows, batch_tokens=64)
    assert scores[8]["loss"] is not None and math.isfinite(scores[8]["loss"])
    assert scores[32]["loss"] is None
    assert scores[32]["error"].startswith("PositionsBeyondTable: position 31 exceeds")
    model = tiny_model.replace(position="learned", max_seq_len=32)  # a run records it
    result = tr.run(model, tiny_train.replace(eval_lengths=(64,), steps=2))
    assert result.status == "ok" and result.final.val_loss_by_length["64"] is None
    assert "max_seq_len" in result.final.eval_errors["64"]

    class Broken(torch.nn.Module):
        def __init__(self, error: type[Exception]) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(1))
            self.error = error

        def forward(self, ids):
            raise self.error("a bug")

    for error in (RuntimeError, IndexError, ValueError, InputError):
        with pytest.raises(error, match="a bug"):
            tr.evaluate(Broken(error), {8: windows[8]}, batch_tokens=64)


# --- nested-width training ----------------------------------------------------------------------
def test_nested_loss_is_the_mean_of_the_losses_at_each_width_by_hand():
    """A hand case: the mean of three cross-entropies, each computed with the FFN's dropped
    channels zeroed in a copy of the model (no narrowing involved)."""
    torch.manual_seed(0)
    model = DecoderLM(ModelConfig(vocab_size=16, d_model=8, n_layers=2, n_heads=2, ffn="swiglu",
                                  d_ff=12)).double()
    batch = torch.randint(0, 16, (2, 7), generator=torch.Generator().manual_seed(1))
    got = tr.nested_loss(model, model, (12, 6, 3), batch)
    losses = []
    for k in (12, 6, 3):
        twin = copy.deepcopy(model)
        with torch.no_grad():
            for layer in twin.layers:
                layer.ffn.down_proj.weight[:, k:] = 0.0
        logits = twin(batch[:, :-1])
        losses.append(F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten()))
    assert torch.allclose(got, sum(losses) / 3, rtol=1e-12, atol=0)
    got.backward()  # every width's gradient reaches the shared weights
    grad = model.layers[0].ffn.gate_proj.weight.grad
    assert torch.count_nonzero(grad[:3]) > 0 and torch.count_nonzero(grad[6:]) > 0


def test_nested_run_trains_every_width_and_a_width_past_d_ff_is_refused(tiny_model, tiny_train):
    mc = tiny_model.replace(ffn="swiglu", d_ff=64)
    nested = tiny_train.replace(nested_widths=[64, 32, 16], steps=6, log_every=0)
    model, result = tr.train(mc, nested)
    assert result.status == "ok" and result.train_config["nested_widths"] == [64, 32, 16]
    plain_model, plain = tr.train(mc, nested.replace(nested_widths=[]))
    # the same seed and batches, another loss: the weights part ways
    assert not torch.equal(model.layers[0].ffn.gate_proj.weight,
                           plain_model.layers[0].ffn.gate_proj.weight)
    with pytest.raises(ConfigError, match=r"nested_widths=\[128\] .* d_ff = 64"):
        tr.train(mc, tiny_train.replace(nested_widths=[128]))
    with pytest.raises(InputError, match="TrainConfig.backend='compiled'"):  # eager only
        tiny_train.replace(backend="compiled", nested_widths=[8])


# --- did the run learn? ------------------------------------------------------------------------
def test_a_run_at_the_unigram_reference_did_not_learn_and_one_that_learned_is_ok(tiny_model,
                                                                                 tiny_train):
    """A run whose loss stays at the frequencies (an lr too small to move it) is a failure of
    its own kind, with a reason naming both references, never an "ok" measurement."""
    cfg = tiny_train.replace(lr=1e-7, steps=4, learn_margin=0.25)
    result = tr.run(tiny_model, cfg)
    final = result.final
    assert result.status == "did_not_learn" and result.steps_done == 4
    assert final.learned_share < 0.25 and final.val_loss > final.unigram_loss - 0.25 * (
        final.unigram_loss - final.bigram_loss)
    assert "unigram reference" in result.reason and "bigram reference" in result.reason
    assert "25%" in result.reason
    # The same run without a registered margin is "ok": the status is the suite's rule.
    assert tr.run(tiny_model, cfg.replace(learn_margin=None)).status == "ok"
    # A run that learned is ok and records how far.
    result = tr.run(tiny_model, tiny_train.replace(steps=150, batch_size=8, lr=1e-2,
                                                   learn_margin=0.25, eval_every=0))
    final = result.final
    assert result.status == "ok", result.reason
    assert final.learned_share == pytest.approx(
        (final.unigram_loss - final.val_loss) / (final.unigram_loss - final.bigram_loss))
    assert final.learned_share >= 0.25
    assert final.val_loss < final.unigram_entropy < math.log(256)  # beyond token frequencies
