"""The experiment suites that settle the pages' claims, by name.

    ffn        plain vs gated FFNs at equal parameter count (C16, C17)
    placement  pre vs post vs sandwich norm: gradients at init across depth, and training (C12,
               C13, C19)
    norm-cost  RMSNorm vs LayerNorm time, memory and quality (C18)
    position   length extrapolation of every position scheme and RoPE scaling (C20, C21, C22)
"""

from __future__ import annotations

import importlib

from blocklab.errors import InputError
from blocklab.experiments.suites.base import (
    SIZES,
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


__all__ = ["SIZES", "SUITE_MODULES", "RunSpec", "Suite", "Summary", "Table", "format_ci",
           "get_suite", "load_summary", "mean_ci", "paired_difference", "run_suite"]
