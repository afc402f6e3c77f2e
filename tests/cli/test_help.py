"""`blocklab --help` and every command's `--help`: readable at 80 columns, with no `<bool>`
placeholder on a flag, arguments named NAME (never {name}), docstring paragraphs that reflow
instead of keeping the source's line breaks, and `suite --help` naming every suite."""

from __future__ import annotations

import re

import pytest
import typer

from blocklab.cli import _register, app, main
from blocklab.experiments.suites import SUITE_MODULES

_register()
COMMANDS = sorted(typer.main.get_command(app).commands)
EVERY_HELP = [[], *([name] for name in COMMANDS)]


def render(argv: list[str], columns: int, monkeypatch, capsys) -> list[str]:
    """The lines `blocklab ARGV --help` prints on a terminal `columns` wide."""
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    assert main([*argv, "--help"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out.splitlines()


def _word_would_fit(previous: str, following: str, right: int) -> bool:
    """Whether the first word of `following` fits after `previous` (both with their leading
    columns) within `right` columns: then the break between them was not rich's wrapping but
    a line break kept from the source."""
    word = following.split()[0]
    return len(previous.rstrip()) + 1 + len(word) <= right


@pytest.mark.parametrize("argv", EVERY_HELP, ids=lambda argv: " ".join(argv) or "blocklab")
def test_help_fits_80_columns_names_arguments_in_capitals_and_reflows(argv, monkeypatch,
                                                                      capsys):
    narrow = render(argv, 80, monkeypatch, capsys)
    assert not [line for line in narrow if len(line.rstrip()) > 80]
    assert not [line for line in narrow if "<bool>" in line]  # a flag takes no value
    lines = render(argv, 200, monkeypatch, capsys)
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("Usage:")) + 1
    usage = lines[start - 1].strip()
    assert "{" not in usage and "}" not in usage, usage
    for piece in usage.split()[2 + len(argv):]:  # after "Usage: blocklab [COMMAND]"
        name = piece.strip("[].")
        assert name == name.upper(), usage  # NAME, [MODEL], [IDS]..., [OPTIONS]
    # At 200 columns rich wraps only a paragraph longer than that, so a paragraph on two lines
    # whose second line's first word would have fit on the first is a hard break.
    end = next(i for i, line in enumerate(lines) if line.startswith("╭"))
    description = lines[start:end]
    assert any(line.strip() for line in description), "no description"
    for previous, following in zip(description, description[1:], strict=False):
        if previous.strip() and following.strip():
            assert not _word_would_fit(previous, following, 199), (previous, following)
    if argv == ["suite"]:  # NAME's help lists every registered suite
        text = " ".join(lines)
        assert [n for n in SUITE_MODULES if not re.search(rf"\b{re.escape(n)}\b", text)] == []


def test_command_summaries_reflow(monkeypatch, capsys):
    lines = render([], 200, monkeypatch, capsys)
    start = next(i for i, line in enumerate(lines) if "Commands" in line and line.startswith("╭"))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("╰"):
            break
        rows.append(line[1:-1])  # inside the panel's borders
    listed = [row.split()[0] for row in rows if not row[:2].isspace()]
    assert listed == COMMANDS or set(listed) == set(COMMANDS), listed
    summary_at = re.match(r"\s*\S+\s+", rows[0]).end()  # where the summary column starts
    for previous, following in zip(rows, rows[1:], strict=False):
        if following[:summary_at].isspace():  # a continuation line of a summary
            assert not _word_would_fit(previous, following, len(following) - 1), (
                previous, following)
