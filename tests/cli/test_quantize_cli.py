import json

import pytest
import torch

from blocklab.config import ModelConfig
from blocklab.experiments.int8_measurements import checkpoint_layers
from blocklab.interop.hf import save_hf
from blocklab.nn import DecoderLM

from ..conftest import run_cli


def test_json_labels_the_bound_and_the_estimate(capsys):
    code, out, _ = run_cli(["quantize", "llama-3.2-1b", "--layers", "1", "--d-model", "64",
                            "--seq", "8", "--repeats", "2", "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["timed_config"]["n_layers"] == 1 and doc["timed_config"]["d_model"] == 64
    assert "random weights" in doc["note"] and doc["schemes"][0]["scheme"] == "none"
    ffn = next(d for d in doc["schemes"] if d["scheme"] == "ffn/dynamic")
    assert ffn["prefill_estimate"]["8"] <= ffn["prefill_bound"]["8"]
    assert 0.0 <= ffn["time_share"]["8"] <= 1.0 and ffn["decode_bound"] is not None


def _checkpoint(folder, vocab_size=48):
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=vocab_size, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2,
                      d_ff=64, ffn="swiglu", max_seq_len=64)
    model = DecoderLM(cfg)
    save_hf(model, folder)
    return model


@pytest.mark.parametrize("args, names", [
    *((["llama-3.2-1b", "--d-model", v], [f"--d-model {v}"]) for v in ("0", "-64", "96")),
    (["llama-3.2-1b", "--seq", "16", "--seq", "16"], ["--seq 16"]),
    (["llama-3.2-1b", "--repeats", str(10**9)], ["--repeats 1000000000"]),
    (["llama-3.2-1b", "--repeats", "1"], ["--repeats 1", ">= 2"]),  # no interval from one
    ([""], ["MODEL ''"]),
    (["llama-3.2-1b", "--layers", "17"], ["--layers 17", "16 layers"]),
    (["llama-3.2-1b", "--layers", "0"], ["--layers 0"]),
    (["llama-3.2-1b", "--seq", "8193"], ["--seq"]),
    # a width beyond this machine, refused before any allocation
    (["llama-3.2-1b", "--layers", "1", "--d-model", "1000000000"],
     ["--layers 1", "--d-model 1000000000", "--seq 512", "GiB available"]),
])
def test_unusual_input_is_one_line_exit_2(one_line_exit_2, args, names):
    one_line_exit_2(["quantize", *args], *names)


def test_a_checkpoint_refuses_what_it_cannot_time(one_line_exit_2, tmp_path):
    _checkpoint(tmp_path)
    one_line_exit_2(["quantize", str(tmp_path), "--d-model", "16"], "--d-model 16", "checkpoint")
    one_line_exit_2(["quantize", str(tmp_path), "--layers", "4"], "--layers 4", "3 layers")
    (tmp_path / "model.safetensors").unlink()
    one_line_exit_2(["quantize", str(tmp_path), "--seq", "8"], f"MODEL {tmp_path}", "safetensors")


@pytest.mark.parametrize("vnni", [False, True])
def test_a_cpu_without_int8_instructions_is_noted_under_the_table(capsys, monkeypatch, vnni):
    import blocklab.experiments.suites.quantize.timing as suite

    flags = {"avx2": True, "avx512f": vnni, "avx512_vnni": vnni, "avx_vnni": False,
             "amx_tile": False, "amx_int8": False}
    monkeypatch.setattr(suite, "cpu_flags", lambda: flags)
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_cli(["quantize", "llama-3.2-1b", "--layers", "1", "--d-model", "64",
                              "--seq", "8", "--repeats", "2"], capsys)
    assert code == 0
    assert ("no fast path" in out) is not vnni
    assert "an estimate, not a bound" in out


def test_a_checkpoint_is_timed_with_its_own_weights_and_nan_weights_are_flagged(
        capsys, tmp_path, monkeypatch):
    model = _checkpoint(tmp_path)
    quantize = ["quantize", str(tmp_path), "--layers", "2", "--seq", "8", "--repeats", "2"]
    code, out, err = run_cli([*quantize, "--json"], capsys)
    assert code == 0 and "warning" not in err, err
    doc = json.loads(out)
    assert doc["weights"] == "checkpoint" and "checkpoint's own weights" in doc["note"]
    assert doc["nonfinite_weights"] == {}
    assert all(d["logits_error"] is not None for d in doc["schemes"][1:])
    assert doc["timed_config"]["vocab_size"] == 48 and doc["timed_config"]["n_layers"] == 2
    assert doc["timed_config"]["d_model"] == 32
    cut = checkpoint_layers(tmp_path, 2)
    full = model.state_dict()
    for name, tensor in cut.state_dict().items():  # every tensor is the checkpoint's own
        torch.testing.assert_close(tensor, full[name], atol=0, rtol=0)
    assert "layers.2.ffn.down_proj.weight" not in cut.state_dict()

    with torch.no_grad():
        model.layers[0].ffn.gate_proj.weight[0, :3] = float("nan")
        model.layers[1].attention.q_proj.weight[1, 1] = float("inf")
        model.layers[2].ffn.down_proj.weight[0, 0] = float("nan")  # not timed with --layers 2
    save_hf(model, tmp_path)
    code, out, err = run_cli([*quantize, "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)  # strict JSON: no NaN token
    assert doc["nonfinite_weights"] == {"layers.0.ffn.gate_proj.weight": 3,
                                        "layers.1.attention.q_proj.weight": 1}
    assert all(d["logits_error"] is None for d in doc["schemes"])
    assert all(d["decode_speedup"] > 0 for d in doc["schemes"])  # the timings stand
    assert err.startswith("warning: ") and err.count("\n") == 1
    for text in ("2 timed weight tensor(s)", "layers.0.ffn.gate_proj.weight (3)",
                 "layers.1.attention.q_proj.weight (1)", "no measurement"):
        assert text in err, (text, err)
    assert "down_proj" not in err
    monkeypatch.setenv("COLUMNS", "200")  # the table: no nan printed as a measurement
    code, out, err = run_cli(quantize, capsys)
    assert code == 0, err
    rows = [line for line in out.splitlines() if "/weight-only" in line or "/dynamic" in line]
    assert len(rows) == 6
    for row in rows:
        assert "nan" not in row.lower() and row.rstrip(" │").endswith("—"), row
