"""The precisions a model computes in, as one type checked in one place.

    check_precision("bf16")            # "bf16"
    check_precision("fp16")            # InputError: precision 'fp16' is not allowed; ...

A `Precision` is a plain string ("fp32" or "bf16"), so it names folders, run payloads and JSON
as it always has; which torch dtype it computes in is `blocklab.nn.model.compute_dtype`'s
business alone. This module imports nothing, so the layers without PyTorch can check one.
"""

from __future__ import annotations

from typing import Literal

from blocklab.errors import InputError

Precision = Literal["fp32", "bf16"]
# fp32: parameters and compute in float32; bf16: float32 parameters, matrix products in bfloat16
PRECISIONS: tuple[Precision, ...] = ("fp32", "bf16")


def check_precision(value: object, name: str = "precision",
                    error: type[InputError] = InputError) -> Precision:
    """`value` if it is one of PRECISIONS; otherwise `error` (an InputError) naming `name`,
    the value and what is allowed."""
    if not isinstance(value, str) or value not in PRECISIONS:
        raise error(f"{name}={value!r} is not allowed; expected one of {list(PRECISIONS)}")
    return value  # type: ignore[return-value]
