"""`blocklab budget`: tables, the stable JSON shape, --list, --sweep/--plot and bad input."""

import json

import pytest

from blocklab.budget import list_zoo, load_zoo
from blocklab.cli import main

FLOP_KEYS = {"total", "attention_proj", "attention_scores", "ffn", "lm_head", "ffn_share"}


def run_json(capsys, *args):
    assert main(["budget", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_shape(capsys):
    doc = run_json(capsys, "meta-llama-3-8b", "--seq", "4096")
    assert doc["model"] == "meta-llama-3-8b"
    assert {"total", "embedding", "attention", "ffn", "norm", "lm_head", "per_layer"} <= set(
        doc["params"])
    assert FLOP_KEYS <= set(doc["flops"]["prefill"]) and FLOP_KEYS <= set(doc["flops"]["decode"])
    assert {"weights_bytes", "kv_cache_bytes"} <= set(doc["memory"])
    # the numbers themselves: tests/budget (test_zoo, test_memory)
    assert doc["params"]["total"] == doc["published_params"]
    assert doc["params"]["per_layer"] == 218_112_000
    prefill = doc["flops"]["prefill"]
    assert prefill["attention_scores"] == prefill["attention_scores_causal"]
    assert isinstance(prefill["ffn_share"], float) and 0.69 < prefill["ffn_share"] < 0.71


def test_no_causal_batch_and_dtype_reach_the_counts(capsys):
    causal = run_json(capsys, "gpt2", "--seq", "512")["flops"]["prefill"]
    full = run_json(capsys, "gpt2", "--seq", "512", "--no-causal")["flops"]["prefill"]
    assert full["attention_scores"] == causal["attention_scores_full"]
    assert causal["attention_scores"] * 512 == full["attention_scores"] * 513 // 2
    doc = run_json(capsys, "qwen3-8b", "--batch", "4", "--seq", "128", "--dtype", "int4")
    assert doc["settings"] == {"batch": 4, "seq_len": 128, "dtype": "int4",
                               "activation_dtype": "bf16", "causal": True,
                               "scores": "causal, T(T+1)/2 pairs"}
    assert doc["memory"]["weights_bytes"] == doc["params"]["total"] // 2
    fp32 = run_json(capsys, "qwen3-8b", "--dtype", "fp32")
    assert fp32["memory"]["kv_cache_bytes"] == 2 * 36 * 8 * 128 * 4096 * 4


@pytest.mark.parametrize(("model", "texts"), [
    ("meta-llama-3-8b", ("Parameters", "q_proj", "gate_proj", "lm_head", "8,030,261,248",
                         "(equal)", "FLOPs", "FFN share of prefill FLOPs: 70.1%", "KV cache",
                         "memory-bound", "295")),
    ("gemma-2-2b", ("post_ffn_norm", "0 (tied to embed_tokens)")),
])
def test_table_output(capsys, model, texts):
    assert main(["budget", model]) == 0
    out = capsys.readouterr().out
    for text in texts:
        assert text in out, text


def test_config_json_path(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps(load_zoo("bert-base-uncased").config))
    doc = run_json(capsys, str(tmp_path / "config.json"))
    assert doc["params"]["total"] == 109_482_240
    assert doc["params"]["other"] == 768 * 768 + 768  # pooler


def test_list(capsys):
    assert main(["budget", "--list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["zoo"]
    assert [r["name"] for r in rows] == list_zoo()
    for r in rows:
        assert r["published_params"] in (None, r["computed_params"])
    assert main(["budget", "--list"]) == 0
    out = capsys.readouterr().out
    assert "meta-llama-3-8b" in out and "8,030,261,248" in out


def test_sweep_and_plot(tmp_path, capsys):
    assert main(["budget", "--sweep"]) == 0
    out = capsys.readouterr().out
    assert "2,097,152" in out and "3,145,728" in out and "4,194,304" in out
    plot = tmp_path / "new" / "deeper" / "sweep.png"  # its folders made, no temporary left
    doc = run_json(capsys, "--sweep", "--plot", str(plot))
    assert plot.stat().st_size > 0 and doc["plot"] == str(plot)
    assert [p.name for p in plot.parent.iterdir()] == ["sweep.png"]
    assert {r["vary"] for r in doc["rows"]} == {"batch", "seq_len", "d", "m"}


@pytest.mark.parametrize("args, message", [
    (["gpt2", "--seq", "0"], "--seq must be a positive integer"),
    (["gpt2", "--batch", "0"], "--batch must be a positive integer"),
    (["gpt2", "--seq", "many"], "--seq must be a positive integer"),
    (["gpt2", "--seq", "9" * 300], "got a 300-digit number"),
    (["gpt2", "--dtype", "int3"], "--dtype"),
    ([], "missing MODEL"),
    (["--plot", "x.png"], "--plot needs --sweep"),
    (["gpt2", "--list"], "takes no MODEL"),
])
def test_bad_input_is_one_line_exit_2(one_line_exit_2, args, message):
    one_line_exit_2(["budget", *args], message)
