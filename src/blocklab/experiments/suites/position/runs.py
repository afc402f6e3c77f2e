"""A training run of one arm and everything read from its model: the reads at every multiple
of L, the far-out check, the order probe and, for RoPE, every training-free scaling and
fine-tune."""

from __future__ import annotations

import time

from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import json_safe
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.position.order import order_probe
from blocklab.experiments.suites.position.reads import extrapolation, finite_far_out
from blocklab.experiments.suites.position.records import FineTunedReads, ScaledReads
from blocklab.experiments.suites.position.scaling import (
    SCALINGS,
    RopeScaling,
    scaling_config,
    with_rope_scaling,
)
from blocklab.experiments.suites.position.sizes import (
    SIZES,
    arm_config,
    suite_train_config,
    train_config,
)


def _finetune(model, scaling: RopeScaling | None, corpus, options: RunOptions, seed: int):
    """Continue training a RoPE model at factor·L tokens with `scaling` as the size's
    `finetune` says; returns the new model.

    Batches keep the pre-training token count (batch_size / factor windows, at least one) and
    continue its data stream after the training run's last step; AdamW at a constant lr after
    a 10% warmup.
    """
    from blocklab.experiments.data import sample_batch
    from blocklab.experiments.trainer import make_optimizer, train_step

    config = SIZES[options.size]
    ft, L = config.finetune, config.L
    assert ft is not None, f"size {options.size} has no fine-tune"
    tuned = with_rope_scaling(model, scaling).train()
    tc = suite_train_config(options, seed, steps=ft.steps, lr=ft.lr)  # AdamW groups and clip
    optimizer, params = make_optimizer(tuned, tc), list(tuned.parameters())
    warmup = max(1, ft.steps // 10)
    rows = max(1, config.train.batch_size // ft.factor)
    for step in range(ft.steps):
        batch = sample_batch(corpus.train, seed=seed, step=config.train.steps + step,
                             batch_size=rows, seq_len=ft.factor * L).to(tc.device)
        train_step(tuned, batch, optimizer, params, lr=ft.lr * min(1.0, (step + 1) / warmup),
                   grad_clip=tc.grad_clip)
    return tuned.eval()


def _rope_variants(options: RunOptions, model, corpus, seed: int
                   ) -> dict[str, ScaledReads | FineTunedReads]:
    """Training-free scaling at every multiple m >= 2 (factor m), and fine-tuned variants
    (each kind of the size's `finetune`, scaling factor the longest multiple) read at every
    multiple with that scaling."""
    config = SIZES[options.size]
    L, mults, n = config.L, config.mults, config.eval_windows
    longer = [m for m in mults if m > 1]
    variants: dict[str, ScaledReads | FineTunedReads] = {}
    for kind in SCALINGS:
        beyond: dict[str, float | str | None] = {}
        per_position: dict[str, list[float | None] | None] = {}
        errors: dict[str, str] = {}
        scalings: dict[str, RopeScaling] = {}
        for m in longer:
            scaling = scaling_config(kind, m, L)
            scaled = with_rope_scaling(model, scaling)
            read = extrapolation(scaled, corpus.val, L, [m], n, sliding=False)
            beyond.update(read.loss_beyond_L)
            per_position.update(read.per_position)
            errors.update(read.errors)
            scalings[str(m)] = scaling
        variants[f"rope+{kind}"] = ScaledReads(beyond, per_position, errors, scalings)
    ft = config.finetune
    if ft:
        for ft_kind in ft.kinds:
            # The scaling's factor is the longest multiple read (YaRN fine-tunes at a length
            # shorter than its target, s = target / original), the fine-tuning windows
            # factor·L tokens.
            ft_scaling = None if ft_kind is None else scaling_config(ft_kind, max(mults), L)
            tuned = _finetune(model, ft_scaling, corpus, options, seed)
            read = extrapolation(tuned, corpus.val, L, mults, n, sliding=False)
            name = "rope" if ft_kind is None else f"rope+{ft_kind}"
            variants[f"{name}+ft{ft.factor}x"] = FineTunedReads(
                read.loss_at_L, read.loss_beyond_L, read.sliding, read.per_position,
                read.errors, scaling=ft_scaling, finetune=ft)
    return variants


def train_and_read(options: RunOptions, arm: str, seed: int, progress,
                    lr: float | None = None) -> RunResult:
    """The training run of `arm` at `lr`, then its reads: its result's `extra` is what
    `ArmRun` decodes (the trainer's own result under "train")."""
    from blocklab.experiments.data import load_corpus
    from blocklab.experiments.trainer import train

    started = time.perf_counter()
    config = SIZES[options.size]
    corpus = load_corpus("stdlib")
    mc, tc = arm_config(options.size, arm), train_config(options, seed, lr)
    model, trained = train(mc, tc, corpus, progress=progress, label=f"{arm} seed {seed}")
    extra = {"kind": "train", "arm": arm, "seed": seed, "L": config.L,
             "train": trained.to_dict()}
    if trained.status == "ok":
        with torch_threads(1):
            extra["eval"] = extrapolation(model, corpus.val, config.L, config.mults,
                                          config.eval_windows)
            extra["finite"] = finite_far_out(model)
            extra["order"] = order_probe(model, corpus.val, config.order.prefix_len,
                                         config.order.prefixes)
            if arm == "rope":
                extra["variants"] = _rope_variants(options, model, corpus, seed)
    return RunResult(status=trained.status, wall_time_s=time.perf_counter() - started,
                     extra=json_safe(extra))

