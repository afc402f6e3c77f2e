"""`blocklab suite NAME`: run a grid of experiments (resumable) and print its summary."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from blocklab.cli import app


@app.command()
def suite(
    name: str = typer.Argument(..., help="ffn, placement, norm-cost or position."),
    quick: bool = typer.Option(False, "--quick", help="The small grid (the default)."),
    full: bool = typer.Option(False, "--full", help="The complete grid."),
    tiny: bool = typer.Option(False, "--tiny", help="A smoke-test grid that runs in seconds."),
    seeds: int = typer.Option(None, "--seeds", help="Seeds per arm (default depends on size)."),
    out: Path = typer.Option(Path("runs"), "--out", help="Results folder (resumable)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Hide the progress bar."),
) -> None:
    """Run a suite of seeded experiments; runs already stored under --out are skipped.

    Example: [bold]blocklab suite ffn --quick --seeds 2 --out runs[/bold]
    """
    if sum((quick, full, tiny)) > 1:
        raise ValueError("choose at most one of --tiny, --quick, --full")
    size = "full" if full else "tiny" if tiny else "quick"
    from blocklab.experiments.suites import get_suite, run_suite

    chosen = get_suite(name)
    summary = run_suite(chosen, size, seeds, out, progress=not (no_progress or as_json))
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=1))
        return
    print_summary(summary.to_dict())


def print_summary(summary: dict) -> None:
    """Rich tables of a suite summary (as stored in summary.json)."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for spec in summary["tables"]:
        table = Table(title=spec["title"], caption=spec.get("caption") or None)
        for column in spec["columns"]:
            table.add_column(column)
        for row in spec["rows"]:
            table.add_row(*[_cell(v) for v in row])
        console.print(table)
    for note in summary.get("notes", []):
        console.print(f"[dim]{note}[/dim]")
    console.print(f"{summary['suite']} ({summary['size']}, {summary['seeds']} seed(s)): "
                  f"{summary['runs']} runs, {summary['wall_time_s']:.0f} s of training time")


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
