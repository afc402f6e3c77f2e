"""`blocklab ladder`: the budget runs whole rungs, cheapest first, while each one's estimate fits
in what is left (bad input: tests/test_hostile_cli.py)."""

import shutil
import subprocess
import sys

import pytest

from blocklab.cli import ladder as ladder_cli
from blocklab.cli import report as report_cli
from blocklab.cli.suite import auto_precision
from blocklab.experiments.suites import get_suite


def test_the_budget_admits_whole_rungs_by_price_cheapest_first(monkeypatch):
    """Each rung runs its registered plan of work (`report.run_with_budget` on the ladder's
    suite); a budget admits rungs by their priced plans before anything runs: the clock is
    never read, so a slow machine runs the same rungs."""
    ran = []

    def run_with_budget(request, run_on, jobs, progress, wait, names):
        ran.append((request.size, names))
        return {}, {}

    monkeypatch.setattr(report_cli, "run_with_budget", run_with_budget)
    monkeypatch.setattr(ladder_cli, "time", None, raising=False)  # no clock to read
    requests = {size: type("R", (), {"size": size})() for size in
                ("quick", "rung1", "rung2", "rung3")}
    # (priced plan s, runs, stored): 10 minutes admit quick and rung1; rung3 is stored (its
    # plan re-reads it at no cost, then adds any look still due)
    prices = {"quick": (100.0, 32, 0), "rung1": (300.0, 32, 0), "rung2": (900.0, 32, 0),
              "rung3": (0.0, 32, 32)}
    done = ladder_cli._run_rungs("ffn", requests, prices, 10.0, None, None, False)
    assert done == ["rung3", "quick", "rung1"] == [size for size, _ in ran]
    assert all(names == ["ffn"] for _, names in ran)
    ran.clear()
    assert ladder_cli._run_rungs("ffn", requests, prices, None, None, 1, False) == [
        "rung3", "quick", "rung1", "rung2"]


def test_a_suite_that_measures_float32_only_runs_its_rungs_in_fp32():
    assert auto_precision(get_suite("norm-cost"), "rung2", rung="rung2") == (
        "fp32", "rung2: fp32 (suite norm-cost measures float32 only)")


def test_written_names_only_the_files_written(tmp_path, capsys):
    """No rung has results: the ladder's JSON is written, its figure is not, and the line
    says so."""
    ladder_cli._report("C16", tmp_path, dict.fromkeys(("quick", "rung1", "rung2", "rung3"),
                                                      "fp32"), 0, False)
    folder = tmp_path / "ladder"
    assert (folder / "C16.json").is_file() and not (folder / "C16.png").exists()
    out = capsys.readouterr().out
    assert f"Written: {folder / 'C16.json'}; no figure ({folder / 'C16.png'}) yet: no rung " \
           "has results to draw." in out
    assert f"and {folder / 'C16.png'}" not in out


def test_a_results_folder_it_cannot_write_is_refused_before_any_timing(tmp_path, blocklab,
                                                                       one_line_exit_2, read_only):
    """--precision auto times each rung's step (seconds): a folder the ladder could not write
    its runs into is refused before that, with nothing else said."""
    results = read_only(tmp_path / "runs")
    proc = blocklab("ladder", "C16", "--results", str(results), "--budget", "0",
                    bound_by_modes=True)
    assert one_line_exit_2(proc) == (f"error: --results {str(results)!r}: the folder "
                                f"{str(results)!r} is not writable (permission denied)")


def test_a_read_only_file_system_is_named(tmp_path, one_line_exit_2):
    """A folder on a file system mounted read-only (a tmpfs mounted so in a mount namespace of
    its own): its mode allows writing, the mount does not, and the line says which."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here to mount a read-only file system")
    results = tmp_path / "mounted"
    results.mkdir()
    proc = subprocess.run(
        ["unshare", "--mount", "sh", "-c", 'mount -t tmpfs -o ro tmpfs "$1" && shift && '
         'exec "$@"', "sh", str(results), sys.executable, "-m", "blocklab", "ladder", "C16",
         "--results", str(results), "--budget", "0"],
        capture_output=True, text=True, timeout=300)
    if proc.returncode != 2 and proc.stderr.startswith(("unshare:", "mount:")):
        pytest.skip(f"a read-only file system cannot be mounted here: {proc.stderr.strip()}")
    assert one_line_exit_2(proc).endswith(f"the folder {str(results)!r} is not writable (a "
                                     "read-only file system)")
