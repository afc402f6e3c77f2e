"""Synthetic tasks: answers where stated, depth honoured, determinism, and the scorer's indexing
checked against rule-based oracle models."""

import re

import numpy as np
import pytest
import torch
from torch import nn

from blocklab.experiments import synthetic as s
from blocklab.nn import DecoderLM


@pytest.mark.parametrize("seed", [0, 1, 7, 12345])
def test_passkey_answer_sits_at_the_stated_positions_the_same_for_a_seed(seed):
    ex = s.passkey_example(seed, length=400, depth=0.5)
    again = s.passkey_example(seed, length=400, depth=0.5)
    assert np.array_equal(ex.tokens, again.tokens) and ex.answer == again.answer
    text = ex.text
    assert ex.tokens.size == 400 and len(ex.answer) == 5 and ex.answer.isdigit()
    assert bytes(ex.tokens[ex.answer_positions]).decode() == ex.answer
    assert ex.answer_positions.tolist() == list(range(395, 400))
    assert text.endswith("What is the pass key? The pass key is " + ex.answer)
    assert f"The pass key is {ex.answer}. Remember it." in text
    assert text.find("The pass key is") == ex.needle_start


@pytest.mark.parametrize("depth", [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
def test_passkey_depth_is_honoured(depth):
    ex = s.passkey_example(3, length=2048, depth=depth)
    filler_len = 2048 - len(s.passkey_needle(ex.answer)) - len(s._QUESTION) - 5
    assert abs(ex.depth - depth) <= 0.02  # snapped to a sentence boundary (~20 bytes)
    assert ex.needle_start == round(ex.depth * filler_len)
    before_needle = ex.text[:ex.needle_start]
    assert before_needle == "" or before_needle.endswith(". ")
    if depth == 0.0:
        assert ex.needle_start == 0
    if depth == 1.0:
        assert ex.text[ex.needle_start:].startswith(s.passkey_needle(ex.answer) + "What is")


def test_passkeys_differ_by_seed_and_bad_arguments_are_refused():
    keys = {s.passkey_example(seed, 300, 0.3).answer for seed in range(20)}
    assert len(keys) > 15
    for length, depth in [(50, 0.5), (400, 1.5), (400, -0.1)]:
        with pytest.raises(ValueError):
            s.passkey_example(0, length, depth)


class PasskeyReader(nn.Module):
    """A rule-based model: after "...The pass key is " + j digits, predict digit j of the key
    found in the needle; elsewhere predict byte 0. Perfect under correct teacher forcing."""

    def __init__(self, shift=0):
        super().__init__()
        self.dummy = nn.Parameter(torch.zeros(1))
        self.shift = shift

    def forward(self, input_ids):
        B, T = input_ids.shape
        logits = torch.zeros(B, T, 256)
        for b in range(B):
            text = bytes(input_ids[b].tolist()).decode()
            key = re.search(r"The pass key is (\d{5})\.", text).group(1)
            for t in range(T):
                prefix = text[:t + 1 + self.shift]
                m = re.search(r"What is the pass key\? The pass key is (\d*)$", prefix)
                if m and len(m.group(1)) < 5:
                    logits[b, t, ord(key[len(m.group(1))])] = 1.0
        return logits


def test_passkey_accuracy_scores_a_perfect_reader_one_misaligned_zero_a_model_a_fraction(
        tiny_model):
    assert s.passkey_accuracy(PasskeyReader(), n=4, length=300, depth=0.4) == 1.0
    assert s.passkey_accuracy(PasskeyReader(shift=1), n=4, length=300, depth=0.4) == 0.0
    torch.manual_seed(0)
    model = DecoderLM(tiny_model)
    # two lengths, batched apart
    examples = [s.passkey_example(i, 120) for i in range(3)] + [s.passkey_example(0, 150)]
    score = s.answer_accuracy(model, examples, batch_size=2)
    assert 0.0 <= score <= 1.0 and model.training
    assert 0.0 <= s.passkey_accuracy(model, n=2, length=200) <= 1.0
