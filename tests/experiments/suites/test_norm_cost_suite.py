"""norm-cost suite: the time ratio and equivalence rules against hand cases, the saved-bytes count
against closed forms, the implementations against each other, and the tiny grid end to end."""

import json
import math

import pytest
import torch

from blocklab.errors import ResultsError
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import result_json
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites import get_suite, run_suite
from blocklab.experiments.suites import norm_cost as nc
from blocklab.experiments.suites.base import RunSpec
from blocklab.experiments.suites.norm_cost import fused as nc_fused
from blocklab.experiments.suites.norm_cost import kernels as nc_kernels
from blocklab.experiments.suites.norm_cost import readings as nc_readings
from blocklab.experiments.suites.norm_cost import sizes as nc_sizes
from blocklab.experiments.suites.norm_cost import tables as nc_tables
from blocklab.experiments.summaries import Interval, TimeRatio


def test_time_ratio_by_hand():
    # Per-repeat ratios 3 and 1: logs ln 3 and 0, mean ln√3, sd ln3/√2, and the 95% interval
    # exp(mean ± t_{0.975, 1} · sd / √2), t_{0.975, 1} from scipy.
    from scipy import stats as sps

    ratio = TimeRatio.paired([1.0, 3.0], [1.0, 1.0])
    m, half = math.log(3) / 2, float(sps.t.ppf(0.975, 1)) * math.log(3) / 2
    assert ratio.ratio == pytest.approx(math.sqrt(3), rel=1e-12)
    assert ratio.ci_low == pytest.approx(math.exp(m - half), rel=1e-12)
    assert ratio.ci_high == pytest.approx(math.exp(m + half), rel=1e-12)
    assert ratio.repeats == 2
    assert ratio.method() == "geometric mean of paired ratios, Student t on log ratios, 2 repeats"
    # a = 2·b pair by pair: every repeat's ratio is exactly 2.
    exact = TimeRatio.paired([2.0, 4.0, 6.0, 10.0], [1.0, 2.0, 3.0, 5.0])
    assert exact.ratio == exact.ci_low == exact.ci_high == 2.0
    with pytest.raises(ValueError, match="equal lengths"):
        TimeRatio.paired([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="at least 2 pairs"):
        TimeRatio.paired([1.0], [1.0])


def test_tables_name_the_ratio_method():
    ratio = TimeRatio.paired([1.0, 1.1, 0.9], [1.0, 1.0, 1.0])
    from blocklab.experiments.suites.norm_cost.data import StepTime

    step = StepTime(threads=1, model={"d_model": 8, "n_layers": 1, "seq_len": 4,
                                      "batch_size": 1}, params={}, rmsnorm_ms=1.0,
                    layernorm_ms=1.0, time=ratio, path="blocklab")
    caption = nc_tables.step_table({"blocklab/1": step}).caption
    assert "geometric mean of paired ratios, Student t on log ratios, 3 repeats" in caption
    assert "bootstrap" not in caption


def test_equivalence_rule_by_hand():
    inside = Interval(3, 0.001, -0.01, 0.015)
    assert nc.equivalence(inside, 0.02) == (True, "equivalent")
    crossing = Interval(3, 0.01, -0.005, 0.025)
    assert nc.equivalence(crossing, 0.02)[0] is False
    assert "crosses" in nc.equivalence(crossing, 0.02)[1]
    outside = Interval(3, 0.05, 0.03, 0.07)
    assert nc.equivalence(outside, 0.02) == (False, "different (whole CI outside the margin)")
    assert nc.equivalence(Interval(1, 0.0), 0.02)[0] is False


def test_saved_tensor_bytes_match_closed_forms():
    rows, d = 8, 16
    x = torch.randn(rows, d, requires_grad=True)
    impls = nc.build_implementations(d, ("blocklab", "torch", "plain"))
    extra = {name: nc.saved_tensor_bytes(lambda m=m: m(x), exclude=[x, *m.parameters()])
             for name, m in impls.items()}
    full, per_row = rows * d * 4, rows * 4
    # Fused LayerNorm keeps x plus one mean and one 1/σ per row.
    assert extra["layernorm:torch"]["extra_bytes"] == 2 * per_row
    assert extra["layernorm:blocklab"]["extra_bytes"] == 2 * per_row
    # RMSNorm in ops keeps 1/rms per row and the normalised x (for the gain's gradient)...
    for kind in ("torch", "plain"):
        assert extra[f"rmsnorm:{kind}"]["extra_bytes"] == full + per_row
    # ...blocklab's fused autograd Function keeps only 1/rms per row and recomputes the rest.
    assert extra["rmsnorm:blocklab"]["extra_bytes"] == per_row
    # LayerNorm in ops keeps the centred x and the normalised x.
    assert extra["layernorm:plain"]["extra_bytes"] == 2 * full + per_row


def test_implementations_compute_the_same_norms():
    torch.manual_seed(0)
    d = 32
    x = torch.randn(5, d) * 3 + 1
    impls = nc.build_implementations(d, ("blocklab", "torch", "plain"))
    for module in impls.values():  # non-trivial gains and biases, equal across kinds
        with torch.no_grad():
            module.weight.copy_(torch.linspace(0.5, 1.5, d))
            if getattr(module, "bias", None) is not None:
                module.bias.copy_(torch.linspace(-0.1, 0.1, d))
    for norm in nc.NORM_NAMES:
        reference = impls[f"{norm}:plain"](x)
        for kind in ("blocklab", "torch"):
            torch.testing.assert_close(impls[f"{norm}:{kind}"](x), reference, rtol=1e-5,
                                       atol=1e-5)


def test_tiny_suite_end_to_end(tmp_path):
    suite = get_suite("norm-cost")
    assert suite is nc.SUITE
    options = RunOptions.for_suite(suite, "tiny")
    summary = run_suite(suite, options, tmp_path, progress=False)
    titles = [t.title for t in summary.tables]
    # C18 is decided by the counts and the quality runs; the step and the like-for-like
    # kernels are timed and reported; the kernel runs are left to --size full
    assert titles == [
        "Training step time, DecoderLM with RMSNorm vs LayerNorm (median ms)",
        "Like-for-like kernel time: RMSNorm vs LayerNorm with equally fused kernels (median ms)",
        "What 'compute' means: FLOPs and bytes per normalised row of width d (analytic)",
        "The norms within one training step (analytic FLOPs)",
        "Quality: validation loss (nats/token) on stdlib, paired by seed"]
    # the step run, the like-for-like run, rmsnorm and layernorm × 2 seeds
    assert summary.runs == 2 + 2 * 2
    assert any(n.startswith("Run at --size full only") and "the kernel runs" in n
               for n in summary.notes), summary.notes

    data = summary.data
    assert data.kernels == [] and data.ratios == [] and data.compile == []
    assert set(data.step_time) == {"blocklab/1", "like-for-like/1"}
    for step in data.step_time.values():
        assert step.rmsnorm_ms > 0 and step.layernorm_ms > 0
        assert step.time.ci_low <= step.time.ratio <= step.time.ci_high
    (like,) = data.like_for_like
    assert like.method == nc.like_method(like.torch_fused) and like.ratios["fwdbwd"].ratio > 0
    assert data.compute == nc.count_compute("tiny")
    quality = data.quality
    assert quality.margin == nc.EQUIVALENCE_MARGIN and quality.delta.n == 2
    assert isinstance(quality.equivalent, bool)

    again = run_suite(suite, options, tmp_path, progress=False)  # all stored: no rerun
    assert any(note.startswith(f"{again.runs} of {again.runs} runs were already stored")
               for note in again.notes), again.notes
    assert again.data.quality == quality


def _spec(arm: str) -> RunSpec:
    return RunSpec(arm, arm, 0, {}, lambda progress: RunResult(status="ok"))


def _stored(result: RunResult) -> RunResult:
    """`result` as a store reads it back."""
    return RunResult.from_dict(json.loads(result_json(result)))


def test_kernel_runs_are_full_only_and_their_tables_read_them():
    """The full size plans one kernel run per shape and thread count; the tables, ratios and
    saved bytes come from such runs (timed here at two small shapes)."""
    full = nc.SIZES["full"]
    kernels = [s for s in nc.plan(RunOptions("full"), []) if s.arm == "kernels"]
    assert len(kernels) == len(full.kernels.shapes) * len(full.threads)
    assert all(s.timed and s.payload["compile"] for s in kernels)
    assert not any(s.arm == "kernels" for size in ("tiny", "quick")
                   for s in nc.plan(RunOptions(size), []))
    shapes = [(64, 256), (256, 256)]
    results = [(_spec("kernels"), _stored(nc.timed_run(lambda d=d, rows=rows: nc.time_kernels(
        d, rows, repeats=3, compile=False, threads=1, block_s=0.002)))) for d, rows in shapes]
    summary = nc.summarise(RunOptions("full"), results)
    assert summary.tables[0].title == "Forward+backward, 1 thread(s): median ms per call"
    assert summary.tables[0].columns == ["d", "rows", "impl", "RMSNorm ms", "LayerNorm ms",
                                         "RMS/LN [95% CI]"]
    assert len(summary.tables[0].rows) == 3 * len(shapes)  # blocklab, torch, plain per shape
    assert any(t.title.startswith("Saved for backward") for t in summary.tables)
    assert not any(n.startswith("Run at --size full only") for n in summary.notes)
    data = summary.data
    assert len(data.kernels) == 6 * len(shapes)
    for kernel in data.kernels:
        assert kernel.fwd_ms > 0 and kernel.fwdbwd_ms > 0 and kernel.saved_bytes > 0
    assert data.ratios
    for ratio in data.ratios:
        assert ratio.time.ci_low <= ratio.time.ratio <= ratio.time.ci_high


class _Broken(torch.nn.Module):
    def forward(self, x):
        raise RuntimeError("kernel exploded")


def test_only_a_compiled_implementation_may_fail_without_stopping_the_timing(monkeypatch):
    """A compiler failure is recorded and the other implementations are still timed; an eager
    implementation that raises is a bug and stops the run (never a recorded 'result')."""
    def impls(broken_name):
        def build(d, kinds):
            built = {f"{norm}:{kind}": torch.nn.LayerNorm(d)
                     for norm in nc.NORM_NAMES for kind in ("plain", "compiled")}
            built[broken_name] = _Broken()
            return built
        return build

    # patched where time_kernels reads it
    monkeypatch.setattr(nc_kernels, "build_implementations", impls("rmsnorm:compiled"))
    record = nc.time_kernels(8, 4, repeats=2, compile=False, threads=1, block_s=1e-4)
    assert record.impls["rmsnorm:compiled"] == nc.ImplTimes(error="RuntimeError: kernel exploded")
    assert len(record.impls["rmsnorm:plain"].fwd_s) == 2
    # stored, the failed implementation keeps its error alone; read back, the same record
    stored = _stored(nc.timed_run(lambda: record))
    assert stored.extra["impls"]["rmsnorm:compiled"] == {"error": "RuntimeError: kernel exploded"}
    assert nc.KernelTimes.of(stored, "kernels") == record
    monkeypatch.setattr(nc_kernels, "build_implementations", impls("rmsnorm:plain"))
    with pytest.raises(RuntimeError, match="kernel exploded"):
        nc.time_kernels(8, 4, repeats=2, compile=False, threads=1, block_s=1e-4)


def test_like_for_like_computes_the_same_model_by_pytorchs_own_kernels():
    from blocklab.experiments.trainer import TrainConfig, build_model
    from blocklab.nn.norm import RMSNorm

    mc = nc_sizes.model_config("rmsnorm", 64, 2, 16)
    built = build_model(mc, TrainConfig(seed=3))
    swapped = nc.like_for_like(build_model(mc, TrainConfig(seed=3)))
    assert not any(isinstance(m, RMSNorm) for m in swapped.modules())
    # No fused residual form is left: every block adds its residual apart, as LayerNorm's do.
    assert not any(hasattr(m, "forward_add") for m in swapped.modules())
    ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(swapped(ids), built(ids), rtol=1e-5, atol=1e-5)
    swapped(ids).sum().backward()
    built(ids).sum().backward()
    gain = swapped.layers[0].ffn_norm.weight.grad
    torch.testing.assert_close(gain, built.layers[0].ffn_norm.weight.grad, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="not a plain RMSNorm"):
        nc.like_for_like(build_model(mc.replace(norm_unit_offset=True), TrainConfig(seed=3)))


@pytest.mark.parametrize("before", [None, "/somewhere/the/user/chose"])
def test_cold_compile_restores_the_cache_variables_even_when_the_block_raises(monkeypatch,
                                                                              before):
    import os

    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        if before is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, before)
    seen = {}
    with pytest.raises(RuntimeError, match="inside"), nc_kernels._cold_compile():
        seen = {n: os.environ[n] for n in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
        assert os.path.isdir(seen["TORCHINDUCTOR_CACHE_DIR"])
        raise RuntimeError("inside")
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        assert os.environ.get(name) == before
        assert seen[name] != before
    assert not os.path.exists(seen["TORCHINDUCTOR_CACHE_DIR"])  # the fresh folder is gone


# --- C18's analytic part: FLOPs and bytes ---------------------------------------------------------
def _rms_backward_as_counted(x, g, dy):
    """RMSNorm's backward spelled with exactly the ops `NORM_BACKWARD_COST` counts (per
    element: x̂ 1, dγ 2, g·dy 1, Σ g·x̂ 2, dx 3). x, dy: [rows, d]; g: [d]."""
    r = (x.pow(2).mean(-1, keepdim=True) + nc.EPS).rsqrt()
    xhat = x * r
    dgain = (dy * xhat).sum(0)
    gdy = dy * g
    c = (gdy * xhat).sum(-1, keepdim=True)
    return r * (gdy - xhat * c / x.shape[-1]), dgain


def _ln_backward_as_counted(x, g, dy):
    """LayerNorm's backward with exactly the counted ops (x̂ 2, dγ 2, dβ 1, g·dy 1, Σ g·dy 1,
    Σ g·x̂ 2, dx 4)."""
    mu = x.mean(-1, keepdim=True)
    r = ((x - mu).pow(2).mean(-1, keepdim=True) + nc.EPS).rsqrt()
    xhat = (x - mu) * r
    dgain, dbias = (dy * xhat).sum(0), dy.sum(0)
    gdy = dy * g
    a = gdy.sum(-1, keepdim=True)
    c = (gdy * xhat).sum(-1, keepdim=True)
    d = x.shape[-1]
    return r * (gdy - a / d - xhat * c / d), dgain, dbias


def test_norm_flops_and_bytes_match_a_hand_count_at_d_4():
    from blocklab.budget.flops import ELEMENTWISE_COST, NORM_BACKWARD_COST

    # d = 4, float32. RMSNorm forward: x² 4, Σ 4, ·r 4, ·γ 4 = 16; backward 9 per element = 36.
    # LayerNorm forward: Σx 4, x − μ 4, ()² 4, Σ 4, ·r 4, ·γ 4, + β 4 = 28; backward 13·4 = 52.
    rms, ln = nc.count_norm("rmsnorm", 4), nc.count_norm("layernorm", 4)
    assert (rms.fwd_flops, rms.fwdbwd_flops) == (16, 16 + 36)
    assert (ln.fwd_flops, ln.fwdbwd_flops) == (28, 28 + 52)
    assert ELEMENTWISE_COST["rmsnorm"] * 4 == rms.fwd_flops  # one source: blocklab.budget
    # Bytes per row: forward reads x, writes y (2·4·4 = 32) and 1 or 2 float32 statistics;
    # backward reads x and dy, writes dx (48) and reads the statistics again.
    assert (rms.fwd_bytes, rms.fwdbwd_bytes) == (32 + 4, 32 + 4 + 48 + 4)
    assert (ln.fwd_bytes, ln.fwdbwd_bytes) == (32 + 8, 32 + 8 + 48 + 8)
    # γ read forward, γ read and dγ written backward (3·16); LayerNorm adds β and dβ (5·16).
    assert (rms.param_bytes, ln.param_bytes) == (48, 80)
    assert nc.saving_pct(rms.fwdbwd_flops, ln.fwdbwd_flops) == pytest.approx(35.0)
    assert nc.saving_pct(rms.fwd_flops, ln.fwd_flops) == pytest.approx(300 / 7)
    # The counted backward ops compute the true gradients.
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    g = torch.randn(4, generator=gen, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, generator=gen, dtype=torch.float64, requires_grad=True)
    dy = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    want = torch.autograd.grad(torch.nn.functional.rms_norm(x, (4,), g, nc.EPS), [x, g], dy)
    for got, ref in zip(_rms_backward_as_counted(x.detach(), g.detach(), dy), want, strict=True):
        torch.testing.assert_close(got, ref)
    want = torch.autograd.grad(torch.nn.functional.layer_norm(x, (4,), g, b, nc.EPS),
                               [x, g, b], dy)
    for got, ref in zip(_ln_backward_as_counted(x.detach(), g.detach(), dy), want, strict=True):
        torch.testing.assert_close(got, ref)
    assert NORM_BACKWARD_COST == {"rmsnorm": 9, "layernorm": 13}
    with pytest.raises(ValueError, match="not allowed"):
        nc.count_norm("batchnorm", 4)


def test_torch_flop_counter_counts_no_norm_flops():
    """FlopCounterMode counts matmuls and attention only (the convention blocklab.budget's
    matmul totals follow), so it has nothing to say about either norm: the counts above are
    the only source."""
    from torch.utils.flop_counter import FlopCounterMode

    x = torch.randn(8, 16, requires_grad=True)
    w, b = torch.ones(16, requires_grad=True), torch.zeros(16, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.rms_norm(x, (16,), w, nc.EPS).sum().backward()
        torch.nn.functional.layer_norm(x, (16,), w, b, nc.EPS).sum().backward()
    assert counter.get_total_flops() == 0


def test_step_share_by_hand_and_at_llama_3_8b():
    from blocklab.budget.flops import prefill_flops

    compute = nc.count_compute("quick")
    step = nc.SIZES["quick"].step
    toy, real = compute.steps
    tokens, d, layers = step.batch_size * step.seq_len, step.d_model, step.n_layers
    assert toy.norm_calls == 2 * layers + 1  # pre-norm: two per layer and the final one
    assert toy.norm_flops == {"rmsnorm": toy.norm_calls * tokens * d * 13,
                              "layernorm": toy.norm_calls * tokens * d * 20}
    cfg = nc_sizes.model_config("rmsnorm", d, layers, step.seq_len)
    assert toy.matmul_flops == 3 * prefill_flops(cfg, step.batch_size, step.seq_len).total
    assert toy.saving_pct == pytest.approx(
        100 * 7 * toy.norm_calls * tokens * d / toy.step_flops["layernorm"])
    assert (real.model, real.d_model, real.n_layers, real.norm_calls) == (
        nc.REAL_MODEL, 4096, 32, 65)
    assert 0 < real.saving_pct < 0.01 < toy.saving_pct < 1  # far below 7% at either shape
    assert compute.flops_saving_pct == pytest.approx(35.0)
    assert compute.bytes_saving_pct["d=4096/2B"] == pytest.approx(100 * 8 / (5 * 4096 * 2 + 16))


# --- the like-for-like timing ---------------------------------------------------------------------
def test_pytorchs_rms_norm_is_not_fused_on_cpu_so_like_for_like_compiles_both():
    fused = nc.torch_norms_fused()
    # torch 2.13, CPU: F.rms_norm is aten::_fused_rms_norm's composite CPU path (pow, mean,
    # add, rsqrt, mul, mul); F.layer_norm is aten::native_layer_norm, one fused kernel.
    assert fused == {"rmsnorm": False, "layernorm": True}
    assert nc.like_method(fused) == "torch.compile"
    assert nc.like_method({"rmsnorm": True, "layernorm": True}) == "torch-fused"


def test_like_for_like_timing_runs_at_tiny_size_and_says_what_it_timed():
    record = nc.time_like_for_like(32, 128, repeats=2, threads=1, block_s=0.002)
    assert (record.kind, record.method, record.timed_kind) == ("like-for-like", "torch.compile",
                                                               "compiled")
    assert set(record.impls) == {"rmsnorm:compiled", "layernorm:compiled"}
    assert all("torch.compile" in what for what in record.kernels.values())
    for rec in record.impls.values():
        assert rec.error is None and len(rec.fwdbwd_s) == 2 and rec.fwd_s is None
        assert rec.compile_s > 0 and rec.extra_bytes > 0
    result = _stored(nc.timed_run(lambda: record))
    assert result.status == "ok" and result.wall_time_s >= 0 and result.final is None
    assert result.extra["kind"] == "like-for-like" and "fwd_s" not in result.extra["impls"][
        "rmsnorm:compiled"]
    assert nc.LikeForLikeTimes.of(result, "like-for-like") == record
    with pytest.raises(ResultsError, match="method"):
        nc.LikeForLikeTimes.of(RunResult("ok", extra={**result.extra, "method": 1}), "l4l")
    (timing,) = nc_readings.like_rows([(_spec("like-for-like"), result)])
    assert timing.method == "torch.compile" and set(timing.ratios) == {"fwdbwd"}
    assert timing.torch_fused == {"rmsnorm": False, "layernorm": True}
    assert timing.rmsnorm_ms["fwd"] is None and timing.rmsnorm_ms["fwdbwd"] > 0
    table = nc_tables.like_table([timing])
    assert "torch.compile" in table.caption and "composite" in table.caption


def test_like_for_like_times_pytorchs_own_kernels_where_both_are_fused(monkeypatch):
    # patched where time_like_for_like reads it
    monkeypatch.setattr(nc_fused, "torch_norms_fused",
                        lambda d=8: {"rmsnorm": True, "layernorm": True})
    record = nc.time_like_for_like(16, 32, repeats=2, threads=1, block_s=1e-4)
    assert (record.method, record.timed_kind) == ("torch-fused", "torch")
    assert set(record.impls) == {"rmsnorm:torch", "layernorm:torch"}
    assert all(len(rec.fwd_s) == len(rec.fwdbwd_s) == 2 for rec in record.impls.values())


def test_every_size_plans_one_like_for_like_run_per_thread_count_at_the_step_shape():
    for size, config in nc.SIZES.items():
        like = [s for s in nc.plan(RunOptions(size), []) if s.arm == "like-for-like"]
        step = config.step
        assert [s.payload["threads"] for s in like] == list(config.threads)
        assert all(s.timed and s.payload["d"] == step.d_model
                   and s.payload["rows"] == step.batch_size * step.seq_len for s in like)
