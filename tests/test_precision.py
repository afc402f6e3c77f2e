"""One precision type, checked in one place (`blocklab.precision`)."""

from __future__ import annotations

import pytest

from blocklab.errors import ConfigError, InputError
from blocklab.precision import PRECISIONS, check_precision


@pytest.mark.parametrize("value", PRECISIONS)
def test_every_precision_passes_unchanged(value):
    assert check_precision(value) == value


@pytest.mark.parametrize("value", ["fp16", "FP32", "", None, 32, b"fp32"])
def test_anything_else_is_one_line_naming_the_value(value):
    with pytest.raises(InputError) as err:
        check_precision(value)
    assert str(err.value) == (f"precision={value!r} is not allowed; expected one of "
                              "['fp32', 'bf16']")


def test_the_name_and_the_error_type_are_the_callers():
    with pytest.raises(ConfigError, match=r"^TrainConfig\.precision='int8' is not allowed"):
        check_precision("int8", "TrainConfig.precision", ConfigError)


def test_every_layer_refuses_alike():
    """The options, the trainer's config and the model all check through check_precision."""
    from blocklab.config import ModelConfig
    from blocklab.experiments.options import RunOptions
    from blocklab.experiments.trainer import TrainConfig
    from blocklab.nn.model import DecoderLM

    for build in (lambda: RunOptions(precision="fp16"), lambda: TrainConfig(precision="fp16"),
                  lambda: DecoderLM(ModelConfig(vocab_size=8, d_model=8, n_layers=1, n_heads=1,
                                                max_seq_len=4), precision="fp16")):
        with pytest.raises(InputError, match=r"precision='fp16' is not allowed; expected one "
                                             r"of \['fp32', 'bf16'\]$"):
            build()
