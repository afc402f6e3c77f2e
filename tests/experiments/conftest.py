"""Tiny model and training configs shared by the experiment tests (one thread: fast and
bit-reproducible even when other processes share the CPU), and what they import from here."""

from dataclasses import dataclass

import pytest

from blocklab.config import ModelConfig


@pytest.fixture
def tiny_model():
    return ModelConfig(vocab_size=256, d_model=32, n_layers=2, n_heads=2, max_seq_len=256)


@pytest.fixture
def tiny_train():
    from blocklab.experiments.trainer import TrainConfig

    return TrainConfig(steps=8, batch_size=4, seq_len=32, lr=3e-3, eval_every=4, eval_batches=1,
                       log_every=2, threads=1)


@dataclass(frozen=True)
class Nothing:
    """A summary with nothing to summarise."""


def plain_suite(name: str, plan, **kwargs):
    """A suite of `plan` (options, tuned -> specs) whose summary holds `Nothing`."""
    from blocklab.experiments.suites.base import Suite
    from blocklab.experiments.summaries import Summary

    return Suite(name, name, plan, lambda options, results: Summary(
        name, options.size, len(options.seeds), [], data=Nothing()), Nothing, **kwargs)
