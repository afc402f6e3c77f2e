"""One precision type, checked in one place (`blocklab.precision`); the model's and the
trainer's refusals: tests/nn/test_backends.py, tests/cli/test_train_cli.py."""

from __future__ import annotations

import pytest

from blocklab.errors import ConfigError, InputError
from blocklab.experiments.options import RunOptions
from blocklab.precision import PRECISIONS, check_precision


@pytest.mark.parametrize("value", ["fp16", "FP32", "", None, 32, b"fp32"])
def test_only_a_precision_passes_and_anything_else_is_one_line_naming_it(value):
    assert [check_precision(p) for p in PRECISIONS] == list(PRECISIONS)
    with pytest.raises(InputError) as err:
        RunOptions(precision=value)
    assert str(err.value) == (f"precision={value!r} is not allowed; expected one of "
                              "['fp32', 'bf16']")
    with pytest.raises(ConfigError, match=r"^TrainConfig\.precision=.* is not allowed"):
        check_precision(value, "TrainConfig.precision", ConfigError)
