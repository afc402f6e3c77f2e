"""The ledger refuses bad input once, before any check runs, and never grades from a stored
summary whose runs are gone (the report's rule, `blocklab.experiments.summaries.incomplete`)."""

from pathlib import Path

import pytest

from blocklab.claims import Context, finding, ledger, run_claims
from blocklab.errors import InputError
from blocklab.experiments.options import RunRequest
from blocklab.experiments.summaries import Summary, stored_keys


# (a bad size or seed offset: refused where the request is built, tests/experiments/test_options.py)
@pytest.mark.parametrize("ids, needle", [
    (["C02", "C02"], "claim id(s) ['C02'] asked for more than once"),
    (["C99"], "unknown claim id(s) ['C99']"),
])
def test_bad_input_is_refused_before_any_check(monkeypatch, ids, needle):
    for cid in set(ids) & set(ledger.CHECKS):
        monkeypatch.setitem(ledger.CHECKS, cid, lambda ctx: pytest.fail("a check ran"))
    with pytest.raises(InputError) as err:
        run_claims(ids, Context(RunRequest(Path("runs"), "quick")))
    assert needle in str(err.value)


def test_a_summary_whose_runs_are_gone_reads_as_missing_results(tmp_path, monkeypatch):
    stored = Summary("ffn", "quick", 1, [], data=None, runs=1, run_ids=["0123456789ab"])
    monkeypatch.setattr(finding, "load_summary", lambda *args, **kwargs: stored)
    ctx = Context(RunRequest(tmp_path, "quick"))
    (row,) = run_claims(["C16"], ctx)
    assert row.verdict == "missing-results" and row.error is None
    # (the command it names, on a real folder: tests/test_hostile_results.py)
    assert "incomplete" in row.summary and "0123456789ab.json" in row.summary_zh
    assert ctx.summary("ffn") is None and "0123456789ab.json" in ctx.unusable["ffn"]


def test_missing_results_name_the_sizes_the_folder_does_hold(tmp_path):
    """A folder with no summary at the asked size, seed offset and precision says which it
    does hold, each with the command that reads it; folders that are no summary's (tuning
    runs, runs trained twice as long, names `size_folder` does not give) are passed over."""
    for folder in ["ffn/tiny", "ffn/quick+seeds1000", "ffn/full+bf16", "placement/tiny",
                   "ffn/quick+x2", "ffn/tiny+seeds07", "ffn/huge", "notasuite/quick",
                   "ffn/tiny+seeds1000+seeds5"]:
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "summary.json").write_text("{}")
    (tmp_path / "ffn" / "tiny+tuning").mkdir()  # runs, no summary
    (tmp_path / "ffn" / "quick").mkdir()  # an interrupted suite: no summary yet
    assert stored_keys(tmp_path, "ffn") == [("ffn", "tiny", 0, "fp32"),
                                            ("ffn", "quick", 1000, "fp32"),
                                            ("ffn", "full", 0, "bf16")]
    ctx = Context(RunRequest(tmp_path, "quick"))
    (row,) = run_claims(["C16"], ctx)
    assert row.verdict == "missing-results" and row.error is None
    for flags in ["--size tiny", "--size quick --seed-offset 1000",
                  "--size full --precision bf16"]:
        read = f"blocklab claims {flags} --results {tmp_path}"
        assert f"Results of 'ffn' at {flags} are stored there: `{read}`." in row.summary
        assert read in row.summary_zh
        assert any(s["command"] == read for s in row.evidence["stored"])
    assert row.command == f"blocklab suite ffn --size quick --results {tmp_path}"
    # each keyed by the request that reads it: the context's, at another key
    assert ctx.stored_elsewhere() == {RunRequest(tmp_path, "tiny"): ["ffn", "placement"],
                                      RunRequest(tmp_path, "quick", 1000): ["ffn"],
                                      RunRequest(tmp_path, "full", 0, "bf16"): ["ffn"]}
    assert list(Context(RunRequest(tmp_path, "tiny")).stored_elsewhere("ffn")) == [
        RunRequest(tmp_path, "quick", 1000), RunRequest(tmp_path, "full", 0, "bf16")]


def test_a_folder_holding_nothing_else_adds_nothing(tmp_path):
    rows = run_claims(["C16", "C12", "C13", "C18", "C19", "C21", "C36", "C37"],
                      Context(RunRequest(tmp_path, "quick")))
    for row in rows:  # each names the command that runs its suite
        assert row.verdict == "missing-results" and row.error is None and row.evidence == {}
        assert row.command.startswith("blocklab suite ") and str(tmp_path) in row.command
    assert rows[0].summary == (f"No stored 'ffn' suite results under {tmp_path} (quick); run "
                               f"`blocklab suite ffn --size quick --results {tmp_path}`.")
    assert "placement" in rows[6].summary
    (row,) = run_claims(["C16"], Context(RunRequest(tmp_path / "absent", "quick")))
    assert row.verdict == "missing-results" and row.error is None
