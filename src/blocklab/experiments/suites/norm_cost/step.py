"""What the step-time run measures (`time_training_steps`): seconds per optimizer step of the
RMSNorm and LayerNorm models, as built and with every RMSNorm swapped for PyTorch's
F.rms_norm (`like_for_like`)."""

from __future__ import annotations

import time

from blocklab.errors import InputError
from blocklab.experiments.env import torch_threads
from blocklab.experiments.suites.norm_cost.records import StepTimes
from blocklab.experiments.suites.norm_cost.sizes import NORM_NAMES, StepShape, model_config


def _torch_rms_norm_module(norm):
    """A module computing `norm`'s function (an RMSNorm with a plain gain) by PyTorch's own
    kernel, F.rms_norm, sharing its gain; it has no fused residual form, so a block adds the
    residual apart, as it does for LayerNorm."""
    import torch.nn.functional as F
    from torch import nn

    class _TorchRMSNorm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight, self.eps = norm.weight, norm.eps

        def forward(self, x):
            """x: [..., d] -> [..., d]."""
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)

    return _TorchRMSNorm()


def like_for_like(model):
    """`model` (a DecoderLM) with every RMSNorm replaced in place by PyTorch's F.rms_norm, the
    counterpart of the F.layer_norm every LayerNorm model runs. Refuses an RMSNorm whose
    function F.rms_norm does not compute (a (1 + γ) gain, or statistics in another dtype)."""
    from blocklab.nn.norm import RMSNorm

    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, RMSNorm):
                offset = getattr(child, "unit_offset", False)
                if offset or child.cast != "llama":
                    raise InputError(
                        f"like_for_like: {name} is not a plain RMSNorm (unit_offset={offset}, "
                        f"cast={child.cast!r}); F.rms_norm computes only unit_offset=False, "
                        "cast='llama'")
                setattr(parent, name, _torch_rms_norm_module(child))
    return model


STEP_PATHS = ("blocklab", "like-for-like")


def time_training_steps(step: StepShape, *, threads: int, seed: int = 0) -> StepTimes:
    """Seconds per optimizer step (forward, backward, clip, AdamW) of the rmsnorm and layernorm
    models on each code path of `STEP_PATHS`, the four models' steps interleaved (the order
    rotating by one every repeat); the first `warmup` repeats are not recorded. All see the
    same batches. The models are built as a default TrainConfig says (the "fast" backend,
    float32): the run's payload names no other.

    Returns `StepTimes`, its `step_s` {path: {norm: [seconds per repeat]}}.
    """
    from blocklab.experiments.data import load_corpus, sample_batch
    from blocklab.experiments.trainer import TrainConfig, build_model, make_optimizer, train_step

    corpus = load_corpus("stdlib")
    tc = TrainConfig(steps=1, batch_size=step.batch_size, seq_len=step.seq_len, seed=seed)
    keys = [(path, norm) for path in STEP_PATHS for norm in NORM_NAMES]
    with torch_threads(threads):
        models, optimizers = {}, {}
        for path, norm in keys:
            mc = model_config(norm, step.d_model, step.n_layers, step.seq_len)
            model = build_model(mc, tc)
            models[path, norm] = like_for_like(model) if path == "like-for-like" else model
            optimizers[path, norm] = make_optimizer(models[path, norm], tc)
        params = {key: list(model.parameters()) for key, model in models.items()}
        times: dict[str, dict[str, list[float]]] = {
            path: {norm: [] for norm in NORM_NAMES} for path in STEP_PATHS}
        for i in range(step.warmup + step.repeats):
            batch = sample_batch(corpus.train, seed=seed, step=i, batch_size=tc.batch_size,
                                 seq_len=tc.seq_len)
            for path, norm in keys[i % len(keys):] + keys[:i % len(keys)]:
                tick = time.perf_counter()
                train_step(models[path, norm], batch, optimizers[path, norm],
                           params[path, norm], lr=tc.lr,
                           grad_clip=tc.grad_clip)  # the trainer's step, timed whole
                if i >= step.warmup:
                    times[path][norm].append(time.perf_counter() - tick)
    counts = {norm: sum(p.numel() for p in models["blocklab", norm].parameters())
              for norm in NORM_NAMES}
    return StepTimes(kind="step", threads=threads, model=step, params=counts, step_s=times)
