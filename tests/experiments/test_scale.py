"""The scale a claim's runs are graded at: parameters against PyTorch's own count, tokens and
FLOPs by hand, every suite's answer for every claim it grades."""

import pytest

from blocklab.claims.catalogue import SUITE_OF
from blocklab.experiments.scale import Scale, flops_text
from blocklab.experiments.suites import get_suite
from blocklab.experiments.suites.ffn.runs import SIZES as FFN_SIZES
from blocklab.experiments.suites.ffn.runs import model_config
from blocklab.nn import DecoderLM


def test_ffn_quick_scale_by_hand_and_by_pytorch_and_flops_text():
    scale = get_suite("ffn").scale("quick", "C16")
    # 300 steps of 16 windows of 64 tokens
    assert scale.tokens == 300 * 16 * 64 == 307_200
    model = DecoderLM(model_config("relu", FFN_SIZES["quick"]))
    assert scale.params == sum(p.numel() for p in model.parameters())
    assert scale.flops == 6 * scale.params * 307_200
    assert scale.model == "d 64 × 2 layers"
    assert scale.text() == (f"d 64 × 2 layers, {scale.params / 1e3:.3g}k parameters, 307k "
                            f"tokens, {flops_text(scale.flops)} FLOPs")
    assert flops_text(2.4e11) == "2.4·10^11"
    assert flops_text(4.5e19) == "4.5·10^19"
    assert flops_text(1e3) == "1·10^3"
    assert flops_text(0) == "0"


@pytest.mark.parametrize("size", ["tiny", "quick", "full"])
def test_every_graded_claim_has_its_scale_or_says_it_trains_nothing(size):
    untrained = {"C12", "C31", "C32", "C33"}  # at initialisation, or timings
    for claim, suite in SUITE_OF.items():
        scale_of = get_suite(suite).scale
        scale = None if scale_of is None else scale_of(size, claim)
        if claim in untrained:
            assert scale is None, claim
        else:
            assert isinstance(scale, Scale) and scale.params > 0 and scale.tokens > 0, claim


def test_c36_names_its_deep_stack_not_the_training_grid():
    deep = get_suite("placement").scale("quick", "C36")
    grid = get_suite("placement").scale("quick", "C19")
    assert deep.model == "d 32 × 50 layers" and grid.model == "d 32 × 6 layers"
    assert deep.tokens == 100 * 16 * 32  # the deep ladder's 100 steps of 16 × 32 tokens
    position = get_suite("position").scale("quick", "C21")
    assert position.model == "d 64 × 2 layers, trained at L = 128"
    assert position.tokens == 300 * 16 * 128
