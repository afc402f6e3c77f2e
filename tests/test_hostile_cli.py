"""Hostile input on the CLI's resource and executor options (exit code 2 and one line on stderr
naming the option, before any work), the bfloat16 warning on CPUs without bfloat16 units, and
no profiler noise on stderr from the position suite."""

from __future__ import annotations

import json
import os

import pytest
import typer

from blocklab.cli import main
from blocklab.errors import InputError
from blocklab.experiments import env

TINY_TRAIN = ["--d-model", "32", "--n-layers", "1", "--n-heads", "2", "--steps", "2",
              "--batch-size", "2", "--seq-len", "16", "--eval-every", "0", "--threads", "1",
              "--no-progress"]


# --- thread and worker counts: 1 to the usable cores ---------------------------------------------
def test_check_threads_allows_1_to_the_usable_cores(monkeypatch):
    monkeypatch.setattr(env, "usable_cores", lambda: 4)
    assert env.check_threads(1) == 1 and env.check_threads(4, "--jobs") == 4
    for bad in (0, -1, 5, 100_000, True, 2.0, "2"):
        with pytest.raises(InputError, match=r"--jobs .* not allowed; expected an integer in "
                                             r"\[1, 4\]"):
            env.check_threads(bad, "--jobs")


@pytest.mark.parametrize("value", ["100000", "20000", "0", "-3", str(10**30)])
def test_train_threads_beyond_this_machine(tmp_path, one_line_exit_2, value):
    line = one_line_exit_2(["train", "--threads", value, "--out", str(tmp_path)],
                           "--threads", value, "[1, ")
    assert "cores" in line
    assert not (tmp_path / "result.json").exists()


def test_train_threads_one_past_the_usable_cores(tmp_path, one_line_exit_2):
    cores = env.usable_cores()
    one_line_exit_2(["train", "--threads", str(cores + 1), "--out", str(tmp_path)],
                    "--threads", f"[1, {cores}]")


def test_train_threads_from_the_config_file(tmp_path, one_line_exit_2):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"train": {"threads": 50_000}}))
    one_line_exit_2(["train", "--config", str(config), "--out", str(tmp_path)],
                    "--config", "train.threads", "50000")


@pytest.mark.parametrize("value", ["100000", "0"])
def test_quantize_threads_beyond_this_machine(one_line_exit_2, value):
    one_line_exit_2(["quantize", "llama-3.2-1b", "--threads", value],
                    "--threads", value)


@pytest.mark.parametrize("command", [["suite", "ffn", "--tiny"], ["report", "--tiny", "--no-run"]])
@pytest.mark.parametrize("value", ["0", "-1", "100000", str(10**30)])
def test_jobs_beyond_this_machine(tmp_path, one_line_exit_2, command, value):
    extra = ["--out", str(tmp_path / "report")] if command[0] == "report" else []
    one_line_exit_2([*command, "--results", str(tmp_path / "runs"), *extra,
                     "--jobs", value], "--jobs", value)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


# --- --executor and --jobs together --------------------------------------------------------------
@pytest.mark.parametrize(("args", "needles"), [
    (["--executor", "Process"], ["--executor", "'Process'", "process or ray"]),
    (["--executor", "ray", "--jobs", "2"], ["--jobs", "--executor process"]),
    (["--executor", "ray", "--jobs", "0"], ["--jobs", "--executor process"]),
    (["--executor", "process", "--cpus-per-run", "2"], ["--cpus-per-run", "--executor ray"]),
    (["--jobs", "two"], ["--jobs", "integer"]),
])
def test_suite_executor_options(tmp_path, one_line_exit_2, args, needles):
    one_line_exit_2(["suite", "ffn", "--tiny", "--results", str(tmp_path), *args],
                    *needles)


# --- --seed-offset: the one rule (RunRequest's), named as the option, before any work -----------
@pytest.mark.parametrize("command", [["suite", "ffn", "--tiny"], ["report", "--tiny", "--no-run"],
                                     ["report", "--plan"], ["claims", "--tiny"],
                                     ["ladder", "C16", "--plan"]])
@pytest.mark.parametrize("value", ["-7", str(10**30)])
def test_seed_offset_named_as_written(tmp_path, one_line_exit_2, command, value):
    extra = ["--out", str(tmp_path / "report")] if command[0] == "report" else []
    line = one_line_exit_2([*command, "--results", str(tmp_path / "runs"), *extra,
                            "--seed-offset", value])
    assert line == (f"error: --seed-offset {value} is not allowed; expected an integer in "
                    "[0, 1000000000]")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "report").exists()


# --- bfloat16 on a CPU without bfloat16 units: a warning, and the run goes on -------------------
def _cpu(monkeypatch, flags: str) -> None:
    monkeypatch.setattr(env.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(env, "_cpuinfo", lambda: ["model name\t: Example CPU",
                                                   f"flags\t\t: fpu sse2 {flags}"])


@pytest.mark.parametrize(("flags", "emulated"), [("avx2", True), ("avx2 avx512f", True),
                                                 ("avx2 avx512f avx512_bf16", False),
                                                 ("avx2 amx_bf16", False)])
def test_bf16_emulated_reads_the_cpu_flags(monkeypatch, flags, emulated):
    _cpu(monkeypatch, flags)
    assert env.bf16_emulated() is emulated


def test_bf16_unknown_off_linux_or_off_x86(monkeypatch):
    monkeypatch.setattr(env, "_cpuinfo", lambda: [])
    assert env.bf16_emulated() is False
    _cpu(monkeypatch, "avx2")
    monkeypatch.setattr(env.platform, "machine", lambda: "aarch64")
    assert env.bf16_emulated() is False


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


@pytest.mark.parametrize(("flags", "warned"), [("avx2", True), ("avx2 amx_bf16", False)])
def test_train_bf16_warns_without_bf16_units(tmp_path, capsys, monkeypatch, flags, warned):
    _cpu(monkeypatch, flags)
    assert main(["train", *TINY_TRAIN, "--precision", "bf16", "--json",
                 "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["precision"] == "bf16"  # the run went on
    warnings = _warnings(err)
    if warned:
        assert len(warnings) == 1, err
        assert "bfloat16 matmuls are emulated on this CPU" in warnings[0]
        assert "30× slower than float32" in warnings[0] and "fp32" in warnings[0]
    else:
        assert warnings == [], err


def test_train_fp32_never_warns(tmp_path, capsys, monkeypatch):
    _cpu(monkeypatch, "avx2")
    assert main(["train", *TINY_TRAIN, "--json", "--out", str(tmp_path)]) == 0
    assert _warnings(capsys.readouterr().err) == []


def test_suite_bf16_warns_before_it_runs(tmp_path, capsys, monkeypatch):
    import blocklab.experiments.suites as suites

    _cpu(monkeypatch, "avx2")
    started = []

    def run_suite(suite, options, *args, **kwargs):
        started.append(options.precision)
        raise typer.Exit(0)

    monkeypatch.setattr(suites, "run_suite", run_suite)
    assert main(["suite", "ffn", "--tiny", "--results", str(tmp_path),
                 "--precision", "bf16"]) == 0
    warnings = _warnings(capsys.readouterr().err)
    assert started == ["bf16"]
    assert len(warnings) == 1 and "bfloat16 matmuls are emulated" in warnings[0]


def test_suite_precision_the_suite_does_not_take_is_one_line_not_a_warning(tmp_path,
                                                                          one_line_exit_2,
                                                                          monkeypatch):
    _cpu(monkeypatch, "avx2")  # no bfloat16 units: still only the error
    one_line_exit_2(["suite", "norm-cost", "--tiny", "--results", str(tmp_path),
                     "--precision", "bf16"], "precision='bf16'", "norm-cost")


# --- the position suite's profiler writes nothing on stderr -------------------------------------
def test_sdpa_kernels_writes_no_profiler_markers(capfd):
    """torch.profiler's kineto writes "USDT: ... profiler_start/stop" to fd 2 on every profile,
    at any log level; the position suite's kernel probe keeps them off stderr and keeps
    everything else written meanwhile."""
    import torch
    import torch.nn.functional as F

    from blocklab.experiments.suites.position.timing import sdpa_kernels

    q = torch.randn(1, 2, 8, 4)  # [B, n_heads, T, head_dim]

    def call():
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
        os.write(2, b"kept line\n")

    kernels = sdpa_kernels(call)
    out, err = capfd.readouterr()
    assert "USDT" not in err and "profiler_st" not in err
    assert err.splitlines() == ["kept line"]
    assert kernels and all("scaled_dot_product" in k for k in kernels)
