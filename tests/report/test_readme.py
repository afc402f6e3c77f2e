"""The README's verdict table is generated, one line per claim, and its analytic verdicts are
today's."""

import json
import re
import statistics
from pathlib import Path

import pytest

from blocklab.claims import claim_sources, ledger, run_claims
from blocklab.claims.brief import brief
from blocklab.claims.catalogue import SUITE_OF
from blocklab.claims.text import reader_word
from blocklab.experiments.provenance import Machine, machine_name
from blocklab.experiments.summaries import TINY_NOTE
from blocklab.report import readme
from blocklab.report.findings import findings
from blocklab.report.palette import VERDICT_STYLES
from blocklab.report.readme import (
    END,
    FINDINGS_END,
    FINDINGS_START,
    LINK,
    START,
    findings_block,
    main,
    update_readme,
    verdict_table,
)

README = Path(__file__).resolve().parents[2] / "README.md"
# Verdicts computed live, independent of stored suite results.
ANALYTIC = [cid for cid in sorted(claim_sources()) if cid not in SUITE_OF]


# A table row: its id (bare or linked) and its verdict cell.
ROW = re.compile(r"^\| \[?(C\d\d)\]?(?:\([^)]*\))? \| ([^|]+) \|", flags=re.M)
SYMBOLS = "".join(style.symbol for style in VERDICT_STYLES.values())


def _verdict_cell(cell: str) -> str:
    """A verdict cell's word with spaces: '✓ confirmed' and '**confirmed**' read 'confirmed'."""
    return cell.strip("* ").lstrip(SYMBOLS).strip().replace("-", " ")


def _visible(row: str) -> str:
    """A table row as a reader sees it: links as their text, no escapes, no outer bars."""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", row).replace("\\|", "|").strip("| ")


def test_each_claim_is_one_short_row_linked_to_its_section(unrun):
    table = verdict_table(unrun).splitlines()
    assert table[0] == "| id | verdict | the page says | what we found |"
    rows = table[2:]
    assert len(rows) == len(unrun) == 37
    for r, row in zip(unrun, rows, strict=True):
        b = brief(r, "en", VERDICT_STYLES[r.verdict].symbol)
        assert row.startswith(f"| [{r.id}]({LINK.format(id=r.id)}) | {b.symbol} {b.word} | ")
        assert row.count(" | ") == 3 and b.statement in row and b.found in row
        assert len(_visible(row)) <= 200, (r.id, len(_visible(row)))
        assert r.summary not in row  # the long text stays in the report
    lengths = [len(_visible(row)) for row in rows]
    assert statistics.median(lengths) <= 160


def test_readme_verdicts_match_the_live_ledger(unrun):
    block = README.read_text(encoding="utf-8").split(START, 1)[1].split(END, 1)[0]
    shown = {cid: _verdict_cell(cell) for cid, cell in ROW.findall(block)}
    assert len(shown) == 37
    live = {r.id: reader_word(r.verdict, "en") for r in unrun if r.id in ANALYTIC}
    assert {k: shown[k] for k in ANALYTIC} == live


BOTH = (f"before\n{FINDINGS_START}\nSTALE\n{FINDINGS_END}\nmiddle\n{START}\nSTALE\n{END}\n"
        "after\n")


def test_update_readme_replaces_only_the_blocks_the_findings_linked_to_their_claims(
        tmp_path, unrun):
    path, rows = _readme(tmp_path), unrun
    update_readme(path, rows, "cmd")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("before\n") and text.endswith("after\n") and "STALE" not in text
    assert "\nmiddle\n" in text and text.index(FINDINGS_END) < text.index(START)
    block, found = findings_block(rows), findings(rows, "en")
    assert verdict_table(rows) in text and block in text
    items = [line for line in block.splitlines() if line.startswith("- ")]
    assert len(items) == len(found.sentences) >= 1
    for line, sentence in zip(items, found.sentences, strict=True):
        for claim in sentence.claims:
            assert f"[{claim}]({LINK.format(id=claim)})" in line
        assert re.sub(r"\[(C\d\d)\]\([^)]*\)", r"\1", line) == f"- {sentence.text}"
    for u in found.use:  # the numbers to act on, each with its evidence's link
        assert f"| {u.label} | {u.value} | [{u.claim}]({LINK.format(id=u.claim)}) |" in block


# --- the command line: bad input is one line and exit code 2, and nothing is written ----------
def _readme(tmp_path: Path, text: str | None = None) -> Path:
    path = tmp_path / "README.md"
    path.write_text(BOTH if text is None else text, encoding="utf-8")
    return path


@pytest.fixture
def fast_ledger(monkeypatch):
    """The ledger of one analytic claim (C02) and one experimental claim (C16), so the command
    line is tested in a second instead of running every check."""
    monkeypatch.setattr(readme, "run_claims", lambda ids, ctx: run_claims(["C02", "C16"], ctx))


@pytest.mark.parametrize("make, args, needle", [
    (None, ["--size", "bogus"], "--size 'bogus' is not allowed; expected one of ['tiny', "
                                "'quick', 'full']"),
    (None, ["--size", "QUICK"], "--size 'QUICK'"),
    (None, ["--results", "{tmp}/nowhere"], "--results '{tmp}/nowhere': no such folder"),
    (None, ["--results", "{tmp}/README.md"], "--results '{tmp}/README.md' is a file"),
    (None, ["--results", ""], "--results '' is empty"),
    (None, ["--bogus"], "unrecognized arguments: --bogus"),
    (None, ["--results"], "argument --results: expected one argument"),
    (lambda tmp: tmp / "NOPE.md", [], "NOPE.md: no such file"),
    (lambda tmp: tmp, [], "is not a file"),
    (lambda tmp: _readme(tmp, "no markers"), [], "has no <!-- verdicts:start -->"),
    (lambda tmp: _readme(tmp, f"{END}\n{START}\n"), [], "has no <!-- verdicts:start -->"),
    (lambda tmp: _readme(tmp, f"only {START}\n"), [], "has no <!-- verdicts:start -->"),
    (lambda tmp: _readme(tmp, f"{START}\n{END}\n"), [], "has no <!-- findings:start -->"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, one_line_exit_2, fast_ledger, make,
                                                  args, needle):
    path = _readme(tmp_path) if make is None else make(tmp_path)
    before = path.read_text(encoding="utf-8") if path.is_file() else None
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    line = one_line_exit_2([str(path), "--results", str(tmp_path), *args], main=main)
    assert needle.replace("{tmp}", str(tmp_path)) in line
    if make is not None:  # the README named, as it was given
        assert str(path) in line
    assert (path.read_text(encoding="utf-8") if path.is_file() else None) == before


def test_an_empty_results_folder_is_refused_not_written(tmp_path, one_line_exit_2):
    """The reported case, with the real ledger: a results folder without suite results would
    have replaced every experimental verdict by missing-results."""
    path = _readme(tmp_path)
    (tmp_path / "empty").mkdir()
    line = one_line_exit_2([str(path), "--size", "quick", "--results", str(tmp_path / "empty")],
                           main=main)
    assert "missing-results" in line and "C16" in line and "--allow-missing" in line
    assert f"blocklab report --size quick --results {tmp_path / 'empty'}" in line
    assert "STALE" in path.read_text(encoding="utf-8")


def test_allow_missing_writes_the_rows_and_the_line_says_how_and_from_what(
        tmp_path, capsys, fast_ledger):
    """The generated line names the command, the commit and the machine that made the results
    (a file beside the runs is not a run), and at tiny that tiny decides nothing."""
    path = _readme(tmp_path)
    assert main([str(path), "--results", str(tmp_path), "--allow-missing"]) == 0
    text = path.read_text(encoding="utf-8")
    assert f"| [C16]({LINK.format(id='C16')}) | … missing results |" in text
    assert f"| [C02]({LINK.format(id='C02')}) | ✓ confirmed |" in text
    assert f"--size quick --results {tmp_path} --allow-missing`" in text
    assert "smoke test" not in text and capsys.readouterr().err == ""
    assert main([str(path), "--size", "tiny", "--results", str(tmp_path),
                 "--allow-missing"]) == 0
    assert (f"--size tiny --results {tmp_path} --allow-missing`; results of `blocklab report "
            f"--tiny`; {TINY_NOTE}._") in path.read_text(encoding="utf-8")
    here = Machine("Some CPU", {"avx2": True, "avx512f": False}, 2)
    run = tmp_path / "ffn" / "quick" / "0123456789ab.json"
    run.parent.mkdir(parents=True)
    run.write_text(json.dumps({"provenance": {"machine": vars(here)}}), encoding="utf-8")
    (run.parent / "seed_blocks.json").write_text("[]", encoding="utf-8")
    assert main([str(path), "--results", str(tmp_path), "--commit", "abc1234",
                 "--allow-missing"]) == 0
    text = path.read_text(encoding="utf-8")
    assert (f"results of `blocklab report --quick` at commit abc1234 on "
            f"{machine_name(here)}, 2 CPUs._") in text
    assert "--commit abc1234 --allow-missing`" in text


def test_a_check_that_fails_writes_nothing(tmp_path, capsys, fast_ledger, monkeypatch):
    def broken(ctx):
        raise KeyError("arms")

    monkeypatch.setitem(ledger.CHECKS, "C02", broken)
    path = _readme(tmp_path)
    assert main([str(path), "--results", str(tmp_path), "--allow-missing"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "C02 failed to run" in lines[0] and "STALE" in path.read_text(encoding="utf-8")


def test_the_readme_opens_with_its_findings_and_shows_one_run():
    """The README's first screen holds the findings and the report's picture, the README stays
    under 150 lines, and the picture is of the run the table was generated from (the commit
    its generated line names)."""
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 150
    assert FINDINGS_START in "\n".join(lines[:12])
    after = text.split(FINDINGS_END, 1)[1].lstrip("\n")
    assert after.startswith("![") and "(docs/report.png)" in after.splitlines()[0]
    made = re.search(r"results of `blocklab report --quick` at commit (\w+)", text)
    assert made and f"commit {made[1]}" in after.splitlines()[0]
