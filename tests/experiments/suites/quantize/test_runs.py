"""The quantize suite's quality run: C33's merged and separate per-row int8 scales compared on
trained weights, exact where they must be and able to fail."""

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.quantize.runs import merge_comparison, quality_configs


def test_the_per_row_merge_is_exact_on_trained_weights_and_the_comparison_can_fail():
    import torch

    from blocklab.experiments.trainer import train
    from blocklab.nn.int8 import gated_ffn_weights, int8_scale

    mc, tc = quality_configs(RunOptions("tiny"), 0)
    model, _ = train(mc, tc, "stdlib", progress=False)
    for layer in model.layers:
        gate, up, down = (w.detach() for w in gated_ffn_weights(layer.ffn))
        found = merge_comparison(gate, up, down)
        assert found["per_row_diff"] == 0.0
        assert found["scale_ratio"] == max(found["gate_scale"], found["up_scale"]) / min(
            found["gate_scale"], found["up_scale"]) >= 1.0
        assert found["merged_over_max"] == 1.0
        # the merged matrix's own per-row scales, given explicitly: still exact
        scale = int8_scale(torch.cat((gate, up)), "per-row")
        assert merge_comparison(gate, up, down, scale)["per_row_diff"] == 0.0
        # one row's scale off by 1%: that row's weights change
        scale[0] *= 1.01
        assert merge_comparison(gate, up, down, scale)["per_row_diff"] > 0.0
