"""The experiment suites that settle the pages' claims, by name.

    ffn        plain vs gated FFNs at equal parameter count (C16, C17)
    placement  pre vs post vs sandwich norm: gradients at init across depth, and training (C12,
               C13, C19)
    norm-cost  RMSNorm vs LayerNorm time, memory and quality (C18)
    position   length extrapolation of every position scheme and RoPE scaling (C20, C21, C22)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path

from blocklab.errors import InputError
from blocklab.experiments.suites.base import (
    SIZES,
    Executor,
    RunSpec,
    Suite,
    Summary,
    Table,
    format_ci,
    load_summary,
    mean_ci,
    paired_difference,
    run_suite,
)

# suite name -> module holding `SUITE`
SUITE_MODULES = {"ffn": "ffn", "placement": "placement", "norm-cost": "norm_cost",
                 "position": "position"}


def get_suite(name: str) -> Suite:
    """The suite called `name`; a one-line ValueError lists the names otherwise."""
    if name not in SUITE_MODULES:
        raise InputError(f"unknown suite {name!r}; allowed: {list(SUITE_MODULES)}")
    module = importlib.import_module(f"blocklab.experiments.suites.{SUITE_MODULES[name]}")
    return module.SUITE


def run_suites(results: Path, size: str, names: Sequence[str] = tuple(SUITE_MODULES), *,
               executor: Executor | None = None, progress: bool = True,
               echo: Callable[[str], None] = print) -> dict[str, str]:
    """Run every suite of `names` at `size` into `results` through `run_suite` (stored runs
    are reused, so this resumes), each at its default seeds.

    Returns {suite: one-line error} for the suites that failed; the others still run, so a
    report can be written that says which are missing and why.
    """
    from blocklab.experiments.results import ResultStore
    from blocklab.experiments.suites.base import SuiteIncomplete, suite_dir

    errors: dict[str, str] = {}
    for name in names:
        suite = get_suite(name)
        seeds = suite.default_seeds[size]
        specs = suite.plan(size, seeds)
        store = ResultStore(suite_dir(results, suite, size))
        todo = sum(not store.has(s.run_id) for s in specs)
        echo(f"suite {name} ({size}): {len(specs) - todo} of {len(specs)} runs stored, "
             f"{todo} to run -> {store.root}")
        try:
            run_suite(suite, size, seeds, results, progress=progress, executor=executor)
        except SuiteIncomplete as err:
            errors[name] = f"{len(err.missing)} of {err.total} runs failed, first: " \
                           f"{err.missing[0][0]}: {err.missing[0][1]}"
            echo(f"suite {name} ({size}) failed: {errors[name]}")
    return errors


__all__ = ["SIZES", "SUITE_MODULES", "RunSpec", "Suite", "Summary", "Table", "format_ci",
           "get_suite", "load_summary", "mean_ci", "paired_difference", "run_suite",
           "run_suites"]
