"""`blocklab report`: run the missing suite results, then write one self-contained HTML page."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from blocklab.cli import app, chosen_size, jobs_executor


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
) -> None:
    """Write OUT/index.html (plots embedded, opens from disk) and OUT/report.json: the claims
    ledger, the FFN, normalization, placement, position and deployment sections.

    Suite results missing under --results are run first at the chosen size (runs already
    stored are skipped, so an interrupted report resumes); --no-run renders only what is there
    and names the command for each missing suite. Exit code 1 if a suite, a claim check or a
    figure failed (the report is still written, saying so where it happened).

    Example: [bold]blocklab report --tiny --out report --lang zh[/bold]
    """
    from blocklab.claims.lang import resolve_lang
    from blocklab.report.build import build_report

    size = chosen_size(size, tiny, quick, full)
    language = resolve_lang(lang)
    executor = jobs_executor(jobs)
    start = time.perf_counter()
    errors = {}
    if not no_run:
        from blocklab.experiments.suites import run_suites
        from blocklab.report.build import SUITES

        errors = run_suites(results, size, SUITES, executor=executor,
                            progress=not no_progress, echo=typer.echo, seed_offset=seed_offset)
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
