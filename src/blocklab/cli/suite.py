"""`blocklab suite NAME`: run a grid of experiments (resumable) and print its summary."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import typer

from blocklab.cli import (
    Stopped,
    app,
    check_device_option,
    chosen_executor,
    chosen_size,
    console,
    run_request,
    warn_if_bf16_emulated,
)
from blocklab.cli import options as opt
from blocklab.errors import InputError
from blocklab.experiments.suites import SUITE_MODULES

if TYPE_CHECKING:
    from blocklab.experiments.summaries import Summary


@app.command()
def suite(
    name: str = typer.Argument(..., help=f"The suite: {', '.join(SUITE_MODULES)}."),
    size: str = typer.Option(None, "--size", help="tiny, quick (the default) or full; ffn, "
                             "norm-cost, placement and position also rung1, rung2, rung3 (the "
                             "quick comparison at 2×, 4×, 8× its training compute: "
                             "`blocklab ladder`)."),
    quick: bool = opt.QUICK,
    full: bool = opt.FULL,
    tiny: bool = opt.TINY,
    seeds: int = typer.Option(None, "--seeds", help="Seeds per arm (default depends on size)."),
    seed_offset: int = opt.SEED_OFFSET,
    precision: str = typer.Option("fp32", "--precision",
                                  help="fp32, or bf16 (bfloat16 compute, float32 weights and "
                                       "optimizer state) for the suites that train models: "
                                       "ffn, placement, position, width; kept in its own "
                                       "results folder (<size>+bf16). auto: whichever of the "
                                       "two trains the suite's shape faster on this CPU "
                                       "(timed once, kept; says which and why)."),
    out: str = opt.RESULTS,
    old_out: str = typer.Option(None, "--out", hidden=True,
                                 help="Deprecated spelling of --results."),
    jobs: int = opt.JOBS,
    as_json: bool = opt.JSON,
    no_progress: bool = opt.NO_PROGRESS,
    no_wait: bool = opt.NO_WAIT,
    executor: str = opt.EXECUTOR,
    address: str = opt.ADDRESS,
    cpus_per_run: float = opt.CPUS_PER_RUN,
    gpus_per_run: float = opt.GPUS_PER_RUN,
    budget: float = typer.Option(None, "--budget", metavar="MINUTES",
                                 help="Then run the plan's further looks for the claim parts "
                                      "this suite leaves undecided: its whole looks from the "
                                      "first while their price here fits in this many minutes "
                                      "(as `report --budget`)."),
    device: str = opt.DEVICE,
) -> None:
    """Run a suite of seeded experiments; runs stored under --results are reused when their
    provenance matches this code and machine, and run again otherwise.

    If any run fails (with --executor ray the others carry on), the suite is not summarised:
    the failed runs are listed, exit code 1, and the same command again runs only those.

    With --budget, the claim parts graded on this suite that are still undecided get the
    next blocks of seeds of their sequential designs, look by look, as many whole looks of the
    plan as the cap admits (`blocklab.claims.sequential`; the planned seeds and float32 only).

    Example: [bold]blocklab suite ffn --size quick --seeds 2 --results runs --jobs 2[/bold]
    """
    size = chosen_size(size, tiny, quick, full, rungs=True)
    from blocklab.claims.sequential import recorded_rules
    from blocklab.cli.paths import results_folder
    from blocklab.cli.report import budget_seconds, run_with_budget
    from blocklab.errors import Interrupted
    from blocklab.experiments.options import RunOptions
    from blocklab.experiments.suites import get_suite, run_suite
    from blocklab.experiments.suites.base import SuiteIncomplete

    chosen = get_suite(name)
    option = "--results"
    if old_out is not None:
        # `report --out` names the HTML folder; one word, one meaning: --results everywhere.
        typer.echo("warning: `suite --out` is deprecated and will be removed; use --results "
                   "(the results folder in every command)", err=True)
        out, option = old_out, "--out"
    # One request for the sequential design and the recorded rules; its precision and budget
    # are set below, once the suite's precision is decided.
    request = run_request(out, size, seed_offset, device=device)
    check_device_option(device, jobs if executor == "process" else None)
    if budget is not None and (seeds is not None or precision not in ("fp32", "auto")):
        # Bad input is one line, before any warning about this machine.
        raise InputError("--budget adds seeds to the planned seeds of float32 runs (what the "
                         "ledger grades); leave out --seeds and --precision with it")
    if precision == "auto":
        precision = "fp32"  # for a size the suite lacks, refused below with the reason
        if size in chosen.default_seeds:
            precision, why = auto_precision(chosen, size, device)
            if budget is not None and precision != "fp32":
                raise InputError("--budget adds seeds to the planned seeds of float32 runs (what "
                                 "the ledger grades), and --precision auto "
                                 + ("is bf16 on a GPU" if device != "cpu" else "chose bf16 here")
                                 + "; use --precision fp32 with --budget")
            typer.echo(why, err=True)
    if device != "cpu" and "bf16" not in chosen.precisions:
        typer.echo(f"--device {device}: suite {chosen.name} measures this CPU's float32 "
                   "kernels; it runs on the CPU", err=True)
        device = "cpu"
    # Every option a run reads (a precision this suite does not train in is refused here).
    options = RunOptions.for_suite(chosen, size, seeds, seed_offset=seed_offset,
                                   precision=precision, device=device)
    # Before any run: every folder the suite writes into.
    out = results_folder(out, option, [(chosen.name, options)])
    run_on = chosen_executor(executor, 1 if device != "cpu" and executor == "process" else jobs,
                             address, cpus_per_run, gpus_per_run)
    warn_if_bf16_emulated(options.precision, device)  # one line on stderr; the suite still runs
    request = replace(request, precision=options.precision, device=device,
                      budget_s=0.0 if budget is None else budget_seconds(budget, size))
    rules = recorded_rules(request).get(chosen.name)
    try:
        if budget is not None:
            errors, _ = run_with_budget(request, run_on, jobs, not (no_progress or as_json),
                                        not no_wait, names=[chosen.name])
            if errors:
                typer.echo(f"error: suite {chosen.name} ({size}): {errors[chosen.name]}",
                           err=True)
                raise typer.Exit(1)
        summary = run_suite(chosen, options, out, progress=not (no_progress or as_json),
                            executor=run_on, wait=not no_wait, rules=rules)
    except Interrupted as stopped:
        raise Stopped(stopped) from None
    except SuiteIncomplete as incomplete:
        typer.echo(f"error: suite {incomplete.suite} ({incomplete.size}): "
                   f"{len(incomplete.missing)} of {incomplete.total} runs have no result; "
                   "run the same command again to complete only these:", err=True)
        for label, error in incomplete.missing:
            typer.echo(f"  {label}: {error}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        from blocklab.experiments.results import result_json

        typer.echo(result_json(summary.to_dict()), nl=False)  # strict JSON: NaN as null
        return
    print_summary(summary)


def print_summary(summary: Summary) -> None:
    """Rich tables of a suite summary, then the size's note (tiny)."""
    from rich.table import Table

    from blocklab.experiments.summaries import size_note

    out = console()
    for spec in summary.tables:
        table = Table(title=spec.title, caption=spec.caption or None)
        for column in spec.columns:
            table.add_column(column)
        for row in spec.rows:
            table.add_row(*[_cell(v) for v in row])
        out.print(table)
    for note in summary.notes:
        out.print(f"[dim]{note}[/dim]")
    out.print(f"{summary.suite} ({summary.size}, {summary.seeds} seed(s)): "
              f"{summary.runs} runs, {summary.wall_time_s:.0f} s of training time")
    note = size_note(summary.size)
    if note:
        out.print(f"[bold yellow]{note}[/bold yellow]", soft_wrap=True)


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def auto_precision(suite, size: str, device: str = "cpu",
                   rung: str | None = None) -> tuple[str, str]:
    """`--precision auto`: the faster one here at the suite's main training shape at `size`
    (fp32 for a float32-only suite, bf16 on a GPU), and the line that says why (led by the
    `rung` on the ladder)."""
    lead = "--precision auto" if rung is None else rung
    if suite.shape is None or "bf16" not in suite.precisions:
        return "fp32", f"{lead}: fp32 (suite {suite.name} measures float32 only)"
    if device != "cpu":
        return "bf16", f"{lead}: bf16 on {device} (its bf16 units; not timed here)"
    from blocklab.experiments.step_precision import suite_precision

    choice = suite_precision(suite.shape(size))
    return choice.precision, choice.text() if rung is None else f"{rung}: {choice.text()}"
