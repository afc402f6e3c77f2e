"""The ladder's rule: each rung 4× the training compute of the one below, checked by hand
and against the exact parameter count of the models the ffn suite builds."""

import pytest

from blocklab.errors import InputError
from blocklab.experiments import ladder
from blocklab.experiments.options import ALL_SIZES, SIZES, RunOptions
from blocklab.experiments.suites import get_suite
from blocklab.experiments.suites.ffn import SIZES as FFN_SIZES
from blocklab.experiments.suites.ffn import param_count


def test_multiples_and_widths_by_hand():
    assert [ladder.multiple(s) for s in ("quick", *ladder.RUNGS)] == [1, 4, 16, 64]
    assert [ladder.steps_up(s) for s in ("quick", *ladder.RUNGS)] == [0, 1, 2, 3]
    # 64 · 4^(1/4) = 90.5 → 96 (6 heads of 16); 64 · 16^(1/4) = 128; 64 · 64^(1/4) = 181 → 176
    assert [ladder.width(64, m, 16) for m in (1, 4, 16, 64)] == [64, 96, 128, 176]
    assert [ladder.batch(16, m) for m in (1, 4, 16, 64)] == [16, 23, 32, 45]
    with pytest.raises(InputError, match="'rung4' is not allowed"):
        ladder.multiple("rung4")


@pytest.mark.parametrize("rung", ladder.RUNGS)
def test_each_ffn_rung_trains_its_multiple_of_the_quick_compute(rung):
    quick, size = FFN_SIZES["quick"], FFN_SIZES[rung]
    times = ladder.multiple(rung)
    # 6 · params · tokens, params the ReLU model's exact count (the model configs the runs
    # build), within the rounding of the steps to a whole step (< 0.2% at these step counts)
    tokens = size.steps * size.batch_size * size.seq_len
    base = param_count("relu", quick) * quick.steps * quick.batch_size * quick.seq_len
    assert param_count("relu", size) * tokens / base == pytest.approx(times, rel=2e-3)
    assert size.n_layers == quick.n_layers and size.seq_len == quick.seq_len
    assert size.d_model // size.n_heads == quick.d_model // quick.n_heads  # heads of 16
    assert size.arms == quick.arms and size.lr_grid == quick.lr_grid
    assert size.warmup_steps == round(size.steps * quick.warmup_steps / quick.steps)
    # the parameters about double a rung (width ×√2, rounded to whole heads)
    assert 1.6 ** ladder.steps_up(rung) < param_count("relu", size) / param_count(
        "relu", quick) < 2.6 ** ladder.steps_up(rung)


def test_only_suites_with_a_ladder_have_the_rungs():
    assert ALL_SIZES == (*SIZES, *ladder.RUNGS)
    ffn = get_suite("ffn")
    assert RunOptions.for_suite(ffn, "rung2").folder() == "rung2"
    assert RunOptions.for_suite(ffn, "rung2", precision="bf16").folder() == "rung2+bf16"
    with pytest.raises(InputError, match="suite placement has no size 'rung1'"):
        RunOptions.for_suite(get_suite("placement"), "rung1")
