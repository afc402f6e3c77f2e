"""The experiment suites that settle the pages' claims, by name, in the report's order.

    ffn        plain vs gated FFNs at equal parameter count (C16, C17)
    norm-cost  RMSNorm vs LayerNorm time, memory and quality (C18)
    placement  pre vs post vs sandwich norm: gradients at init across depth, and training (C12,
               C13, C19); deep pre vs post stacks (C36)
    position   length extrapolation of every position scheme and RoPE scaling (C20, C21, C22,
               C30), the order probe (C29) and each scheme's cost (C31)
    quantize   int8 quantization: prefill/decode speed-up per scheme, SwiGLU merging (C32, C33)
    width      the FFN's width as a control point: sliced vs nested-width training (C37)

Each package `suites/<module>/` has a `SUITE`; `run_suites` runs several under one `RunRequest`.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from blocklab.errors import InputError
from blocklab.experiments import summaries
from blocklab.experiments.options import RunOptions, RunRequest
from blocklab.experiments.suites.base import (
    Executor,
    Suite,
    SuiteIncomplete,
    execute_round,
    plan_suite,
    replan_after_tuning,
    run_suite,
    say_damaged,
    summarise_suite,
)
from blocklab.experiments.summaries import Summary

# suite name -> module holding `SUITE`, in the order the report shows them
SUITE_MODULES = {"ffn": "ffn", "norm-cost": "norm_cost", "placement": "placement",
                 "position": "position", "quantize": "quantize", "width": "width"}


def get_suite(name: str) -> Suite:
    if name not in SUITE_MODULES:
        raise InputError(f"unknown suite {name!r}; allowed: {list(SUITE_MODULES)}")
    module = importlib.import_module(f"blocklab.experiments.suites.{SUITE_MODULES[name]}")
    return module.SUITE


def registered_suites() -> list[Suite]:
    return [get_suite(name) for name in SUITE_MODULES]


def load_summary(out_dir: str | Path, name: str, size: str, *, seed_offset: int = 0,
                 precision: str = "fp32", longer: bool = False) -> Summary | None:
    """The stored summary of the registered suite `name`, its data as its `data_type`."""
    return summaries.load_summary(out_dir, name, size, get_suite(name).data_type,
                                  seed_offset=seed_offset, precision=precision, longer=longer)


def run_suites(request: RunRequest, names: Sequence[str] = tuple(SUITE_MODULES), *,
               executor: Executor | None = None, progress: bool = True,
               echo: Callable[[str], None] = print, wait: bool = True,
               rules: Mapping[str, dict[str, str]] | None = None) -> dict[str, str]:
    """Run every suite of `names` at the request's options (stored runs are reused), all missing
    runs in one executor call per round, then summarise each one; {suite: one-line error} for
    those that could not be. Every folder is locked for the whole call (`wait=False`: refused
    with `errors.Busy`). `rules`: {suite: {"<claim> <part>": rule hash}} (`plan_suite`)."""
    from blocklab.experiments.locks import suite_locks

    # Bad input (an unknown suite) is refused before the locks create any folder.
    options = {name: request.options(get_suite(name)) for name in names}
    with suite_locks(request.results, [get_suite(name).name for name in names], wait=wait,
                     echo=echo):
        return _run_suites(request, options, executor, progress, echo, rules or {})


def _run_suites(request: RunRequest, options: Mapping[str, RunOptions],
                executor: Executor | None, progress: bool, echo: Callable[[str], None],
                rules: Mapping[str, dict[str, str]]) -> dict[str, str]:
    results, size = request.results, request.size
    start = time.perf_counter()
    errors: dict[str, str] = {}
    failed: dict[str, str] = {}
    planned = [plan_suite(get_suite(name), chosen, results, rules.get(get_suite(name).name))
               for name, chosen in options.items()]
    # a tuned suite's tuning rounds first, then its evaluation, planned from their results
    while planned:
        for plan in planned:
            what = "tuning runs" if plan.stage == "tune" else "runs"
            early = (f" (and {len(plan.early)} run(s) that read no tuning, beside them)"
                     if plan.early else "")
            echo(f"suite {plan.suite.name} ({size}): {len(plan.specs) - len(plan.missing)} of "
                 f"{len(plan.specs)} {what} stored, {len(plan.missing)} to run{early} -> "
                 f"{plan.store.root}")
            say_damaged(plan)
        failed.update(execute_round(planned, executor, progress, f"{results} ({size})"))
        elapsed = time.perf_counter() - start
        tuned = []
        for plan in planned:
            try:
                if plan.stage == "evaluate":
                    summarise_suite(plan, failed, elapsed)
                else:
                    tuned.append(replan_after_tuning(plan, failed, results))
            except SuiteIncomplete as err:
                errors[plan.suite.name] = (f"{len(err.missing)} of {err.total} runs failed, "
                                           f"first: {err.missing[0][0]}: {err.missing[0][1]}")
                echo(f"suite {plan.suite.name} ({size}) failed: {errors[plan.suite.name]}")
        planned = tuned
    return errors


__all__ = ["SUITE_MODULES", "get_suite", "load_summary", "registered_suites", "run_suite",
           "run_suites"]
