"""Hostile and careless input about results, as a user types it: a results folder that is a
file, missing or empty, a summary whose runs were deleted, odd claim ids and option values.
Every bad-input case exits 2 with exactly one line on stderr naming what the user wrote, before
any work; tiny results say that tiny decides nothing.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from blocklab.experiments.summaries import TINY_NOTE
from blocklab.jsonio import read_json

from .conftest import run_cli


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if the ledger starts: bad input must be refused before any check runs."""
    def forbidden(*args, **kwargs):
        raise AssertionError("the ledger ran on bad input")

    monkeypatch.setattr("blocklab.claims.run_claims", forbidden)


# --- claims --results ----------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "needles"), [
    ("summary.json", ["--results '{path}' is a file", "expected a folder"]),
    # a folder that is not there is most likely a typo, not results still to run
    ("rusn", ["--results '{path}': no such folder",
              "blocklab report --size tiny --results {path}"]),
    ("", ["--results '' is empty"]),
])
def test_claims_results_not_a_folder(tmp_path, one_line_exit_2, no_work, name, needles):
    path = str(tmp_path / name) if name else ""
    if name.endswith(".json"):
        (tmp_path / name).write_text("{}")
    one_line_exit_2(["claims", "--tiny", "--results", path],
                    *(n.format(path=path) for n in needles))
    assert not (tmp_path / "rusn").exists()


def test_claims_default_results_folder_may_be_missing(tmp_path, capsys, monkeypatch):
    """Without --results the default `runs` not existing is a fresh checkout, not a typo: the
    analytic claims still compute (a lower-case id read as its claim)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["claims", "c02", "--json"], capsys)
    assert code == 0, err
    assert [(r["id"], r["verdict"]) for r in json.loads(out)] == [("C02", "confirmed")]


# --- claims and report: unusual ids and option values --------------------------------------------
@pytest.mark.parametrize("argv, needles", [
    (["claims", "C99"], ["unknown claim id(s) ['C99']", "C01 … C37"]),
    (["claims", "c99"], ["unknown claim id(s) ['c99']"]),  # named as the user wrote it
    (["claims", "C16", "c16"], ["claim id(s) ['c16'] asked for more than once"]),
    (["claims", "C16", "--size", "bogus"], ["--size 'bogus'", "'tiny', 'quick', 'full'"]),
    (["claims", "C16", "--lang", "fr"], ["--lang 'fr'", "'en', 'zh'"]),
    (["report", "--no-run", "--lang", ""], ["--lang ''", "'en', 'zh'"]),
])
def test_unusual_claims_and_report_input(tmp_path, one_line_exit_2, monkeypatch, no_work, argv,
                                        needles):
    monkeypatch.chdir(tmp_path)  # `report` would write ./report otherwise
    one_line_exit_2(argv, *needles)
    assert not (tmp_path / "report").exists()


# --- a copy of the ffn suite's tiny results ------------------------------------------------------
@pytest.fixture
def results(tiny_runs, tmp_path) -> Path:
    """A copy of the ffn suite run at --size tiny, to damage."""
    shutil.copytree(tiny_runs / "ffn", tmp_path / "runs" / "ffn")
    return tmp_path / "runs"


def test_tiny_decides_nothing_and_another_size_names_the_tiny_results(results, capsys):
    """At --tiny, claims and the suite say that tiny decides nothing; claims at quick on that
    folder name the tiny results instead (what the row says: tests/claims/test_ledger.py)."""
    note = " ".join(TINY_NOTE.split())
    code, out, _ = run_cli(["claims", "--tiny", "--results", str(results)], capsys)
    assert code == 0 and note in " ".join(out.split()) and "holds results at" not in out
    code, out, err = run_cli(["suite", "ffn", "--tiny", "--results", str(results),
                              "--no-progress", "--jobs", "1"], capsys)
    assert code == 0 and note in " ".join(out.split()), err
    code, out, _ = run_cli(["claims", "--results", str(results)], capsys)
    assert code == 0 and "smoke test" not in out
    lines = [line for line in out.splitlines() if "lack results" in line]
    assert len(lines) == 1 and lines[0].endswith(
        f"{results} holds results at --size tiny (ffn): "
        f"blocklab claims --size tiny --results {results}"), lines


def _c16(results: Path, capsys) -> tuple[int, dict]:
    """`blocklab claims C16 --tiny --json` on `results`: its exit code and its one row."""
    code, out, err = run_cli(["claims", "C16", "--tiny", "--results", str(results), "--json"],
                             capsys)
    (row,) = json.loads(out)
    return code, row


def test_claims_and_report_agree_on_a_summary_whose_runs_are_gone(results, tmp_path, capsys,
                                                                  unrasterized):
    folder = results / "ffn" / "tiny"
    run_ids = json.loads((folder / "summary.json").read_text())["run_ids"]
    assert _c16(results, capsys)[1]["verdict"] != "missing-results"

    (folder / f"{run_ids[0]}.json").unlink()
    reason = (f"a run of the stored summary is missing or unreadable (1 of {len(run_ids)}, "
              f"first {run_ids[0]}.json)")
    command = f"blocklab suite ffn --size tiny --results {results}"
    code, row = _c16(results, capsys)
    assert code == 0 and row["verdict"] == "missing-results" and row["error"] is None
    assert reason in row["summary"] and row["command"] == command

    code, _, err = run_cli(["report", "--no-run", "--tiny", "--results", str(results), "--out",
                            str(tmp_path / "report")], capsys)
    assert code == 1 and "failed to run: ffn" in err
    doc = json.loads((tmp_path / "report" / "report.json").read_text())
    ffn = doc["suites"]["ffn"]
    assert ffn["summary"] is None and reason in ffn["error"] and f"`{command}`" in ffn["error"]
    (c16,) = [r for r in doc["ledger"] if r["id"] == "C16"]
    assert c16["verdict"] == "missing-results" and c16["summary"] == row["summary"]


# --- a damaged stored file: named, run again, nothing else lost or mixed in ----------------------
def _snapshot(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*.json"))}


def _suite(results: Path, capsys) -> tuple[int, str, str]:
    return run_cli(["suite", "ffn", "--tiny", "--seeds", "1", "--results", str(results),
                    "--no-progress", "--jobs", "1", "--json"], capsys)


def test_a_damaged_run_file_is_named_and_run_again(results, capsys):
    """A run and a tuning run holding NaN: named by the ledger, run again alone by the suite,
    every other file kept (every other damage: tests/experiments/test_results.py)."""
    folder = results / "ffn" / "tiny"
    run_ids = json.loads((folder / "summary.json").read_text())["run_ids"]
    target = folder / f"{run_ids[1]}.json"
    tuning = sorted((results / "ffn" / "tiny+tuning").glob("*.json"))[0]
    for path in (target, tuning):
        path.write_text(re.sub(r'"val_loss": [-0-9.e]+', '"val_loss": NaN', path.read_text(),
                               count=1))
    message = "final.val_loss: NaN is not strict JSON"
    others = {p: b for p, b in _snapshot(results).items()
              if p not in (target, tuning, folder / "summary.json")}

    code, row = _c16(results, capsys)
    assert code == 0 and row["verdict"] == "missing-results" and row["error"] is None
    assert f"first {target.name}, damaged: {message}" in row["summary"], row["summary"]

    code, out, err = _suite(results, capsys)
    assert code == 0, err
    notes = " ".join(json.loads(out)["notes"])
    assert f"{len(run_ids) - 1} of {len(run_ids)} runs were already stored" in notes
    said = f"{target}: {message}"
    assert said in err and said in notes
    assert read_json(target)["status"] == read_json(tuning)["status"] == "ok"  # strict again
    assert {p: b for p, b in _snapshot(results).items() if p in others} == others
    assert set(_snapshot(results)) == {*others, target, tuning, folder / "summary.json"}
    assert _c16(results, capsys)[1]["verdict"] != "missing-results"


def test_a_damaged_summary_is_refused_naming_it_and_rewritten_by_the_suite(results, capsys):
    path = results / "ffn" / "tiny" / "summary.json"
    path.write_text(path.read_text().replace('"suite": "ffn"', '"suite": "ffn", "suite": "ffn"', 1))
    runs = {p: b for p, b in _snapshot(results).items() if p != path}
    code, row = _c16(results, capsys)
    assert code == 1 and row["verdict"] == "error"
    assert f"{path}: key 'suite' is given twice in one object" in row["error"]
    assert f"run `blocklab suite ffn --size tiny --results {results}` to rewrite it" \
        in row["error"]
    code, _, err = _suite(results, capsys)
    assert code == 0, err
    assert {p: b for p, b in _snapshot(results).items() if p != path} == runs  # none re-run
    code, row = _c16(results, capsys)
    assert code == 0 and row["verdict"] != "error"


def test_planned_rules_with_a_key_twice_stop_the_suite_naming_the_file(results, one_line_exit_2):
    path = results / "ffn" / "tiny" / "planned_rules.json"
    path.write_text('{"C16 sliced": "ab12", "C16 sliced": "ab12"}')
    before = _snapshot(results)
    one_line_exit_2(["suite", "ffn", "--tiny", "--results", str(results), "--no-progress",
                     "--jobs", "1"], f"{path}: key 'C16 sliced' is given twice in one object")
    assert _snapshot(results) == before
