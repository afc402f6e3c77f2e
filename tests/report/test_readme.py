"""The README's verdict table is generated, and its analytic verdicts are today's."""

import re
from pathlib import Path

import pytest

from blocklab.claims import run_claims
from blocklab.report.readme import END, START, update_readme, verdict_table

README = Path(__file__).resolve().parents[2] / "README.md"
# Verdicts computed live, independent of stored suite results.
ANALYTIC = ["C01", "C02", "C03", "C04", "C05", "C06", "C07", "C08", "C09", "C10", "C11", "C14",
            "C15", "C17", "C20", "C22", "C23", "C24", "C25", "C26", "C27", "C28", "C34", "C35"]


def test_readme_verdicts_match_the_live_ledger(tmp_path):
    text = README.read_text(encoding="utf-8")
    block = text.split(START, 1)[1].split(END, 1)[0]
    shown = dict(re.findall(r"^\| (C\d\d) \| \*\*([a-z-]+)\*\* \|", block, flags=re.M))
    assert len(shown) == 36
    live = {r.id: r.verdict for r in run_claims(ANALYTIC)}
    assert {k: shown[k] for k in ANALYTIC} == live


def test_update_readme_replaces_only_the_block(tmp_path):
    path = tmp_path / "README.md"
    path.write_text(f"before\n{START}\nold\n{END}\nafter\n", encoding="utf-8")
    rows = run_claims(["C02"])
    update_readme(path, rows, "cmd")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert verdict_table(rows) in text
    path.write_text("no markers", encoding="utf-8")
    with pytest.raises(ValueError, match="no <!-- verdicts:start -->"):
        update_readme(path, rows, "cmd")
