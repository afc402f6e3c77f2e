"""Hostile and careless input, as a user types it: every CLI case exits 2 with exactly one line
on stderr and no traceback; every library case raises a blocklab `InputError` (a ValueError)
whose message names the bad value.
"""

from __future__ import annotations

import json
import os
import resource

import pytest
import torch
from safetensors.torch import load_file, save_file

from blocklab.errors import CheckpointError, InputError
from blocklab.interop.hf import load_hf, save_hf
from blocklab.interop.hf_config import from_hf
from blocklab.nn import DecoderLM

from .conftest import LLAMA_HF, run_cli, write_json


# --- blocklab budget / doctor --------------------------------------------------------------------
def test_budget_file_that_is_no_config(tmp_path, one_line_exit_2):
    big, binary = tmp_path / "big.json", tmp_path / "weights.json"
    with open(big, "wb") as handle:  # sparse: no disk used, and nothing should read it all
        handle.truncate(1 << 30)
    binary.write_bytes(os.urandom(2048))
    one_line_exit_2(["budget", str(big)], str(big), "MiB")
    one_line_exit_2(["budget", str(binary)], str(binary))
    one_line_exit_2(["budget", str(tmp_path / "none.json")], "none.json")
    one_line_exit_2(["budget", str(tmp_path)], "config.json")


@pytest.mark.parametrize(("key", "value"), [
    *(("warmup_steps", v) for v in ('"abc"', "-10", "[0]", "true", "1" * 400)),
    *(("warmup_ratio", v) for v in ("5", "-0.1"))])
def test_doctor_training_warmup_must_be_a_count_or_a_fraction(tmp_path, one_line_exit_2, key,
                                                              value):
    text = json.dumps({**LLAMA_HF, "num_hidden_layers": 24}).rstrip("}") + f', "{key}": {value}}}'
    path = write_json(tmp_path, text)
    one_line_exit_2(["doctor", path, "--training"], path, key)


# --- blocklab train ------------------------------------------------------------------------------
def test_train_on_cuda_without_cuda(one_line_exit_2):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    one_line_exit_2(["train", "--device", "cuda", "--steps", "1"], "'cuda'")


def test_train_out_is_an_existing_file(tmp_path, one_line_exit_2):
    target = tmp_path / "taken"
    target.write_text("keep me")
    line = one_line_exit_2(["train", "--steps", "1", "--out", str(target)],
                           str(target))
    assert "folder" in line and target.read_text() == "keep me"


@pytest.mark.parametrize("argv,needle", [
    (["train", "--steps", "true"], "--steps"),
    (["train", "--no-such-flag"], "--no-such-flag"),
    (["train", "extra-argument"], "extra-argument"),
    (["suite", "attention"], "attention"),
    (["suite", "ffn", "--tiny", "--quick"], "--tiny"),
    (["no-such-command"], "no-such-command"),
    # a model or batch that cannot fit in memory
    (["train", "--d-model", "1000000000000", "--n-heads", "1", "--steps", "1"], "GiB"),
    (["train", "--batch-size", "1000000000", "--steps", "1"], "GiB"),
    (["train", "--seq-len", "100000000", "--batch-size", "64", "--steps", "1"], "GiB"),
])
def test_usage_errors_and_what_cannot_fit_in_memory(one_line_exit_2, argv, needle):
    one_line_exit_2(argv, needle)


@pytest.fixture
def checkpoint(tmp_path):
    """A small Llama checkpoint, as save_hf writes it."""
    torch.manual_seed(0)
    cfg = from_hf(LLAMA_HF)
    save_hf(DecoderLM(cfg), tmp_path / "ckpt")
    return tmp_path / "ckpt"


def test_doctor_skips_an_index_nested_too_deep(tmp_path, capsys):
    """The index only feeds doctor's tied-embeddings check: unreadable, that check is skipped
    (a config.json nested too deep: tests/test_hostile_config.py)."""
    write_json(tmp_path, LLAMA_HF)
    write_json(tmp_path, "[" * 100_000 + "]" * 100_000, "model.safetensors.index.json")
    code, _, err = run_cli(["doctor", str(tmp_path)], capsys)
    assert code in (0, 1) and "error:" not in err


def test_load_hf_corrupt_safetensors(checkpoint):
    weights = checkpoint / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_hf(checkpoint)


@pytest.mark.parametrize("shard, index, match", [
    ("shard-1.safetensors", {"metadata": {}}, "weight_map"),
    ("../outside.safetensors",
     {"weight_map": {"model.embed_tokens.weight": "../outside.safetensors"}}, "outside"),
])
def test_load_hf_index_without_a_weight_map_or_pointing_outside(checkpoint, shard, index, match):
    (checkpoint / "model.safetensors").rename(checkpoint / shard)
    (checkpoint / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=match):
        load_hf(checkpoint)


@pytest.mark.parametrize("dtype", ["float16", "int8", 5])
def test_load_hf_dtype_must_be_a_floating_torch_dtype(checkpoint, dtype):
    with pytest.raises(InputError, match="dtype"):
        load_hf(checkpoint, dtype=dtype)


@pytest.mark.parametrize("name,kind", [("model.embed_tokens.weight", "int32"),
                                       ("model.layers.0.self_attn.q_proj.weight", "int64")])
def test_load_hf_integer_weights_are_refused(checkpoint, name, kind):
    path = checkpoint / "model.safetensors"
    tensors = load_file(path)
    tensors[name] = tensors[name].to(getattr(torch, kind))
    save_file(tensors, path)
    with pytest.raises(CheckpointError, match=kind):
        load_hf(checkpoint)


def test_load_hf_config_far_larger_than_the_weights_fails_before_building(checkpoint):
    config = json.loads((checkpoint / "config.json").read_text())
    config["vocab_size"] = 50_000_000  # a 6.4 GB model against a 1 MB checkpoint
    (checkpoint / "config.json").write_text(json.dumps(config))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wanted = r"wrong shape.*embed_tokens.weight: \(256, 64\) vs \(50000000, 64\)"
    with pytest.raises(CheckpointError, match=wanted):
        load_hf(checkpoint)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 512 * 1024  # far below the 6.4 GB the config would build


# --- the CLI's own contract ---------------------------------------------------------------------
def test_a_bug_is_not_reported_as_bad_input(monkeypatch, capsys):
    def broken(groups):
        raise ValueError("a bug deep inside, not the user's input")

    monkeypatch.setattr("blocklab.verify.run_checks", broken)
    code, _, err = run_cli(["verify"], capsys)
    assert code == 1
    assert err.strip().splitlines() == [
        "internal error (a bug in blocklab): ValueError: a bug deep inside, not the user's "
        "input; run again with --debug for the traceback"]
    code, _, err = run_cli(["--debug", "verify"], capsys)
    assert code == 1 and "Traceback" in err and "ValueError" in err
