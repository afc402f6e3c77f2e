"""The precisions a model computes in, as one type checked in one place: a plain string that
names folders, payloads and JSON; its torch dtype is `blocklab.nn.model.compute_dtype`'s alone.
"""

from __future__ import annotations

from typing import Literal

from blocklab.errors import InputError

Precision = Literal["fp32", "bf16"]
# fp32: parameters and compute in float32; bf16: float32 parameters, matrix products in bfloat16
PRECISIONS: tuple[Precision, ...] = ("fp32", "bf16")


def check_precision(value: object, name: str = "precision",
                    error: type[InputError] = InputError) -> Precision:
    """`value` if it is one of PRECISIONS, else `error` naming `name` and the value."""
    if not isinstance(value, str) or value not in PRECISIONS:
        raise error(f"{name}={value!r} is not allowed; expected one of {list(PRECISIONS)}")
    return value  # type: ignore[return-value]
