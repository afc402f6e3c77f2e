"""`blocklab ladder`: a headline claim on a ladder of model sizes, priced, run within a budget,
each rung decided by the engine, the trend fitted and the papers beside it.

The rungs are suite sizes (`quick`, `rung1`, `rung2`, `rung3`: 1×, 2×, 4×, 8× the quick
size's training compute), run, stored and resumed as `blocklab suite` would, each with its
parts' registered plan of work. One precision serves every rung, so no rung-to-rung change is
the precision's (`--precision auto`: the faster one here at the top rung's shape).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer

from blocklab.checks import read_results, refusal
from blocklab.cli import app, check_device_option, console, jobs_executor, run_request
from blocklab.cli import options as opt
from blocklab.errors import InputError

PRECISIONS = ("auto", "fp32", "bf16")
# The quick rung again in float32, for the ladder's precision check
# (`blocklab.claims.ladder.precision_parts`), where the quick rung trains in bfloat16.
CHECK = "quick (fp32)"


@app.command()
def ladder(
    claim: str = typer.Argument("C16", help="The claim whose ladder to run: C16, C18, C19, C21 "
                                "or C30 (C21 and C30 share the position suite's rungs)."),
    results: str = opt.RESULTS,
    plan: bool = typer.Option(False, "--plan", help="Price every rung on this machine (a few "
                              "seconds of calibration each) and run nothing."),
    budget: float = typer.Option(None, "--budget", metavar="MINUTES",
                                 help="Run the rungs whose priced plans fit in this many "
                                      "minutes, cheapest first, each whole or not at all, "
                                      "chosen before anything runs (default: every rung)."),
    precision: str = typer.Option("auto", "--precision",
                                  help="auto (each rung in whichever of fp32 and bf16 trains "
                                       "its shape faster on this CPU), fp32 or bf16."),
    seed_offset: int = opt.SEED_OFFSET,
    jobs: int = opt.JOBS,
    as_json: bool = opt.JSON,
    no_progress: bool = opt.NO_PROGRESS,
    device: str = opt.DEVICE,
) -> None:
    """Measure a claim on a ladder of sizes: the same registered comparison at 1×, 2×, 4× and
    8× the quick size's training compute (C16, C19: every arm tuned at every rung; C18,
    C21, C30: the quick size's registered lr), each rung running its parts' registered plan
    of work in one precision, where each part is first decided, the effect's trend with the
    rung as its unit, and the published results drawn at their own compute.
    Writes DIR/ladder/<claim>.json and, once a rung has results, <claim>.png.

    Example: [bold]blocklab ladder C16 --plan[/bold], then [bold]blocklab ladder C16 --budget
    60[/bold]
    """
    from blocklab.claims.registry import LADDER_CLAIMS
    from blocklab.experiments.options import RunOptions

    if claim not in LADDER_CLAIMS:
        raise InputError(f"claim {claim!r} has no ladder; allowed: {list(LADDER_CLAIMS)}")
    if precision not in PRECISIONS:
        raise refusal(f"--precision {precision!r}", f"one of {list(PRECISIONS)}")
    if budget is not None and not (budget >= 0 and budget < float("inf")):
        raise refusal(f"--budget {budget!r}", "minutes, a finite number >= 0")
    # budget_s None: each rung runs its whole registered plan, every look.
    request = run_request(results, "quick", seed_offset, device=device, budget_s=None)
    if not plan:  # where the rungs will train: present here
        check_device_option(device, jobs)
    run_on = jobs_executor(1 if device != "cpu" else jobs)  # --jobs checked before any work
    from blocklab.claims.catalogue import SUITE_OF
    from blocklab.claims.ladder import PRECISION_CHECKED, SIZES
    from blocklab.cli.paths import results_folder
    from blocklab.cli.suite import auto_precision
    from blocklab.experiments.env import usable_cores
    from blocklab.experiments.suites import get_suite

    suite = get_suite(SUITE_OF[claim])
    if device != "cpu" and "bf16" not in suite.precisions:
        typer.echo(f"--device {device}: suite {suite.name} measures this CPU's float32 "
                   "kernels; its rungs run on the CPU", err=True)
        device, run_on = "cpu", jobs_executor(None)
    # Before any work (the timing of --precision auto included): every precision a rung may
    # take, and every folder a run writes into (--plan writes nothing).
    precisions = suite.precisions if precision == "auto" else dict.fromkeys((precision, "fp32"))
    options = [RunOptions.for_suite(suite, size, seed_offset=seed_offset, precision=p)
               for size in SIZES for p in precisions]
    if plan:
        out = read_results(results)
    else:
        out = results_folder(results, "--results", [(suite.name, o) for o in options],
                             [f"ladder/{claim}.json", f"ladder/{claim}.png"])
    one = precision
    if precision == "auto":  # the top rung's shape decides
        one, why = auto_precision(suite, SIZES[-1], device, rung=SIZES[-1])
        typer.echo(why, err=True)
    chosen = dict.fromkeys(SIZES, one)
    workers = 1 if device != "cpu" else usable_cores() if jobs is None else jobs
    request = replace(request, results=out, device=device)
    requests = {size: replace(request, size=size, precision=chosen[size]) for size in SIZES}
    if claim in PRECISION_CHECKED and chosen["quick"] == "bf16":  # the quick rung in fp32 too
        requests[CHECK] = request
    prices = _prices(requests, suite.name, workers)
    _print_plan(suite.name, requests, prices, workers, device)
    if plan:
        return
    _run_rungs(suite.name, requests, prices, budget, run_on, jobs, not no_progress)
    _report(claim, out, chosen, seed_offset, as_json)


def _prices(requests, suite: str, workers: int) -> dict[str, tuple[float, int, int]]:
    """{size: (wall s on `workers` of the rung's whole plan at most: its missing first-look
    runs, then every further look; first-look runs planned; those stored)}."""
    from blocklab.claims.sequential import price_plan
    from blocklab.experiments.estimate import estimate_suites

    out = {}
    with console(stderr=True).status("pricing the rungs on this machine (one thread, a few "
                                     "seconds each)"):
        for size, request in requests.items():
            found = estimate_suites(request, [suite], calibration_s=6.0)
            runs = sum(s.runs for s in found.suites)
            stored = sum(s.stored for s in found.suites)
            plan = price_plan(request, [suite], workers=workers,
                              calibration=found.calibration)
            further = sum(wall for _, wall in plan.looks)
            out[size] = ((0.0 if runs == stored else found.wall_s(workers)) + further, runs,
                         stored)
    return out


def _print_plan(suite: str, requests, prices, workers: int, device: str = "cpu") -> None:
    from rich.table import Table

    from blocklab.experiments.estimate import hours
    from blocklab.experiments.ladder import multiple
    from blocklab.experiments.scale import flops_text
    from blocklab.experiments.suites import get_suite

    table = Table(title=f"blocklab ladder: {suite} on {workers} worker(s)")
    for column in ("rung", "compute", "model", "tokens", "FLOPs", "precision", "runs",
                   "stored", "estimated wall"):
        table.add_column(column)
    total = 0.0
    for label, request in requests.items():
        scale = get_suite(suite).scale(request.size, "")
        wall, runs, stored = prices[label]
        total += wall
        table.add_row(label, f"{multiple(request.size)}×", scale.model, f"{scale.tokens:,}",
                      flops_text(scale.flops), request.precision, str(runs), str(stored),
                      hours(wall) if runs > stored else "stored")
    console().print(table)
    console().print(f"Every rung still to run: about {hours(total)} wall on this machine"
                    + (f" ({CHECK}: the quick rung again in float32, for the precision check)"
                       if CHECK in requests else "") + ".")
    if device != "cpu":  # the calibration times this CPU, one thread a run
        console().print(f"The prices are this CPU's; on {device} the rungs run one after "
                        "another and faster, so --budget is a bound, not a forecast there.")


def _run_rungs(suite: str, requests, prices, budget: float | None, run_on, jobs: int | None,
               progress: bool) -> list[str]:
    """Run each rung's plan of work whole (resuming), cheapest first, while the summed prices
    fit the budget; chosen before anything runs, never by the clock. The rungs run."""
    from blocklab.cli.report import run_with_budget
    from blocklab.experiments.estimate import hours

    ran, total = [], 0.0
    for size in sorted(requests, key=lambda s: prices[s][0]):
        if budget is not None and total + prices[size][0] > budget * 60:
            typer.echo(f"{size}: its plan about {hours(prices[size][0])} at most, past the "
                       f"budget with {hours(total)} admitted before it: not run (a larger "
                       "--budget runs it)", err=True)
            continue
        total += prices[size][0]
        typer.echo(f"{size}: its registered plan of work", err=True)
        errors, _ = run_with_budget(requests[size], run_on, jobs, progress, True, [suite])
        if errors:
            typer.echo(f"error: rung {size}: {errors[suite]}", err=True)
            raise typer.Exit(1)
        ran.append(size)
    return ran


def _report(claim: str, out: Path, chosen: dict[str, str], seed_offset: int, as_json: bool) -> None:
    """Grade every rung stored, fit the trends, write DIR/ladder/<claim>.json and .png, and
    print them."""
    from blocklab.claims.ladder import ladder_dict, read_ladder
    from blocklab.jsonio import atomic_path, output_json, write_atomic
    from blocklab.report.figures import fig_ladder

    found = read_ladder(claim, out, chosen, seed_offset)
    doc = ladder_dict(found)
    folder = out / "ladder"
    write_atomic(folder / f"{claim}.json", output_json(doc, indent=1))
    png = fig_ladder(doc)  # None: no rung has results yet, so there is nothing to draw
    if png is not None:
        with atomic_path(folder / f"{claim}.png") as tmp:
            tmp.write_bytes(png)
    if as_json:
        typer.echo(output_json(doc, indent=1))
        return
    _print_ladder(doc, folder, claim, png is not None)
    if any(r["error"] for r in doc["rungs"]):
        raise typer.Exit(1)


def _print_ladder(doc: dict, folder: Path, claim: str, drawn: bool = True) -> None:
    from blocklab.claims.ladder import appears_line, precision_line, rung_line, trend_line

    out = console()
    out.print(f"{claim} on the ladder ({doc['rule']}):")
    out.print("Where each part is first decided:")
    for trend in doc["trends"]:
        out.print("  " + appears_line(trend, doc["rungs"], doc["anchors"]))
    out.print("What changes between rungs: " + "; ".join(doc["changes"]["en"]))
    out.print("Each rung, the interval that decided each part:")
    for rung in doc["rungs"]:
        out.print("  " + rung_line(rung))
    out.print("The trend across the rungs (the rung the unit of replication):")
    for trend in doc["trends"]:
        out.print("  " + trend_line(trend))
    check = precision_line(doc["precision_check"])
    if check:
        out.print("  " + check)
    json_file, png_file = folder / f"{claim}.json", folder / f"{claim}.png"
    out.print(f"Written: {json_file} and {png_file}." if drawn else
              f"Written: {json_file}; no figure ({png_file}) yet: no rung has results to draw.",
              soft_wrap=True, markup=False)

