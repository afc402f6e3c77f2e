"""`blocklab report`: run the missing suite results, then write one self-contained HTML page."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from blocklab.cli import (
    ADDRESS_OPTION,
    CPUS_PER_RUN_OPTION,
    EXECUTOR_OPTION,
    GPUS_PER_RUN_OPTION,
    NO_WAIT_OPTION,
    app,
    check_seed_offset_option,
    chosen_executor,
    chosen_size,
    folder_option,
    stop_interrupted,
)


@app.command()
def report(
    size: str = typer.Option(None, "--size", help="tiny, quick (the default) or full."),
    tiny: bool = typer.Option(False, "--tiny", help="Shortcut for --size tiny (runs in seconds)."),
    quick: bool = typer.Option(False, "--quick", help="Shortcut for --size quick."),
    full: bool = typer.Option(False, "--full", help="Shortcut for --size full."),
    jobs: int = typer.Option(None, "--jobs", "-j",
                             help="Suite runs at once in worker processes, each single-threaded "
                                  "(default: the usable cores); timed runs run alone."),
    out: Path = typer.Option(Path("report"), "--out",
                             help="Folder for index.html and report.json."),
    results: Path = typer.Option(Path("runs"), "--results",
                                 help="Folder of suite results, shared with `blocklab suite` and "
                                      "`blocklab claims` (resumable)."),
    lang: str = typer.Option(None, "--lang", help="en or zh (default: from the locale)."),
    seed_offset: int = typer.Option(0, "--seed-offset",
                                    help="Suites run seeds K, K+1, … instead of 0, 1, … (a "
                                         "disjoint set, kept in its own results folder)."),
    no_run: bool = typer.Option(False, "--no-run",
                                help="Render what is stored; run no suite."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Hide the progress bars."),
    no_wait: bool = NO_WAIT_OPTION,
    executor: str = EXECUTOR_OPTION,
    address: str = ADDRESS_OPTION,
    cpus_per_run: float = CPUS_PER_RUN_OPTION,
    gpus_per_run: float = GPUS_PER_RUN_OPTION,
    plan: bool = typer.Option(False, "--plan",
                              help="Run nothing: count the runs still missing and estimate "
                                   "their time on this machine."),
) -> None:
    """Write OUT/index.html (plots embedded, opens from disk) and OUT/report.json: the claims
    ledger, the FFN, normalization, placement, position and deployment sections.

    Suite results missing under --results are run first at the chosen size (runs already
    stored are skipped, so an interrupted report resumes); --no-run renders only what is there
    and names the command for each missing suite. Exit code 1 if a suite, a claim check or a
    figure failed (the report is still written, saying so where it happened).

    --plan runs nothing and prints, per suite, the runs still missing and their estimated
    time on this machine (`blocklab.experiments.estimate`).

    Example: [bold]blocklab report --tiny --out report --lang zh[/bold]
    """
    from blocklab.claims.lang import resolve_lang
    from blocklab.report.build import build_report

    size = chosen_size(size, tiny, quick, full)
    language = resolve_lang(lang)
    check_seed_offset_option(seed_offset)
    run_on = chosen_executor(executor, jobs, address, cpus_per_run, gpus_per_run)
    folder_option(results, "--results")
    folder_option(out, "--out")
    if plan:
        print_plan(results, size, seed_offset, jobs)
        return
    start = time.perf_counter()
    errors = {}
    if not no_run:
        from blocklab.errors import Interrupted
        from blocklab.experiments.suites import run_suites
        from blocklab.report.build import SUITES

        try:
            errors = run_suites(results, size, SUITES, executor=run_on,
                                progress=not no_progress, echo=typer.echo,
                                seed_offset=seed_offset, wait=not no_wait)
        except Interrupted as stopped:
            raise stop_interrupted(stopped) from None
    index, doc = build_report(out, results, size, language, suite_errors=errors,
                              seed_offset=seed_offset)
    counts: dict[str, int] = {}
    for row in doc["ledger"]:
        verdict = "check failed" if row["error"] else row["verdict"]
        counts[verdict] = counts.get(verdict, 0) + 1
    missing = [name for name, s in doc["suites"].items() if not s["summary"]]
    typer.echo(f"wrote {index} and {index.parent / 'report.json'} in "
               f"{time.perf_counter() - start:.1f} s: {len(doc['ledger'])} claims ("
               + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + ")"
               + (f"; missing suite results: {', '.join(missing)}" if missing else ""))
    failed = [n for n, s in doc["suites"].items() if s["error"]]
    failed += [r["id"] for r in doc["ledger"] if r["error"]]
    failed += [f"figure {key}" for key in doc["figure_errors"]]
    if failed:
        typer.echo(f"failed to run: {', '.join(failed)}", err=True)
        raise typer.Exit(1)


def print_plan(results: Path, size: str, seed_offset: int, jobs: int | None) -> None:
    """The runs `report` would still do at `size`, with their estimated time here: a few
    seconds of calibration first (`blocklab.experiments.estimate`)."""
    from rich.table import Table

    from blocklab.cli import console
    from blocklab.experiments.estimate import REFERENCE_STEP_S, estimate_suites, hours
    from blocklab.experiments.executors import usable_cores
    from blocklab.report.build import SUITES

    out = console()
    with out.status("calibrating this machine (one thread, a few seconds)"):
        plan = estimate_suites(results, size, SUITES, seed_offset=seed_offset)
    workers = usable_cores() if jobs is None else jobs
    table = Table(title=f"blocklab report --size {size}: runs still to do")
    for column in ("suite", "runs", "stored", "to run", "core time", "timed (alone)",
                   "unpriced"):
        table.add_column(column)
    for s in plan.suites:
        table.add_row(s.suite, str(s.runs), str(s.stored), str(s.runs - s.stored),
                      hours(s.untimed_s + s.timed_s), hours(s.timed_s), str(s.unknown))
    out.print(table)
    cal = plan.calibration
    if cal is None or all(s.runs == s.stored for s in plan.suites):
        out.print("Nothing to run: every planned run is stored.")
        return
    twins = sum(s.from_stored for s in plan.suites)
    unpriced = sum(s.unknown for s in plan.suites)
    fixed = plan.fixed_s
    out.print(f"Calibration: {cal.seconds:.1f} s in one thread, {cal.measured} model shapes "
              f"timed ({cal.fitted} filled in from them); a reference step took "
              f"{cal.speed * 1000 * REFERENCE_STEP_S:.1f} ms ({cal.speed:.2f}× the reference "
              f"machine's), {cal.contention:.2f}× that with a second worker beside it"
              + (f"; {twins} run(s) priced at a stored twin's wall time" if twins else "")
              + ".")
    out.print(f"Estimated: {hours(plan.core_s)} of one core; {hours(plan.wall_s(workers))} wall "
              f"on {workers} worker(s), with process start {hours(fixed.get('startup', 0))}, "
              f"each worker's first imports {hours(fixed.get('worker_start', 0))} and the "
              f"report's build {hours(fixed.get('build', 0))}"
              + (f"; {unpriced} run(s) not priced" if unpriced else "") + ".")
