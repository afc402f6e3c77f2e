"""blocklab.nn.calibration: the fastest implementation, measured once per machine and shape,
kept on disk, reused, overridable; and the attention choice it drives in bfloat16 on CPU."""

import json
import time

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from blocklab.config import ModelConfig
from blocklab.errors import InputError
from blocklab.nn import DecoderLM, calibration
from blocklab.nn.attention import Attention


def _slow(seconds):
    return lambda: time.sleep(seconds)


def _never():
    raise AssertionError("a kept answer must not be measured again")


def test_the_faster_candidate_wins_and_is_kept_on_disk(measuring):
    key = {"shape": [2, 3]}
    assert calibration.fastest("op", key, {"slow": _slow(0.004), "quick": _slow(0)},
                               default="slow") == "quick"
    [stored] = (measuring / "calibration" / calibration.machine_key()).glob("op-*.json")
    record = json.loads(stored.read_text())
    assert record["fastest"] == "quick" and record["key"] == key
    assert record["median_s"]["slow"] > record["median_s"]["quick"]
    # the memo answers in-process; a fresh process (memo dropped) reads the file
    assert calibration.fastest("op", key, {"slow": _never, "quick": _never},
                               default="slow") == "quick"
    calibration._MEMO.clear()
    assert calibration.fastest("op", key, {"slow": _never, "quick": _never},
                               default="slow") == "quick"


def test_measuring_leaves_the_global_random_stream_where_it_was(measuring):
    """A run seeded before its first bf16 attention call draws the same numbers afterwards
    whether this process measured (the candidates draw inputs, one even reseeds) or not."""
    def draws():
        torch.randn(1000)

    def reseeds():
        torch.manual_seed(123)
        torch.randn(10)

    torch.manual_seed(7)
    expected = torch.randn(5)
    torch.manual_seed(7)
    calibration.fastest("rng", {}, {"a": draws, "b": reseeds}, default="a")
    assert torch.equal(torch.randn(5), expected)


def test_another_shape_or_another_machine_is_measured_anew(measuring, monkeypatch):
    calibration.fastest("op", {"n": 1}, {"a": _slow(0.003), "b": _slow(0)}, default="a")
    assert calibration.fastest("op", {"n": 2}, {"a": _slow(0), "b": _slow(0.003)},
                               default="a") == "a"
    calibration._MEMO.clear()
    monkeypatch.setattr(calibration, "machine_key", lambda: "another-cpu")
    assert calibration.fastest("op", {"n": 1}, {"a": _slow(0), "b": _slow(0.003)},
                               default="b") == "a"


def test_a_damaged_or_stale_file_is_measured_again_and_rewritten(measuring):
    key = {"n": 3}
    folder = measuring / "calibration" / calibration.machine_key()
    folder.mkdir(parents=True)
    path = folder / f"{calibration.question('op', key)}.json"
    path.write_text("{not json")
    assert calibration.fastest("op", key, {"a": _slow(0.003), "b": _slow(0)},
                               default="a") == "b"
    assert json.loads(path.read_text())["fastest"] == "b"
    # a file that measured other candidates does not answer for these
    calibration._MEMO.clear()
    assert calibration.fastest("op", key, {"a": _slow(0.003), "c": _slow(0)},
                               default="a") == "c"


def test_static_returns_the_default_without_timing(monkeypatch, tmp_path):
    monkeypatch.setenv("BLOCKLAB_CALIBRATION", "static")
    monkeypatch.setenv("BLOCKLAB_CACHE_DIR", str(tmp_path))
    assert calibration.fastest("op", {}, {"a": _never, "b": _never}, default="b") == "b"
    assert not (tmp_path / "calibration").exists()


def test_bad_settings_are_one_line_input_errors(monkeypatch):
    monkeypatch.setenv("BLOCKLAB_CALIBRATION", "fastest")
    with pytest.raises(InputError, match="BLOCKLAB_CALIBRATION='fastest' is not allowed"):
        calibration.mode()
    monkeypatch.setenv("BLOCKLAB_CALIBRATION", "static")
    with pytest.raises(InputError, match="default='c' is not one of"):
        calibration.fastest("op", {}, {"a": _never, "b": _never}, default="c")


def _attention(n_kv_heads=2):
    torch.manual_seed(0)
    return Attention(d_model=32, n_heads=4, n_kv_heads=n_kv_heads, head_dim=8)


@pytest.mark.parametrize("n_kv_heads", [4, 2])
def test_matmul_and_fused_attention_agree_in_bf16_values_and_gradients(monkeypatch,
                                                                         n_kv_heads):
    """Both causal implementations against a float64 reference of the same module: outputs
    and input gradients within bfloat16 rounding (2e-2 relative to the largest value)."""
    x = torch.randn(2, 24, 32)
    results = {}
    for choice in ("sdpa", "math"):
        monkeypatch.setattr(Attention, "_measured", lambda self, q, k, c=choice: c)
        module = _attention(n_kv_heads)
        xb = x.to(torch.bfloat16).requires_grad_()
        y = module(xb)
        y.float().square().sum().backward()
        results[choice] = (y.float(), xb.grad.float())
    monkeypatch.setattr(Attention, "_measured", lambda self, q, k: "math")
    module = _attention(n_kv_heads).double()
    x64 = x.to(torch.bfloat16).double().requires_grad_()
    y64 = module(x64)
    y64.square().sum().backward()
    for choice, (y, grad) in results.items():
        for got, want in ((y, y64), (grad, x64.grad)):
            scale = want.abs().max().item()
            assert (got.double() - want).abs().max().item() <= 2e-2 * scale, choice


@settings(max_examples=12, deadline=None)
@given(batch=st.integers(1, 3), heads=st.sampled_from([(2, 1), (2, 2), (4, 2), (4, 4)]),
       seq_len=st.integers(2, 40), head_dim=st.sampled_from([4, 8, 16]),
       dtype=st.sampled_from([torch.float32, torch.bfloat16]), seed=st.integers(0, 99))
def test_property_matmul_attention_matches_the_fused_kernel(batch, heads, seq_len, head_dim,
                                                            dtype, seed):
    """Any shape, grouped or not, either dtype: the matmul path's output and the gradients of
    q, k and v against SDPA's causal kernel, to 1e-5 (float32) or 2e-2 (bfloat16) of the
    largest value."""
    n_heads, n_kv = heads
    module = Attention(d_model=n_heads * head_dim, n_heads=n_heads, n_kv_heads=n_kv,
                       head_dim=head_dim)
    g = torch.Generator().manual_seed(seed)
    shapes = ((batch, n_heads, seq_len, head_dim), (batch, n_kv, seq_len, head_dim),
              (batch, n_kv, seq_len, head_dim))
    base = [torch.randn(s, generator=g).to(dtype) for s in shapes]
    out = {}
    for name in ("sdpa", "math"):
        q, k, v = (t.clone().requires_grad_() for t in base)
        if name == "sdpa":
            y = module._sdpa(q, k, v, None, True)
        else:
            y = module._explicit(q, k, v, torch.ones(seq_len, seq_len, dtype=torch.bool).tril(),
                                 None)
        y.float().square().sum().backward()
        out[name] = [y, q.grad, k.grad, v.grad]
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    for got, want in zip(out["math"], out["sdpa"], strict=True):
        scale = max(want.abs().max().item(), 1.0)
        assert (got.float() - want.float()).abs().max().item() <= tol * scale


def test_a_bf16_model_on_cpu_runs_and_reports_the_measured_attention(measuring):
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, max_seq_len=32)
    model = DecoderLM(cfg, precision="bf16")
    assert model.backends()["attention"] == "sdpa"  # nothing ran yet
    ids = torch.randint(0, 64, (2, 32))
    model(ids).float().sum().backward()
    [stored] = (measuring / "calibration" / calibration.machine_key()).glob("attention-*.json")
    record = json.loads(stored.read_text())
    assert record["key"] == {"dtype": "bfloat16", "B": 2, "H": 4, "H_kv": 4, "T": 32,
                             "hd": 8, "grad": True, "threads": torch.get_num_threads()}
    assert model.backends()["attention"] == record["fastest"]
    # float32 asks nothing: SDPA, as before calibration
    fp32 = DecoderLM(cfg)
    fp32(ids)
    assert fp32.backends()["attention"] == "sdpa"
    assert len(list(stored.parent.glob("attention-*.json"))) == 1
