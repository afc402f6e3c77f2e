"""The ledger refuses bad input once, before any check runs, and never grades from a stored
summary whose runs are gone (the report's rule, `blocklab.experiments.summaries.incomplete`)."""

import pytest

from blocklab.claims import Context, run_claims
from blocklab.errors import InputError


@pytest.mark.parametrize("ids, ctx, needle", [
    (["C02", "C02"], Context(), "claim id(s) ['C02'] asked for more than once"),
    (["C16"], Context(size="bogus"), "size 'bogus' is not allowed"),
    (["C16"], Context(seed_offset=-5), "-5 is not allowed"),
])
def test_bad_input_is_refused_before_any_check(monkeypatch, ids, ctx, needle):
    from blocklab.claims import ledger

    ledger.register_checks()
    for cid in set(ids):
        monkeypatch.setitem(ledger.CHECKS, cid, lambda ctx: pytest.fail("a check ran"))
    with pytest.raises(InputError) as err:
        run_claims(ids, ctx)
    assert needle in str(err.value)


def test_a_summary_whose_runs_are_gone_reads_as_missing_results(tmp_path, monkeypatch):
    from blocklab.claims import ledger
    from blocklab.experiments.summaries import Summary

    stored = Summary("ffn", "quick", 1, [], data=None, runs=1, run_ids=["0123456789ab"])
    monkeypatch.setattr(ledger, "load_summary", lambda *args, **kwargs: stored)
    ctx = Context(tmp_path, "quick")
    (row,) = run_claims(["C16"], ctx)
    assert row.verdict == "missing-results" and row.error is None
    assert "incomplete" in row.summary and "0123456789ab.json" in row.summary
    assert f"blocklab suite ffn --size quick --results {tmp_path}" in row.summary
    assert row.command == f"blocklab suite ffn --size quick --results {tmp_path}"
    assert "0123456789ab.json" in row.summary_zh
    assert ctx.summary("ffn") is None and "0123456789ab.json" in ctx.unusable["ffn"]
