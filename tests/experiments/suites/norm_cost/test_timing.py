"""The norm-cost suite's timings (`norm_cost.timing`): the saved-bytes count against closed
forms, the implementations against each other, a compiler failure recorded and an eager one
raised, the like-for-like model and kernels, and the cold-compile cache folders."""

import os

import pytest
import torch

from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import ResultStore
from blocklab.experiments.suites.norm_cost import runs, summary, timing
from blocklab.experiments.trainer import TrainConfig, build_model
from blocklab.jsonio import decode
from blocklab.nn.norm import RMSNorm

from ..conftest import stored


def test_saved_tensor_bytes_match_closed_forms():
    rows, d = 8, 16
    x = torch.randn(rows, d, requires_grad=True)
    impls = timing.build_implementations(d, ("blocklab", "torch", "plain"))
    extra = {name: timing.saved_tensor_bytes(lambda m=m: m(x), exclude=[x, *m.parameters()])
             for name, m in impls.items()}
    full, per_row = rows * d * 4, rows * 4
    # Fused LayerNorm keeps x plus one mean and one 1/σ per row.
    assert extra["layernorm:torch"]["extra_bytes"] == 2 * per_row
    assert extra["layernorm:blocklab"]["extra_bytes"] == 2 * per_row
    # RMSNorm in ops keeps 1/rms per row and the normalised x (for the gain's gradient); so
    # does blocklab's, which runs F.rms_norm as torch.nn.RMSNorm does.
    for kind in ("torch", "plain", "blocklab"):
        assert extra[f"rmsnorm:{kind}"]["extra_bytes"] == full + per_row
    # LayerNorm in ops keeps the centred x and the normalised x.
    assert extra["layernorm:plain"]["extra_bytes"] == 2 * full + per_row


def test_implementations_compute_the_same_norms():
    torch.manual_seed(0)
    d = 32
    x = torch.randn(5, d) * 3 + 1
    impls = timing.build_implementations(d, ("blocklab", "torch", "plain"))
    for module in impls.values():  # non-trivial gains and biases, equal across kinds
        with torch.no_grad():
            module.weight.copy_(torch.linspace(0.5, 1.5, d))
            if getattr(module, "bias", None) is not None:
                module.bias.copy_(torch.linspace(-0.1, 0.1, d))
    for norm in timing.NORM_NAMES:
        reference = impls[f"{norm}:plain"](x)
        for kind in ("blocklab", "torch"):
            torch.testing.assert_close(impls[f"{norm}:{kind}"](x), reference, rtol=1e-5,
                                       atol=1e-5)


class _Broken(torch.nn.Module):
    def forward(self, x):
        raise RuntimeError("kernel exploded")


def test_only_a_compiled_implementation_may_fail_without_stopping_the_timing(monkeypatch):
    """A compiler failure is recorded and the other implementations are still timed; an eager
    implementation that raises is a bug and stops the run (never a recorded 'result')."""
    def impls(broken_name):
        def build(d, kinds):
            built = {f"{norm}:{kind}": torch.nn.LayerNorm(d)
                     for norm in timing.NORM_NAMES for kind in ("plain", "compiled")}
            built[broken_name] = _Broken()
            return built
        return build

    # patched where time_kernels reads it
    monkeypatch.setattr(timing, "build_implementations", impls("rmsnorm:compiled"))
    record = timing.time_kernels(8, 4, repeats=2, compile=False, threads=1, block_s=1e-4)
    assert record.impls["rmsnorm:compiled"] == timing.ImplTimes(
        error="RuntimeError: kernel exploded")
    assert len(record.impls["rmsnorm:plain"].fwd_s) == 2
    # stored, the failed implementation keeps its error alone; read back, the same record
    back = stored(timing.timed_run(lambda: record))
    assert back.extra["impls"]["rmsnorm:compiled"] == {"error": "RuntimeError: kernel exploded"}
    assert decode(timing.KernelTimes, back.extra, "kernels") == record
    monkeypatch.setattr(timing, "build_implementations", impls("rmsnorm:plain"))
    with pytest.raises(RuntimeError, match="kernel exploded"):
        timing.time_kernels(8, 4, repeats=2, compile=False, threads=1, block_s=1e-4)


def test_like_for_like_computes_the_same_model_by_pytorchs_own_kernels():
    mc = timing.model_config("rmsnorm", 64, 2, 16)
    built = build_model(mc, TrainConfig(seed=3))
    swapped = timing.like_for_like(build_model(mc, TrainConfig(seed=3)))
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
        timing.like_for_like(build_model(mc.replace(norm_unit_offset=True), TrainConfig(seed=3)))


@pytest.mark.parametrize("before", [None, "/somewhere/the/user/chose"])
def test_cold_compile_restores_the_cache_variables_even_when_the_block_raises(monkeypatch,
                                                                              before):
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        if before is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, before)
    seen = {}
    with pytest.raises(RuntimeError, match="inside"), timing._cold_compile():
        seen = {n: os.environ[n] for n in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
        assert os.path.isdir(seen["TORCHINDUCTOR_CACHE_DIR"])
        raise RuntimeError("inside")
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        assert os.environ.get(name) == before
        assert seen[name] != before
    assert not os.path.exists(seen["TORCHINDUCTOR_CACHE_DIR"])  # the fresh folder is gone


def test_the_tiny_like_for_like_run_says_what_it_timed(tiny_runs):
    (spec,) = [s for s in runs.plan(RunOptions("tiny"), []) if s.arm == "like-for-like"]
    result = ResultStore(tiny_runs / "norm-cost" / "tiny").load(spec.run_id)
    assert result.status == "ok" and result.wall_time_s >= 0 and result.final is None
    assert result.extra["kind"] == "like-for-like" and "fwd_s" not in result.extra["impls"][
        "rmsnorm:compiled"]
    record = decode(timing.LikeForLikeTimes, result.extra, "like-for-like")
    assert (record.method, record.timed_kind) == ("torch.compile", "compiled")
    assert set(record.impls) == {"rmsnorm:compiled", "layernorm:compiled"}
    assert all("torch.compile" in what for what in record.kernels.values())
    for rec in record.impls.values():
        assert rec.error is None and len(rec.fwdbwd_s) == record.repeats and rec.fwd_s is None
        assert rec.compile_s > 0 and rec.extra_bytes > 0
    (read,) = summary.like_rows([(spec, result)])
    assert read.method == "torch.compile" and set(read.ratios) == {"fwdbwd"}
    # torch 2.13, CPU: F.rms_norm is aten::_fused_rms_norm's composite CPU path (pow, mean,
    # add, rsqrt, mul, mul); F.layer_norm is aten::native_layer_norm, one fused kernel.
    assert read.torch_fused == {"rmsnorm": False, "layernorm": True}
    assert read.rmsnorm_ms["fwd"] is None and read.rmsnorm_ms["fwdbwd"] > 0
    table = summary.like_table([read])
    assert "torch.compile" in table.caption and "composite" in table.caption


def test_like_for_like_times_pytorchs_own_kernels_where_both_are_fused(monkeypatch):
    # patched where time_like_for_like reads it
    monkeypatch.setattr(timing, "torch_norms_fused",
                        lambda d=8: {"rmsnorm": True, "layernorm": True})
    record = timing.time_like_for_like(16, 32, repeats=2, threads=1, block_s=1e-4)
    assert (record.method, record.timed_kind) == ("torch-fused", "torch")
    assert set(record.impls) == {"rmsnorm:torch", "layernorm:torch"}
    assert all(len(rec.fwd_s) == len(rec.fwdbwd_s) == 2 for rec in record.impls.values())
