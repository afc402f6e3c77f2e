"""`blocklab report`: run the missing suite results, then write one self-contained HTML page.

The options become one `RunRequest`, checked before any work and passed whole to the suites,
the plan of work, the estimate (`--plan`) and the report, so each reads and runs the same thing.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING

import typer

from blocklab.checks import read_results, refusal
from blocklab.cli import (
    Stopped,
    app,
    check_device_option,
    chosen_executor,
    chosen_size,
    run_request,
    warn_if_bf16_emulated,
)
from blocklab.cli import options as opt
from blocklab.cli.paths import NotWritable, output_folder, results_folder
from blocklab.errors import InputError

if TYPE_CHECKING:
    from blocklab.experiments.options import RunRequest


@app.command()
def report(
    size: str = opt.SIZE,
    tiny: bool = opt.TINY,
    quick: bool = opt.QUICK,
    full: bool = opt.FULL,
    jobs: int = opt.JOBS,
    out: str = typer.Option("report", "--out", metavar="DIR",
                             help="Folder for index.html and report.json."),
    results: str = opt.RESULTS,
    lang: str = typer.Option(None, "--lang", help="en or zh (default: from the locale)."),
    seed_offset: int = opt.SEED_OFFSET,
    precision: str = typer.Option("fp32", "--precision",
                                  help="fp32 or bf16: run and read the suites whose models "
                                       "train in this precision (norm-cost and quantize, "
                                       "float32 by design, at fp32); bf16 runs the planned "
                                       "seeds only (--budget adds float32 seeds)."),
    no_run: bool = typer.Option(False, "--no-run",
                                help="Render what is stored; run no suite."),
    no_progress: bool = opt.NO_PROGRESS,
    no_wait: bool = opt.NO_WAIT,
    executor: str = opt.EXECUTOR,
    address: str = opt.ADDRESS,
    cpus_per_run: float = opt.CPUS_PER_RUN,
    gpus_per_run: float = opt.GPUS_PER_RUN,
    plan: bool = typer.Option(False, "--plan",
                              help="Run nothing: count the runs still missing and estimate "
                                   "their time on this machine."),
    budget: float = typer.Option(None, "--budget", metavar="MINUTES",
                                 help="An optional cap in minutes: the plan runs its whole "
                                      "looks from the first while their price on this machine "
                                      "fits, and the report names the looks it cut (default: "
                                      "tiny 0, the first look; quick and full: the whole "
                                      "plan)."),
    device: str = opt.DEVICE,
) -> None:
    """Write OUT/index.html (plots embedded, opens from disk) and OUT/report.json: the claims
    ledger, the FFN, normalization, placement, position and deployment sections.

    Suite results missing under --results are run first at the chosen size (runs already
    stored are skipped, so an interrupted report resumes); --no-run renders only what is there
    and names the command for each missing suite. A --results folder that cannot be written
    (read-only) is read as with --no-run when it holds every run and summary (one note on
    stderr); one that lacks some, or with --budget, is refused. Exit code 1 if a suite, a
    claim check or a figure failed (the report is still written, saying so where it happened).

    --plan runs nothing and prints, per suite, the runs still missing and their estimated
    time on this machine (`blocklab.experiments.estimate`), the plan's further looks, and how
    many of them a --budget cap admits.

    The plan of work is registered before any data: the suites first run at their planned
    seeds; then, while a part of a claim is undecided and its design has a look left, the
    next block of its seeds runs for the arms it compares; last, a part that would be
    contradicted gets its arms trained twice as long (`blocklab.claims.sequential`). What runs
    depends on the seeds and the data only, never on this machine's speed or load, so the same
    seeds give the same verdicts on any machine.

    Example: [bold]blocklab report --tiny --out report --lang zh[/bold]
    """
    from blocklab.claims.lang import resolve_lang
    from blocklab.experiments.suites import get_suite
    from blocklab.report.build import SUITES, build_report

    size = chosen_size(size, tiny, quick, full)
    language = resolve_lang(lang)
    running = not (no_run or plan)
    # Its budget is set once the precision is known.
    request = run_request(results, size, seed_offset, precision,
                          device=device if running else "cpu")
    if running:  # where models will train: present here
        check_device_option(device, jobs if executor == "process" else None)
        if device != "cpu" and executor == "process":
            jobs = 1
    if precision != "fp32" and budget:
        raise InputError("--budget adds seeds to the float32 runs the ledger grades; leave it "
                         "out with --precision bf16 (the planned seeds run)")
    request = replace(request,
                      budget_s=0.0 if precision != "fp32" else budget_seconds(budget, size))
    run_on = chosen_executor(executor, jobs, address, cpus_per_run, gpus_per_run)
    # Before any work: --out (unless --plan, which writes nothing) and, where suites will
    # run, every folder they write under --results.
    out_path = None if plan else output_folder(out, "--out", ["index.html", "report.json"])
    if not running:
        read_results(results)
    else:
        try:
            results_folder(results, "--results",
                           [(name, request.options(get_suite(name))) for name in SUITES])
        except NotWritable as cannot_write:
            # Reading needs no write: a folder that holds every run (and its summary) is
            # read as with --no-run, unless a budget was asked for to run more seeds.
            if budget or not every_run_stored(request):
                raise InputError(f"{cannot_write}, and the report would run or add runs "
                                 "there; --no-run renders what it holds") from None
            typer.echo(f"note: {cannot_write}; it holds every run the report reads, so "
                       "they are read as with --no-run (no seeds added)", err=True)
            no_run = True
    if plan:
        print_plan(request, jobs)
        return
    start = time.perf_counter()
    errors, record = {}, None
    if not no_run:
        warn_if_bf16_emulated(precision, device)  # one line on stderr; the suites still run
        errors, record = run_with_budget(request, run_on, jobs, not no_progress, not no_wait)
    index, doc = build_report(request, out_path, language, suite_errors=errors,
                              sequential=record)
    counts = Counter("check failed" if r["error"] else r["verdict"] for r in doc["ledger"])
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


def every_run_stored(request: RunRequest) -> bool:
    """Whether the results folder holds every run the report's suites plan, and each suite's
    summary of exactly those runs: then the report has nothing to run or write there."""
    from blocklab.experiments.suites import get_suite, load_summary
    from blocklab.experiments.suites.base import plan_suite
    from blocklab.report.build import SUITES

    try:
        for name in SUITES:
            suite = get_suite(name)
            options = request.options(suite)
            planned = plan_suite(suite, options, request.results)
            if planned.stage != "evaluate" or planned.missing:
                return False
            summary = load_summary(request.results, name, request.size,
                                   seed_offset=request.seed_offset,
                                   precision=options.precision)
            if summary is None or set(summary.run_ids) != {s.run_id for s in planned.specs}:
                return False
    except (InputError, OSError):  # unreadable or damaged: not all stored
        return False
    return True


def budget_seconds(minutes: float | None, size: str) -> float | None:
    """--budget in seconds (the size's default for None); exit 2 for a bad value."""
    import math

    from blocklab.claims.sequential import DEFAULT_BUDGET_S

    if minutes is None:
        return DEFAULT_BUDGET_S[size]
    if not (math.isfinite(minutes) and 0 <= minutes <= 100_000):
        raise refusal(f"--budget {minutes:g}", "minutes in [0, 100000]")
    return 60.0 * minutes


def run_with_budget(request: RunRequest, run_on, jobs, progress: bool, wait: bool,
                    names=None):
    """Run the suites `names` (the report's) and the registered plan of work, priced first (a
    cap, `budget_s`, admits a prefix of whole looks): (errors, the plan's dict for
    report.json)."""
    from blocklab.claims.sequential import price_plan, recorded_rules, run_looks
    from blocklab.errors import Interrupted
    from blocklab.experiments.env import usable_cores
    from blocklab.experiments.suites import run_suites
    from blocklab.report.build import SUITES

    names = list(SUITES if names is None else names)
    workers = usable_cores() if jobs is None else jobs

    def run(rules):
        return run_suites(request, names, executor=run_on, progress=progress,
                          echo=typer.echo, wait=wait, rules=rules)

    start = time.perf_counter()
    try:
        if request.budget_s == 0:
            return run(recorded_rules(request)), {"budget_s": 0.0, "admitted_looks": 0}
        plan = price_plan(request, names, workers=workers)
        typer.echo(plan.text())
        looks = run_looks(request, names, plan=plan, run=run, workers=workers,
                          echo=typer.echo, executor=run_on, progress=progress)
    except Interrupted as stopped:
        raise Stopped(stopped) from None
    wall = time.perf_counter() - start
    typer.echo(f"plan run: {len(looks.records)} further look(s); stopped: {looks.stopped}; "
               f"{len(looks.still_open)} part(s) still open; {wall / 60:.1f} min against a "
               f"price of {plan.price_s / 60:.1f} min at most"
               + (f"; cut by the cap: {', '.join(looks.cut)}" if looks.cut else ""))
    return looks.errors, {**plan.to_dict(), **looks.to_dict(), "wall_s": wall}


def print_plan(request: RunRequest, jobs: int | None) -> None:
    """The runs `report` would still do, with their estimated time here (after a few seconds
    of calibration), the plan's further looks and what a cap admits of them."""
    from rich.table import Table

    from blocklab.cli import console
    from blocklab.experiments.env import usable_cores
    from blocklab.experiments.estimate import REFERENCE_STEP_S, estimate_suites, hours
    from blocklab.report.build import SUITES

    out = console()
    with out.status("calibrating this machine (one thread, a few seconds)"):
        plan = estimate_suites(request, SUITES)
    workers = usable_cores() if jobs is None else jobs
    budget_s = request.budget_s
    table = Table(title=f"blocklab report --size {request.size}: runs still to do")
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
    if budget_s != 0:
        from blocklab.claims.sequential import price_plan

        priced = price_plan(request, SUITES, workers=workers, calibration=cal)
        costs = ", ".join(f"{r} runs {hours(w)}" for r, w in priced.looks) or "none"
        out.print(f"Plan of work: further looks if every part stayed open: {costs}"
                  + ("" if budget_s is None else
                     f"; a cap of {hours(budget_s)} admits {priced.admitted} of them, whole "
                     "looks from the first")
                  + f"; the whole plan at most {hours(priced.price_s)}.")
    out.print(f"Estimated: {hours(plan.core_s)} of one core; {hours(plan.wall_s(workers))} wall "
              f"on {workers} worker(s), with process start {hours(fixed.get('startup', 0))}, "
              f"each worker's first imports {hours(fixed.get('worker_start', 0))} and the "
              f"report's build {hours(fixed.get('build', 0))}"
              + (f"; {unpriced} run(s) not priced" if unpriced else "") + ".")
