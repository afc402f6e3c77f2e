"""What a value must be to enter blocklab, and the one line that refuses it.

    is_int(3)                   # True: an int, never a bool, in [1, MAX_SIZE]
    is_int(-1, 0)               # False
    real(float("nan"))          # False: a finite int or float, never a bool
    raise refusal("seed offset -1", "an integer in [0, 1000000000]")
    # InputError: seed offset -1 is not allowed; expected an integer in [0, 1000000000]

A value is checked once, at the door it comes in by (an option, a config or stored key, a
constructor such as `ModelConfig` or `RunRequest`); what a door builds travels on typed, and
the layers behind it do not check it again.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from blocklab.errors import InputError

# Sizes above 2**53 are not exactly representable as floats, so shares, FLOPs and bytes computed
# from them would be wrong; no real model comes near (Llama 3.1 405B's vocab is 2**17).
MAX_SIZE = 2**53


def shown_value(value: Any) -> str:
    """repr(value) for an error message, its middle elided when long (a 400-digit number)."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:28]}...{text[-12:]} ({len(text)} chars)"


def is_int(value: Any, low: int = 1, high: int = MAX_SIZE) -> bool:
    """Whether `value` is an int in [low, high]; a bool (an int to Python) is not."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def real(value: Any) -> bool:
    """A finite int or float (not a bool, not a string that looks like a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float range
        return False


def refusal(subject: str, expected: str, error: type[InputError] = InputError) -> InputError:
    """The one-line error refusing `subject` (`--seed-offset -1`) with what is `expected`."""
    return error(f"{subject} is not allowed; expected {expected}")


def read_results(results: str) -> Path:
    """--results when only read (report --no-run or --plan, ladder, the README's table): a
    folder, or missing (no results yet)."""
    if not results.strip():
        raise InputError(f"--results {results!r} is empty; expected a folder of suite results")
    path = Path(results)
    if path.exists() and not path.is_dir():
        raise InputError(f"--results {results!r} is a file; expected a folder of suite results")
    return path
