"""The passkey models (full size only): one model per arm trained on passkey examples at L,
then scored on retrieval by length and needle depth."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from blocklab.config import ModelConfig
from blocklab.errors import PositionsBeyondTable
from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.position.records import PasskeyGrid, PasskeyRun, record_extra
from blocklab.experiments.suites.position.scaling import (
    SCALINGS,
    scaling_config,
    with_rope_scaling,
)
from blocklab.experiments.suites.position.sizes import (
    SIZES,
    UNAVAILABLE,
    arm_config,
    suite_train_config,
)


def train_passkey_model(mc: ModelConfig, options: RunOptions, seed: int):
    """A model trained only on passkey examples of L + 1 bytes as the size's `passkey` says,
    needle depth uniform in [0, 1] (snapped to the filler's sentence boundaries), next-token
    loss on every byte. Returns the model (in eval mode) and its last training loss."""
    import torch

    from blocklab.experiments.synthetic import example_seeds, passkey_example
    from blocklab.experiments.trainer import (
        build_model,
        learning_rate,
        make_optimizer,
        train_step,
    )

    config = SIZES[options.size]
    pk, L = config.passkey, config.L
    assert pk is not None, f"size {options.size} has no passkey models"
    steps, batch_size = pk.steps, pk.batch_size
    tc = suite_train_config(options, seed, steps=steps, batch_size=batch_size, seq_len=L, lr=pk.lr,
                       warmup_steps=max(1, steps // 20))
    model = build_model(mc, tc).train()
    optimizer, params = make_optimizer(model, tc), list(model.parameters())
    rng = np.random.default_rng([0x9A55, seed])
    example_ids = example_seeds(seed + 1_000_000, steps * batch_size)
    loss = math.nan
    for step in range(steps):
        chunk = example_ids[step * batch_size:(step + 1) * batch_size]
        batch = np.stack([passkey_example(s, L + 1, float(rng.uniform())).tokens for s in chunk])
        tokens = torch.from_numpy(batch.astype(np.int64)).to(tc.device)  # [B, L + 1]
        loss = train_step(model, tokens, optimizer, params, lr=learning_rate(step, tc),
                          grad_clip=tc.grad_clip).loss
    return model.eval(), loss


def passkey_grid(model, L: int, mults: Sequence[int], depths: Sequence[float], n: int,
                 seed: int) -> PasskeyGrid:
    """Passkey accuracy at every (m·L input tokens, depth); UNAVAILABLE where the model's
    position table is too short."""
    from blocklab.experiments.synthetic import passkey_accuracy

    grid: PasskeyGrid = {}
    for m in mults:
        row: dict[str, float | str] = {}
        for depth in depths:
            try:
                row[str(depth)] = passkey_accuracy(model, n=n, length=m * L + 1, depth=depth,
                                                   seed=seed)
            except PositionsBeyondTable:  # any other error is a fault: the run fails
                row[str(depth)] = UNAVAILABLE
        grid[str(m)] = row
    return grid


def passkey_run(options: RunOptions, arm: str, seed: int, progress) -> RunResult:
    """The passkey model of `arm`, read at every multiple (and for rope with each
    training-free scaling); its result's `extra` is a `PasskeyRun`."""
    started = time.perf_counter()
    config = SIZES[options.size]
    pk, L = config.passkey, config.L
    assert pk is not None, f"size {options.size} has no passkey models"
    with torch_threads(1):
        model, last_loss = train_passkey_model(arm_config(options.size, arm), options, seed)
        accuracy = {arm: passkey_grid(model, L, config.mults, pk.depths, pk.n, 7 + seed)}
        if arm == "rope":
            for kind in SCALINGS:
                by_mult: PasskeyGrid = {}
                for m in (m for m in config.mults if m > 1):
                    scaled = with_rope_scaling(model, scaling_config(kind, m, L))
                    by_mult.update(passkey_grid(scaled, L, [m], pk.depths, pk.n, 7 + seed))
                accuracy[f"rope+{kind}"] = by_mult
    record = PasskeyRun(arm=arm, seed=seed, final_train_loss=last_loss, accuracy=accuracy)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=record_extra("passkey", record))

