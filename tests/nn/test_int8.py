"""Int8 quantization maths (blocklab.nn.int8) against hand derivations and torchao."""

import logging

import pytest
import torch
from torch import nn

from blocklab.config import ModelConfig
from blocklab.nn import DecoderLM
from blocklab.nn.int8 import (
    fake_quantize,
    int8_scale,
    nonfinite_weights,
    quantize_int8,
    quantize_model,
    quantize_swiglu,
    quiet_torchao_import,
    torchao_config,
)


def _weights(seed=0, m=48, d=32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(m, d, generator=g), 0.3 * torch.randn(m, d, generator=g),
            torch.randn(d, m, generator=g))


def test_scale_and_codes_by_hand():
    w = torch.tensor([[1.0, -0.5, 0.25], [2.0, 0.0, -1.0]])
    # per-row: max|w| / 127.5 per row; q = round(w / s) clamped to [-128, 127]
    s = int8_scale(w, "per-row")
    torch.testing.assert_close(s, torch.tensor([[1 / 127.5], [2 / 127.5]]), atol=0, rtol=1e-7)
    q = quantize_int8(w, s)
    # max|w| lands on 127.5 codes (128 after rounding, or 127 by float rounding of 1/s): 127
    # either way after the clamp; −0.5·127.5 = −63.75 → −64; 0.25·127.5 = 31.875 → 32
    assert q.tolist() == [[127, -64, 32], [127, 0, -64]]


def test_dequantized_within_half_a_step_and_equal_to_torchao():
    from torchao.quantization import quantize_

    w = _weights()[0]
    for granularity in ("per-row", "per-tensor"):
        s = int8_scale(w, granularity)
        fake = fake_quantize(w, granularity)
        err = (fake - w).abs()
        # half a step, plus the float32 rounding of ŵ = q·s near |w| (a few ulps of |w|)
        ulps = 4 * torch.finfo(torch.float32).eps * w.abs()
        assert bool((err <= s / 2 + ulps).all())
        assert float((err / s).max()) > 0.49  # the bound is reached (max|w| sits on 127.5)
        lin = nn.Linear(32, 48, bias=False)
        lin.weight.data.copy_(w)
        quantize_(lin, torchao_config("weight-only", granularity))
        torch.testing.assert_close(lin.weight.dequantize(), fake, atol=0, rtol=0)  # bit for bit


def test_merged_per_row_equals_separate_and_merged_per_tensor_takes_the_max():
    gate, up, down = _weights()  # up has a narrower range than gate
    merged = quantize_swiglu(gate, up, down, "merged-per-row")
    separate = quantize_swiglu(gate, up, down, "separate-per-row")
    for a, b in zip(merged, separate, strict=True):
        torch.testing.assert_close(a, b, atol=0, rtol=0)
    merged_scale = int8_scale(torch.cat((gate, up)), "per-tensor")
    assert float(merged_scale) == max(float(int8_scale(gate, "per-tensor")),
                                      float(int8_scale(up, "per-tensor")))
    merged = quantize_swiglu(gate, up, down, "merged-per-tensor")
    separate = quantize_swiglu(gate, up, down, "separate-per-tensor")
    torch.testing.assert_close(merged[0], separate[0], atol=0, rtol=0)  # gate owns the max
    assert (merged[1] - up).abs().max() > (separate[1] - up).abs().max()  # up: more coarsely
    torch.testing.assert_close(merged[2], separate[2], atol=0, rtol=0)  # down never merged


def _int8(linear: nn.Module) -> bool:
    """Whether the layer's weight is a torchao int8 tensor, not a plain float Parameter."""
    return type(linear.weight) is not nn.Parameter and type(linear.weight.data) is not torch.Tensor


def test_ffn_only_leaves_attention_untouched():
    cfg = ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, d_ff=48)
    model = quantize_model(DecoderLM(cfg).eval(), "ffn", "weight-only")
    for layer in model.layers:
        for proj in (layer.ffn.gate_proj, layer.ffn.up_proj, layer.ffn.down_proj):
            assert _int8(proj)
        for proj in (layer.attention.q_proj, layer.attention.k_proj, layer.attention.v_proj,
                     layer.attention.o_proj):
            assert type(proj.weight) is nn.Parameter and not _int8(proj)
    assert not _int8(model.lm_head)


def test_quiet_torchao_import_puts_the_log_levels_back_even_on_error():
    loggers = [logging.getLogger(n) for n in ("torchao", "torch.utils._pytree")]
    before = [lg.level for lg in loggers]
    loggers[0].setLevel(logging.DEBUG)  # a user's own setting must survive
    try:
        with pytest.raises(RuntimeError), quiet_torchao_import():
            assert all(lg.level == logging.ERROR for lg in loggers)
            raise RuntimeError("import failed")
        assert loggers[0].level == logging.DEBUG and loggers[1].level == before[1]
    finally:
        for lg, level in zip(loggers, before, strict=True):
            lg.setLevel(level)


def test_nonfinite_weights_names_each_tensor_with_its_count():
    model = DecoderLM(ModelConfig(vocab_size=32, d_model=16, n_layers=2, n_heads=2, d_ff=32,
                                  ffn="swiglu", tie_embeddings=True))
    assert nonfinite_weights(model) == {}
    with torch.no_grad():
        model.layers[0].ffn.gate_proj.weight[0, :3] = float("nan")
        model.layers[1].attention.q_proj.weight[2, 2] = float("-inf")
        model.embed_tokens.weight[4, 0] = float("inf")  # tied: lm_head is the same tensor
    assert nonfinite_weights(model) == {"embed_tokens.weight": 1,
                                        "layers.0.ffn.gate_proj.weight": 3,
                                        "layers.1.attention.q_proj.weight": 1}
    # Why it matters: the tensor's int8 scale is not finite, so its error is no measurement.
    w = model.layers[0].ffn.gate_proj.weight
    assert not torch.isfinite(int8_scale(w, "per-tensor")).all()
