"""Hostile input on the CLI's resource, executor and plan options (exit code 2 and one line on
stderr naming the option, before any work), the bfloat16 warning on CPUs without bfloat16
units."""

from __future__ import annotations

import pytest

from blocklab.cli import main, warn_if_bf16_emulated
from blocklab.errors import InputError
from blocklab.experiments import env


# --- thread and worker counts: 1 to the usable cores ---------------------------------------------
def test_check_threads_allows_1_to_the_usable_cores(monkeypatch):
    monkeypatch.setattr(env, "usable_cores", lambda: 4)
    assert env.check_threads(1) == 1 and env.check_threads(4, "--jobs") == 4
    for bad in (0, -1, 5, 100_000, True, 2.0, "2"):
        with pytest.raises(InputError, match=r"--jobs .* not allowed; expected an integer in "
                                             r"\[1, 4\]"):
            env.check_threads(bad, "--jobs")


@pytest.mark.parametrize(("argv", "value"), [
    (["train", "--out", "{tmp}/out", "--threads"], str(10**30)),
    (["quantize", "llama-3.2-1b", "--threads"], "0"),
    (["suite", "ffn", "--tiny", "--results", "{tmp}/out", "--jobs"], "-1"),
    (["report", "--tiny", "--no-run", "--results", "{tmp}/runs", "--out", "{tmp}/out",
      "--jobs"], "0"),
])
def test_threads_and_jobs_beyond_this_machine(tmp_path, one_line_exit_2, argv, value):
    one_line_exit_2([a.format(tmp=tmp_path) for a in argv] + [value], f"{argv[-1]} {value}",
                    f"[1, {env.usable_cores()}]")
    assert not list(tmp_path.iterdir())


# --- --executor, --jobs, --plan and --budget together; the ladder's options ----------------------
@pytest.mark.parametrize("argv,needle", [
    (["report", "--plan", "--executor", "ray", "--jobs", "2"], "--jobs"),
    (["report", "--plan", "--address", "10.0.0.1:6379"], "--address"),
    (["suite", "ffn", "--plan"], "--plan"),
    (["report", "--plan", "--budget", "-1"], "--budget -1 is not allowed"),
    (["report", "--budget", "nan"], "--budget nan is not allowed; expected minutes in [0, 100000]"),
    (["suite", "ffn", "--tiny", "--budget", "5", "--seeds", "2"], "leave out --seeds"),
    (["suite", "ffn", "--tiny", "--budget", "5", "--precision", "bf16"], "--precision"),
    (["report", "--tiny", "--precision", "bf16", "--budget", "5"],
     "--budget adds seeds to the float32 runs"),
    (["ladder", "C36"],
     "claim 'C36' has no ladder; allowed: ['C16', 'C18', 'C19', 'C21', 'C30']"),
    (["ladder", "C16", "--precision", "fp16"], "--precision 'fp16' is not allowed"),
    (["ladder", "C16", "--budget", "-1"], "--budget -1.0 is not allowed"),
    (["ladder", "C16", "--budget", "inf"], "--budget inf is not allowed"),
    (["ladder", "C16", "--jobs", "0"], "--jobs"),
])
def test_plan_and_budget_with_bad_input(tmp_path, one_line_exit_2, argv, needle):
    one_line_exit_2([*argv, "--results", str(tmp_path / "runs")], needle)
    assert not (tmp_path / "runs").exists()


# --- --seed-offset: the one rule (RunRequest's), named as the option, before any work -----------
@pytest.mark.parametrize("command", [["suite", "ffn", "--tiny"], ["report", "--tiny", "--no-run"],
                                     ["report", "--plan"], ["claims", "--tiny"],
                                     ["ladder", "C16", "--plan"]])
def test_seed_offset_named_as_written(tmp_path, one_line_exit_2, command):
    extra = ["--out", str(tmp_path / "report")] if command[0] == "report" else []
    line = one_line_exit_2([*command, "--results", str(tmp_path / "runs"), *extra,
                            "--seed-offset", str(10**30)])
    assert line == (f"error: --seed-offset {10**30} is not allowed; expected an integer in "
                    "[0, 1000000000]")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "report").exists()


# --- bfloat16 on a CPU without bfloat16 units: a warning, and the run goes on -------------------
def _cpu(monkeypatch, flags: str | None, machine: str = "x86_64") -> None:
    """A CPU with these flags (None: no /proc/cpuinfo, as off Linux)."""
    monkeypatch.setattr(env.platform, "machine", lambda: machine)
    info = [] if flags is None else ["model name\t: Example CPU", f"flags\t\t: fpu sse2 {flags}"]
    monkeypatch.setattr(env, "_cpuinfo", lambda: info)


@pytest.mark.parametrize(("flags", "machine", "emulated"), [
    ("avx2", "x86_64", True), ("avx2 avx512f", "x86_64", True),
    ("avx2 avx512f avx512_bf16", "x86_64", False), ("avx2 amx_bf16", "x86_64", False),
    (None, "x86_64", False), ("avx2", "aarch64", False),  # unknown: off Linux or off x86
])
def test_bf16_emulated_reads_the_cpu_flags(monkeypatch, flags, machine, emulated):
    _cpu(monkeypatch, flags, machine)
    assert env.bf16_emulated() is emulated


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


def test_the_warning_only_for_bf16_on_a_cpu_without_bf16_units(capsys, monkeypatch):
    _cpu(monkeypatch, "avx2")
    warn_if_bf16_emulated("bf16")
    (warning,) = _warnings(capsys.readouterr().err)
    assert "bfloat16 matmuls are emulated on this CPU" in warning
    assert "30× slower than float32" in warning and "fp32" in warning
    warn_if_bf16_emulated("fp32")
    warn_if_bf16_emulated("bf16", "cuda:0")
    _cpu(monkeypatch, "avx2 amx_bf16")
    warn_if_bf16_emulated("bf16")
    assert capsys.readouterr().err == ""


def test_suite_bf16_warns_before_it_runs_and_a_suite_without_it_is_one_line(tmp_path, capsys,
                                                                             one_line_exit_2,
                                                                             monkeypatch, started):
    _cpu(monkeypatch, "avx2")
    assert main(["suite", "ffn", "--tiny", "--results", str(tmp_path),
                 "--precision", "bf16"]) == 0
    (warning,) = _warnings(capsys.readouterr().err)
    assert [o.precision for o in started] == ["bf16"]
    assert "bfloat16 matmuls are emulated" in warning
    # a suite that does not take bf16, on a CPU without bfloat16 units: still only the error
    one_line_exit_2(["suite", "norm-cost", "--tiny", "--results", str(tmp_path),
                     "--precision", "bf16"], "precision='bf16'", "norm-cost")
