"""Every command README.md and docs/ show with its output is run, and the shown lines are in
what it prints today, in order (160 columns, the width the pages were made at), so a changed
flag, message or number fails here instead of misleading a reader.

A shown block is a ```text fence whose first line is `$ command`, right after a line
`<!-- shown-output -->`: `, exit 1` for a command that exits so (`doctor` on an error),
`, masked` to compare with every number masked and spaces collapsed (a timing, whose figures
vary between machines and runs). A block the tests cannot run (a training run of minutes) is
marked `<!-- not-run: why -->` instead, and every `$ ` block must carry one of the two."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from blocklab.report.readme import LINK

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:<!-- (shown-output(?:, masked)?(?:, exit \d+)?|not-run: [^>]+) -->\n)?"
                   r"```text\n(\$ [^\n]+)\n(.*?)```", re.S)


@dataclass(frozen=True)
class Shown:
    page: str
    mark: str | None
    command: str
    lines: tuple[str, ...]


def shown_blocks() -> list[Shown]:
    out = []
    for page in PAGES:
        for mark, command, body in BLOCK.findall(page.read_text(encoding="utf-8")):
            out.append(Shown(page.relative_to(ROOT).as_posix(), mark or None, command[2:],
                             tuple(line.rstrip() for line in body.splitlines())))
    return out


BLOCKS = shown_blocks()
RUN = [b for b in BLOCKS if b.mark and b.mark.startswith("shown-output")]


def test_every_shown_command_is_run_or_says_why_not():
    unmarked = [(b.page, b.command) for b in BLOCKS if b.mark is None]
    assert not unmarked, f"mark these <!-- shown-output --> or <!-- not-run: why -->: {unmarked}"
    assert len(RUN) >= 6  # the README's tour and docs/cli.md
    assert {b.page for b in RUN} >= {"README.md", "docs/cli.md"}


def masked(line: str) -> str:
    """Every number as '#', runs of spaces as one: the shape of a line whose figures vary."""
    return " ".join(re.sub(r"[+-]?\d[\d.,]*", "#", line).split())


def in_order(shown: tuple[str, ...], printed: list[str]) -> str | None:
    """The first shown line not found in `printed` after the previous one, or None."""
    at = 0
    for line in shown:
        try:
            at = printed.index(line, at) + 1
        except ValueError:
            return line
    return None


@pytest.mark.parametrize("block", RUN, ids=[f"{b.page}: {b.command}" for b in RUN])
def test_the_shown_output_is_what_the_command_prints(block, tmp_path):
    argv = shlex.split(block.command.split("  #")[0])
    env = {**os.environ, "COLUMNS": "160", "NO_COLOR": "1", "TERM": "dumb"}
    if argv[0] == "blocklab":
        command, cwd = [sys.executable, "-m", "blocklab", *argv[1:]], tmp_path
    else:  # a benchmark of this repository, run from its root
        assert argv[:2] == ["python", argv[1]] and argv[1].startswith("benchmarks/"), argv
        command, cwd = [sys.executable, *argv[1:]], ROOT
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    exit_code = int(block.mark.rpartition(" ")[2]) if "exit" in block.mark else 0
    assert done.returncode == exit_code, done.stderr[-2000:]
    printed = [line.rstrip() for line in done.stdout.splitlines()]
    shown = block.lines
    if "masked" in block.mark:
        printed, shown = [masked(line) for line in printed], tuple(map(masked, shown))
    missing = in_order(shown, printed)
    assert missing is None, (f"{block.page}: `{block.command}` no longer prints\n{missing}\n"
                             f"(it printed:)\n" + "\n".join(printed[:80]))


def test_a_changed_line_is_caught():
    printed = ["a", "b  │ 1", "c"]
    assert in_order(("a", "c"), printed) is None
    assert in_order(("c", "a"), printed) == "a"  # order matters
    assert in_order(("b  │ 2",), printed) == "b  │ 2"
    assert masked("  256     1.61   +0.75×") == masked(" 1024    32.19   -1.02×") == "# # #×"
    assert masked("d 256 cpu") != masked("d 256 ln")


def test_every_relative_link_points_at_a_file():
    """Every relative link names a file of the repository, or the report the README's first
    command writes (`report/index.html`), at a claim's section that the report gives every
    claim."""
    broken = []
    report = LINK.split("#", 1)[0]
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text("utf-8")):
            if page.name == "README.md" and target == report:
                continue
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken
    template = (ROOT / "src/blocklab/report/templates/macros.html.j2").read_text("utf-8")
    assert LINK == "report/index.html#claim-{id}" and 'id="claim-{{ row.id }}"' in template
