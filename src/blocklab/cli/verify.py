"""`blocklab verify`: every reference check of the pages' maths, as a table or JSON."""

from __future__ import annotations

import time

import typer

from blocklab.cli import app, console, json_text
from blocklab.cli import options as opt


@app.command()
def verify(
    as_json: bool = opt.JSON,
    group: list[str] = typer.Option(
        None, "--group", "-g",
        help="Only these groups: worked, jacobians, shift-scale, order, rope (repeatable)."),
) -> None:
    """Check the pages' formulas: worked numbers, Jacobians vs finite differences, the
    shift/scale table and A·J_N vs J_N·A. Exit code 1 if any check fails.

    Example: [bold]blocklab verify --group jacobians[/bold]
    """
    from blocklab.verify import run_checks

    start = time.perf_counter()
    checks = run_checks(group or None)
    seconds = time.perf_counter() - start
    failed = [c for c in checks if not c.passed]
    if as_json:
        typer.echo(json_text({"checks": checks, "passed": not failed,
                             "n_checks": len(checks), "n_failed": len(failed),
                             "seconds": round(seconds, 4)}, indent=2))
    else:
        _print_table(checks, seconds)
    if failed:
        raise typer.Exit(1)


def _print_table(checks, seconds: float) -> None:
    from rich.table import Table

    table = Table(title="blocklab verify: reference checks in float64", expand=True)
    table.add_column("check", ratio=3)
    table.add_column("claim", no_wrap=True)
    table.add_column("expected", ratio=2, overflow="fold")
    table.add_column("got", ratio=2, overflow="fold")
    table.add_column("max error", justify="right", no_wrap=True)
    table.add_column("tol", justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    previous = None
    for c in checks:
        if c.group != previous:
            if previous is not None:
                table.add_section()
            table.add_row(f"[bold cyan]{c.group}[/bold cyan]")
            previous = c.group
        got = c.got.split(":")[0] if c.got.startswith("ValueError") else c.got
        table.add_row(
            c.name, c.claim, c.expected, got,
            "—" if c.max_error is None else f"{c.max_error:.1e}",
            "—" if c.tolerance is None else f"{c.tolerance:.0e}",
            "[green]pass[/green]" if c.passed else "[bold red]FAIL[/bold red]",
        )
    out = console()
    out.print(table)
    failed = sum(not c.passed for c in checks)
    status = "[green]all passed[/green]" if not failed else f"[bold red]{failed} failed[/bold red]"
    out.print(f"{len(checks)} checks, {status} in {seconds * 1000:.0f} ms")
