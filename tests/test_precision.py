"""One precision type, checked in one place (`blocklab.precision`)."""

from __future__ import annotations

import pytest

from blocklab.errors import ConfigError, InputError
from blocklab.precision import PRECISIONS, check_precision


@pytest.mark.parametrize("value", ["fp16", "FP32", "", None, 32, b"fp32"])
def test_only_a_precision_passes_and_anything_else_is_one_line_naming_it(value):
    assert [check_precision(p) for p in PRECISIONS] == list(PRECISIONS)
    with pytest.raises(InputError) as err:
        check_precision(value)
    assert str(err.value) == (f"precision={value!r} is not allowed; expected one of "
                              "['fp32', 'bf16']")
    with pytest.raises(ConfigError, match=r"^TrainConfig\.precision=.* is not allowed"):
        check_precision(value, "TrainConfig.precision", ConfigError)


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
